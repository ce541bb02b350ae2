"""The stack's one URL (components/gateway/shared.py, docs/gateway.md): `/v1` routed on the body's `model` by Envoy
AI Gateway's AIGatewayRoute, with the same keys and limits as the per-model paths; and the per-model
concurrent-request cap (Envoy's circuit breaker), sized from the plan."""
from __future__ import annotations

import pytest

from components.gateway import objects as o
from components.gateway import shared as sh
from components.offline.runner import load_stack_yaml, stack_file, stack_names
from tests.support.crds import crd_validator, spec_errors
from tests.support.plans import plan_config, planned

AIGWROUTE = "kubernetes:aigateway.envoyproxy.io/v1beta1:AIGatewayRoute"
SECPOL = "kubernetes:gateway.envoyproxy.io/v1alpha1:SecurityPolicy"
BTP = "kubernetes:gateway.envoyproxy.io/v1alpha1:BackendTrafficPolicy"


def _of(resources, type_token):
    return [r for r in resources if r.type == type_token]




POOL = o.ModelRoute("qwen", "llm", False, {"app": "qwen"}, max_concurrency=48)
RAY = o.ModelRoute("llama-405b", "llm", True, first_request_s=1800)


def test_each_model_is_one_rule_on_the_body_models_header():
    spec = sh.ai_gateway_route_spec([POOL, RAY], 600, None)
    assert spec["parentRefs"] == [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "inference",
                                   "namespace": "envoy-gateway-system"}]
    pool, ray = spec["rules"]
    # x-ai-eg-model: where AI Gateway v1.1.0 puts the body's `model` before routing (api/v1beta1 AIModelHeaderKey)
    assert pool == {"name": "qwen", "matches": [{"headers": [{"type": "Exact", "name": "x-ai-eg-model",
                                                              "value": "qwen"}]}],
                    "backendRefs": [{"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": "qwen"}],
                    "timeouts": {"request": "600s"}}
    assert ray["backendRefs"] == [{"name": "llama-405b"}]  # the AIServiceBackend
    assert ray["timeouts"] == {"request": "1800s"}  # a model that scales to zero waits its cold start here too
    assert "hostnames" not in spec and sh.ai_gateway_route_spec([POOL], 600, "llm.example.com")["hostnames"] == [
        "llm.example.com"]


def test_ray_serve_is_reached_through_a_backend_naming_its_serve_service():
    assert sh.serve_backend_spec(RAY) == {"endpoints": [{"fqdn": {"hostname": "llama-405b.llm.svc.cluster.local",
                                                                  "port": 8000}}]}
    assert sh.ai_service_backend_spec(RAY) == {
        "schema": {"name": "OpenAI"}, "backendRef": {"group": "gateway.envoyproxy.io", "kind": "Backend",
                                                     "name": "llama-405b"}}


def test_the_shared_objects_validate_against_their_crds():
    routes = crd_validator("ai-gateway/aigateway.envoyproxy.io_aigatewayroutes.yaml", "v1beta1")
    spec = sh.ai_gateway_route_spec([POOL, RAY], 600, "llm.example.com")
    assert not spec_errors(routes, spec), spec_errors(routes, spec)
    backends = crd_validator("ai-gateway/aigateway.envoyproxy.io_aiservicebackends.yaml", "v1beta1")
    assert not spec_errors(backends, sh.ai_service_backend_spec(RAY))
    eg_backends = crd_validator("envoy-gateway/gateway.envoyproxy.io_backends.yaml", "v1alpha1")
    assert not spec_errors(eg_backends, sh.serve_backend_spec(RAY))
    btp = crd_validator("envoy-gateway/gateway.envoyproxy.io_backendtrafficpolicies.yaml", "v1alpha1")
    rule_level = o.backend_traffic_policy_spec("qwen", ["a"], 5, 48, 4, auth=True,
                                               targets=[sh.route_ref("qwen"), sh.route_ref(sh.SHARED_ROUTE, "qwen")])
    assert not spec_errors(btp, rule_level), spec_errors(btp, rule_level)
    # and the check bites: a misspelt rule field is refused
    bad = {**spec, "rules": [{**spec["rules"][0], "backendRef": spec["rules"][0]["backendRefs"]}]}
    assert spec_errors(routes, bad)


def test_more_than_fifteen_models_split_over_routes_on_the_same_url():
    """AIGatewayRoute v1beta1 allows 15 rules."""
    many = [o.ModelRoute(f"m{i}", "llm", False) for i in range(16)]
    groups = sh.route_groups(many)
    assert [(name, len(g)) for name, g in groups] == [("all-models.v1", 15), ("all-models-2.v1", 1)]
    assert sh.shared_route_of(many, "m15") == "all-models-2.v1"


