"""Gateway rules (components/gateway/, docs/gateway.md): outside dev nothing reaches a model without a key.

The environment of a route is its namespace's `vllm-platform/environment` label (production.py explains why);
a route in a namespace with no such label counts as non-dev, so a route the stack cannot place is checked too.
"""
from __future__ import annotations

import re

from .core import ADVISORY, MANDATORY, StackResource, as_dict, as_list, get, stack_rule
from .production import PRODUCTION, environment_of, environments, metadata, namespace_of

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


# Runtime LoRA (components/serving/runtime_lora.py, docs/lora.md): vLLM 0.31 serves POST /v1/load_lora_adapter and
# /v1/unload_lora_adapter when VLLM_ALLOW_RUNTIME_LORA_UPDATING is "1" or "true" in any case (vllm/envs.py) -- it
# loads whatever path or repository it is given and logs "This should ONLY be used for local development!"
# (vllm/entrypoints/serve/lora/api_router.py), so no API key of the gateway may reach them.
RUNTIME_LORA_ENV = "VLLM_ALLOW_RUNTIME_LORA_UPDATING"
LORA_ADMIN_PATHS = ("/v1/load_lora_adapter", "/v1/unload_lora_adapter")


def _runtime_lora(r: StackResource) -> bool:
    """Whether a serving workload's vLLM container turns the endpoints on (a value from elsewhere counts as on)."""
    from .podspec import engine_containers
    for _, _, c in engine_containers(r.type, r.props):
        for e in as_list(c.get("env")):
            e = as_dict(e)
            if e.get("name") == RUNTIME_LORA_ENV:
                value = e.get("value")
                if "valueFrom" in e or str(value).strip().lower() in ("1", "true"):
                    return True
    return False


def _client_path(match_prefix: str, rewrite: str | None, upstream: str) -> str | None:
    """The client path a forwarding PathPrefix rule turns into `upstream` (vLLM's path), or None."""
    if rewrite is not None:
        rest = upstream[len(rewrite.rstrip("/")):] if upstream.startswith(rewrite.rstrip("/") + "/") else None
        return None if rest is None else match_prefix.rstrip("/") + rest
    return upstream if (upstream + "/").startswith(match_prefix.rstrip("/") + "/") else None


def _unblocked(route: StackResource) -> list[str]:
    """The client paths of this HTTPRoute that would reach the adapter endpoints: a forwarding PathPrefix rule
    reaches them unless a rule without a backend matches the path on a longer prefix (or exactly)."""
    rules = [as_dict(x) for x in as_list(get(route.props, "spec", "rules"))]

    def paths(rule: dict) -> list[tuple[str, str]]:
        return [(str(get(m, "path", "type") or "PathPrefix"), str(get(m, "path", "value") or "/"))
                for m in as_list(rule.get("matches"))] or [("PathPrefix", "/")]

    blocking = [p for rule in rules if not as_list(rule.get("backendRefs")) for p in paths(rule)]
    out = []
    for rule in rules:
        if not as_list(rule.get("backendRefs")):
            continue
        rewrite = next((get(f, "urlRewrite", "path", "replacePrefixMatch") for f in as_list(rule.get("filters"))
                        if get(f, "type") == "URLRewrite"), None)
        for kind, prefix in paths(rule):
            if kind != "PathPrefix":
                continue
            for upstream in LORA_ADMIN_PATHS:
                client = _client_path(prefix, rewrite, upstream)
                if client and not any(
                        (k == "Exact" and v == client) or (k == "PathPrefix" and len(v) > len(prefix)
                                                          and (client + "/").startswith(v.rstrip("/") + "/"))
                        for k, v in blocking):
                    out.append(client)
    return out


@stack_rule("runtime-lora-endpoints-blocked", MANDATORY,
            "Outside dev a vLLM server that loads LoRA adapters at run time (VLLM_ALLOW_RUNTIME_LORA_UPDATING) is "
            "reached through no HTTPRoute that forwards /v1/load_lora_adapter or /v1/unload_lora_adapter: an API "
            "key of the gateway must not make a server load (or drop) adapter weights from any path it names.",
            "keep engine.lora.runtimeUpdates on the platform's route (it answers both endpoints 403), or add a rule "
            "without a backend matching <prefix>/load_lora_adapter and <prefix>/unload_lora_adapter before the "
            "model's rule")
