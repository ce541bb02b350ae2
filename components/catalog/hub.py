"""A model's config.json (and safetensors index) from the Hugging Face Hub, cached on disk.

    $VLLM_PLATFORM_CACHE (default ~/.cache/vllm-platform)/hub/<org>--<name>/<revision or main>/config.json

A cached file is used as is (offline too); otherwise it is downloaded once at the pinned revision with the
token in HF_TOKEN (gated repositories), through huggingface_hub when it is installed, else plain HTTPS.
HF_HUB_OFFLINE=1 (huggingface_hub's own switch) or VLLM_PLATFORM_OFFLINE=1 forbid the download. The
fetcher is a parameter so that tests run without a network: whatever fetches, this module writes the cache.
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

CONFIG = "config.json"
INDEX = "model.safetensors.index.json"
# Written beside a cached config.json that the Hub refused to send anonymously (401 / 403) and sent with the
# token: the repository is gated or private, and the stack must carry hfToken for the prefetch to download it.
GATED = "gated"
REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
ENDPOINT = "https://huggingface.co"
TIMEOUT_S = 20


class HubUnavailable(Exception):
    """No config.json for the repo: not cached and not downloadable (offline, gated, missing)."""


class NotFound(Exception):
    """The Hub answered that the file does not exist (404) — a normal answer for the safetensors index."""


class Unauthorized(ConnectionError):
    """The Hub refused the request without (or with this) token: HTTP 401 / 403, a gated or private repository."""


# (repo, revision, filename, token) -> bytes; raises NotFound, Unauthorized, or anything else for "could not reach".
Fetcher = Callable[[str, str, str, str | None], bytes]


def cache_root() -> Path:
    return Path(os.environ.get("VLLM_PLATFORM_CACHE") or Path.home() / ".cache" / "vllm-platform")


def cache_dir(repo: str, revision: str | None) -> Path:
    return cache_root() / "hub" / repo.replace("/", "--") / (revision or "main")


def offline() -> bool:
    return any(os.environ.get(k, "").lower() in ("1", "true", "yes") for k in ("HF_HUB_OFFLINE", "VLLM_PLATFORM_OFFLINE"))


def token() -> str | None:
    return os.environ.get("HF_TOKEN") or os.environ.get("HUGGING_FACE_HUB_TOKEN") or None


def http_fetch(repo: str, revision: str, filename: str, tok: str | None) -> bytes:
    """The real fetcher: huggingface_hub if installed, else GET /<repo>/resolve/<revision>/<file>."""
    try:
        import huggingface_hub as hh  # optional
    except ImportError:
        hh = None
    if hh is not None:
        try:
            path = hh.hf_hub_download(repo, filename, revision=revision, token=tok)
        except hh.errors.EntryNotFoundError as e:
            raise NotFound(str(e)) from None
        except hh.errors.GatedRepoError as e:
            raise Unauthorized(str(e)) from None
        except hh.errors.RepositoryNotFoundError as e:  # the Hub answers 401 for a private repo, as for none
            if tok is None:
                raise Unauthorized(str(e)) from None
            raise
        return Path(path).read_bytes()
    import urllib.error
    import urllib.request

    req = urllib.request.Request(f"{ENDPOINT}/{repo}/resolve/{revision}/{filename}")
    if tok:
        req.add_header("Authorization", f"Bearer {tok}")
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT_S) as r:  # noqa: S310 (a fixed https endpoint)
            return r.read()
    except urllib.error.HTTPError as e:
        if e.code == 404 and filename != CONFIG:
            raise NotFound(filename) from None
        hint = {401: "gated or private: set HF_TOKEN to a token with access", 403: "gated: accept the model's "
                "licence on the Hub and set HF_TOKEN", 404: "no such repository or revision"}.get(e.code, "")
        raise (Unauthorized if e.code in (401, 403) else ConnectionError)(f"HTTP {e.code}{': ' + hint if hint else ''}") from None


@dataclass
class HubConfig:
    config: dict
    index: dict | None  # the safetensors index, when the repo has one
    path: Path  # the cached config.json
    gated: bool = False  # the Hub sent it only with a token (gated or private repository)


def _read_cached(d: Path) -> HubConfig | None:
    cfg = d / CONFIG
    if not cfg.is_file():
        return None
    index = d / INDEX
    return HubConfig(json.loads(cfg.read_text()), json.loads(index.read_text()) if index.is_file() else None, cfg,
                     (d / GATED).is_file())


IN_STACK = "models[].configFile, or --model-config PATH on `topology`"


def ways_out(repo: str, revision: str | None, where: str = IN_STACK) -> str:
    return (f"give a local copy of its config.json ({where}), or plan once with network access so that it is "
            f"cached at {cache_dir(repo, revision) / CONFIG}")


def fetch_config(repo: str, revision: str | None = None, fetcher: Fetcher | None = None,
                 where: str = IN_STACK) -> HubConfig:
    """The repo's config.json (+ safetensors index) from the cache, else from the Hub (then cached)."""
    if not REPO_ID.match(repo):
        raise HubUnavailable(f"{repo!r} is not a Hugging Face repo id (ORG/NAME) to look up; give its config.json "
                             f"({where})")
    d = cache_dir(repo, revision)
    try:
        cached = _read_cached(d)
    except (OSError, ValueError) as e:
        raise HubUnavailable(f"the cached {d / CONFIG} is unreadable ({e}); delete it and plan again") from None
    if cached is not None:
        return cached
    if offline():
        raise HubUnavailable(f"offline (HF_HUB_OFFLINE / VLLM_PLATFORM_OFFLINE) and no cached config.json; "
                             f"{ways_out(repo, revision, where)}")
    fetch = fetcher or http_fetch
    rev, tok, gated = revision or "main", token(), False
    try:
        try:  # anonymously first: whether the repository needs a token is what the stack must know
            raw = fetch(repo, rev, CONFIG, None)
        except Unauthorized as e:
            if tok is None:
                raise HubUnavailable(f"{repo} is gated, private or not there (the Hub refused it without a token: {e}); set "
                                     f"HF_TOKEN to a token of an account with access and plan again, or "
                                     f"{ways_out(repo, revision, where)}") from None
            raw, gated = fetch(repo, rev, CONFIG, tok), True
        config = json.loads(raw)
    except HubUnavailable:
        raise
    except NotFound:
        raise HubUnavailable(f"{repo} has no config.json at {rev}; {ways_out(repo, revision, where)}") from None
    except ValueError as e:
        raise HubUnavailable(f"{repo}'s config.json at {rev} is not JSON ({e})") from None
    except Exception as e:  # noqa: BLE001 (network, DNS, TLS, HTTP: all mean "not reachable now")
        raise HubUnavailable(f"could not download {repo}'s config.json at {rev} ({type(e).__name__}: {e}); "
                             f"{ways_out(repo, revision, where)}") from None
    index_raw = None
    try:
        index_raw = fetch(repo, rev, INDEX, tok if gated else None)
        json.loads(index_raw)
    except Exception:  # noqa: BLE001 (a single-file checkpoint has no index; the size check is skipped)
        index_raw = None
    d.mkdir(parents=True, exist_ok=True)
    (d / CONFIG).write_bytes(raw)
    if index_raw is not None:
        (d / INDEX).write_bytes(index_raw)
    if gated:
        (d / GATED).write_text("the Hub sent config.json only with a token (HTTP 401/403 anonymously)\n")
    return HubConfig(config, json.loads(index_raw) if index_raw is not None else None, d / CONFIG, gated)


