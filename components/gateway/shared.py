"""One URL for every model of the stack: `{url}/v1/...`, the backend chosen by the request body's `model` field.

Envoy AI Gateway v1.1.0's AIGatewayRoute (schemas/crds/ai-gateway, v1beta1). Its ext_proc filter reads the
body's `model` into the header `x-ai-eg-model` before the routing decision; each rule below matches that header
exactly and points at the model's InferencePool (single-node: the endpoint picker chooses the pod) or at an
AIServiceBackend over an Envoy Gateway Backend naming the RayService's Serve Service (multi-node: the
AIServiceBackend CRD admits only `gateway.envoyproxy.io/Backend`, no Service). The controller turns the route into
an HTTPRoute of the same name and namespace (internal/controller/ai_gateway_route.go: one HTTPRoute rule per
rule, path prefix the chart's `controller.rootPrefix` "/", the rule's name kept, plus a `route-not-found` rule
answering 404), so the stack's SecurityPolicy and BackendTrafficPolicy target that HTTPRoute by name. `/v1/models`
is answered by the ext_proc itself from the rules' exact `x-ai-eg-model` values (internal/extproc/
models_processor.go, internal/controller/gateway.go): the stack's served model names. docs/gateway.md.
"""
from __future__ import annotations

from .objects import GATEWAY_NAME, NAMESPACE, SERVE_PORT, ModelRoute, serve_service

AIGW_API = "aigateway.envoyproxy.io/v1beta1"
EG_API = "gateway.envoyproxy.io/v1alpha1"
# api/v1beta1/shared_types.go AIModelHeaderKey: the body's model, set before routing
MODEL_HEADER = "x-ai-eg-model"
# The AIGatewayRoute (and so the HTTPRoute AI Gateway generates) is named this; the dot keeps it apart from every
# per-model HTTPRoute, whose name is a model name (a DNS label, no dot).
SHARED_ROUTE = "all-models.v1"
# AIGatewayRoute v1beta1 spec.rules maxItems 15 (Gateway API's 16 HTTPRoute rules, one kept for route-not-found):
# a stack with more models gets a second route, `all-models-2.v1`, on the same URL.
MAX_RULES = 15
SHARED_PATH = "/v1"


def route_groups(routes: list[ModelRoute]) -> list[tuple[str, list[ModelRoute]]]:
    """(AIGatewayRoute name, its models): at most MAX_RULES models each."""
    out = []
    for i in range(0, len(routes), MAX_RULES):
        n = i // MAX_RULES
        out.append((SHARED_ROUTE if n == 0 else f"all-models-{n + 1}.v1", routes[i:i + MAX_RULES]))
    return out


def shared_route_of(routes: list[ModelRoute], model: str) -> str:
    return next(name for name, group in route_groups(routes) for r in group if r.model == model)


def rule_backend(r: ModelRoute) -> dict:
    """The model's InferencePool, or (multi-node) the AIServiceBackend named after the model."""
    if r.multi_node:
        return {"name": r.model}
    return {"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": r.model}


def ai_gateway_route_spec(routes: list[ModelRoute], timeout_s: int, hostname: str | None,
                          llm_request_costs: list[dict] | None = None) -> dict:
    """One rule per model, named after it (so a BackendTrafficPolicy can target the rule by sectionName): the
    body's model equals the served name -> the model's backend. Timeout as the per-model route's.
    llm_request_costs: the token counts AI Gateway writes into Envoy's metadata for the token quotas
    (gateway/quotas.py)."""
    spec: dict = {
        "parentRefs": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": GATEWAY_NAME,
                        "namespace": NAMESPACE}],
        "rules": [{"name": r.model,
                   "matches": [{"headers": [{"type": "Exact", "name": MODEL_HEADER, "value": r.model}]}],
                   "backendRefs": [rule_backend(r)],
                   "timeouts": {"request": f"{max(timeout_s, r.first_request_s or 0)}s"}} for r in routes],
    }
    if hostname:
        spec["hostnames"] = [hostname]
    if llm_request_costs:
        spec["llmRequestCosts"] = list(llm_request_costs)
    return spec


def serve_backend_spec(r: ModelRoute) -> dict:
    """Envoy Gateway Backend (extensionApis.enableBackend, components/gateway/values.py) for the RayService's
    Serve Service `<model>:8000` (the Service the per-model route uses), by its cluster DNS name."""
    return {"endpoints": [{"fqdn": {"hostname": f"{serve_service(r.model)}.{r.namespace}.svc.cluster.local",
                                    "port": SERVE_PORT}}]}


def ai_service_backend_spec(r: ModelRoute) -> dict:
    """Ray Serve LLM speaks the OpenAI API at /v1 (schema OpenAI: prefix defaults to v1,
    internal/controller/gateway.go)."""
    return {"schema": {"name": "OpenAI"},
            "backendRef": {"group": "gateway.envoyproxy.io", "kind": "Backend", "name": r.model}}


def route_ref(name: str, section: str | None = None) -> dict:
    ref = {"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": name}
    if section:
        ref["sectionName"] = section
    return ref


def shared_url(host: str, tls_mode: str) -> str:
    scheme = "http" if tls_mode == "none" else "https"
    return f"{scheme}://{host}{SHARED_PATH}"
