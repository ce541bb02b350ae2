"""Gateway rules (components/gateway/, docs/gateway.md): outside dev nothing reaches a model without a key.

The environment of a route is its namespace's `vllm-platform/environment` label (production.py explains why);
a route in a namespace with no such label counts as non-dev, so a route the stack cannot place is checked too.
"""
from __future__ import annotations

from .core import MANDATORY, StackResource, as_dict, as_list, get, stack_rule
from .production import environment_of, environments, metadata, namespace_of

HTTPROUTE = "kubernetes:gateway.networking.k8s.io/v1:HTTPRoute"
# Envoy AI Gateway generates an HTTPRoute of the same name and namespace from each AIGatewayRoute (v1.1.0
# internal/controller/ai_gateway_route.go): a policy guards it by targeting that HTTPRoute name.
AIGATEWAYROUTE = "kubernetes:aigateway.envoyproxy.io/v1beta1:AIGatewayRoute"
ROUTES = {HTTPROUTE: "HTTPRoute", AIGATEWAYROUTE: "AIGatewayRoute"}
SECURITY_POLICY = "kubernetes:gateway.envoyproxy.io/v1alpha1:SecurityPolicy"
# Envoy Gateway SecurityPolicy fields that authenticate a caller (v1.9.0 CRD: apiKeyAuth, basicAuth, jwt, oidc,
# extAuth); cors / authorization alone admit anonymous callers.
AUTHENTICATING = ("apiKeyAuth", "basicAuth", "jwt", "oidc", "extAuth")
DEV = "dev"


def _guarded(resources: list[StackResource]) -> set[tuple[str, str]]:
    """(namespace, route name) of every HTTPRoute an authenticating SecurityPolicy targets."""
    out = set()
    for p in resources:
        if p.type != SECURITY_POLICY or not any(get(p.props, "spec", f) for f in AUTHENTICATING):
            continue
        for ref in as_list(get(p.props, "spec", "targetRefs")):
            ref = as_dict(ref)
            if ref.get("kind") == "HTTPRoute":
                out.add((namespace_of(p), str(ref.get("name"))))
    return out


@stack_rule("gateway-auth-outside-dev", MANDATORY,
            "Outside dev every HTTPRoute (or AIGatewayRoute) to a model is authenticated at the gateway (an Envoy "
            "Gateway SecurityPolicy with API keys, JWT, OIDC, basic or external auth targets it), so an anonymous "
            "request gets 401 and never reaches a GPU.",
            "keep gateway.auth: apiKeys (the default) and set the secret gatewayApiKeys, or attach your own "
            "authenticating SecurityPolicy to the route")
def gateway_auth_outside_dev(resources: list[StackResource]):
    by_namespace = environments(resources)
    guarded = _guarded(resources)
    for r in resources:
        if r.type not in ROUTES or environment_of(r, by_namespace) == DEV:
            continue
        name = str(metadata(r).get("name"))
        if (namespace_of(r), name) not in guarded:
            env = environment_of(r, by_namespace) or "an unlabelled namespace"
            yield r, f"{ROUTES[r.type]} {namespace_of(r)}/{name} in {env} has no authenticating SecurityPolicy"