def runtime_lora_endpoints_blocked(resources: list[StackResource]):
    from .podspec import is_serving_workload
    by_namespace = environments(resources)
    namespaces = {namespace_of(r) for r in resources if is_serving_workload(r.type, r.props)
                  and environment_of(r, by_namespace) != DEV and _runtime_lora(r)}
    for r in resources:
        if r.type == HTTPROUTE and namespace_of(r) in namespaces:
            for path in _unblocked(r):
                yield r, (f"HTTPRoute {namespace_of(r)}/{metadata(r).get('name')} forwards {path} to a vLLM server "
                          f"that loads LoRA adapters at run time")


# Token quotas (components/gateway/quotas.py, docs/token-quotas.md): Envoy Gateway's global rate limit charges each
# answer's token usage (a rule whose response cost comes from metadata) in its rate-limit service. With the
# EnvoyGateway config's rateLimit.failClosed false (v1.9.0 api/v1alpha1/envoygateway_types.go: "If FailClosed is
# false, let the traffic pass"; the default) a request the service cannot answer for passes: while the service or
# its Redis is down no budget holds. The stack chooses that (a Redis restart must not fail every request with
# 500); in production it should be a known, watched trade-off.
RELEASE = "kubernetes:helm.sh/v3:Release"
BACKEND_TRAFFIC_POLICY = "kubernetes:gateway.envoyproxy.io/v1alpha1:BackendTrafficPolicy"
GATEWAY_CHART = "gateway-helm"
# the release's chart by its name (a repository's), an OCI reference or an archive on disk (a chart mirror's
# directory, components/cluster/charts.py: <name>-<version>.tgz)
GATEWAY_CHART_REF = re.compile(rf"(.*/)?{GATEWAY_CHART}(-v?\d[^/]*\.tgz)?")


def _charges_tokens(policy: StackResource) -> bool:
    return any(get(rule, "cost", "response", "from") == "Metadata"
               for rule in as_list(get(policy.props, "spec", "rateLimit", "global", "rules")))


def _rate_limit_fails_open(resources: list[StackResource]) -> bool | None:
    """Whether the stack's Envoy Gateway release runs its rate-limit service failing open; None: the stack installs
    no Envoy Gateway with a rate-limit service (another stack's gateway, unknown here)."""
    for r in resources:
        if r.type == RELEASE and GATEWAY_CHART_REF.fullmatch(str(r.props.get("chart", ""))):
            rate_limit = get(r.props, "values", "config", "envoyGateway", "rateLimit")
            if isinstance(rate_limit, dict):
                return rate_limit.get("failClosed") is not True
    return None


@stack_rule("token-quotas-fail-open", ADVISORY,
            "In production a token budget (an Envoy Gateway global rate limit charging each answer's usage) holds "
            "only while the rate-limit service and its Redis answer: with rateLimit.failClosed false every request "
            "passes uncounted while either is down, so a Redis restart lets each key spend freely for its duration.",
            "alert on the rate-limit service and its Redis (Deployments envoy-ratelimit and ratelimit-redis in "
            "envoy-gateway-system, docs/token-quotas.md), or run a highly available Redis and set "
            "config.envoyGateway.rateLimit.failClosed: true (every request then fails 500 while it is unreachable)")
def token_quotas_fail_open(resources: list[StackResource]):
    if not _rate_limit_fails_open(resources):
        return
    by_namespace = environments(resources)
    for r in resources:
        if (r.type == BACKEND_TRAFFIC_POLICY and environment_of(r, by_namespace) == PRODUCTION
                and _charges_tokens(r)):
            yield r, (f"BackendTrafficPolicy {namespace_of(r)}/{metadata(r).get('name')} charges token budgets in "
                      f"production while the rate-limit service fails open (rateLimit.failClosed false)")