def test_urls_follow_tls_and_hostname():
    assert sh.shared_url("llm.example.com", "secret") == "https://llm.example.com/v1"
    assert sh.shared_url("GATEWAY_ADDRESS", "none") == "http://GATEWAY_ADDRESS/v1"


@pytest.mark.parametrize("stack", stack_names())
def test_keys_and_limits_apply_to_the_shared_url_as_to_the_per_model_paths(stack):
    """The SecurityPolicy and a route-wide BackendTrafficPolicy target the HTTPRoute AI Gateway generates (same name
    as the AIGatewayRoute: its route-not-found rule and /v1/models included); each model's own policy targets its
    path and its rule on the shared route (sectionName), with the same limits."""
    res = planned(stack).resources
    [route] = _of(res, AIGWROUTE)
    name = route.inputs["metadata"]["name"]
    assert name == "all-models.v1"
    auth = {r.inputs["metadata"]["name"]: r.inputs["spec"] for r in _of(res, SECPOL)}
    limits = {r.inputs["metadata"]["name"]: r.inputs["spec"] for r in _of(res, BTP)}
    assert auth[name]["targetRefs"] == [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": name}]
    assert auth[name]["apiKeyAuth"] == next(iter(v for k, v in auth.items() if k != name))["apiKeyAuth"]
    assert limits[name]["targetRefs"] == auth[name]["targetRefs"] and "circuitBreaker" not in limits[name]
    for rule in route.inputs["spec"]["rules"]:
        model = rule["name"]
        assert limits[model]["targetRefs"] == [
            {"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": model},
            {"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": name, "sectionName": model}]
        assert limits[model]["rateLimit"] == limits[name]["rateLimit"]
        assert limits[model]["requestBuffer"] == limits[name]["requestBuffer"] == {"limit": "4Mi"}


def test_the_url_is_exported_and_printed():
    from components.outputs import gateway_lines
    plan = planned("dev")
    gw = plan.exports["gateway"]
    assert gw["url"] == plan.exports["apiUrl"] == "http://GATEWAY_ADDRESS/v1"
    lines = gateway_lines(gw)
    assert "  every model (by the request's `model`): http://GATEWAY_ADDRESS/v1" in lines
    assert "  llama-8b: http://GATEWAY_ADDRESS/llama-8b/v1" in lines


def test_the_concurrency_cap_is_the_plans_ceiling_per_model():
    """dev: llama-8b at most 2 replicas x 53 concurrent requests each within the SLA (the knee) -> 106 on its
    breaker."""
    res = planned("dev").resources
    spec = next(r.inputs["spec"] for r in _of(res, BTP) if r.inputs["metadata"]["name"] == "llama-8b")
    assert spec["circuitBreaker"] == {"maxParallelRequests": 106, "maxPendingRequests": 106}


@pytest.mark.parametrize("stack", stack_names())
def test_every_models_breaker_matches_its_topology(stack):
    plan = planned(stack)
    limits = {r.inputs["metadata"]["name"]: r.inputs["spec"] for r in _of(plan.resources, BTP)}
    for model, t in plan.exports["topology"].items():
        assert limits[model]["circuitBreaker"]["maxParallelRequests"] == \
            t["max_replicas"] * t["concurrency_per_replica"], f"{stack}: {model}"


def test_a_configured_cap_overrides_the_plan():
    raw = {k.split(":", 1)[1]: v for k, v in load_stack_yaml(stack_file("dev")).items()
           if k.startswith("vllm-platform:")}
    resources, _ = plan_config({**raw, "gateway": {"rateLimit": {"concurrentRequests": 7}}})
    spec = next(r.inputs["spec"] for r in _of(resources, BTP) if r.inputs["metadata"]["name"] == "llama-8b")
    assert spec["circuitBreaker"]["maxParallelRequests"] == 7


def test_on_a_cluster_stacks_gateway_the_shared_url_needs_a_hostname_of_its_own():
    """Envoy checks the key on the route matched before the body is read: the catch-all of the oldest shared route
    on the Gateway. With its own hostname a stack's routes sit in their own virtual host, so only its keys apply."""
    from components.outputs import gateway_lines
    raw = {k.split(":", 1)[1]: v for k, v in load_stack_yaml(stack_file("dev")).items()
           if k.startswith("vllm-platform:")}
    resources, exports = plan_config({**raw, "gateway": {"install": False}})
    assert not _of(resources, AIGWROUTE)
    assert any("no shared URL" in line for line in gateway_lines(exports["gateway"]))
    resources, exports = plan_config({**raw, "gateway": {"install": False, "hostname": "team-a.llm.example.com"}})
    [route] = _of(resources, AIGWROUTE)
    assert route.inputs["spec"]["hostnames"] == ["team-a.llm.example.com"]
    assert exports["apiUrl"] == "http://team-a.llm.example.com/v1"
