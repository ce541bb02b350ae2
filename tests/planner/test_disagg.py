"""planner/disagg.py: the P/D verdict (serving.disaggregation auto | on), pinned on literal cases."""
from __future__ import annotations

import re

import pytest

from components.catalog import MODELS, instance_types
from components.planner import NoFeasibleTopology, PlanRequest, Sla, plan_topology
from components.planner.disagg import kv_transfer_s, plan_disaggregation, production_problems


def _req(model, cloud, types, prompt, output, ttft, tpot, users, max_model_len=32768, percentile="mean"):
    """The mean SLA: these tests are about the P/D verdict, pinned before the p90 default."""
    pool = tuple(i for i in instance_types(cloud) if i.name in types)
    return PlanRequest(MODELS[model], "bf16", pool, max_model_len,
                       Sla(ttft, tpot, users, prompt, output, latency_percentile=percentile))


def _pd(req, mode="auto", gateway=True):
    return plan_disaggregation(req, plan_topology(req), mode, gateway)


VERDICT = re.compile(r"^P/D: (\d+) prefill \+ (\d+) decode instances \(TP \d on (\d+) x p5\.48xlarge, \$[\d,.]+/h\), "
                     r"\$/M tok at the declared load \$[\d,.]+ vs aggregated \$[\d,.]+ \((\d+) replica\(s\), "
                     r"\$[\d,.]+/h\): (chosen|not chosen) because ")


def test_long_prompts_disaggregate():
    """16k-token prompts, 300-token answers, a 40 ms TPOT: the aggregated replicas are TPOT-bound by the prefill
    chunks beside their decodes; P/D decodes without them and needs fewer nodes."""
    t = _pd(_req("llama-3.1-70b", "aws", ["p5.48xlarge"], 16000, 300, 5000, 40, 32))
    d = t.disaggregation
    m = VERDICT.match(d.verdict)
    assert m and m.group(5) == "chosen", d.verdict
    assert "cheaper at the declared load: decode runs without prefill chunks beside it" in d.verdict
    assert d.chosen and t.disaggregated and d.transport == "rdma" and d.backend == "LIBFABRIC"
    assert d.nodes < d.aggregated_cost_per_hour / 55.04  # fewer p5 nodes than the aggregated plan pays for
    # the chosen fleet is the plan's: instances of both roles at its minimum; its maximum both pools at their
    # autoscaling bounds, replicas.max (64, PlanRequest's default) split 5:1 (floor(64 x 5 / 6) = 53, the rest 11)
    assert (t.replicas, t.min_replicas, t.max_replicas) == (6, 6, 64)
    assert (d.prefill_instances, d.decode_instances, d.prefill_max, d.decode_max) == (5, 1, 53, 11)
    assert (t.nodes, d.nodes, t.max_nodes) == (3, 3, 32) and t.cost_per_hour == d.cost_per_hour  # 2 TP-4 a p5
    # what the pools scale on: one prompt queued per prefill instance, the prefill side's share of the 5 s TTFT
    # (less the 39.45 ms KV transfer and the 34.1 ms decode step)
    assert (d.prefill_queue, d.prefill_ttft_ms, d.decode_concurrency) == (1, 4926.4, 28)


def test_pool_bounds_split_replicas_max_by_the_plans_ratio():
    from components.planner.disagg import pool_bounds
    assert pool_bounds(5, 1, 9) == (7, 2)
    assert pool_bounds(4, 2, 10) == (6, 4)
    assert pool_bounds(1, 5, 6) == (1, 5)  # no room: each pool keeps its planned instances
    assert pool_bounds(3, 3, 7) == (3, 4)  # the prefill share rounds down, decode takes the rest


def test_short_prompts_stay_aggregated():
    t = _pd(_req("llama-3.1-8b", "aws", ["p5.48xlarge"], 256, 256, 2000, 50, 64, 16384))
    d = t.disaggregation
    assert not d.chosen and not t.disaggregated
    assert VERDICT.match(d.verdict).group(5) == "not chosen"
    assert d.verdict.endswith("it saves less than 10% at the declared load (1 vs 1 node(s)); prompts of 256 tokens "
                              "leave little prefill to take off the decode instances")
    assert t.replicas == plan_topology(_req("llama-3.1-8b", "aws", ["p5.48xlarge"], 256, 256, 2000, 50, 64,
                                            16384)).replicas


