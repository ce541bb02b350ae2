"""Where a model's description comes from in a stack file: the catalog (any of its Hub ids), models[].configFile
(relative to the stack file), or the Hub's config.json (cached; offline error naming the ways out)."""
import json
import shutil
from pathlib import Path

import pytest
import yaml

from components.catalog import hub
from components.config import ConfigError, parse
from components.offline.runner import plan_stack_offline

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hf"
BASE = {"cloud": "aws", "aws": {"region": "us-east-1"}}


def model(**kw):
    return {**BASE, "models": [{"name": "chat", "maxModelLen": 8192, **kw}]}


def errors(values, base_dir=None):
    with pytest.raises(ConfigError) as e:
        parse(values, {"hfToken"}, base_dir=base_dir)
    return e.value.errors


def copy_fixture(name: str, to: Path) -> Path:
    to.mkdir(parents=True, exist_ok=True)
    shutil.copy(FIXTURES / name / "config.json", to / "config.json")
    return to / "config.json"


def test_catalog_accepts_every_hub_id_case_insensitively():
    for ref in ("Qwen/Qwen3-235B-A22B-Instruct-2507", "qwen/qwen3-235b-a22b-instruct-2507",
                "Qwen/Qwen3-235B-A22B-Instruct-2507-FP8", "Qwen3-235B-A22B-Instruct-2507"):
        dep = parse(model(model=ref, maxModelLen=32768), {"hfToken"}).models[0]
        assert dep.spec.id == "qwen3-235b-a22b", ref
        assert dep.effective_precision == ("fp8" if ref.endswith("FP8") else "bf16"), ref


def test_unknown_model_suggests_the_closest_catalog_names_and_the_ways_out():
    (e,) = errors(model(model="Qwen/Qwen3-235B-A22B-Instruct"))
    assert e.startswith("models[0].model: unknown model 'Qwen/Qwen3-235B-A22B-Instruct': not in the catalog "
                        "(closest catalog names: Qwen/Qwen3-235B-A22B-Instruct-2507")
    assert "offline (HF_HUB_OFFLINE / VLLM_PLATFORM_OFFLINE) and no cached config.json" in e
    assert "give a local copy of its config.json (models[].configFile, or --model-config PATH on `topology`)" in e
    assert "plan once with network access so that it is cached at" in e


def test_config_file_is_relative_to_the_stack_file(tmp_path):
    copy_fixture("google--gemma-3-27b-it", tmp_path / "models" / "gemma")
    cfg = parse(model(model="google/gemma-3-27b-it", configFile="models/gemma/config.json"), {"hfToken"},
                base_dir=tmp_path)
    spec = cfg.models[0].spec
    assert (spec.hf_repo, spec.sliding_window, spec.sliding_layers, spec.tied_embeddings) == \
        ("google/gemma-3-27b-it", 1024, 52, True)
    assert cfg.models[0].effective_max_model_len == 8192 and spec.max_context == 131072


def test_config_file_limits_apply_to_the_deployment(tmp_path):
    copy_fixture("openai--gpt-oss-120b", tmp_path)
    errs = errors(model(model="openai/gpt-oss-120b", configFile="config.json", precision="bf16",
                        tensorParallelSize=3, maxModelLen=200_000), base_dir=tmp_path)
    assert "models[0].precision: 'bf16' is not offered for gpt-oss-120b; allowed: mxfp4" in errs
    assert any(e.startswith("models[0].tensorParallelSize: 3 does not divide gpt-oss-120b's 64 attention heads")
               for e in errs)
    assert "models[0].maxModelLen: 200000 is above gpt-oss-120b's limit of 131072; set maxModelLen <= 131072" in errs


def test_bad_config_file_is_named_once_without_an_unknown_model_error(tmp_path):
    (e,) = errors(model(model="acme/Custom-7B", configFile="missing/config.json"), base_dir=tmp_path)
    assert e.startswith(f"models[0].configFile: cannot read {tmp_path}/missing/config.json (No such file or directory); "
                        f"a relative path is relative to the stack file's directory ({tmp_path})")
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama", "hidden_size": 4096}))
    (e,) = errors(model(model="acme/Custom-7B", configFile="config.json"), base_dir=tmp_path)
    assert e.startswith(f"models[0].configFile: {tmp_path}/config.json: num_hidden_layers: missing")
    (tmp_path / "bad.json").write_text("model_type: llama")
    (e,) = errors(model(model="acme/Custom-7B", configFile="bad.json"), base_dir=tmp_path)
    assert e.startswith(f"models[0].configFile: {tmp_path}/bad.json: not JSON (Expecting value: line 1 column 1")
    arch = {"paramsB": 7, "layers": 32, "hidden": 4096, "heads": 32, "kvHeads": 8, "vocab": 32000, "maxContext": 8192}
    copy_fixture("meta-llama--Meta-Llama-3.1-8B", tmp_path / "l")
    (e,) = errors(model(model="acme/Custom-7B", architecture=arch, configFile="l/config.json"), base_dir=tmp_path)
    assert e == "models[0].configFile: give the model's config.json or an inline architecture, not both"


