"""SLO-driven autoscaling (issue 39, docs/autoscaling.md): serving.autoscaling / models[].replicas.autoscaling slo on
an aggregated model, and the P/D pools of the worked stack tests/stacks/Pulumi.pd-onprem.yaml, each on its own
signals within the plan's bounds. Everything a user would notice is pinned literally: trigger names, queries,
thresholds, bounds, the plan's lines, the policy verdicts and the config errors."""
from __future__ import annotations

import copy
import functools
from pathlib import Path

from components.cli import main
from components.config import ConfigError, parse
from policies.rules import MANDATORY, StackResource, evaluate_resources
from tests.support.aws import G6
from tests.support.plans import by_type, plan_config, planned

SCALEDOBJECT = "kubernetes:keda.sh/v1alpha1:ScaledObject"
SERVICEMONITOR = "kubernetes:monitoring.coreos.com/v1:ServiceMonitor"
PD_STACK = str(Path(__file__).resolve().parents[1] / "stacks" / "Pulumi.pd-onprem.yaml")
SMALL = 'namespace="vllm",model_name="small"'


def _g6(serving: dict | None = None, replicas: dict | None = None) -> dict:
    cfg = copy.deepcopy(G6)
    if serving:
        cfg["serving"] = serving
    if replicas:
        cfg["models"][0]["replicas"] = {**cfg["models"][0]["replicas"], **replicas}
    return cfg


def _triggers(resources, name: str | None = None) -> dict[str, dict]:
    (so,) = [r for r in by_type(resources, SCALEDOBJECT) if name is None or r.inputs["metadata"]["name"] == name]
    return {t["name"]: t for t in so.inputs["spec"]["triggers"]}


@functools.lru_cache(maxsize=None)
def _slo():
    return plan_config(_g6({"autoscaling": "slo"}))[0]


@functools.lru_cache(maxsize=None)
def _pd():
    return planned(PD_STACK).resources


def _pd_spec(role: str) -> dict:
    (so,) = [r for r in by_type(_pd(), SCALEDOBJECT) if r.inputs["metadata"]["name"] == f"llama-70b-{role}"]
    return so.inputs["spec"]


def test_the_default_queue_mode_renders_what_it_did():
    trig = _triggers(plan_config(_g6())[0])
    assert [(n, t["metadata"]["threshold"]) for n, t in trig.items()] == [("waiting-requests", "2"),
                                                                           ("kv-cache-usage", "0.9")]


def test_slo_mode_scales_on_the_knee_the_queue_kv_and_the_sla_tails():
    trig = _triggers(_slo())
    # the knee: 12 concurrent requests per g6.xlarge replica at the SLA (the plan's concurrency per replica)
    assert [(n, t["metadata"]["threshold"], t["metricType"]) for n, t in trig.items()] == [
        ("in-flight-requests", "12", "AverageValue"), ("waiting-requests", "2", "AverageValue"),
        ("kv-cache-usage", "0.9", "AverageValue"), ("ttft-tail", "1", "AverageValue"),
        ("tpot-tail", "1", "AverageValue")]
    # in flight = running + waiting: running alone is capped by --max-num-seqs, which is the knee itself
    assert trig["in-flight-requests"]["metadata"]["query"] == (
        f"sum(vllm:num_requests_running{{{SMALL}}}) + sum(vllm:num_requests_waiting{{{SMALL}}})")
    # the SLA's p90 TTFT (2000 ms default) over 2 minutes: N + 1 + floor(N / 10) pods while more than 10 % of the
    # requests are slower than the SLA's bucket bound (2.5 s: vLLM has none at 2 s), else 0; N counts pods, not series
    pods = (f"(count(count by (pod) (vllm:num_requests_running{{{SMALL}}})) + 1 + "
            f"floor(count(count by (pod) (vllm:num_requests_running{{{SMALL}}})) / 10))")
    assert trig["ttft-tail"]["metadata"]["query"] == (
        f"{pods} * ((1 - sum(rate(vllm:time_to_first_token_seconds_bucket{{{SMALL},le=\"2.5\"}}[2m])) / "
        f"sum(rate(vllm:time_to_first_token_seconds_count{{{SMALL}}}[2m]))) > bool 0.1)"
        f" * (sum(increase(vllm:time_to_first_token_seconds_count{{{SMALL}}}[2m])) >= bool 10)")
    # TPOT 100 ms is a bucket bound: exact
    assert trig["tpot-tail"]["metadata"]["query"] == (
        f"{pods} * ((1 - sum(rate(vllm:request_time_per_output_token_seconds_bucket{{{SMALL},le=\"0.1\"}}[2m])) / "
        f"sum(rate(vllm:request_time_per_output_token_seconds_count{{{SMALL}}}[2m]))) > bool 0.1)"
        f" * (sum(increase(vllm:request_time_per_output_token_seconds_count{{{SMALL}}}[2m])) >= bool 10)")
    assert "histogram_quantile" not in trig["ttft-tail"]["metadata"]["query"]  # interpolates inside a bucket
    # no traffic in the window: NaN / empty, which KEDA reads as 0 only with ignoreNullValues
    assert all(t["metadata"]["ignoreNullValues"] == "true" for t in trig.values())


