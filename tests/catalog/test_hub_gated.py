"""hfToken for gated and private Hub repositories: the known gated families (Gemma among them), and any repository
whose config.json the Hub sent only with a token (recorded in the Hub cache)."""
from pathlib import Path

import pytest

from components.catalog import hub
from components.config import ConfigError, parse

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hf"
BASE = {"cloud": "aws", "aws": {"region": "us-east-1"}}
QWEN_CONFIG = (FIXTURES / "Qwen--Qwen3-32B" / "config.json").read_bytes()


def model(**kw):
    return {**BASE, "models": [{"name": "chat", "maxModelLen": 8192, "accelerator": "h100", **kw}]}


def token_error(values) -> str:
    with pytest.raises(ConfigError) as e:
        parse(values, set())
    return next(x for x in e.value.errors if x.startswith("hfToken: missing"))


def gated_hub(calls):
    """A Hub whose repository answers 401 without a token."""
    def fetch(repo, rev, filename, tok):
        calls.append((filename, tok))
        if tok is None:
            raise hub.Unauthorized("HTTP 401")
        if filename != hub.CONFIG:
            raise hub.NotFound(filename)
        return QWEN_CONFIG
    return fetch


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("VLLM_PLATFORM_CACHE", str(tmp_path))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("VLLM_PLATFORM_OFFLINE", raising=False)
    return tmp_path


def test_a_config_the_hub_sends_only_with_a_token_is_recorded_as_gated(cache, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_test")
    calls = []
    found = hub.fetch_config("acme/private-tuned", None, gated_hub(calls))
    assert found.gated and calls[:2] == [("config.json", None), ("config.json", "hf_test")]
    assert (cache / "hub" / "acme--private-tuned" / "main" / "gated").is_file()
    assert hub.fetch_config("acme/private-tuned", None, gated_hub([])).gated  # from the cache, offline too


def test_without_a_token_the_plan_says_the_repo_is_gated_or_private(cache, monkeypatch):
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("HUGGING_FACE_HUB_TOKEN", raising=False)
    with pytest.raises(hub.HubUnavailable) as e:
        hub.fetch_config("acme/private-tuned", None, gated_hub([]))
    assert str(e.value).startswith("acme/private-tuned is gated, private or not there (the Hub refused it without "
                                   "a token: HTTP 401); set HF_TOKEN")


def test_a_private_repo_from_the_hub_cache_needs_hf_token(cache):
    for repo in ("acme--public-tuned", "acme--private-tuned"):
        d = cache / "hub" / repo / "main"
        d.mkdir(parents=True)
        (d / "config.json").write_bytes(QWEN_CONFIG)
    (d / "gated").write_text("401\n")
    parse(model(model="acme/public-tuned"), set())  # public (no marker): no token needed
    e = token_error(model(model="acme/private-tuned"))
    assert "models[0] (chat) downloads acme/private-tuned is a gated repository; any gated or private Hugging " \
           "Face repository needs the token" in e


def test_gemma_needs_hf_token(tmp_path):
    (tmp_path / "config.json").write_bytes((FIXTURES / "google--gemma-3-27b-it" / "config.json").read_bytes())
    e = token_error(model(model="google/gemma-3-27b-it", configFile=str(tmp_path / "config.json")))
    assert "models[0] (chat) downloads google/gemma-3-27b-it is a gated repository" in e