def test_unknown_repo_is_sized_from_the_cached_hub_config(tmp_path, monkeypatch):
    monkeypatch.setenv("VLLM_PLATFORM_CACHE", str(tmp_path))
    rev = "b" * 40
    # what the real fetcher leaves behind after one run with network (components/catalog/hub.py)
    copy_fixture("mistralai--Mixtral-8x7B-v0.1", tmp_path / "hub" / "acme--Mixtral-Tuned" / rev)
    dep = parse(model(model="acme/Mixtral-Tuned", revision=rev), {"hfToken"}).models[0]
    assert dep.spec.experts == 8 and dep.spec.hf_repo == "acme/Mixtral-Tuned"
    assert dep.spec.params_b == pytest.approx(46.70, rel=0.001)
    assert "huggingface.co/acme/Mixtral-Tuned config.json at " + rev in dep.spec.source
    # another revision is not cached: offline, it is an error naming both ways out
    (e,) = errors(model(model="acme/Mixtral-Tuned", revision="c" * 40))
    assert f"{tmp_path}/hub/acme--Mixtral-Tuned/{'c' * 40}/config.json" in e


def test_hub_cache_written_by_a_fetch_is_what_a_stack_reads(tmp_path, monkeypatch):
    monkeypatch.setenv("VLLM_PLATFORM_CACHE", str(tmp_path))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    raw = (FIXTURES / "Qwen--Qwen3-30B-A3B" / "config.json").read_bytes()
    hub.fetch_config("acme/Qwen3-30B-A3B-Tuned", None, fetcher=lambda r, v, f, t: raw if f == "config.json"
                     else (_ for _ in ()).throw(hub.NotFound(f)))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    dep = parse(model(model="acme/Qwen3-30B-A3B-Tuned"), {"hfToken"}).models[0]
    assert dep.spec.experts == 128 and dep.spec.active_params_b == pytest.approx(3.35, rel=0.01)


def test_a_stack_file_with_config_file_plans(tmp_path):
    """The dev stack (one L4 per node on an existing cluster) serving a model described by its config.json
    next to a stack file outside stacks/."""
    copy_fixture("meta-llama--Meta-Llama-3.1-8B", tmp_path / "llama")
    doc = yaml.safe_load((Path(__file__).resolve().parents[2] / "stacks" / "Pulumi.dev.yaml").read_text())
    doc["config"]["vllm-platform:models"] = [{"name": "tuned", "model": "acme/Llama-3.1-8B-Tuned",
                                              "configFile": "llama/config.json", "maxModelLen": 8192}]
    stack = tmp_path / "Pulumi.custom.yaml"
    stack.write_text(yaml.safe_dump(doc))
    t = plan_stack_offline(str(stack)).exports["topology"]["tuned"]
    assert t["model_repo"] == "acme/Llama-3.1-8B-Tuned" and t["accelerator"] == "l4"
    assert t["vllm_args"][:3] == ["acme/Llama-3.1-8B-Tuned", "--served-model-name", "tuned"]
    assert t["weights_gib"] == round(8.03e9 * 2 / 2**30, 1)


def test_topology_sizes_any_hub_repo_from_the_cache(tmp_path, monkeypatch, capsys):
    from components.cli import main
    monkeypatch.setenv("VLLM_PLATFORM_CACHE", str(tmp_path))
    copy_fixture("openai--gpt-oss-120b", tmp_path / "hub" / "acme--gpt-oss-120b-tuned" / "main")
    assert main(["topology", "--model", "acme/gpt-oss-120b-tuned", "--gpu", "h100", "--json"]) == 0
    t = json.loads(capsys.readouterr().out)
    assert (t["model_repo"], t["precision"], t["weights_gib"]) == ("acme/gpt-oss-120b-tuned", "mxfp4", 60.7)
    assert main(["topology", "--model", "acme/not-cached", "--gpu", "h100"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("--model: unknown model 'acme/not-cached': not in the catalog, and offline")
    assert "give a local copy of its config.json (--model-config PATH)" in err


def test_a_cached_safetensors_index_that_disagrees_refuses_the_config(tmp_path, monkeypatch):
    monkeypatch.setenv("VLLM_PLATFORM_CACHE", str(tmp_path))
    d = tmp_path / "hub" / "acme--Llama-8B-Odd" / "main"
    copy_fixture("meta-llama--Meta-Llama-3.1-8B", d)
    (d / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": 32_121_044_992}}))
    (e,) = errors(model(model="acme/Llama-8B-Odd"))
    assert e.startswith("models[0].model: unknown model 'acme/Llama-8B-Odd': not in the catalog")
    assert ("its config.json cannot be sized: model.safetensors.index.json: computed 16.1 GB of weights, the "
            "safetensors index says 32.1 GB (-50.0%): beyond ±20%") in e


def test_the_real_fetcher_sends_the_token_and_explains_http_errors(monkeypatch):
    import io
    import urllib.error
    import urllib.request
    seen = {}

    def urlopen(req, timeout):
        seen["url"], seen["auth"] = req.full_url, req.get_header("Authorization")
        if req.full_url.endswith("gated/resolve/main/config.json"):
            raise urllib.error.HTTPError(req.full_url, 403, "Forbidden", {}, io.BytesIO())
        return io.BytesIO(b'{"ok": 1}')
    monkeypatch.setattr(urllib.request, "urlopen", urlopen)
    monkeypatch.setitem(__import__("sys").modules, "huggingface_hub", None)  # the plain-HTTPS path
    assert hub.http_fetch("acme/m", "abc", "config.json", "hf_x") == b'{"ok": 1}'
    assert seen == {"url": "https://huggingface.co/acme/m/resolve/abc/config.json", "auth": "Bearer hf_x"}
    with pytest.raises(ConnectionError, match="HTTP 403: gated: accept the model's licence on the Hub and set HF_TOKEN"):
        hub.http_fetch("acme/gated", "main", "config.json", None)
