"""Scale to zero (replicas.min 0) in dev and staging: KEDA wakes the model on the gateway's queued requests,
the first request's wait is planned and printed, and production refuses it (config and policy)."""
from __future__ import annotations

import copy

import pytest

from components.cache.component import CacheFacts
from components.cli import serving_lines
from components.config import ConfigError, parse
from components.offline.runner import load_stack_yaml, stack_file
from components.planning import plan_stack
from components.wiring import validated_plan
from components.serving.cold_start import cold_start, cold_start_seconds, first_request_timeout_s
from policies.rules import evaluate_resources
from policies.rules.core import MANDATORY, StackResource
from tests.support.plans import by_type, plan_config, prod_gateway
from tests.support.aws import G6

SCALEDOBJECT = "kubernetes:keda.sh/v1alpha1:ScaledObject"
RULE = "no-scale-to-zero-in-production"


def at_zero(base: dict = G6, environment: str = "dev") -> dict:
    cfg = copy.deepcopy(base)
    cfg["environment"] = environment
    cfg["models"][0]["replicas"] = {"min": 0, "max": 3, "firstRequest": "retry"}
    if environment == "prod":
        cfg["gateway"] = prod_gateway(cfg["cloud"])
    return cfg


@pytest.fixture(scope="module")
def dev_zero():
    return plan_config(at_zero())


def triggers(resources) -> dict:
    (so,) = by_type(resources, SCALEDOBJECT)
    return {t["name"]: t for t in so.inputs["spec"]["triggers"]}


def test_a_dev_model_may_scale_to_zero(dev_zero):
    resources, _ = dev_zero
    (so,) = by_type(resources, SCALEDOBJECT)
    assert so.inputs["spec"]["minReplicaCount"] == 0
    assert so.inputs["spec"]["maxReplicaCount"] == 3
    assert "idleReplicaCount" not in so.inputs["spec"]  # must be below minReplicaCount: meaningless at 0
    # idle before 1 -> 0: the cold start (1540 s, test_the_plan_prints_the_wait_of_the_first_request), not KEDA's
    # 300 s: a client that gave up after the gateway's 503 does not send a half-started model back to zero
    assert so.inputs["spec"]["cooldownPeriod"] == 1540



def test_the_gateway_queue_wakes_the_model(dev_zero):
    wake = triggers(dev_zero[0])["gateway-queue"]
    assert wake["type"] == "prometheus" and wake["metricType"] == "AverageValue"
    meta = wake["metadata"]
    # the EPP's flow-control queue of this model's InferencePool, in the model's namespace
    # llm-d-router v0.10.0's current name (the GAIE name it also sets is deprecated there)
    assert meta["query"] == 'sum(llm_d_epp_flow_control_queue_size{namespace="vllm",inference_pool="small"})'
    assert meta["activationThreshold"] == "0"  # one held request (value 1 > 0) activates 0 -> 1
    assert meta["threshold"] == "2"  # the waiting-requests threshold: a tenth of 12 concurrent (the knee), rounded up
    assert meta["serverAddress"] == "http://kube-prometheus-stack-prometheus.monitoring.svc:9090"


def test_the_model_stays_up_while_it_answers_and_kv_usage_never_keeps_it_awake(dev_zero):
    t = triggers(dev_zero[0])
    running = t["running-requests"]["metadata"]
    assert running["query"] == 'sum(vllm:num_requests_running{namespace="vllm",model_name="small"})'
    assert (running["activationThreshold"], running["threshold"]) == ("0", "12")  # 12 concurrent per replica (the knee)
    assert t["waiting-requests"]["metadata"]["activationThreshold"] == "0"
    assert t["kv-cache-usage"]["metadata"]["activationThreshold"] == "1"  # a 0-1 gauge never exceeds it


def test_models_with_a_minimum_keep_their_two_triggers():
    resources, _ = plan_config(G6)
    t = triggers(resources)
    assert set(t) == {"waiting-requests", "kv-cache-usage"}
    assert all("activationThreshold" not in x["metadata"] for x in t.values())
    (so,) = by_type(resources, SCALEDOBJECT)
    assert so.inputs["spec"]["minReplicaCount"] == 1
    assert so.inputs["spec"]["cooldownPeriod"] == 300  # KEDA's wait only matters at 0; kept at its 5 min