def test_kv_transfer_over_efa():
    """70B: 80 layers x 8 KV heads x 128 x 2 (K, V) x 2 bytes = 327,680 bytes a token, 81,920 per TP-4 rank;
    16,000 tokens = 1.31 GB a rank over its 400 Gbps of a p5's 3,200 at 70 %: 37.4 ms, plus 2 ms."""
    p5 = next(i for i in instance_types("aws") if i.name == "p5.48xlarge")
    assert kv_transfer_s(MODELS["llama-3.1-70b"], 4, "auto", p5, 16000) * 1e3 == pytest.approx(39.45, abs=0.01)


def test_off_is_the_aggregated_plan():
    req = _req("llama-3.1-70b", "aws", ["p5.48xlarge"], 16000, 300, 5000, 40, 32)
    agg = plan_topology(req)
    assert plan_disaggregation(req, agg, "off") is agg and agg.disaggregation is None


def test_multi_node_model_refused_when_forced():
    req = _req("llama-3.1-405b", "aws", ["p5.48xlarge"], 4096, 256, 5000, 100, 8, 16384)
    with pytest.raises(NoFeasibleTopology) as e:
        _pd(req, "on")
    assert e.value.message == (
        "serving.disaggregation: on, but llama-3.1-405b needs 2 nodes per replica (2 x p5.48xlarge) and no "
        "single-node shape fits; P/D here runs each prefill and each decode instance on one node (a Deployment "
        "each): wide P/D across nodes (LeaderWorkerSet) is future work; set serving.disaggregation: auto or off")
    assert _pd(req, "auto").disaggregation.verdict == (
        "P/D not chosen: no single-node shape of llama-3.1-405b on an RDMA fabric (the plan: 2 node(s) per replica "
        "on p5.48xlarge)")


NO_FABRIC = ("g2-standard-48 has no GPU fabric, no RDMA NIC NIXL can use: the KV cache would move over UCX's TCP "
             "transport on the pod network")


def test_no_fabric_auto_keeps_aggregated_on_warns_and_production_refuses():
    req = _req("llama-3.1-8b", "gcp", ["g2-standard-48"], 8000, 200, 4000, 60, 16, 16384)
    assert _pd(req).disaggregation.verdict == f"P/D not chosen: {NO_FABRIC}"
    forced = _pd(req, "on")
    assert forced.disaggregated and forced.disaggregation.transport == "tcp"
    assert forced.disaggregation.verdict.endswith(f"chosen because serving.disaggregation: on; ⚠ {NO_FABRIC}")
    assert production_problems(False, {"m": forced}) == []
    assert production_problems(True, {"m": forced}) == [
        f"serving.disaggregation: on serves llama-3.1-8b P/D in production without an RDMA fabric: {NO_FABRIC}; pin "
        f"models[].instanceTypes to a type with EFA / GPUDirect RDMA / InfiniBand, or set serving.disaggregation: "
        f"auto (which then keeps it aggregated) or off"]


def test_no_gateway_and_scale_to_zero_are_refused_when_forced():
    req = _req("llama-3.1-70b", "aws", ["p5.48xlarge"], 16000, 300, 5000, 40, 32)
    with pytest.raises(NoFeasibleTopology, match=r"^serving\.disaggregation: on needs the gateway \(gateway\.enabled\): "
                                                 r"its endpoint picker schedules each request's prefill and decode "
                                                 r"instances$"):
        _pd(req, "on", gateway=False)
    from dataclasses import replace
    t = _pd(replace(req, min_replicas=0))
    assert t.disaggregation.verdict == ("P/D not chosen: serving.disaggregation: auto for llama-3.1-70b, whose "
                                        "replicas.min is 0: P/D pools never scale to zero (each keeps its "
                                        "planned instances); scale to zero needs aggregated serving")
