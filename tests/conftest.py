"""Shared fixtures: offline plans of shipped stacks (cached) and of in-memory configs."""
from __future__ import annotations

import functools
import json
import os
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


class OutsideRepo(RuntimeError):
    """The suite touched a file beside the repository: a fresh clone has nothing there."""


def beside_repo(path: str, root: str, tempdir: str) -> bool:
    """Whether `path` lies under the repository's parent directory but not inside the repository (a sibling
    checkout, reference material). Where the clone itself sits in the temp directory (a CI runner cloning into /tmp),
    the temp files Python and pytest make there (tmp*, pytest-of-*) are not the repository's neighbours."""
    parent = os.path.dirname(root)
    if path == root or path.startswith(root + os.sep):
        return False
    if path == parent:
        return True
    if not path.startswith(parent + os.sep):
        return False
    sibling = path[len(parent) + 1:].split(os.sep, 1)[0]
    return not (parent == tempdir and sibling.startswith(("tmp", "pytest-of-")))


def _stays_in_repo(event: str, args: tuple) -> None:
    """Audit hook: refuse every file or directory access beside the repository (a user clones only the repo,
    so the suite must pass with nothing beside it). The interpreter and site-packages lie elsewhere."""
    if event not in ("open", "os.listdir", "os.scandir", "glob.glob") or not args:
        return
    target = args[0]
    if not isinstance(target, (str, bytes, os.PathLike)):
        return
    path = os.path.abspath(os.fsdecode(target))
    if beside_repo(path, _ROOT, _TEMP):
        raise OutsideRepo(f"{path} is outside the repository {_ROOT}; vendor what the test needs into the repo")


_ROOT = str(ROOT)
_TEMP = os.path.realpath(tempfile.gettempdir())
# No test reaches the Hugging Face Hub, nor a developer's cache of it (components/catalog/hub.py).
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["VLLM_PLATFORM_CACHE"] = tempfile.mkdtemp()  # tmp*: not "beside" a clone in the temp dir
sys.addaudithook(_stays_in_repo)

from components.offline.render import manifests, sanitize  # noqa: E402
from components.offline.runner import OFFLINE_SECRET, plan_stack_offline, run_program  # noqa: E402


@functools.lru_cache(maxsize=None)
def planned(stack: str, preview: bool = False):
    """Offline plan of stacks/Pulumi.<stack>.yaml (cached per session: plans are deterministic)."""
    return plan_stack_offline(stack, preview=preview)


def plan_config(values: dict, preview: bool = False, secrets: dict | None = None, stack: str = "test"):
    """Offline plan of an in-memory config: {"cloud": "aws", "models": [...], ...} (keys without prefix).

    Secrets default to a placeholder hfToken; pass secrets={} to leave it out. gatewayApiKeys gets a placeholder
    unless given.
    """
    secrets = {"hfToken": OFFLINE_SECRET} if secrets is None else dict(secrets)
    if "gatewayApiKeys" not in secrets:  # a placeholder key per gateway client (components/config/gateway.py)
        clients = (values.get("gateway") or {}).get("clients") or ["default"]
        secrets["gatewayApiKeys"] = json.dumps({c: f"{OFFLINE_SECRET}-{c}" for c in clients})
    config = {f"vllm-platform:{k}": v if isinstance(v, str) else json.dumps(v) for k, v in values.items()}
    config.update({f"vllm-platform:{k}": v for k, v in secrets.items()})
    resources, exports = run_program(config, [f"vllm-platform:{k}" for k in secrets], stack, preview)
    return resources, exports


def by_type(resources, type_token: str):
    return [r for r in resources if r.type == type_token]


def one(resources, type_token: str, name: str | None = None):
    found = [r for r in by_type(resources, type_token) if name is None or r.name == name]
    assert len(found) == 1, f"expected one {type_token} {name or ''}, found {[r.name for r in found]}"
    return found[0]


@pytest.fixture
def dev_plan():
    return planned("dev")


__all__ = ["planned", "plan_config", "by_type", "one", "manifests", "sanitize"]