def test_the_plan_prints_the_wait_of_the_first_request(dev_zero):
    summary = dev_zero[1]["serving"]["small"]
    line = serving_lines(summary)
    # EKS: activation 15 s scrape + 15 s KEDA poll, a new g6 node 900 s, the image 300 s, the start-up budget
    # 300 s (15 GiB over EFS with the Run:ai streamer), one readiness period 10 s
    assert ("  scale to zero: idle replicas go to 0; the model is back up to 1540 s (~26 min: activation 30 s + "
            "GPU node 900 s + image pull 300 s + start-up 300 s + readiness 10 s) after the first request"
            ) in line.splitlines()
    assert summary["coldStart"]["totalS"] == 1540
    # what the client gets meanwhile: held 270 s, then 503 with Retry-After 30 (gateway/wake.py)
    assert summary["firstRequest"] == {"holdS": 270, "status": 503, "retryAfterS": 30}


def test_a_model_with_a_minimum_prints_no_cold_start():
    _, exports = plan_config(G6)
    assert "coldStart" not in exports["serving"]["small"]
    assert "scale to zero" not in serving_lines(exports["serving"]["small"])


@pytest.fixture(scope="module")
def small():
    return plan_stack(parse(at_zero(), {"hfToken"}))["small"]


def test_cold_start_seconds_per_cache_and_cluster(small):
    efs = CacheFacts(kind="rwx", read_gbps=1.5)
    nvme = CacheFacts(kind="nvme", read_gbps=2.0)
    # a node the cluster creates, shared cache: the weights are still there
    assert cold_start_seconds(small, efs, 900) == 30 + 900 + 300 + 300 + 10
    # node-local cache: the new node's NVMe is empty, 15 GiB come from the Hub again
    c = cold_start(small, nvme, 900)
    assert c.cache_fill_s > 0 and c.image_pull_s == 300
    assert c.total_s == 30 + 900 + c.cache_fill_s + 300 + 300 + 10
    # an existing cluster keeps its GPU nodes (and their pre-pulled image and cache)
    assert cold_start_seconds(small, nvme, 0) == 30 + 300 + 10
    # the gateway's route timeout: the cold start, then the longest answer (drain: 4096 tokens at 100 ms)
    assert first_request_timeout_s(small, efs, 900) == 1540 + 410


def test_staging_may_scale_to_zero_too():
    t = validated_plan(parse(at_zero(environment="staging"), {"hfToken"}))["small"]
    assert (t.min_replicas, t.min_nodes) == (0, 0)


def test_production_refuses_min_zero_naming_the_field():
    with pytest.raises(ConfigError) as e:
        validated_plan(parse(at_zero(environment="prod"), {"hfToken"}))
    assert e.value.errors == [
        "models[0].replicas.min: 0 (scale to zero) is for dev and staging; production keeps at least one replica "
        "of small warm (its first request would wait a whole cold start); set min >= 1"]


def test_every_refused_model_is_named_at_once():
    cfg = at_zero(environment="prod")
    cfg["models"].append({**copy.deepcopy(cfg["models"][0]), "name": "second"})
    with pytest.raises(ConfigError) as e:
        validated_plan(parse(cfg, {"hfToken"}))
    assert [x.split(":")[0] for x in e.value.errors] == ["models[0].replicas.min", "models[1].replicas.min"]


def test_scale_to_zero_needs_the_gateway_whose_queue_wakes_the_model():
    cfg = at_zero()
    cfg["gateway"] = {"enabled": False}
    with pytest.raises(ConfigError) as e:
        validated_plan(parse(cfg, {"hfToken"}))
    assert e.value.errors == [
        "models[0].replicas.min: 0 (scale to zero) needs the gateway (gateway.enabled is false): the first request "
        "waits in the endpoint picker's flow-control queue, whose size wakes small; set gateway.enabled: true, or "
        "min >= 1"]
    cfg["models"][0]["replicas"] = {"min": 1, "max": 3}
    assert validated_plan(parse(cfg, {"hfToken"}))["small"].min_replicas == 1  # a warm model needs no gateway


def test_scale_to_zero_without_the_wake_contract_is_refused():
    """Every cold start (at least 340 s) outlasts what the gateway holds a request (270 s): the stack must say its
    clients retry on 503 + Retry-After."""
    cfg = at_zero()
    del cfg["models"][0]["replicas"]["firstRequest"]
    with pytest.raises(ConfigError) as e:
        validated_plan(parse(cfg, {"hfToken"}))
    assert e.value.errors == [
        "models[0].replicas.min: 0 (scale to zero) answers the first request after an idle spell with 503 + "
        "Retry-After: small takes at least 340 s to start from zero (the plan prints its figure) and the gateway "
        "holds a request at most 270 s, so clients must retry while it wakes; set replicas.firstRequest: retry to "
        "accept that contract (docs/scale-to-zero.md), or min >= 1"]