def test_a_p99_sla_needs_a_hundred_requests_and_a_mean_sla_reads_sum_over_count():
    p99 = copy.deepcopy(_g6({"autoscaling": "slo"}))
    p99["models"][0]["sla"]["latencyPercentile"] = "p99"
    q = _triggers(plan_config(p99)[0])["ttft-tail"]["metadata"]["query"]
    assert q.endswith(") > bool 0.01) * (sum(increase(vllm:time_to_first_token_seconds_count"
                      f"{{{SMALL}}}[2m])) >= bool 100)")
    mean = copy.deepcopy(p99)
    mean["models"][0]["sla"]["latencyPercentile"] = "mean"
    q = _triggers(plan_config(mean)[0])["tpot-tail"]["metadata"]["query"]
    assert (f"((sum(rate(vllm:request_time_per_output_token_seconds_sum{{{SMALL}}}[2m])) / "
            f"sum(rate(vllm:request_time_per_output_token_seconds_count{{{SMALL}}}[2m]))) > bool 0.1)") in q
    assert q.endswith(">= bool 10)")


def test_a_model_overrides_the_stacks_mode():
    trig = _triggers(plan_config(_g6(replicas={"autoscaling": "slo"}))[0])
    assert list(trig) == ["in-flight-requests", "waiting-requests", "kv-cache-usage", "ttft-tail", "tpot-tail"]
    trig = _triggers(plan_config(_g6({"autoscaling": "slo"}, {"autoscaling": "queue"}))[0])
    assert list(trig) == ["waiting-requests", "kv-cache-usage"]


def test_slo_mode_at_zero_keeps_the_wake_up_and_one_running_trigger():
    trig = _triggers(plan_config(_g6({"autoscaling": "slo"}, {"min": 0, "firstRequest": "retry"}))[0])
    assert list(trig) == ["in-flight-requests", "waiting-requests", "kv-cache-usage", "ttft-tail", "tpot-tail",
                          "gateway-queue"]
    assert trig["ttft-tail"]["metadata"]["activationThreshold"] == "0"


def test_the_prefill_pool_scales_on_its_queue_and_its_ttft_share():
    s = _pd_spec("prefill")
    # 4 prefill + 2 decode instances planned; replicas.max 10 split 4:2 -> prefill 6, decode 4
    assert (s["scaleTargetRef"]["name"], s["minReplicaCount"], s["maxReplicaCount"]) == ("llama-70b-prefill", 4, 6)
    assert s["fallback"] == {"failureThreshold": 4, "replicas": 4, "behavior": "currentReplicasIfHigher"}
    trig = {t["name"]: t["metadata"] for t in s["triggers"]}
    sel = 'namespace="llm",model_name="llama-70b",llm_d_ai_role="prefill"'
    assert list(trig) == ["waiting-requests", "ttft-tail"]
    assert (trig["waiting-requests"]["query"], trig["waiting-requests"]["threshold"]) == (
        f"sum(vllm:num_requests_waiting{{{sel}}})", "4")
    # 5000 ms SLA less the KV transfer and the first decode step: 4943 ms on the prefill pods' own TTFT, read at
    # vLLM's bucket bound 5 s
    assert trig["ttft-tail"]["query"] == (
        f"(count(count by (pod) (vllm:num_requests_running{{{sel}}})) + 1 + "
        f"floor(count(count by (pod) (vllm:num_requests_running{{{sel}}})) / 10))"
        f" * ((1 - sum(rate(vllm:time_to_first_token_seconds_bucket{{{sel},le=\"5.0\"}}[2m])) / "
        f"sum(rate(vllm:time_to_first_token_seconds_count{{{sel}}}[2m]))) > bool 0.1)"
        f" * (sum(increase(vllm:time_to_first_token_seconds_count{{{sel}}}[2m])) >= bool 10)")


def test_the_decode_pool_scales_on_its_batch_kv_and_tpot():
    s = _pd_spec("decode")
    assert (s["scaleTargetRef"]["name"], s["minReplicaCount"], s["maxReplicaCount"]) == ("llama-70b-decode", 2, 4)
    sel = 'namespace="llm",model_name="llama-70b",llm_d_ai_role="decode"'
    trig = {t["name"]: t["metadata"] for t in s["triggers"]}
    assert [(n, m["threshold"]) for n, m in trig.items()] == [
        ("in-flight-requests", "76"), ("waiting-requests", "8"), ("kv-cache-usage", "0.9"), ("tpot-tail", "1")]
    assert trig["in-flight-requests"]["query"] == (
        f"sum(vllm:num_requests_running{{{sel}}}) + sum(vllm:num_requests_waiting{{{sel}}})")
    assert trig["kv-cache-usage"]["query"] == f"sum(vllm:kv_cache_usage_perc{{{sel}}})"
    # 40 ms is inside vLLM's 25-50 ms bucket: read exactly at 50 ms (all at 30 ms is no breach)
    assert (f"((1 - sum(rate(vllm:request_time_per_output_token_seconds_bucket{{{sel},le=\"0.05\"}}[2m])) / "
            f"sum(rate(vllm:request_time_per_output_token_seconds_count{{{sel}}}[2m]))) > bool 0.1)"
            ) in trig["tpot-tail"]["query"]


