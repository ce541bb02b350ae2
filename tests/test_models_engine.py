"""A model described by its own config.json (models[].configFile, or the Hub's, cached) is served like a catalog
model: the same engine options, the same gated-repository token rule, the same prefetch and pinned revision.
models[].revision is one field: the Hub commit served, and the commit a Hub config.json is read at; weights
from S3 / GCS / a PVC have no revision."""
import json
import shutil
from pathlib import Path

import pytest

from components.cli import main
from components.config import ConfigError, parse
from components.planning import plan_stack
from components.wiring import cache_args
from tests.support.plans import manifests, plan_config

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "hf"
REV = "0123456789abcdef0123456789abcdef01234567"
EXISTING = {"cloud": "existing", "namespace": "llm",
            "existing": {"gpuNodes": {"accelerator": "h100", "gpusPerNode": 8, "vcpu": 96, "ramGib": 1000},
                         "blockStorageClass": "fast-block"},
            "modelCache": {"storageClass": "nfs-client"}}


def llama_8b(tmp_path: Path) -> str:
    d = tmp_path / "llama"
    d.mkdir(exist_ok=True)
    shutil.copy(FIXTURES / "meta-llama--Meta-Llama-3.1-8B" / "config.json", d / "config.json")
    return str(d / "config.json")


def tuned(tmp_path, **kw) -> dict:
    return {**EXISTING, "models": [{"name": "tuned", "model": "acme/Llama-3.1-8B-Tuned", "maxModelLen": 8192,
                                    "configFile": llama_8b(tmp_path), **kw}]}


def errors(values: dict, secrets=frozenset({"hfToken"})) -> list[str]:
    with pytest.raises(ConfigError) as e:
        parse(values, set(secrets))
    return e.value.errors


def test_a_config_file_model_takes_the_engine_options_of_a_catalog_model(tmp_path):
    cfg = parse(tuned(tmp_path, engine={"toolCallParser": "llama3_json", "maxNumSeqs": 32,
                                        "speculative": {"method": "ngram", "numSpeculativeTokens": 3}},
                      extraArgs={"--max-logprobs": 5}), {"hfToken"})
    args = list(plan_stack(cfg)["tuned"].vllm_args)
    assert args[0] == "acme/Llama-3.1-8B-Tuned"
    assert args[args.index("--tool-call-parser") + 1] == "llama3_json" and "--enable-auto-tool-choice" in args
    assert args[args.index("--max-num-seqs") + 1] == "32" and args[args.index("--max-logprobs") + 1] == "5"
    assert json.loads(args[args.index("--speculative-config") + 1])["num_speculative_tokens"] == 3
    # and the same refusals: an engine flag extraArgs may not set
    assert errors(tuned(tmp_path, extraArgs={"--max-num-seqs": 8})) == [
        "models[0].extraArgs: --max-num-seqs: set by the platform; use engine.maxNumSeqs"]


def test_a_config_file_model_in_a_gated_org_needs_the_token_and_others_do_not(tmp_path):
    parse(tuned(tmp_path), set())  # acme/ is not gated: no token needed
    gated = tuned(tmp_path)
    gated["models"][0]["model"] = "meta-llama/Llama-3.1-8B-Tuned"
    (e,) = errors(gated, set())
    assert e.startswith("hfToken: missing; set the Hugging Face token")
    assert "models[0] (tuned) downloads meta-llama/Llama-3.1-8B-Tuned is a gated repository; any gated or private " \
           "Hugging Face repository needs the token" in e


def test_a_config_file_models_revision_reaches_the_cache_the_prefetch_and_vllm(tmp_path):
    values = tuned(tmp_path, revision=REV)
    cfg = parse(values, {"hfToken"})
    assert cache_args(cfg, plan_stack(cfg)).revisions == {"acme/Llama-3.1-8B-Tuned": REV}
    objs = manifests(plan_config(values)[0]).values()
    job = next(m for m in objs if m["kind"] == "Job")
    assert f"hf download acme/Llama-3.1-8B-Tuned --revision {REV}" in job["spec"]["template"]["spec"]["containers"][0]["command"][-1]
    d = next(m for m in objs if m["kind"] == "Deployment")
    assert f"--revision {REV} --tokenizer-revision {REV}" in " ".join(d["spec"]["template"]["spec"]["containers"][0]["args"])


def test_revision_is_refused_for_weights_outside_the_hub(tmp_path):
    values = tuned(tmp_path, revision=REV, source={"kind": "s3", "uri": "s3://acme-models/llama-tuned",
                                                   "serviceAccount": "model-reader"})
    assert errors(values) == ["models[0].revision: pins a Hugging Face commit; source kind s3 has no revisions"]
    values["models"][0].pop("revision")
    t = plan_stack(parse(values, {"hfToken"}))["tuned"]
    assert t.vllm_args[0] == "/models/sources/s3-acme-models-llama-tuned" == t.model_repo


def test_the_revision_selects_the_hub_config_json_that_sizes_the_model(tmp_path, monkeypatch):
    monkeypatch.setenv("VLLM_PLATFORM_CACHE", str(tmp_path))
    pinned = tmp_path / "hub" / "acme--Qwen3-32B-Pinned" / REV
    pinned.mkdir(parents=True)
    shutil.copy(FIXTURES / "Qwen--Qwen3-32B" / "config.json", pinned / "config.json")
    values = {**EXISTING, "models": [{"name": "pinned", "model": "acme/Qwen3-32B-Pinned", "maxModelLen": 8192,
                                      "revision": REV}]}
    assert parse(values, set()).models[0].spec.layers == 64  # Qwen3-32B num_hidden_layers
    values["models"][0].pop("revision")  # main is not cached: offline, the model cannot be sized
    (e,) = errors(values)
    assert e.startswith("models[0].model: unknown model 'acme/Qwen3-32B-Pinned': not in the catalog")
    assert f"cached at {tmp_path}/hub/acme--Qwen3-32B-Pinned/main/config.json" in e