def test_the_wake_contract_is_for_a_model_at_zero_only():
    cfg = at_zero()
    cfg["models"][0]["replicas"]["min"] = 1
    with pytest.raises(ConfigError) as e:
        parse(cfg, {"hfToken"})
    assert any("firstRequest" in x and "min is 1" in x for x in e.value.errors), e.value.errors


def test_the_shortest_cold_start_outlasts_the_gateways_hold():
    from components.gateway.wake import GATEWAY_HOLD_MAX_S, WAKE_HOLD_S
    from components.serving.cold_start import COLD_START_FLOOR_S
    assert (COLD_START_FLOOR_S, WAKE_HOLD_S, GATEWAY_HOLD_MAX_S) == (340, 270, 300)


def test_a_multi_node_rayservice_cannot_scale_to_zero():
    raw = {k.split(":", 1)[1]: v for k, v in load_stack_yaml(stack_file("prod-llama405b-aws")).items()
           if k.startswith("vllm-platform:")}
    raw = at_zero(raw, environment="dev")
    with pytest.raises(ConfigError) as e:
        validated_plan(parse(raw, {"hfToken"}))
    (msg,) = e.value.errors
    assert msg.startswith("models[0].replicas.min: 0 (scale to zero) needs a single-node replica scaled by KEDA; "
                          "llama-405b is planned as a multi-node RayService (2 x p5.48xlarge per replica)")
    assert msg.endswith("whose Ray head stays up; set min >= 1")


def test_the_program_refuses_production_min_zero_before_any_resource():
    import pulumi
    with pytest.raises(pulumi.RunError, match=r"models\[0\]\.replicas\.min: 0 \(scale to zero\) is for dev"):
        plan_config(at_zero(environment="prod"))


def _ns(env: str) -> StackResource:
    return StackResource("kubernetes:core/v1:Namespace", "ns",
                         {"metadata": {"name": "llm", "labels": {"vllm-platform/environment": env}}})


def _deployment() -> StackResource:
    return StackResource("kubernetes:apps/v1:Deployment", "dep", {
        "metadata": {"name": "chat", "namespace": "llm"},
        "spec": {"replicas": 1, "template": {"spec": {"containers": [
            {"name": "vllm", "image": "vllm/vllm-openai:v0.31.0", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}}})


def _scaled(minimum) -> StackResource:
    spec = {"scaleTargetRef": {"name": "chat"}, "maxReplicaCount": 3, "triggers": []}
    if minimum is not None:
        spec["minReplicaCount"] = minimum
    return StackResource(SCALEDOBJECT, "so", {"metadata": {"name": "chat", "namespace": "llm"}, "spec": spec})


def violations(resources) -> list[str]:
    return [v.message.split("; fix:")[0] for v in evaluate_resources(resources) if v.rule == RULE]


def test_the_policy_refuses_scale_to_zero_in_production_only():
    from policies.rules import RULES_BY_NAME
    assert RULES_BY_NAME[RULE].level == MANDATORY
    assert violations([_ns("prod"), _deployment(), _scaled(0)]) == [
        "Deployment chat in production may scale to zero (minimum 0)"]
    # KEDA's own default minimum is 0
    assert violations([_ns("prod"), _deployment(), _scaled(None)]) == [
        "Deployment chat in production may scale to zero (minimum 0)"]
    assert violations([_ns("prod"), _deployment(), _scaled(1)]) == []
    assert violations([_ns("staging"), _deployment(), _scaled(0)]) == []
    assert violations([_ns("dev"), _deployment(), _scaled(0)]) == []


def test_the_dev_plan_at_zero_passes_the_policy_pack(dev_zero):
    from policies.rules import evaluate_plan

    class Result:
        resources = dev_zero[0]
    assert [v.rule for v in evaluate_plan(Result) if v.level == MANDATORY] == []


def test_when_prometheus_is_down_a_model_at_zero_is_neither_woken_nor_scaled_in(dev_zero):
    """Issue 36: a scale-to-zero model has no KEDA fallback. KEDA v2.20.2's RequestScale honours a fallback only
    with replicas != 0; a fallback of 0 with minReplicaCount 0 falls through to scaleToZeroOrIdle (a serving model
    taken to zero while Prometheus is down). Without one, failing triggers are a TriggerError and nothing scales:
    no GPU node started, no replica that serves stopped."""
    [so] = [r for r in dev_zero[0] if r.type == SCALEDOBJECT]
    assert so.inputs["spec"]["minReplicaCount"] == 0
    assert "fallback" not in so.inputs["spec"]
