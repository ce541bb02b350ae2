"""AIConfigurator as a step-time estimator (planner/aic.py, behind planner/estimators.py): its GPU and model tables
match the aiconfigurator-core wheel, it refuses what it has no data for with a reason naming it, its step times
have the units and the shape of a step (growing with the batch, the context and the prefill chunk), and the
estimator interface hands the capacity model AIC's own figures. Skipped where the optional dependency is not
installed; the one thing checked without it is that planning never imports it."""
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from components.catalog import ACCELERATORS, MODELS, instance_types
from components.planner import aic
from components.planner import estimators
from components.planner.aic import EstimatorUnavailable
from components.planner.estimators import replica_step_cost
from components.planner.performance import EFFICIENCY

ROOT = Path(__file__).resolve().parents[2]


def test_planning_does_not_import_the_library():
    """The planner (and this module's own import) must cost nothing where the estimator is not asked for."""
    code = ("import sys, components.planner, components.planner.estimators, components.planner.aic, "
            "components.planner.capacity, components.planner.calibration\n"
            "print([m for m in sys.modules if m.split('.')[0] == 'aiconfigurator_core'])")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


core = pytest.importorskip("aiconfigurator_core")
H100, INST = ACCELERATORS["h100"], instance_types("aws", "h100")[0]
AIC = replace(EFFICIENCY, estimator="aiconfigurator")


def test_the_gpu_table_is_aics_with_its_vllm_data_versions():
    # what aiconfigurator-core 0.12.0 holds (systems/query_versions.yaml): a change of the table or the wheel fails
    assert aic.AIC_VERSION == "0.12.0"
    assert {acc: (s.system, s.vllm) for acc, s in aic.SYSTEMS.items()} == {
        "l40s": ("l40s", "0.24.0"), "a100-80gb": ("a100_sxm", "0.14.0"), "h100": ("h100_sxm", "0.24.0"),
        "h200": ("h200_sxm", "0.24.0"), "b200": ("b200_sxm", "0.24.0")}
    # every catalog GPU is either mapped or has its reason
    assert set(aic.SYSTEMS) | set(aic.NO_SYSTEM) == set(ACCELERATORS)
    assert aic.MODELS["llama-3.1-8b"] == "meta-llama/Meta-Llama-3.1-8B"
    assert set(aic.MODELS) | set(aic.MODEL_CONFIGS) <= set(MODELS)


def test_the_gpu_table_matches_the_installed_wheel():
    """The vLLM version of each system is its `current` slot in the wheel's query_versions.yaml, and the quant modes
    are those of the wheel's perf-data files of that version."""
    import pandas as pd
    import yaml
    systems = Path(core.__file__).parent / "systems"
    slots = yaml.safe_load((systems / "query_versions.yaml").read_text())
    for acc, s in aic.SYSTEMS.items():
        current = slots.get("overrides", {}).get(s.system, {}).get("vllm", slots["defaults"]["vllm"])["current"]
        assert s.vllm == current, acc
        data = systems / "data" / s.system
        held = {col: sorted(pd.read_parquet(data / kind / "vllm" / s.vllm / f"{name}_perf.parquet")[col].unique())
                for kind, name, col in (("gemm", "gemm", "gemm_dtype"), ("moe", "moe", "moe_dtype"),
                                        ("attention", "generation_attention", "kv_cache_dtype"))}
        assert (sorted(s.gemm), sorted(s.moe), sorted(s.kv)) == (
            held["gemm_dtype"], held["moe_dtype"], held["kv_cache_dtype"]), acc
    assert not list((systems / "data" / "l4").rglob("*.parquet"))  # l4.yaml is estimate-only
    # the bundled model configs exist; a listed one is read without the network
    from aiconfigurator_core.sdk.common import DefaultHFModels
    for name in aic.MODELS.values():
        assert (Path(core.__file__).parent / "model_configs" / f"{name.replace('/', '--')}_config.json").is_file()
    assert "mistralai/Mixtral-8x7B-v0.1" not in DefaultHFModels  # why _model_path copies unlisted ones locally


def test_the_estimator_interface_raises_its_own_error_class():
    assert estimators.EstimatorUnavailable is aic.EstimatorUnavailable


@pytest.mark.parametrize("gpu", ["l4", "a10g"])
def test_a_gpu_without_aic_data_is_refused_naming_it(gpu):
    why = aic.supports(MODELS["llama-3.1-8b"], "bf16", ACCELERATORS[gpu], 1, 1)
    assert why is not None and f"GPU {gpu!r}" in why and "step-model" in why
    with pytest.raises(EstimatorUnavailable, match=f"GPU '{gpu}'"):
        replica_step_cost(MODELS["llama-3.1-8b"], "bf16", ACCELERATORS[gpu], INST, 1, 1, "auto", 1000, 500, AIC)


def test_shapes_outside_aics_data_are_refused_with_the_field_named():
    a100 = ACCELERATORS["a100-80gb"]
    assert "fp8" in aic.supports(MODELS["llama-3.1-8b"], "fp8", a100, 1, 1)  # A100's vLLM data is BF16 only
    assert "kv_cache_dtype 'fp8'" in aic.supports(MODELS["llama-3.1-8b"], "bf16", a100, 1, 1, "fp8")
    assert "pp=2" in aic.supports(MODELS["llama-3.1-70b"], "bf16", H100, 4, 2)
    assert "precision 'int4'" in aic.supports(MODELS["llama-3.1-8b"], "int4", H100, 1, 1)
    other = replace(MODELS["llama-3.1-8b"], id="my-model")
    assert "model 'my-model'" in aic.supports(other, "bf16", H100, 1, 1)
    assert aic.supports(MODELS["llama-3.1-70b"], "bf16", H100, 2, 1) is None


