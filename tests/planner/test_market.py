"""A stack's planner only picks, and its no-fit advice only names, what the stack's capacity type can buy: GKE
sells A3 Ultra (H200) and A4 (B200) only through reservations, flex-start or Spot, so an on-demand GKE stack
that leaves the accelerator open must not plan a3-ultragpu-8g (the cheapest 8-GPU shape in the price list,
$84.81/h) only for the cluster to refuse it."""
from __future__ import annotations

import pytest

from components.config import parse
from components.offline.runner import load_stack_yaml, stack_file
from components.planner import NoFeasibleTopology
from components.planning import plan_deployment


def _gcp(model: dict, **gcp) -> tuple:
    raw = {k.split(":", 1)[1]: v for k, v in load_stack_yaml(stack_file("prod-qwen72b-gcp")).items()}
    raw["gcp"] = {**raw["gcp"], **gcp}
    raw["models"] = [{**raw["models"][0], **model}]
    for key in ("accelerator", "instanceTypes"):
        if model.get(key) is None:
            raw["models"][0].pop(key, None)
    cfg = parse(raw, secrets={"hfToken"})
    return cfg, cfg.models[0]


OPEN = {"accelerator": None, "instanceTypes": None, "model": "llama-3.1-405b", "precision": "fp8",
        "maxModelLen": 8192, "sla": {"ttftMs": 3000, "tpotMs": 60, "concurrency": 16}, "replicas": {"min": 1, "max": 4}}


def test_an_on_demand_gke_stack_never_plans_a3_ultra_or_a4():
    cfg, dep = _gcp(OPEN)
    assert plan_deployment(cfg, dep).instance_type == "a3-highgpu-8g"


def test_a_spot_gke_stack_may_plan_a3_ultra():
    cfg, dep = _gcp(OPEN, spot=True)
    assert plan_deployment(cfg, dep).instance_type == "a3-ultragpu-8g"


def test_a_pinned_unsold_machine_type_still_reaches_the_clusters_refusal():
    # pinning it is the user's explicit choice: planned, then refused by the cluster with the fix
    cfg, dep = _gcp({**OPEN, "instanceTypes": ["a3-ultragpu-8g"]})
    assert plan_deployment(cfg, dep).instance_type == "a3-ultragpu-8g"


def test_no_fit_advice_on_an_on_demand_gke_stack_names_no_unsold_accelerator():
    # TPOT 100 ms (OPEN's is 60): since the 2026-12-05 refit no accelerator an on-demand GKE stack can buy decodes
    # 405B in 60 ms with the 35 % margin, so the advice named none; at 100 ms H100 does (and H200 / B200 would, on Spot)
    cfg, dep = _gcp({**OPEN, "accelerator": "l4", "precision": "bf16",
                     "sla": {**OPEN["sla"], "tpotMs": 100}})
    with pytest.raises(NoFeasibleTopology) as e:
        plan_deployment(cfg, dep)
    assert "choose accelerator" in str(e.value)
    assert "h200" not in str(e.value) and "b200" not in str(e.value)
