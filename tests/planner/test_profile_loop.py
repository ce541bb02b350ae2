"""planning.profile end to end: the Job's entrypoint (components/profiling/sweep.py, against the fake `vllm` of
tests/test_capacity_bench.py) writes rows; the stack lists them under planning.measurements; the next plan sizes the
replica from the measured knee, says so, and the profile runs no Job for the measured shapes again.

The fake's figures: mean TPOT 60 + C ms, TTFT 300 + C ms, p90 TPOT 70 + C ms, TTFT 600 + C ms at concurrency C. The
stack (tests/planner/test_measured.py, Llama-3.1-8B on 8 x H100 nodes, 1024 + 256 tokens) is held to TPOT 100 ms and
TTFT 1000 ms. On the mean: (60 + C) x 1.05 <= 100 up to C = 35, so of the measured levels 1, 2, 4, ..., 64 the knee
is 32, bound by TPOT (64 fails); on the p90 (the default percentile): (70 + C) x 1.05 <= 100 up to C = 25: 16."""
from __future__ import annotations

import json

import pytest

from components.config import parse
from components.planning import plan_deployment, plan_stack
from components.profiling import sweep
from components.wiring import profile_plans
from tests.planner.test_measured import values
from tests.test_capacity_bench import _up, gpu_machine  # noqa: F401  (the fake `vllm` and `nvidia-smi`)

SLA = {"tpotMs": 100, "ttftMs": 1000}


def stack(planning: dict, percentile: str = "mean"):
    return parse(values(planning, **SLA, latencyPercentile=percentile), {"hfToken"})


@pytest.mark.parametrize("percentile, knee", [("mean", 32), ("p90", 16)])
def test_profile_rows_become_the_plans_measured_knee(gpu_machine, monkeypatch, capsys, percentile, knee):
    tmp, port = gpu_machine
    monkeypatch.setenv("FAKE_GPUS", "8")
    # the three cheapest shapes as the estimate ranks them: TP 1, 2 and 4 of one H100 node (on the p90 the estimate
    # plans TP 4, which a profile of two shapes would leave estimated, and planned: the plan would then say so)
    profile = {"enabled": True, "candidates": 3}
    cfg = stack({"profile": profile}, percentile)
    before = plan_deployment(cfg, cfg.models[0])
    assert not before.knee_measured
    plans, problems = profile_plans(cfg, plan_stack(cfg))
    assert problems == []
    spec = plans["chat"].spec()
    assert sorted(s["id"] for s in spec["shapes"]) == ["h100-tp1", "h100-tp2", "h100-tp4"]
    # the Job, as its ConfigMap would run it; the results on this machine, not /models; the sweep to 64 users
    spec["out_dir"] = str(tmp / "profiles" / "chat")
    for s in spec["shapes"]:
        s["args"] = sweep.with_port(s["args"], port)
        s["levels"] = [c for c in s["levels"] if c <= 64]
    (tmp / "spec.json").write_text(json.dumps(spec))
    assert sweep.main([str(tmp / "spec.json")]) == 0
    assert not _up(port)
    rows = tmp / "profiles" / "chat" / "rows.json"

    cfg = stack({"profile": profile, "measurements": [str(rows)]}, percentile)
    after = plan_deployment(cfg, cfg.models[0])
    assert after.knee_measured and after.tensor_parallel_size == 1
    assert after.concurrency_per_replica == knee and after.concurrency_bound == "tpot"
    assert after.knee_source.startswith(f"measured: {rows} (7 points, ")  # TP 1, 2 and 4: 7 levels each
    assert after.est_tpot_ms == 60.0 + knee  # the fake's mean TPOT at the knee
    # the plan says so on its knee line
    from components.cli.summary import summary
    assert "concurrent/replica at 1024+256 tokens" in summary(after) and f"; measured: {rows}" in summary(after)
    # the next `pulumi up` runs no Job: every shape is measured, and the plan says how to turn the profile off
    plans, problems = profile_plans(cfg, plan_stack(cfg))
    assert problems == [] and plans["chat"].shapes == ()
    lines = plans["chat"].lines()
    assert sorted(plans["chat"].measured) == [f"h100 TP {tp} on existing-h100x8" for tp in (1, 2, 4)]
    assert lines[0].endswith("on existing-h100x8 measured (planning.measurements): not run again")
    assert lines[-1].startswith("planning.profile chat: every candidate shape is measured: no Job; set "
                                "planning.profile.enabled: false")


def test_a_measured_stack_asks_no_pool_room_and_makes_no_job(gpu_machine):
    """With every candidate measured no Job is made, so the pool's maximum is the plan's again."""
    from tests.support.plans import by_type, plan_config
    tmp, _ = gpu_machine
    rows = tmp / "rows.json"
    rows.write_text(json.dumps([
        {"id": f"chat-h100-tp{tp}-c{c}", "gpu": "h100", "model": "llama-3.1-8b", "precision": "bf16", "vllm": "0.31.0",
         "tp": tp, "pp": 1, "prompt_tokens": 1024, "output_tokens": 256, "mode": "closed", "concurrency": c,
         "tpot_ms": 60.0 + c, "ttft_ms": 300.0 + c, "output_tps": 40.0 * c, "total_tps": 200.0 * c,
         "max_model_len": 8192, "source": "test", "date": "2026-12-06",
         "notes": "p99 TPOT 90.0 ms, p99 TTFT 900.0 ms, 32 requests, 0 failed"}
        for tp in (1, 2) for c in (1, 2, 4, 8, 16, 32, 64)]))
    resources, _ = plan_config(values({"profile": {"enabled": True, "candidates": 2}, "measurements": [str(rows)]},
                                      **SLA))
    assert not [r for r in by_type(resources, "kubernetes:batch/v1:Job") if r.name.endswith("-profile")]
    # nor the profile pods' PriorityClass: it is made with the Jobs only
    assert by_type(resources, "kubernetes:scheduling.k8s.io/v1:PriorityClass") == []
