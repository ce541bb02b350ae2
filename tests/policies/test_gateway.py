"""The mandatory gateway rule (policies/rules/gateway.py): outside dev, a route without key auth is a violation."""
from __future__ import annotations

from policies.rules import MANDATORY, RULES_BY_NAME, StackResource, evaluate_plan, evaluate_resources
from tests.support.plans import planned

NS = "kubernetes:core/v1:Namespace"
ROUTE = "kubernetes:gateway.networking.k8s.io/v1:HTTPRoute"
SECPOL = "kubernetes:gateway.envoyproxy.io/v1alpha1:SecurityPolicy"


def _ns(env: str) -> StackResource:
    return StackResource(NS, "ns", {"metadata": {"name": "llm", "labels": {"vllm-platform/environment": env}}})


def _route(name: str = "llama-70b") -> StackResource:
    return StackResource(ROUTE, f"route-{name}", {"metadata": {"name": name, "namespace": "llm"}, "spec": {}})


def _policy(spec: dict, target: str = "llama-70b") -> StackResource:
    return StackResource(SECPOL, "auth", {"metadata": {"name": target, "namespace": "llm"}, "spec": {
        "targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": target}], **spec}})


def _messages(resources) -> list[str]:
    return [v.message for v in evaluate_resources(resources) if v.rule == "gateway-auth-outside-dev"]


KEYS = {"apiKeyAuth": {"credentialRefs": [{"name": "gateway-api-keys"}], "extractFrom": [{"headers": ["x"]}]}}


def test_the_rule_is_mandatory():
    assert RULES_BY_NAME["gateway-auth-outside-dev"].level == MANDATORY


def test_a_route_without_keys_in_prod_is_a_violation():
    [m] = _messages([_ns("prod"), _route()])
    assert m.startswith("HTTPRoute llm/llama-70b in prod has no authenticating SecurityPolicy")
    assert _messages([_ns("staging"), _route()])


def test_a_keyed_route_passes_and_dev_is_exempt():
    assert not _messages([_ns("prod"), _route(), _policy(KEYS)])
    assert not _messages([_ns("dev"), _route()])


def test_a_policy_that_authenticates_nobody_or_another_route_does_not_count():
    assert _messages([_ns("prod"), _route(), _policy({"cors": {"allowOrigins": ["*"]}})])
    assert _messages([_ns("prod"), _route(), _policy(KEYS, target="other")])


def test_shipped_production_stacks_pass_and_fail_without_their_policies():
    result = planned("prod-llama70b-aws")
    assert not [v for v in evaluate_plan(result) if v.rule == "gateway-auth-outside-dev"]
    stripped = [r for r in result.resources if r.type != SECPOL]
    from components.offline.render import sanitize
    verdicts = evaluate_resources(StackResource(r.type, r.name, sanitize(r.inputs)) for r in stripped if r.custom)
    assert [v for v in verdicts if v.rule == "gateway-auth-outside-dev" and v.level == MANDATORY]


def test_the_shared_ai_gateway_route_needs_keys_too():
    """The AIGatewayRoute's generated HTTPRoute carries its name: keys on that name guard it, none is a violation."""
    shared = StackResource("kubernetes:aigateway.envoyproxy.io/v1beta1:AIGatewayRoute", "shared",
                           {"metadata": {"name": "all-models.v1", "namespace": "llm"}, "spec": {}})
    [m] = _messages([_ns("prod"), _route(), _policy(KEYS), shared])
    assert m.startswith("AIGatewayRoute llm/all-models.v1 in prod has no authenticating SecurityPolicy")
    guarded = StackResource(SECPOL, "auth-shared", {"metadata": {"name": "s", "namespace": "llm"}, "spec": {
        "targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": "all-models.v1"}], **KEYS}})
    assert not _messages([_ns("prod"), _route(), _policy(KEYS), shared, guarded])