def test_the_pools_series_carry_their_role():
    (monitor,) = by_type(_pd(), SERVICEMONITOR)
    assert monitor.inputs["spec"]["podTargetLabels"] == ["llm-d.ai/role"]
    # an aggregated model's series need no role
    (monitor,) = by_type(_slo(), SERVICEMONITOR)
    assert "podTargetLabels" not in monitor.inputs["spec"]


def test_the_plan_says_what_each_pool_scales_on_and_its_bounds(capsys):
    assert main(["plan", PD_STACK]) == 0
    out = capsys.readouterr().out
    assert ("  autoscaling (serving.autoscaling: slo) prefill pool 4-6 instances (KEDA, 15 s polls):\n"
            "    waiting-requests > 4/instance: prompts waiting (vLLM vllm:num_requests_waiting): the planner's prefill "
            "queue, the TTFT budget left for queueing over one prompt's prefill\n"
            "    ttft-tail: prefill TTFT (the SLA less the KV transfer and first decode step) (vLLM "
            "vllm:time_to_first_token_seconds): more than 10% of requests over 2m slower than 5000 ms (vLLM's first "
            "bucket bound at or above the 4943 ms SLA): one more\n"
            "  autoscaling (serving.autoscaling: slo) decode pool 2-4 instances (KEDA, 15 s polls):\n"
            "    in-flight-requests > 76/instance: requests in flight (vLLM vllm:num_requests_running + "
            "vllm:num_requests_waiting): the planner's decode batch within the TPOT SLA (its --max-num-seqs, which "
            "caps running alone)\n"
            "    waiting-requests > 8/instance: requests waiting (vLLM vllm:num_requests_waiting)\n"
            "    kv-cache-usage > 0.9/instance: KV-cache usage (vLLM vllm:kv_cache_usage_perc)\n"
            "    tpot-tail: TPOT (vLLM vllm:request_time_per_output_token_seconds): more than 10% of requests over 2m "
            "slower than 50 ms (vLLM's first bucket bound at or above the 40 ms SLA): one more\n"
            ) in out
    assert "FIXED P/D POOLS" not in out and "NO HEADROOM" not in out
    assert "policy pack: 0 mandatory violation(s)" in out  # pd-pools-autoscaled-in-production, keda-replica-bounds


def test_config_errors_name_the_field():
    def errors(values):
        try:
            parse(values, {"hfToken"})
        except ConfigError as e:
            return e.errors
        return []
    assert errors(_g6({"autoscaling": "fast"})) == ["serving.autoscaling: Input should be 'queue' or 'slo' "
                                                    "(got 'fast')"]
    assert errors(_g6(replicas={"autoscaling": "latency"})) == [
        "models[0].replicas.autoscaling: Input should be 'queue' or 'slo' (got 'latency')"]


NS = StackResource("kubernetes:core/v1:Namespace", "ns", {"metadata": {
    "name": "llm", "labels": {"vllm-platform/environment": "prod"}}})


def _pool(role: str) -> StackResource:
    return StackResource("kubernetes:apps/v1:Deployment", f"d-{role}", {
        "metadata": {"name": f"m-{role}", "namespace": "llm"},
        "spec": {"template": {"metadata": {"labels": {"llm-d.ai/role": role}},
                              "spec": {"containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.31.0"}]}}}})


def _scaler(target: str, low: int = 1, high: int = 2) -> StackResource:
    return StackResource(SCALEDOBJECT, f"so-{target}", {"metadata": {"name": target, "namespace": "llm"}, "spec": {
        "scaleTargetRef": {"name": target}, "minReplicaCount": low, "maxReplicaCount": high, "triggers": []}})


def _verdicts(rule: str, *resources) -> list:
    return [v for v in evaluate_resources([NS, *resources]) if v.rule == rule]


def test_a_production_pd_pool_without_a_scaledobject_is_refused():
    got = _verdicts("pd-pools-autoscaled-in-production", _pool("prefill"), _pool("decode"), _scaler("m-decode"))
    assert len(got) == 1 and got[0].level == MANDATORY
    assert got[0].message.startswith("P/D Deployment m-prefill (llm-d.ai/role prefill) in production has no KEDA "
                                     "ScaledObject: its pool cannot grow past its planned instances")
    assert _verdicts("pd-pools-autoscaled-in-production", _pool("prefill"), _scaler("m-prefill")) == []


def test_a_scaledobject_whose_min_is_above_its_max_is_refused():
    got = _verdicts("keda-replica-bounds", _scaler("m-decode", 5, 4))
    assert len(got) == 1 and got[0].level == MANDATORY
    assert got[0].message.startswith("minReplicaCount 5 is above maxReplicaCount 4")
    assert _verdicts("keda-replica-bounds", _scaler("m-decode", 4, 4)) == []
