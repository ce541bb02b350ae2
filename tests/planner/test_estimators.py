"""The estimator interface (planner/estimators.py): which estimator prices a replica, chosen per model class from the
held-out comparison (bench/estimators.py), and what the plan says about it. The AIC-priced plan needs the optional
dependency (vllm-platform[aiconfigurator]) and is skipped without it; the choice and its wording are not."""
import importlib.util
from dataclasses import replace

import pytest

from components.catalog import ACCELERATORS, INSTANCE_TYPES, MODELS
from components.planner import PlanRequest, Sla, plan_topology
from components.planner.estimators import CHOICES, ESTIMATORS, choose, replica_step_cost
from components.planner.margins import cell_for
from components.planner.performance import EFFICIENCY

P5 = INSTANCE_TYPES["p5.48xlarge"]
H100 = ACCELERATORS["h100"]
AIC_INSTALLED = importlib.util.find_spec("aiconfigurator_core") is not None


def llama70b(estimator):
    return PlanRequest(model=MODELS["llama-3.1-70b"], precision="bf16", candidates=(P5,), max_model_len=32768,
                       sla=Sla(tpot_ms=30, ttft_ms=2000, concurrency=64), kv_cache_dtypes=("auto",),
                       tensor_parallel_size=4, estimator=estimator)


def test_the_held_out_comparison_picks_aic_for_dense_and_the_step_model_for_moe():
    assert ESTIMATORS == ("step-model", "aiconfigurator", "aiconfigurator+engine")
    assert {c: (x.estimator, x.rows) for c, x in CHOICES.items()} == {
        "dense": ("aiconfigurator+engine", 46), "moe": ("step-model", 18)}
    # provisioned = median estimate x (1 + margin) / measured: lower buys fewer GPUs at the same coverage
    assert CHOICES["dense"].provisioned == {"aiconfigurator+engine": 1.359, "step-model": 1.413}
    assert CHOICES["moe"].provisioned == {"step-model": 1.794, "aiconfigurator+engine": 4.519}


def test_a_moe_model_is_always_priced_by_the_step_model():
    est, why = choose(MODELS["mixtral-8x7b"], "bf16", H100, 2, 1, "auto", "auto")
    assert est == "step-model" and why.startswith("step-model (MoE models over 18 held-out rows both price: ")


def test_the_default_setting_keeps_the_step_model_and_says_what_auto_would_do():
    est, why = choose(MODELS["llama-3.1-70b"], "bf16", H100, 4, 1, "auto")
    assert est == "step-model"
    assert why.startswith("step-model; planning.estimator: auto would price it with aiconfigurator+engine (dense "
                          "models over 46 held-out rows both price: aiconfigurator+engine: x 1.359 provisioned, median "
                          "error 22 %; step-model: x 1.413 provisioned, median error 34 %)")
    t = plan_topology(llama70b("step-model"))
    assert (t.estimator, t.concurrency_per_replica) == ("step-model", 17)


def test_auto_falls_back_to_the_step_model_where_aic_has_no_data():
    est, why = choose(MODELS["llama-3.1-8b"], "bf16", ACCELERATORS["l4"], 1, 1, "auto", "auto")
    assert est == "step-model" and why.startswith("step-model, not aiconfigurator+engine: ")
    assert "'l4'" in why


def test_the_aic_margin_cells_are_its_own():
    dense = MODELS["llama-3.1-70b"]
    # its dense 9-64 cell (0.10) is below its class's (0.20): never applied (the margin never falls as load rises)
    assert [cell_for(dense, c, "aiconfigurator+engine").margin for c in (1, 32, 100, 200)] == [0.20, 0.20, 0.20, 0.35]
    assert cell_for(MODELS["qwen3-235b-a22b"], 32, "aiconfigurator+engine").margin == 2.95


@pytest.mark.skipif(not AIC_INSTALLED, reason="needs pip install 'vllm-platform[aiconfigurator]'")
def test_auto_prices_a_dense_model_with_aic_and_buys_fewer_replicas():
    step, auto = plan_topology(llama70b("step-model")), plan_topology(llama70b("auto"))
    assert auto.estimator == "aiconfigurator+engine" and auto.estimator_why.startswith("aiconfigurator+engine (dense")
    assert (auto.estimator, auto.latency_margin) == ("aiconfigurator+engine", 0.2)
    assert (step.replicas, auto.replicas) == (4, 3) and auto.cost_per_hour <= step.cost_per_hour  # 2 nodes either way
    aic = replica_step_cost(MODELS["llama-3.1-70b"], "bf16", H100, P5, 4, 1, "auto", 1280, 512,
                            replace(EFFICIENCY, estimator="aiconfigurator+engine"))
    gpu = replica_step_cost(MODELS["llama-3.1-70b"], "bf16", H100, P5, 4, 1, "auto", 1280, 512,
                            replace(EFFICIENCY, estimator="aiconfigurator"))
    # the engine's CPU work the step model fitted rides on AIC's kernels: 0.2 ms a step + 10 us a running request
    assert aic(32) == pytest.approx(gpu(32) + 0.0002 + 32 * 1e-05)
