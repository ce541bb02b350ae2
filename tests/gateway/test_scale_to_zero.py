"""Scale to zero behind the gateway: the route and the endpoint picker hold the first request for the cold
start, and Prometheus scrapes the picker's queue, the metric that wakes the model (docs/scale-to-zero.md)."""
from __future__ import annotations

import copy

import pytest
import yaml

from tests.support.plans import ROOT, by_type, plan_config
from tests.support.aws import G6

RELEASE = "kubernetes:helm.sh/v3:Release"
HTTPROUTE = "kubernetes:gateway.networking.k8s.io/v1:HTTPRoute"
SCALEDOBJECT = "kubernetes:keda.sh/v1alpha1:ScaledObject"
ROUTER_VALUES = ROOT / "schemas" / "charts" / "llm-d-router-gateway" / "v0.10.0" / "charts" / "router" / "values.yaml"


def at_zero() -> dict:
    cfg = copy.deepcopy(G6)
    cfg["models"][0]["replicas"] = {"min": 0, "max": 3, "firstRequest": "retry"}
    return cfg


@pytest.fixture(scope="module")
def zero():
    return plan_config(at_zero())


@pytest.fixture(scope="module")
def warm():
    return plan_config(G6)


def epp(resources) -> dict:
    (r,) = [r for r in by_type(resources, RELEASE) if r.inputs["chart"].endswith("/llm-d-router-gateway")]
    return r.inputs["values"]["router"]


def route_timeout(resources) -> str:
    (route,) = by_type(resources, HTTPROUTE)
    (rule,) = route.inputs["spec"]["rules"]
    return rule["timeouts"]["request"]


def test_the_route_of_a_model_at_zero_waits_for_the_cold_start_and_the_answer(zero, warm):
    # EKS dev, g6.xlarge, EFS cache: cold start 1540 s + the longest answer (4096 tokens at 100 ms) 410 s
    assert route_timeout(zero[0]) == "1950s"
    assert route_timeout(warm[0]) == "600s"  # gateway.requestTimeoutS, the default


def test_the_endpoint_picker_of_a_model_at_zero_queues_with_flow_control_for_the_cold_start(zero):
    values = epp(zero[0])["epp"]
    assert values["pluginsConfigFile"] == "vllm-platform-flow-control.yaml"
    config = yaml.safe_load(values["pluginsCustomConfig"]["vllm-platform-flow-control.yaml"])
    assert config["featureGates"] == ["flowControl"]  # off by default in llm-d-router v0.10.0
    # the picker answers (503, rejected-no-endpoints) before AI Gateway's 300 s ext-proc timeout would (504): the
    # cold start (1540 s) capped at 270 s, not the 60 s default (gateway/wake.py)
    assert config["flowControl"] == {"defaultRequestTTL": "270s"}
    # the chart's default plugins for vLLM over HTTP, unchanged
    assert [p["type"] for p in config["plugins"]] == [
        "queue-scorer", "kv-cache-utilization-scorer", "prefix-cache-scorer", "metrics-data-source",
        "core-metrics-extractor"]
    assert config["schedulingProfiles"] == [{"name": "default", "plugins": [
        {"pluginRef": "queue-scorer", "weight": 2}, {"pluginRef": "kv-cache-utilization-scorer", "weight": 2},
        {"pluginRef": "prefix-cache-scorer", "weight": 3}]}]
    assert config["kind"] == "EndpointPickerConfig" and config["apiVersion"] == "llm-d.ai/v1alpha1"


def test_a_warm_models_picker_keeps_the_charts_defaults(warm):
    values = epp(warm[0])["epp"]
    assert "pluginsConfigFile" not in values and "pluginsCustomConfig" not in values


def test_prometheus_scrapes_every_pickers_queue_through_the_charts_servicemonitor(zero, warm):
    for resources in (zero[0], warm[0]):
        monitoring = epp(resources)["monitoring"]
        assert monitoring == {"prometheus": {
            "enabled": True, "extraLabels": {"release": "kube-prometheus-stack"},
            # one token Secret per model: the chart's default name would be shared by every model's release
            "auth": {"secretName": "small-epp-metrics-reader"}}}


