"""A model described by its config.json is refused, naming the field, when the pinned vLLM (0.31.0) cannot serve
it: an architecture it has no generation class for (config/vllm_registry.py, read off the wheel's
vllm/model_executor/models/registry.py), a pooling-only architecture, or a quantization method it does not have."""
import json
from pathlib import Path

import pytest

from components.cli import main
from components.config import ConfigError, parse
from components.upstream.vllm_registry import GENERATION_ARCHITECTURES

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hf"
LLAMA = json.loads((FIXTURES / "meta-llama--Meta-Llama-3.1-8B" / "config.json").read_text())
EXISTING = {"cloud": "existing", "namespace": "llm",
            "existing": {"gpuNodes": {"accelerator": "h100", "gpusPerNode": 8, "vcpu": 96, "ramGib": 1000},
                         "blockStorageClass": "fast-block"},
            "modelCache": {"storageClass": "nfs-client"}}


def config_file(tmp_path: Path, **changes) -> str:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**LLAMA, **changes}))
    return str(path)


def stack(path: str, **kw) -> dict:
    return {**EXISTING, "models": [{"name": "tuned", "model": "acme/Tuned-8B", "maxModelLen": 8192,
                                    "configFile": path, **kw}]}


def errors(values: dict) -> list[str]:
    with pytest.raises(ConfigError) as e:
        parse(values, {"hfToken"})
    return e.value.errors


def test_an_architecture_vllm_has_no_class_for_is_refused_on_config_file(tmp_path):
    path = config_file(tmp_path, architectures=["AcmeForCausalLM"])
    assert errors(stack(path)) == [
        "models[0].configFile: architectures AcmeForCausalLM: vLLM 0.31 has no model class for it; serve a "
        "supported model, or try its Transformers implementation with extraArgs {--model-impl: transformers}"]
    # the stack's explicit choice of vLLM's Transformers backend lets it through
    dep = parse(stack(path, extraArgs={"--model-impl": "transformers"}), {"hfToken"}).models[0]
    assert dep.spec.architectures == ("AcmeForCausalLM",)


def test_a_removed_architecture_says_until_which_release(tmp_path):
    (e,) = errors(stack(config_file(tmp_path, architectures=["MPTForCausalLM"])))
    assert e.startswith("models[0].configFile: architectures MPTForCausalLM: vLLM 0.31 has no model class for it "
                        "(vLLM supported it until 0.28.0)")


def test_a_pooling_architecture_is_not_served_as_a_generator_even_through_transformers(tmp_path):
    path = config_file(tmp_path, architectures=["LlamaBidirectionalModel"])
    for kw in ({}, {"extraArgs": {"--model-impl": "transformers"}}):
        assert errors(stack(path, **kw)) == [
            "models[0].configFile: architectures LlamaBidirectionalModel: a pooling model (embeddings / "
            "classification) in vLLM 0.31, not a text generator"]


def test_every_fixture_architecture_is_one_vllm_serves(tmp_path):
    for cfg in sorted(FIXTURES.glob("*/config.json")):
        archs = json.loads(cfg.read_text())["architectures"]
        assert set(archs) <= GENERATION_ARCHITECTURES, cfg.parent.name


def test_a_quantization_vllm_cannot_load_is_refused_and_said_so(tmp_path):
    path = config_file(tmp_path, quantization_config={"quant_method": "bitsandbytes", "load_in_4bit": True})
    (e,) = errors(stack(path))
    assert e == (f"models[0].configFile: {path}: quantization_config.quant_method: 'bitsandbytes' is not sized, and "
                 f"vLLM 0.31 cannot load it (no such quantization method); supported: fp8, compressed-tensors, awq, "
                 f"gptq, mxfp4")
    # a method vLLM has but the planner does not size: refused without the vLLM clause
    (e,) = errors(stack(config_file(tmp_path, quantization_config={"quant_method": "modelopt"})))
    assert e.endswith("quantization_config.quant_method: 'modelopt' is not sized; supported: fp8, "
                      "compressed-tensors, awq, gptq, mxfp4")


def test_a_hub_model_of_an_unknown_architecture_names_the_model(tmp_path, monkeypatch):
    monkeypatch.setenv("VLLM_PLATFORM_CACHE", str(tmp_path))
    d = tmp_path / "hub" / "acme--Odd-8B" / "main"
    d.mkdir(parents=True)
    (d / "config.json").write_text(json.dumps({**LLAMA, "architectures": ["OddForCausalLM"]}))
    values = {**EXISTING, "models": [{"name": "odd", "model": "acme/Odd-8B", "maxModelLen": 8192}]}
    (e,) = errors(values)
    assert e.startswith("models[0].model: architectures OddForCausalLM: vLLM 0.31 has no model class for it")


def test_topology_names_model_config_for_an_unknown_architecture(tmp_path, capsys):
    path = config_file(tmp_path, architectures=["AcmeForCausalLM"])
    assert main(["topology", "--model-config", path, "--gpu", "h100"]) == 2
    assert capsys.readouterr().err.startswith(
        "--model-config: architectures AcmeForCausalLM: vLLM 0.31 has no model class for it")


def test_a_deprecated_quantization_needs_the_stacks_explicit_allowance(tmp_path):
    """vLLM 0.31 refuses fbgemm_fp8 checkpoints (Meta's FP8 release format) without --allow-deprecated-quantization."""
    path = config_file(tmp_path, quantization_config={"quant_method": "fbgemm_fp8", "activation_scale_ub": 1200.0})
    assert errors(stack(path)) == [
        "models[0].configFile: quantization_config.quant_method fbgemm_fp8: deprecated in vLLM 0.31, which refuses "
        "to load it unless extraArgs {--allow-deprecated-quantization: true}"]
    dep = parse(stack(path, extraArgs={"--allow-deprecated-quantization": True}), {"hfToken"}).models[0]
    assert dep.spec.quant_method == "fbgemm_fp8" and dep.effective_precision == "fp8"