# Tenant priority (components/gateway/priority.py, docs/tenant-priority.md): llm-d-router v0.10.0's endpoint picker
# takes a request's priority from the InferenceObjective its header `x-llm-d-inference-objective` (or the deprecated
# `x-gateway-inference-objective`) names (pkg/epp/metadata/consts.go). Where objectives of different priorities
# exist for a pool, a caller who can send that header picks its own priority unless the gateway drops it before the
# picker: an HTTPRoute filter cannot (Envoy applies it in the router, after the picker's ext_proc), a Lua filter of
# an EnvoyExtensionPolicy on the route can.
OBJECTIVE_TYPES = ("kubernetes:llm-d.ai/v1alpha2:InferenceObjective",
                   "kubernetes:inference.networking.x-k8s.io/v1alpha2:InferenceObjective")
EXTENSION_POLICY = "kubernetes:gateway.envoyproxy.io/v1alpha1:EnvoyExtensionPolicy"
OBJECTIVE_HEADERS = ("x-llm-d-inference-objective", "x-gateway-inference-objective")


def _strips_objective(policy: StackResource) -> bool:
    scripts = [str(get(s, "inline") or "") for s in as_list(get(policy.props, "spec", "lua"))]
    return any(all(f'remove("{h}")' in s for h in OBJECTIVE_HEADERS) for s in scripts)


def _stripped_targets(resources: list[StackResource]) -> set[tuple[str, str, str | None]]:
    """(namespace, HTTPRoute, rule or None for the whole route) a Lua policy dropping both objective headers
    covers."""
    out = set()
    for p in resources:
        if p.type == EXTENSION_POLICY and _strips_objective(p):
            for ref in as_list(get(p.props, "spec", "targetRefs")):
                ref = as_dict(ref)
                if ref.get("kind") == "HTTPRoute":
                    out.add((namespace_of(p), str(ref.get("name")), ref.get("sectionName")))
    return out


def _pool_rules(route: StackResource, pool: str) -> list[str | None]:
    """The rules of an HTTPRoute / AIGatewayRoute that send to InferencePool `pool` (their names; None unnamed)."""
    return [as_dict(rule).get("name") for rule in as_list(get(route.props, "spec", "rules"))
            if any(get(b, "kind") == "InferencePool" and get(b, "name") == pool
                   for b in as_list(as_dict(rule).get("backendRefs")))]


@stack_rule("objective-header-from-gateway", MANDATORY,
            "Where a model's pool has InferenceObjectives of different priorities, no caller chooses its own: every "
            "route (rule) to that pool runs a Lua EnvoyExtensionPolicy that removes the objective headers "
            "x-llm-d-inference-objective and x-gateway-inference-objective before the endpoint picker reads them.",
            "keep the platform's tenant priority (gateway.clients[].priority: the stack makes the policy "
            "<model>-priority), or attach your own Lua EnvoyExtensionPolicy removing both headers to the route")
def objective_header_from_gateway(resources: list[StackResource]):
    priorities: dict[tuple[str, str], set] = {}
    for r in resources:
        if r.type in OBJECTIVE_TYPES:
            pool = str(get(r.props, "spec", "poolRef", "name"))
            priorities.setdefault((namespace_of(r), pool), set()).add(get(r.props, "spec", "priority") or 0)
    contested = {key for key, levels in priorities.items() if len(levels) > 1}
    if not contested:
        return
    covered = _stripped_targets(resources)
    for r in resources:
        if r.type not in ROUTES:
            continue
        ns, name = namespace_of(r), str(metadata(r).get("name"))
        for (pool_ns, pool) in sorted(contested):
            if pool_ns != ns:
                continue
            for rule in _pool_rules(r, pool):
                if (ns, name, None) not in covered and (ns, name, rule) not in covered:
                    where = f"rule {rule} of " if rule else ""
                    yield r, (f"{where}{ROUTES[r.type]} {ns}/{name} sends to InferencePool {pool}, whose objectives "
                              f"have different priorities, without removing a caller's objective header")