def read_config_file(path: Path) -> HubConfig:
    """A local config.json and, beside it, model.safetensors.index.json when there is one."""
    index = path.parent / INDEX
    try:
        cfg = json.loads(path.read_text())
        return HubConfig(cfg, json.loads(index.read_text()) if index.is_file() else None, path)
    except json.JSONDecodeError as e:
        raise ValueError(f"not JSON ({e}); give the model's config.json") from None


def repo_for_file(path: Path, cfg: dict) -> str:
    """The repo a local config.json describes: its _name_or_path when that is a repo id, else a directory
    named like the Hub cache (org--name), else the directory's name."""
    named = cfg.get("_name_or_path")
    if isinstance(named, str) and REPO_ID.match(named):
        return named
    folder = path.resolve().parent.name
    return folder.replace("--", "/", 1) if "--" in folder else folder


def spec_from_file(path: Path, name: str | None = None, repo: str | None = None):
    """ModelSpec from a local config.json (OSError / ValueError / HfConfigError on a bad file)."""
    from .hf_config import describe

    found = read_config_file(path)
    repo = repo or repo_for_file(path, found.config)
    return describe(found.config, found.index, name=name or repo.split("/")[-1], repo=repo,
                    source=f"config.json at {path}")


def spec_from_hub(repo: str, revision: str | None = None, name: str | None = None, fetcher: Fetcher | None = None,
                  where: str = IN_STACK):
    """ModelSpec from the repo's config.json on the Hub (cached); HubUnavailable / HfConfigError."""
    from .hf_config import describe

    found = fetch_config(repo, revision, fetcher, where)
    spec = describe(found.config, found.index, name=name or repo.split("/")[-1], repo=repo,
                    source=f"huggingface.co/{repo} config.json at {revision or 'main'} (cached {found.path})")
    return dataclasses.replace(spec, gated=True) if found.gated else spec
