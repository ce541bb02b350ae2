"""The capacity model (components/planner/capacity.py): latency and throughput of one replica under load."""
from dataclasses import replace

import pytest

from components.catalog import ACCELERATORS, INSTANCE_TYPES, MODELS
from components.planner.capacity import ReplicaShape, Workload, at_capacity, at_load, knee, sweep, sweep_levels
from components.planner.performance import step_cost, weight_bytes_read_per_step


def shape(model="llama-3.1-8b", inst="p5.48xlarge", tp=1, pp=1, kv_tokens=400_000, acc=None, seqs=1024):
    i = INSTANCE_TYPES[inst]
    a = acc or ACCELERATORS[i.accelerator]
    m = MODELS[model]
    return ReplicaShape(m, m.precisions[0], a, i, tp, pp, "auto", kv_tokens, 8192, seqs)


def users(c, prompt=1024, output=128):
    return Workload(prompt, output, concurrency=c)


def test_tpot_grows_with_the_batch():
    r = shape()
    tpots = [at_load(r, users(c)).tpot_ms for c in (1, 4, 16, 64, 256)]
    assert tpots == sorted(tpots) and tpots[-1] > 2 * tpots[0]


def test_ttft_grows_with_concurrency():
    r = shape()
    ttfts = [at_load(r, users(c)).ttft_ms for c in (1, 8, 64, 256)]
    assert ttfts == sorted(ttfts) and ttfts[-1] > 2 * ttfts[0]
    tails = [at_load(r, users(c)).ttft_tail_ms for c in (1, 8, 64, 256)]
    assert all(t >= m for t, m in zip(tails, ttfts)), "the p99 is never below the mean"


def test_throughput_grows_with_concurrency_and_output_is_its_share_of_the_total():
    r = shape()
    pts = [at_load(r, users(c)) for c in (1, 8, 64)]
    assert [p.output_tps for p in pts] == sorted(p.output_tps for p in pts)
    for p in pts:
        assert p.total_tps == pytest.approx(p.output_tps * (1024 + 128) / 128)
        assert p.concurrency == pytest.approx(round(p.concurrency))


def test_the_knee_moves_down_when_the_sla_tightens():
    r, w = shape(), Workload(1024, 128)
    knees = [knee(r, w, tpot, 2000).concurrency for tpot in (60, 30, 20)]
    assert knees[0] > knees[1] > knees[2] >= 1
    k = knee(r, w, 20, 2000)  # the p90 figures, the calibration's margin for the model's class at that load
    assert (k.percentile, k.margin) == ("p90", 0.1) and k.margin_cell.startswith("dense models, any load")
    assert k.bound == "tpot" and k.point.tpot_p90_ms * 1.1 <= 20, "the p90 estimate stays 10 % under the SLA"
    assert at_load(r, users(k.concurrency + 1)).tpot_p90_ms * 1.1 > 20, "one more user breaks the SLA with the margin"
    assert knee(r, w, 20, 2000, margin=0).concurrency > k.concurrency, "without the margin the knee is higher"
    assert knee(r, w, 20, 2000, percentile="mean").concurrency > k.concurrency, "the mean is below the p90"


def test_a_tight_ttft_binds_the_knee():
    k = knee(shape(), Workload(4096, 128), 500, 400)
    assert k.bound == "ttft" and k.concurrency >= 1 and k.point.ttft_ms * 1.35 <= 400


def test_the_kv_cache_caps_the_knee():
    r = shape(kv_tokens=11_520)  # ten requests of 1024 + 128 tokens
    k = knee(r, Workload(1024, 128), 1000, 100_000)
    assert (k.kv_limit, k.concurrency, k.bound) == (10, 10, "kv-cache")
    assert knee(shape(seqs=4), Workload(1024, 128), 1000, 100_000).bound == "max-num-seqs"


def test_no_knee_when_one_request_misses_the_sla():
    k = knee(shape(), Workload(1024, 128), 1.0, 2000)
    assert k.concurrency == 0 and k.bound == "tpot"


def test_kv_reads_grow_with_context():
    r = shape()
    short, long = at_load(r, users(32, prompt=512)), at_load(r, users(32, prompt=16_384))
    cost_short = step_cost(r.model, "bf16", r.acc, r.inst, 1, 1, "auto", 1_000)
    cost_long = step_cost(r.model, "bf16", r.acc, r.inst, 1, 1, "auto", 100_000)
    assert cost_long(32) > cost_short(32) * 2
    assert long.tpot_ms > short.tpot_ms


def test_moe_steps_read_only_the_experts_their_tokens_touch():
    m = MODELS["mixtral-8x7b"]
    one, eight, many = (weight_bytes_read_per_step(m, "bf16", b) for b in (1, 8, 1024))
    total = m.weight_bytes("bf16")
    assert one < 0.45 * total  # 2 of 8 experts plus the dense part
    assert one < eight < many <= total and many == pytest.approx(total, rel=1e-6)


def test_tp_all_reduce_costs_more_over_pcie_than_nvlink():
    h100 = ACCELERATORS["h100"]
    pcie = replace(h100, link="pcie", link_gbps=25)
    nv = at_load(shape("llama-3.1-70b", tp=4), users(1))
    pc = at_load(shape("llama-3.1-70b", tp=4, acc=pcie), users(1))
    # Both links now pay the fitted 30 us all-reduce latency (the PCIe estimate, 25 us, is below it), so the
    # difference is bandwidth: 80 layers x 2 all-reduces x 24,576 bytes a token (2 x 3/4 x 8192 x 2) over 25 GB/s
    # vs NVLink's 450 = 157 - 9 us = 0.149 ms per token in a step: 0.15 ms on the lone request's decode steps and
    # ~152 ms on the step that prefills its 1024-token prompt beside it, which adds ~0.5 ms to the mean TPOT
    assert pc.tpot_ms - nv.tpot_ms > 0.5


def test_pipeline_bubble_and_ethernet_hand_offs_cost_time():
    one_stage = at_load(shape("llama-3.1-70b", "g5.48xlarge", tp=8), users(1))
    two_stages = at_load(shape("llama-3.1-70b", "g5.48xlarge", tp=8, pp=2), users(1))
    assert two_stages.tpot_ms > one_stage.tpot_ms, "a lone request waits for both stages and the hand-off"
    slow = replace(INSTANCE_TYPES["g5.48xlarge"], network_gbps=1)
    r = replace(shape("llama-3.1-70b", "g5.48xlarge", tp=8, pp=2), inst=slow)
    assert at_load(r, users(16)).ttft_ms > at_load(shape("llama-3.1-70b", "g5.48xlarge", tp=8, pp=2),
                                                  users(16)).ttft_ms


def test_an_arrival_rate_beyond_capacity_is_saturated():
    r = shape()
    top = at_capacity(r, Workload(1024, 128))
    ok = at_load(r, Workload(1024, 128, arrival_rate=top.arrival_rate * 0.5))
    assert not ok.saturated and ok.arrival_rate == pytest.approx(top.arrival_rate * 0.5, rel=1e-3)
    assert at_load(r, Workload(1024, 128, arrival_rate=top.arrival_rate * 3)).saturated


def test_sweep_goes_by_doubling_to_the_kv_limit_and_includes_the_knee():
    assert sweep_levels(100) == [1, 2, 4, 8, 16, 32, 64, 100]
    assert sweep_levels(1) == [1]
    pts, k = sweep(shape(kv_tokens=115_200), Workload(1024, 128), 20, 2000)
    levels = [round(p.concurrency) for p in pts]
    assert levels[-1] == k.kv_limit == 100 and k.concurrency in levels
