"""The planner sizes replicas from the declared load at each replica's knee, and lets pipeline parallelism
cross plain Ethernet where only activations move and the SLA still holds."""
import math
from dataclasses import replace

import pytest

from components.catalog import INSTANCE_TYPES, MODELS
from components.config import ConfigError, parse
from components.planner import NoFeasibleTopology, PlanRequest, Sla, plan_topology
from components.planning import plan_request

G5 = INSTANCE_TYPES["g5.48xlarge"]  # 8 x A10G, 100 Gbps, not a fast fabric (an add-on EFA below 200 Gbps)


def ethernet_pp(inst, **sla):
    return PlanRequest(model=MODELS["llama-3.1-70b"], precision="bf16", candidates=(inst,), max_model_len=131_072,
                       sla=Sla(**{"tpot_ms": 200, "concurrency": 4, **sla}))


def test_pp_over_plain_ethernet_is_allowed_when_it_fits_the_sla():
    # awslabs/ai-on-eks serves Llama 4 Scout as TP 8 x PP 2 over two g5.48xlarge (docs/capacity.md)
    assert not G5.fast_fabric
    t = plan_topology(ethernet_pp(G5))
    assert (t.tensor_parallel_size, t.pipeline_parallel_size, t.nodes_per_replica) == (8, 2, 2)
    assert t.instance_type == "g5.48xlarge" and t.est_tpot_ms <= 200


def test_pp_is_refused_where_the_hand_off_breaks_the_sla():
    slow = replace(G5, name="g5-slow", network_gbps=0.1)
    with pytest.raises(NoFeasibleTopology) as e:
        plan_topology(ethernet_pp(slow))
    pp2 = next(r for r in e.value.refusals if (r.tp, r.pp) == (8, 2))
    assert pp2.constraint == "fabric"
    assert pp2.detail.startswith("PP 2 over efa at 0.1 Gbps: the activation hand-offs add")
    assert "to the TTFT" in pp2.detail and "> SLA 2000 ms" in pp2.detail
    # the same nodes fit once the TTFT SLA leaves room for the transfer
    assert plan_topology(ethernet_pp(slow, ttft_ms=6000)).pipeline_parallel_size == 2


def test_pp_needs_a_network_at_all():
    none = replace(G5, name="no-net", network_gbps=0)
    with pytest.raises(NoFeasibleTopology) as e:
        plan_topology(ethernet_pp(none))
    pp2 = next(r for r in e.value.refusals if (r.tp, r.pp) == (8, 2))
    assert pp2.constraint == "fabric" and "needs a network between them" in pp2.detail


def test_tensor_parallelism_never_crosses_nodes():
    t = plan_topology(ethernet_pp(G5))
    assert t.tensor_parallel_size <= t.gpus_per_node


def test_replicas_follow_the_load_at_the_knee():
    base = PlanRequest(model=MODELS["llama-3.1-8b"], precision="bf16", candidates=(INSTANCE_TYPES["g6.xlarge"],),
                       max_model_len=8192, sla=Sla(tpot_ms=150, concurrency=1), max_replicas=64,
                       kv_cache_dtypes=("auto",))
    one = plan_topology(base)
    per = one.concurrency_per_replica
    t = plan_topology(replace(base, sla=Sla(tpot_ms=150, concurrency=10 * per + 1)))
    assert t.replicas == 11 and t.concurrency_per_replica == per
    rate = one.knee_requests_per_second
    t = plan_topology(replace(base, sla=Sla(tpot_ms=150, requests_per_second=round(3.5 * rate, 3))))
    assert t.replicas == 4 and t.target_requests_per_second == round(3.5 * rate, 3)
    assert "for 3.5" not in t.reason and "requests/s" in t.reason


def test_topology_reports_the_knee_and_the_fleet_load():
    t = plan_topology(PlanRequest(model=MODELS["llama-3.1-8b"], precision="bf16",
                                  candidates=(INSTANCE_TYPES["g6.xlarge"],), max_model_len=8192,
                                  sla=Sla(tpot_ms=150, concurrency=20), min_replicas=2, max_replicas=5))
    load = t.fleet_load
    assert "fleet_load" not in t.to_dict(), "the export stays Topology's own fields (consumers rebuild it)"
    assert load["min"]["replicas"] == 2 and load["max"]["replicas"] == 5
    assert load["max"]["concurrency"] == 5 * t.concurrency_per_replica
    assert load["min"]["output_tokens_per_s"] == pytest.approx(2 * t.knee_output_tokens_per_s, abs=0.1)
    assert t.knee_total_tokens_per_s == pytest.approx(t.knee_output_tokens_per_s * (1024 + 256) / 256, rel=1e-3)
    assert t.kv_limit_concurrency >= t.concurrency_per_replica and t.knee_tpot_tail_ms >= t.est_tpot_ms - 0.01


BASE = {"cloud": "aws", "aws": {"region": "us-east-1"},
        "models": [{"name": "chat", "model": "llama-3.1-8b", "maxModelLen": 8192}]}


def with_sla(**sla):
    return {**BASE, "models": [{**BASE["models"][0], "sla": sla}]}


def test_sla_declares_users_or_a_rate_and_concurrency_stays_their_old_name():
    cfg = parse(with_sla(concurrentUsers=40), {"hfToken"})
    assert plan_request(cfg, cfg.models[0]).sla.concurrency == 40
    cfg = parse(with_sla(concurrency=24), {"hfToken"})
    assert plan_request(cfg, cfg.models[0]).sla.concurrency == 24
    cfg = parse(with_sla(requestsPerSecond=2.5), {"hfToken"})
    assert plan_request(cfg, cfg.models[0]).sla.requests_per_second == 2.5
    cfg = parse(BASE, {"hfToken"})
    sla = plan_request(cfg, cfg.models[0]).sla
    assert (sla.concurrency, sla.requests_per_second) == (16, None)


@pytest.mark.parametrize("sla,message", [
    ({"requestsPerSecond": 2, "concurrentUsers": 8},
     "models[0].sla.requestsPerSecond: give the load once: requestsPerSecond or concurrentUsers, not both"),
    ({"concurrency": 8, "concurrentUsers": 9},
     "models[0].sla.concurrentUsers: 9 differs from concurrency (8), its earlier name; set only concurrentUsers"),
])
def test_conflicting_loads_are_config_errors(sla, message):
    with pytest.raises(ConfigError) as e:
        parse(with_sla(**sla), {"hfToken"})
    assert message in e.value.errors


def test_a_rate_must_be_positive():
    with pytest.raises(ConfigError) as e:
        parse(with_sla(requestsPerSecond=0), {"hfToken"})
    assert any(err.startswith("models[0].sla.requestsPerSecond") for err in e.value.errors)
    assert math.isfinite(1.0)
