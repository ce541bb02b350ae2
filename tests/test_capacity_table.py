"""`python -m components capacity` (table and JSON) and the knee lines of `plan` / `topology`."""
import json

import pytest

from components.catalog import ACCELERATORS, MODELS, instance_types
from components.cli import main
from components.planner import NoFeasibleTopology, PlanRequest, plan_topology


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_capacity_table_goes_by_doubling_marks_the_knee_and_the_sla(capsys):
    code, out, _ = run(capsys, "capacity", "--model", "llama-3.1-8b", "--gpu", "h100", "--prompt-tokens", "1024",
                       "--output-tokens", "128", "--tpot-ms", "20")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("Llama-3.1-8B bf16 on p5.48xlarge (TP 1, KV auto")
    assert "1024 prompt + 128 output tokens; SLA TPOT 20 ms, TTFT 2000 ms (p90)" in lines[0]
    assert lines[1] == ("estimates are the model's; the knee keeps the p90 TPOT and TTFT a 10 % margin under the SLA "
                        "(estimate x 1.1 <= SLA): the calibration's margin for dense models, any load: 51 of 56 "
                        "held-out rows within estimate x 1.1, the worst 1.88x (step-model); TTFT and the pinned vLLM "
                        "are not in the held-out rows: a measured knee (planning.measurements, planning.profile) "
                        "settles it (docs/capacity.md#the-planning-margin-and-the-sla-percentile); the p90 figures are "
                        "the tail model's (docs/capacity.md compares it with published tails)")
    assert lines[2].split() == ["concurrency", "TPOT", "ms", "TPOT", "p90", "ms", "TPOT", "p99", "ms", "TTFT", "ms",
                                "TTFT", "p90", "ms", "TTFT", "p99", "ms", "requests/s", "output", "tok/s", "total",
                                "tok/s", "SLA"]
    rows = lines[3:-1]
    levels = [int(r.split()[0]) for r in rows]
    knee_rows = [r for r in rows if "<- knee" in r]
    assert len(knee_rows) == 1
    knee = int(knee_rows[0].split()[0])
    assert levels[:5] == [1, 2, 4, 8, 16] and {32, 64, 128, 256} <= set(levels) and knee in levels
    for level, row in zip(levels, rows):
        assert row.split()[-1] == ("yes" if level <= knee else "no")
        tpot_p90 = float(row.split()[4 if level == knee else 2])  # the table prints the model's own estimates
        assert (tpot_p90 * 1.1 <= 20) == (level <= knee), "the SLA column judges the p90 estimate with the margin"
    assert lines[-1].startswith(f"knee: {knee} concurrent requests (bound by the TPOT SLA); KV limit {levels[-1]} "
                                f"at 1152 tokens/request")


def test_capacity_json(capsys):
    code, out, _ = run(capsys, "capacity", "--model", "mixtral-8x7b", "--gpu", "h100", "--json")
    assert code == 0
    doc = json.loads(out)
    assert (doc["model"], doc["gpu"], doc["prompt_tokens"], doc["output_tokens"]) == ("mixtral-8x7b", "h100", 1024, 256)
    assert doc["sla"] == {"tpot_ms": 100.0, "ttft_ms": 2000.0, "percentile": "p90"}
    assert doc["latency_margin"] == 1.2  # the MoE class's margin (planner/margins.py)
    rows = doc["rows"]
    assert [r["concurrency"] for r in rows][:3] == [1, 2, 4] and rows[-1]["concurrency"] == doc["kv_limit"]
    assert sum(r["knee"] for r in rows) == 1
    assert {"tpot_ms", "tpot_p90_ms", "tpot_tail_ms", "ttft_ms", "ttft_p90_ms", "ttft_tail_ms", "output_tps",
            "total_tps", "sla_holds"} <= set(rows[0])
    tpots = [r["tpot_ms"] for r in rows]
    assert tpots == sorted(tpots)


@pytest.mark.parametrize("argv,message", [
    (["--model", "nope", "--gpu", "h100"], "--model: unknown model 'nope'"),
    (["--model", "llama-3.1-8b", "--gpu", "tpu"], "--gpu: unknown GPU 'tpu'"),
    (["--model", "llama-3.1-8b", "--gpu", "h100", "--tp", "3"], "--tp: 3 does not divide Llama-3.1-8B's 32"),
    (["--model", "llama-3.1-8b", "--gpu", "h100", "--output-tokens", "0"], "--output-tokens: must be > 0"),
    (["--model", "llama-3.1-8b", "--gpu", "h100", "--prompt-tokens", "40000"], "exceed --max-model-len 32768"),
])
def test_capacity_bad_input_exits_2(capsys, argv, message):
    code, _, err = run(capsys, "capacity", *argv)
    assert code == 2 and message in err