def test_topology_model_config_plans_what_the_stack_plans(tmp_path, capsys):
    path = llama_8b(tmp_path)
    assert main(["topology", "--model", "acme/Llama-3.1-8B-Tuned", "--model-config", path, "--gpu", "l4",
                 "--max-model-len", "8192", "--kv-cache-dtype", "fp8", "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    values = {"cloud": "aws", "aws": {"region": "us-east-1"},
              "models": [{"name": "cli", "model": "acme/Llama-3.1-8B-Tuned", "configFile": path, "accelerator": "l4",
                          "maxModelLen": 8192, "kvCacheDtype": "fp8", "replicas": {"min": 1, "max": 64}}]}
    stack = plan_stack(parse(values, {"hfToken"}))["cli"].to_dict()
    for key in ("instance_type", "tensor_parallel_size", "kv_cache_dtype", "kv_cache_tokens", "precision"):
        assert cli[key] == stack[key], key
    unnamed = [cli["vllm_args"], stack["vllm_args"]]
    for args in unnamed:  # the CLI serves the model under its own name
        del args[args.index("--served-model-name") + 1]
    assert unnamed[0] == unnamed[1]
    assert unnamed[0][unnamed[0].index("--kv-cache-dtype") + 1] == "fp8"


def test_topology_revision_must_be_a_commit(tmp_path, capsys):
    path = llama_8b(tmp_path)
    assert main(["topology", "--model-config", path, "--revision", "main", "--gpu", "h100"]) == 2
    assert capsys.readouterr().err.startswith("--revision: String should match pattern '^[0-9a-f]{40}$'")


def test_mtp_speculation_follows_the_config_json(tmp_path):
    """num_nextn_predict_layers in a config.json allows `mtp` as it does for the catalog's DeepSeek-V3."""
    def values(fixture: str) -> dict:
        d = tmp_path / fixture
        d.mkdir()
        shutil.copy(FIXTURES / fixture / "config.json", d / "config.json")
        return {**EXISTING, "models": [{"name": "spec", "model": f"acme/{fixture.split('--')[1]}", "maxModelLen": 8192,
                                        "configFile": str(d / "config.json"),
                                        "engine": {"speculative": {"method": "mtp", "numSpeculativeTokens": 1}}}]}
    assert parse(values("deepseek-ai--DeepSeek-V3"), {"hfToken"}).models[0].spec.mtp_layers == 1
    assert errors(values("Qwen--Qwen3-32B")) == [
        "models[0].engine.speculative.method: mtp: Qwen3-32B has no multi-token-prediction layers "
        "(num_nextn_predict_layers); use ngram, eagle, eagle3 or draft_model"]


ENGINE = {"maxNumSeqs": 32, "toolCallParser": "llama3_json",
          "speculative": {"method": "ngram", "numSpeculativeTokens": 3},
          "lora": {"maxLoras": 2, "maxLoraRank": 16}}


def test_topology_takes_the_stacks_engine_options_and_sizes_them_alike(tmp_path, capsys):
    path = llama_8b(tmp_path)
    assert main(["topology", "--model", "acme/Llama-3.1-8B-Tuned", "--model-config", path, "--gpu", "l4",
                 "--max-model-len", "8192", "--engine", json.dumps(ENGINE), "--extra-args", '{"--max-logprobs": 5}',
                 "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    values = {"cloud": "aws", "aws": {"region": "us-east-1"},
              "models": [{"name": "cli", "model": "acme/Llama-3.1-8B-Tuned", "configFile": path, "accelerator": "l4",
                          "maxModelLen": 8192, "engine": ENGINE, "extraArgs": {"--max-logprobs": 5},
                          "replicas": {"min": 1, "max": 64}}]}
    stack = plan_stack(parse(values, {"hfToken"}))["cli"].to_dict()
    assert (cli["kv_cache_tokens"], cli["engine_notes"]) == (stack["kv_cache_tokens"], stack["engine_notes"])
    assert "memory: LoRA slots" in cli["engine_notes"][-1]  # the LoRA slots were sized, as in the stack
    args = cli["vllm_args"]
    assert args[args.index("--max-num-seqs") + 1] == "32" and args[args.index("--max-lora-rank") + 1] == "16"
    assert args[-2:] == ["--max-logprobs", "5"]


@pytest.mark.parametrize("argv, line", [
    (["--engine", '{"maxNumSeqs": 0}'], "--engine maxNumSeqs: Input should be greater than or equal to 1 (got 0)"),
    (["--extra-args", '{"--max-num-seqs": 3}'], "--extra-args: --max-num-seqs: set by the platform; use engine.maxNumSeqs"),
    (["--engine", "{x"], "--engine: not JSON (Expecting property name enclosed in double quotes: line 1 column 2 "
                         "(char 1)); give the stack file's models[].engine block as JSON"),
])
def test_topology_engine_errors_name_the_option(argv, line, capsys):
    assert main(["topology", "--model", "llama-3.1-8b", "--gpu", "l4", *argv]) == 2
    assert line in capsys.readouterr().err.splitlines()