def test_the_keys_set_exist_in_the_vendored_router_chart():
    defaults = yaml.safe_load(ROUTER_VALUES.read_text())
    assert {"pluginsConfigFile", "pluginsCustomConfig"} <= defaults["epp"].keys()
    assert {"enabled", "extraLabels", "auth"} <= defaults["monitoring"]["prometheus"].keys()
    assert "secretName" in defaults["monitoring"]["prometheus"]["auth"]


def test_the_wake_up_trigger_and_the_scrape_name_one_metric(zero):
    from components.metrics import EPP_PENDING_REQUESTS
    (so,) = by_type(zero[0], SCALEDOBJECT)
    (wake,) = [t for t in so.inputs["spec"]["triggers"] if t["name"] == "gateway-queue"]
    assert EPP_PENDING_REQUESTS == "llm_d_epp_flow_control_queue_size"  # llm-d-router v0.10.0's current name
    assert wake["metadata"]["query"].startswith("sum(llm_d_epp_flow_control_queue_size{")


def test_a_cold_start_longer_than_the_gateway_holds_is_a_plan_warning(zero):
    (warning,) = [w for w in zero[1]["serving"]["small"]["warnings"] if w.startswith("COLD START")]
    assert warning == (
        "COLD START LONGER THAN THE GATEWAY HOLDS: small takes up to 1540 s to start from zero, and the gateway "
        "holds a request at most 270 s (the endpoint picker's queue, below Envoy AI Gateway's 300 s ext-proc "
        "timeout); a request that finds it at zero is answered 503 with Retry-After: 30 and x-vllm-platform-waking: "
        "1540 while it wakes (replicas.firstRequest: retry): clients retry until it answers "
        "(docs/scale-to-zero.md), or set replicas.min: 1")


def test_no_hold_warning_within_the_gateways_hold():
    from components.serving.cold_start import hold_warning
    assert hold_warning("small", 270) is None
    assert hold_warning("small", 271).startswith("COLD START LONGER THAN THE GATEWAY HOLDS: small takes up to 271 s")


BTP = "kubernetes:gateway.envoyproxy.io/v1alpha1:BackendTrafficPolicy"
WAKE_BODY = ('{"error":{"message":"small is starting from zero replicas (up to 1540 s); retry after 30 s '
             '(docs/scale-to-zero.md)","type":"model_waking","code":"model_waking"}}')


def test_the_pickers_503_for_an_empty_pool_is_answered_as_the_wake_contract(zero):
    (policy,) = [r for r in by_type(zero[0], BTP) if r.inputs["metadata"]["name"] == "small"]
    assert policy.inputs["spec"]["responseOverride"] == [{
        "match": {"statusCodes": [{"type": "Value", "value": 503}],
                  "responseHeaders": [{"name": "x-llm-d-request-dropped-reason",
                                       "value": {"type": "Exact", "value": "rejected-no-endpoints"}}]},
        "response": {"statusCode": 503, "contentType": "application/json",
                     "body": {"type": "Inline", "inline": WAKE_BODY},
                     "header": {"set": [{"name": "Retry-After", "value": "30"},
                                        {"name": "x-vllm-platform-waking", "value": "1540"}]}}}]
    import json
    assert json.loads(WAKE_BODY)["error"]["type"] == "model_waking"


def test_a_warm_models_policy_overrides_nothing(warm):
    (policy,) = [r for r in by_type(warm[0], BTP) if r.inputs["metadata"]["name"] == "small"]
    assert "responseOverride" not in policy.inputs["spec"]
    values = epp(warm[0])["epp"]
    assert "pluginsCustomConfig" not in values  # no flow control, no TTL


def test_the_wake_policy_validates_against_the_vendored_crd(zero):
    from components.offline.render import manifests
    from tests.test_manifest_schemas import _plain, problems
    import dataclasses
    objs = manifests([dataclasses.replace(r, inputs=_plain(r.inputs)) for r in zero[0]])
    (policy,) = [o for o in objs.values() if o["kind"] == "BackendTrafficPolicy" and o["metadata"]["name"] == "small"]
    assert "responseOverride" in policy["spec"]
    assert problems(policy, "1.35") == []
    broken = copy.deepcopy(policy)
    broken["spec"]["responseOverride"][0]["response"]["retryAfter"] = 30
    assert problems(broken, "1.35")  # the strict check does reject a field the CRD lacks