def test_capacity_nothing_fits_exits_3(capsys):
    # 754 GiB of weights: TP 1 leaves PP over single-L4 nodes, at most 8 x 20 GiB
    code, _, err = run(capsys, "capacity", "--model", "llama-3.1-405b", "--gpu", "l4", "--tp", "1")
    assert code == 3 and err.startswith("nothing fits: Llama-3.1-405B bf16 on l4 (")


def test_capacity_shows_a_table_even_when_no_shape_meets_the_sla(capsys):
    code, out, err = run(capsys, "capacity", "--model", "llama-3.1-70b", "--gpu", "h100", "--tpot-ms", "2")
    # exit 3 as `topology` does when nothing meets the SLA; the table still shows the closest shape
    assert code == 3 and "no shape meets the SLA even for one request" in out
    assert err == ("no shape meets the SLA (TPOT 2 ms, TTFT 2000 ms, p90) even for one request; the table is the "
                   "cheapest shape that fits in memory\n")
    assert "knee: 0 concurrent requests" in out and " yes" not in out


def test_capacity_works_for_every_model_on_every_gpu_it_fits(capsys):
    for m in MODELS.values():
        for gpu in ACCELERATORS:
            if not instance_types("aws", gpu):
                continue
            req = PlanRequest(model=m, precision=m.precisions[0], candidates=tuple(instance_types("aws", gpu)),
                              max_model_len=min(32768, m.max_context))
            try:
                plan_topology(req)
            except NoFeasibleTopology:
                continue
            code, out, err = run(capsys, "capacity", "--model", m.id, "--gpu", gpu, "--json")
            assert code == 0, (m.id, gpu, err)
            assert json.loads(out)["rows"], (m.id, gpu)


def test_topology_summary_shows_the_knee_and_the_fleet_load(capsys):
    code, out, _ = run(capsys, "topology", "--model", "llama-3.1-70b", "--gpu", "h100", "--tpot-ms", "30",
                       "--concurrency", "64", "--max-replicas", "8")
    assert code == 0
    knee = next(line for line in out.splitlines() if line.startswith("  knee: "))
    assert " concurrent/replica at 1024+256 tokens = " in knee and "sized for 64 concurrent users; estimated, margin " in knee  # the knee's source (docs/measurements.md)
    fleet = next(line for line in out.splitlines() if line.startswith("  fleet carries min 1 replica(s): "))
    assert "; max 8 replica(s): " in fleet and fleet.endswith("output tok/s")


def test_plan_shows_each_models_knee(capsys):
    code, out, _ = run(capsys, "plan", "prod-llama70b-aws")
    assert code == 0
    assert "  knee: " in out and "sized for 64 concurrent users" in out
    assert "  fleet carries min 2 replica(s): " in out and "; max 6 replica(s): " in out
    assert "  margin: the knee keeps the p90 TPOT and TTFT a 10 % margin under the SLA (estimate x 1.1 <= SLA): the " \
           "calibration's margin for dense models, any load" in out
    assert "  estimator: step-model; planning.estimator: auto would price it with aiconfigurator+engine" in out


def test_topology_with_a_p99_sla_says_so(capsys):
    code, out, _ = run(capsys, "topology", "--model", "llama-3.1-70b", "--gpu", "h100", "--tpot-ms", "30",
                       "--percentile", "p99")
    assert code == 0
    assert "(SLA 2000); the SLA bounds the p99 figures" in out
    assert "  margin: the knee keeps the p99 TPOT and TTFT a 10 % margin under the SLA" in out


def test_capacity_p99_marks_the_rows_by_the_tail(capsys):
    code, out, _ = run(capsys, "capacity", "--model", "llama-3.1-70b", "--gpu", "h100", "--tpot-ms", "30",
                       "--percentile", "p99", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["sla"]["percentile"] == "p99"
    for row in doc["rows"]:
        assert row["sla_holds"] == (row["tpot_tail_ms"] * 1.1 <= 30 and row["ttft_tail_ms"] * 1.1 <= 2000)
