"""planning.latencyMargin and planning.measurements (components/config/planning.py, components/catalog/measured.py,
components/planner/measured.py; docs/measurements.md).

The stack: Llama-3.1-8B on an existing cluster of 8 x H100 nodes, 1024 + 256 tokens, TPOT 20 ms, TTFT 1000 ms,
200 users. The estimated knees pinned here (69 at margin 0, 35 at margin 0.5, ...) depend on the calibrated step
model (components/planner/calibrated.py): a refit moves them, and every one is planned with an explicit margin, so
that a change of the calibration's default (capacity.LATENCY_MARGIN) moves none. The measured knees depend only on
the fixture tests/fixtures/measurements/FIXTURE-llama8b-h100-tp1.json, whose figures are FABRICATED for these tests
(no GPU ran them): C = 1 ... 64, mean TPOT 7.0, 7.3, 8.0, 9.5, 12.0, 19.5, 30.0 ms; p99 TPOT 7.4, 7.8, 8.6, 10.4,
19.5, 22.0, 40.0 ms.

Since the 2026-12-05 refit the estimate for Llama-3.1-8B on H100 is two to four times faster than the fixture's
figures (69 users at TP 1 where the fixture holds 16), so at the default margin an estimated TP 2 (4 replicas on one
node) beats 13 measured TP 1 replicas on two nodes. The tests that need the measured TP 1 planned set
latencyMargin 1.0 (TP 2's estimate then needs two nodes too, and TP 1 wins on GPUs per replica) or 128 users (8
measured TP 1 replicas fit one node).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from components.catalog.measured import read
from components.config import ConfigError, parse
from components.planner import NoFeasibleTopology, evaluate
from components.planning import plan_deployment, plan_request
from components.cli.summary import summary
from components.wiring import validated_plan
from policies.rules import evaluate_resources
from policies.rules.core import StackResource

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "measurements"
ROWS = "FIXTURE-llama8b-h100-tp1.json"
SOURCE = "measured: FIXTURE-llama8b-h100-tp1.json (7 points, 2026-12-01)"


def values(planning: dict | None = None, environment: str = "dev", **sla) -> dict:
    v = {"cloud": "existing", "environment": environment,
         "existing": {"gpuNodes": {"accelerator": "h100", "gpusPerNode": 8, "vcpu": 96, "ramGib": 1000,
                                   "pricePerNodeHour": 98.32},
                      "blockStorageClass": "fast-block", "networkPolicyEnforced": True},
         "modelCache": {"storageClass": "nfs-client"},
         "models": [{"name": "chat", "model": "llama-3.1-8b", "maxModelLen": 8192, "replicas": {"min": 2, "max": 64},
                     "sla": {"tpotMs": 20, "ttftMs": 1000, "concurrency": 200, "promptTokens": 1024,
                             "outputTokens": 256, "latencyPercentile": "mean", **sla}}]}
    if planning is not None:
        v["planning"] = planning
    return v


def stack(planning: dict | None = None, base_dir: Path = FIXTURES, **sla):
    return parse(values(planning, **sla), {"hfToken"}, base_dir=base_dir)


def plan(planning: dict | None = None, **sla):
    cfg = stack(planning, **sla)
    return plan_deployment(cfg, cfg.models[0])


def errors(planning, base_dir: Path = FIXTURES) -> list[str]:
    with pytest.raises(ConfigError) as e:
        stack(planning, base_dir)
    return e.value.errors


# --- planning.latencyMargin ---------------------------------------------------------------------------------------

def test_the_stacks_margin_moves_the_estimated_knee_and_the_replicas():
    none, half = plan({"latencyMargin": 0.0}), plan({"latencyMargin": 0.5})
    assert (none.concurrency_per_replica, none.replicas, none.concurrency_bound) == (69, 3, "tpot")
    assert (half.concurrency_per_replica, half.replicas, half.concurrency_bound) == (35, 6, "tpot")
    assert (none.latency_margin, half.latency_margin) == (0.0, 0.5)
    assert half.knee_source == "estimated, margin 50 %" and not half.knee_measured
    assert round(half.est_tpot_ms, 2) == 13.31  # x 1.5 = 19.96 <= 20
    assert "  margin: the knee keeps the mean TPOT and TTFT a 50 % margin under the SLA (estimate x 1.5 <= SLA): " \
           "planning.latencyMargin, for every model of the stack in place of the calibration's margin by model " \
           "class and load (docs/measurements.md)\n" in summary(half)


def test_a_refusal_for_latency_names_the_stacks_margin():
    cfg = stack({"latencyMargin": 0.5}, tpotMs=5)
    refusals = evaluate(plan_request(cfg, cfg.models[0]))[1]
    (tp1,) = [r for r in refusals if r.tp == 1]
    assert tp1.constraint == "tpot" and "with the 50 % planning margin > SLA 5 ms" in tp1.detail


@pytest.mark.parametrize("margin", [1.5, -0.1])
def test_the_margin_is_bounded(margin):
    assert errors({"latencyMargin": margin}) == [
        f"planning.latencyMargin: {margin:g} is outside 0-1: it is the share the knee keeps the estimated TPOT and "
        f"TTFT under the SLA (0.2 = estimate x 1.2 <= SLA); set it between 0 and 1, or remove it for the "
        f"calibration's default"]


def test_the_bounds_themselves_are_accepted():
    assert stack({"latencyMargin": 0}).planning.latency_margin == 0.0
    assert stack({"latencyMargin": 1}).planning.latency_margin == 1.0


# --- planning.measurements ----------------------------------------------------------------------------------------

def test_a_measured_shape_takes_its_knee_from_the_measurements():
    # the model-error margin does not apply to measurements (1.0, was 0.5: at 0.5 an estimated TP 2 is now cheaper)
    t = plan({"measurements": ROWS, "latencyMargin": 1.0})
    # 32 users measured 19.5 ms: x 1.05 = 20.5 > 20; 16 users 12.0 ms
    assert (t.tensor_parallel_size, t.concurrency_per_replica, t.concurrency_bound, t.replicas) == (1, 16, "tpot", 13)
    assert t.knee_measured and t.knee_source == SOURCE and t.knee_notes == ()
    assert (t.est_tpot_ms, t.est_ttft_ms, t.knee_tpot_tail_ms, t.knee_ttft_tail_ms) == (12.0, 80.0, 19.5, 180.0)
    assert t.knee_requests_per_second == 5.0957  # 1,304.5 output tok/s / 256 tokens
    assert t.max_num_seqs == 16


def test_only_the_measured_shape_changes():
    cfg = stack({"measurements": ROWS, "latencyMargin": 0.0})
    fits = {f.tp: f for f in evaluate(plan_request(cfg, cfg.models[0]))[0]}
    assert (fits[1].concurrency, fits[1].knee_source) == (16, SOURCE)
    unmeasured = {f.tp: f for f in evaluate(plan_request(stack({"latencyMargin": 0.0}), cfg.models[0]))[0]}
    for tp in (2, 4, 8):
        assert fits[tp].knee_source == "" and fits[tp].concurrency == unmeasured[tp].concurrency
    assert unmeasured[1].concurrency == 69


def test_a_p99_sla_reads_the_measured_p99():
    cfg = stack({"measurements": ROWS}, latencyPercentile="p99")
    (tp1,) = [f for f in evaluate(plan_request(cfg, cfg.models[0]))[0] if f.tp == 1]
    assert (tp1.concurrency, tp1.bound) == (8, "tpot")  # 16 users: p99 19.5 ms x 1.05 > 20


def test_an_unmeasured_planned_shape_says_the_measurements_are_of_another():
    t = plan({"measurements": ROWS}, latencyPercentile="p99")  # TP 2 (estimated) beats TP 1's measured 8 users
    assert t.tensor_parallel_size == 2 and not t.knee_measured
    assert t.knee_notes == ("planning.measurements hold h100 TP 1 (FIXTURE-llama8b-h100-tp1.json), not the planned "
                            "h100 TP 2: its knee is estimated",)


def test_the_plan_names_the_file():
    text = summary(plan({"measurements": ROWS, "latencyMargin": 1.0}))  # margin 1.0: TP 1 (measured) is planned
    assert "sized for 200 concurrent users; " + SOURCE + "\n" in text
    assert "\n  measured TPOT 12.00 ms (SLA 20), TTFT 80 ms (SLA 1000)\n" in text
    assert ("\n  margin: the knee is the highest measured concurrency whose mean TPOT and TTFT x 1.05 meet the SLA "
            "(5 % for measurement noise; planning.latencyMargin is for estimates, docs/measurements.md)\n") in text


def test_measurements_at_other_lengths_are_not_used_and_the_plan_warns():
    t = plan({"measurements": ROWS, "latencyMargin": 0.0}, promptTokens=2048)
    assert not t.knee_measured and t.knee_source == "estimated, margin 0 %"
    assert (t.tensor_parallel_size, t.concurrency_per_replica) == (1, 37)
    warning = ("MEASUREMENT NOT USED: planning.measurements FIXTURE-llama8b-h100-tp1.json (h100 TP 1) was measured at "
               "1024+256 prompt+output tokens, not within 5 % of the SLA's 2048+256: the knee is estimated; measure "
               "at --random-input-len 2048 --random-output-len 256 (bench/bench_serve.py does)")
    assert t.knee_notes == (warning,)
    assert f"\n  WARNING: {warning}" in summary(t)


def test_lengths_within_five_percent_are_used():
    # margin 1.0 so that TP 1 (the measured shape) is planned where its measurements are used
    assert plan({"measurements": ROWS, "latencyMargin": 1.0}, promptTokens=1000).knee_measured  # 1024 is 2.4 % off
    assert not plan({"measurements": ROWS, "latencyMargin": 1.0}, promptTokens=970).knee_measured  # 5.6 % off


def test_a_shape_missing_the_sla_at_its_lowest_measured_concurrency_is_refused():
    cfg = stack({"measurements": ROWS}, tpotMs=7)
    (tp1,) = [r for r in evaluate(plan_request(cfg, cfg.models[0]))[1] if r.tp == 1]
    assert (tp1.constraint, tp1.detail) == ("tpot", "measured TPOT 7.0 ms at concurrency 1 "
                                                    "(FIXTURE-llama8b-h100-tp1.json); 7.4 ms with the 5 % measurement "
                                                    "margin > SLA 7 ms")


def _result(c: int, tpot: float, model: str = "chat", **kw) -> dict:
    """A `vllm bench serve --save-result` result (keys of vLLM 0.31 vllm/benchmarks/serve.py); FABRICATED figures."""
    n = 8 * c
    return {"date": "20261202-101500", "backend": "openai-chat", "model_id": model, "max_concurrency": c,
            "num_prompts": n, "request_rate": "inf", "completed": n, "failed": 0, "total_input_tokens": 1024 * n,
            "total_output_tokens": 256 * n, "request_throughput": c / 2.5, "output_throughput": c / 2.5 * 256,
            "total_token_throughput": c / 2.5 * 1280, "mean_tpot_ms": tpot, "p99_tpot_ms": tpot * 1.2,
            "mean_ttft_ms": 90.0, "p99_ttft_ms": 200.0, **kw}


def test_a_directory_of_vllm_results_with_its_shape_stated(tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    for c, tpot in ((1, 5.0), (2, 6.0), (4, 7.0), (8, 20.0)):
        (raw / f"c{c}.json").write_text(json.dumps(_result(c, tpot)))
    cfg = stack({"measurements": [{"file": "raw", "accelerator": "h100", "tp": 2}], "latencyMargin": 0.0},
                base_dir=tmp_path)
    fits = {f.tp: f for f in evaluate(plan_request(cfg, cfg.models[0]))[0]}
    assert (fits[2].concurrency, fits[2].bound, fits[2].knee_source) == (4, "tpot", "measured: raw (4 points, 2026-12-02)")
    assert fits[2].at_knee.arrival_rate == 1.6 and fits[1].knee_source == ""


def test_rows_bench_serve_writes_carry_their_p99_through(tmp_path):
    from tests.test_capacity_bench import bench_serve
    row = bench_serve.parse_result(_result(4, 7.0), row_id="r", gpu="h100", model="llama-3.1-8b", precision="bf16",
                                   vllm="0.31.0", tp=1, pp=1, concurrency=4, max_model_len=8192, source="s",
                                   date="2026-12-02")
    (tmp_path / "rows.json").write_text(json.dumps([row]))
    (shape,) = read(tmp_path / "rows.json", "rows.json")
    (p,) = shape.points
    assert (shape.model, shape.accelerator, shape.tp, shape.precision) == ("llama-3.1-8b", "h100", 1, "bf16")
    assert (p.concurrency, p.tpot_ms, p.tpot_p99_ms, p.ttft_p99_ms, p.prompt_tokens) == (4, 7.0, 8.4, 200.0, 1024.0)


# --- bad measurements: the field, the file and the fix ------------------------------------------------------------

def test_a_file_that_is_not_json(tmp_path):
    (tmp_path / "bad.json").write_text("{not json")
    assert errors({"measurements": "bad.json"}, tmp_path) == [
        "planning.measurements[0].file: bad.json: not JSON (Expecting property name enclosed in double quotes: line 1 "
        "column 2 (char 1)); give the rows file bench/bench_serve.py writes or a `vllm bench serve --save-result` "
        "result"]


def test_a_missing_file(tmp_path):
    (e,) = errors({"measurements": ["nowhere.json"]}, tmp_path)
    assert e == ("planning.measurements[0].file: nowhere.json: cannot read it (No such file or directory); a relative "
                 "path is relative to the stack file's directory")


def test_a_vllm_result_needs_its_shape(tmp_path):
    (tmp_path / "c4.json").write_text(json.dumps(_result(4, 7.0)))
    assert errors({"measurements": "c4.json"}, tmp_path) == [
        "planning.measurements[0].file: c4.json: a `vllm bench serve` result does not record the GPU or the tensor "
        "parallelism: give them beside the file ({file: ..., accelerator: h100, tp: 1})"]


def test_an_open_loop_vllm_result_is_refused(tmp_path):
    (tmp_path / "c4.json").write_text(json.dumps(_result(4, 7.0, max_concurrency=None)))
    assert errors({"measurements": [{"file": "c4.json", "accelerator": "h100", "tp": 1}]}, tmp_path) == [
        "planning.measurements[0].file: c4.json: max_concurrency is None: the run was not closed-loop; rerun "
        "`vllm bench serve` with --max-concurrency C (bench/bench_serve.py does)"]


def test_measurements_of_another_model_are_refused(tmp_path):
    (tmp_path / "c4.json").write_text(json.dumps(_result(4, 7.0, model="other-model")))
    assert errors({"measurements": [{"file": "c4.json", "accelerator": "h100", "tp": 1}]}, tmp_path) == [
        "planning.measurements[0]: 'other-model' (c4.json) is none of the stack's models: chat (llama-3.1-8b); set "
        "model: to the deployment's name"]


def test_a_rows_file_takes_no_shape_beside_it():
    (e,) = errors({"measurements": [{"file": ROWS, "accelerator": "h100", "tp": 1}]})
    assert e.startswith(f"planning.measurements[0].file: {ROWS}: a bench/bench_serve.py rows file states its GPU")


# --- production: an estimated knee keeps the calibration's margin ---------------------------------------------------

def prod(planning: dict):
    v = {**values(planning, environment="prod"), "gateway": {"tls": {"mode": "secret", "secretName": "api-tls"}}}
    return parse(v, {"hfToken"}, base_dir=FIXTURES)


def test_production_refuses_a_small_margin_on_an_estimated_knee():
    with pytest.raises(ConfigError) as e:
        validated_plan(prod({"latencyMargin": 0.02}))
    (line,) = [x for x in e.value.errors if x.startswith("planning.latencyMargin")]
    # the floor is the calibration's cell for the model's class and load at the knee (dense, 65-127 requests: a thin
    # cell, so the dense class's 10 %)
    assert line == ("planning.latencyMargin: 0.02 is below the calibration's 0.1 for chat (dense models, any load: "
                    "51 of 56 held-out rows within estimate x 1.1, the worst 1.88x (step-model)) "
                    "and its knee on h100 TP 1 is estimated, in production; measure that shape (planning.profile, or "
                    "bench/bench_serve.py) and list the file under planning.measurements (docs/measurements.md), or "
                    "set planning.latencyMargin to 0.1 or more")


def test_production_takes_a_small_margin_where_the_shape_is_measured():
    plan_ = validated_plan(prod({"latencyMargin": 0.02, "measurements": ROWS}))
    assert plan_["chat"].knee_measured


def _workload(knee: str, margin: str, env: str = "prod", calibrated: str | None = None) -> list[StackResource]:
    ns = StackResource("kubernetes:core/v1:Namespace", "ns", {"metadata": {
        "name": "vllm", "labels": {"vllm-platform/environment": env}}})
    notes = {"vllm-platform/knee": knee, "vllm-platform/latency-margin": margin}
    if calibrated is not None:
        notes["vllm-platform/calibrated-margin"] = calibrated
    dep = StackResource("kubernetes:apps/v1:Deployment", "chat", {"metadata": {
        "name": "chat", "namespace": "vllm", "annotations": notes}})
    return [ns, dep]


def test_the_policy_refuses_an_estimated_knee_under_the_floor_in_production():
    def refused(resources):
        return [v.message for v in evaluate_resources(resources) if v.rule == "latency-margin-in-production"]
    (msg,) = refused(_workload("estimated", "0.05"))  # no calibrated cell on the workload: every row's 0.35
    assert msg.startswith("Deployment chat is sized from an estimated knee with a latency margin of 0.05, below the "
                          "calibration's 0.35 for its model class and load, in production")
    assert refused(_workload("measured", "0.05")) == []
    assert refused(_workload("estimated", "0.05", env="dev")) == []
    assert refused(_workload("estimated", "1")) == []
    # the workload's own cell: a dense model at 9-64 requests keeps 5 %, a MoE model 120 %
    assert refused(_workload("estimated", "0.05", calibrated="0.05")) == []
    (msg,) = refused(_workload("estimated", "0.35", calibrated="1.2"))
    assert "latency margin of 0.35, below the calibration's 1.2 for its model class and load" in msg
    (msg,) = refused(_workload("estimated", "0.05", calibrated="0"))  # never a cell: every row's margin instead
    assert "below the calibration's 0.35" in msg


def test_the_pd_sizing_judges_with_the_stacks_margin():
    from dataclasses import replace

    from components.planner.disagg import _size
    cfg = stack({"latencyMargin": 0.0})
    req = plan_request(cfg, cfg.models[0])
    (fit,) = [f for f in evaluate(req)[0] if f.tp == 1]
    sized = {m: _size(replace(req, latency_margin=m), fit) for m in (0.0, 0.5)}
    # the largest decode batch whose pure-decode step x (1 + margin) meets the 20 ms TPOT: 19.9 ms at margin 0, 13.3 ms
    # at 0.5 (the nodes have no network, so the KV transfer then refuses P/D either way)
    assert sized[0.0].startswith("TTFT: prefill 34 ms + KV transfer inf ms + a decode step 19.9 ms > SLA 1000 ms")
    assert sized[0.5].startswith("TTFT: prefill 34 ms + KV transfer inf ms + a decode step 13.3 ms > SLA 1000 ms")


def test_the_deployment_carries_its_knee_source_and_margin():
    from tests.support.plans import one, plan_config
    # 128 users: 8 measured TP 1 replicas on one node (at 200 an estimated TP 2 is cheaper since the 2026-12-05 refit)
    v = values({"measurements": str(FIXTURES / ROWS), "latencyMargin": 0.1}, concurrency=128)
    dep = one(plan_config(v)[0], "kubernetes:apps/v1:Deployment", "vllm-chat-deployment")
    assert dep.inputs["metadata"]["annotations"] == {"vllm-platform/knee": "measured",
                                                     "vllm-platform/latency-margin": "0.05",  # measurement noise
                                                     "vllm-platform/calibrated-margin": "0.1"}
    assert "vllm-platform/knee" not in (dep.inputs["spec"]["template"]["metadata"].get("annotations") or {})