def test_without_the_library_the_reason_says_how_to_install_it(monkeypatch):
    import importlib.util
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    why = aic.supports(MODELS["llama-3.1-8b"], "bf16", H100, 1, 1)
    assert why == "aiconfigurator-core is not installed: pip install 'vllm-platform[aiconfigurator]'"


def test_a_tp2_70b_step_on_h100_takes_tens_of_milliseconds():
    """70B at BF16 over two H100s reads ~70 GB per GPU per step at 3.35 TB/s: ~21 ms at the roofline. AIC says
    ~27.5 ms at batch 1 (0.12.0); milliseconds read as seconds, or the reverse, falls outside by 1000x."""
    cost = aic.step_cost(MODELS["llama-3.1-70b"], "bf16", H100, INST, 2, 1, "auto", 1500, 500)
    assert 0.010 < cost(1) < 0.060
    assert 0.010 < cost(0) <= cost(1)  # an empty step is never free


def test_step_time_grows_with_the_batch_the_context_and_the_prefill():
    m = MODELS["llama-3.1-8b"]
    short = aic.step_cost(m, "bf16", H100, INST, 1, 1, "auto", 500, 500)
    long = aic.step_cost(m, "bf16", H100, INST, 1, 1, "auto", 8000, 500)
    batches = [0, 0.3, 1, 1.5, 7, 64, 100, 256, 900, 1024, 1500]
    times = [short(d) for d in batches]
    assert times == sorted(times) and times[-1] > 5 * times[2]  # non-decreasing, and a big batch costs more
    assert all(long(d) > short(d) for d in (8, 64, 256))  # more KV to read per request
    assert short(64, 512) > short(64) and short(64, 2048) > short(64, 512)
    gpt = aic.step_cost(MODELS["gpt-oss-120b"], "mxfp4", H100, INST, 1, 1, "auto", 1000, 500)
    assert gpt(1) < gpt(8) < gpt(128)  # MoE: more experts touched


def test_the_estimator_interface_returns_aics_own_figures():
    """replica_step_cost with estimator "aiconfigurator" is AIC's decode step (its own engine, asked directly here:
    milliseconds, at isl + osl // 2 + 1 = the context) at the grid's points."""
    m = MODELS["llama-3.1-70b"]
    cost = replica_step_cost(m, "bf16", H100, INST, 2, 1, "auto", 1500, 500, AIC)
    assert cost is aic.step_cost(m, "bf16", H100, INST, 2, 1, "auto", 1500, 500)
    from aiconfigurator_core.sdk.engine import EngineHandle
    engine = EngineHandle.compile("meta-llama/Meta-Llama-3.1-70B", "h100_sxm", "vllm", backend_version="0.24.0",
                                  tp_size=2, moe_tp_size=2, moe_ep_size=1, gemm_quant_mode="bfloat16",
                                  moe_quant_mode="bfloat16", kvcache_quant_mode="bfloat16",
                                  fmha_quant_mode="bfloat16", comm_quant_mode="half")
    for batch in (1, 8, 64, 256):
        assert cost(batch) == pytest.approx(engine.decode_step_latency(batch, 1499, 1) / 1e3, rel=1e-9)
    step = replace(EFFICIENCY, estimator="step-model")
    assert replica_step_cost(m, "bf16", H100, INST, 2, 1, "auto", 1500, 500, step)(8) != pytest.approx(cost(8))


def test_a_model_aic_does_not_ship_is_priced_from_a_local_config():
    m = MODELS["qwen2.5-7b"]
    cost = aic.step_cost(m, "bf16", ACCELERATORS["a100-80gb"], INST, 1, 1, "auto", 1000, 500)
    assert 0.005 < cost(1) < 0.030  # 15 GB of BF16 weights at 2 TB/s: ~7.6 ms at the roofline
    folder = Path(aic._model_path(m))
    config = json.loads((folder / "config.json").read_text())
    assert config["architectures"] == ["Qwen2ForCausalLM"] and config["intermediate_size"] == 18944
    assert (config["hidden_size"], config["num_key_value_heads"]) == (m.hidden, m.kv_heads)
    # a config AIC ships but does not list would be fetched from the Hub by its id: it is read from a copy instead
    assert aic._model_path(MODELS["llama-3.1-8b"]) == "meta-llama/Meta-Llama-3.1-8B"
    mixtral = Path(aic._model_path(MODELS["mixtral-8x7b"]))
    assert json.loads((mixtral / "config.json").read_text())["architectures"] == ["MixtralForCausalLM"]


def test_the_capacity_model_runs_on_aic():
    """A calibration row through the whole capacity model (calibration.predict keeps the estimator across
    Efficiency.for_engine): AIC's figures, not the step model's."""
    from components.planner import calibration
    _, held = calibration.split()
    row = next(m for m in held if m.gpu == "h100" and m.precision == "bf16" and m.tpot_ms)
    assert AIC.for_engine(row.vllm).estimator == "aiconfigurator"
    a, s = calibration.predict(row, AIC), calibration.predict(row)
    assert a is not None and 0 < a.tpot_ms < 1e4 and a.tpot_ms != pytest.approx(s.tpot_ms)
