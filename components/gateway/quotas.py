"""Token quotas (`gateway.tokenQuotas`, components/config/token_quotas.py) as plain specs (pure; docs/token-quotas.md).

How the tokens are counted, read from the pinned sources:
- Envoy AI Gateway v1.1.0 writes each answer's token usage into Envoy's dynamic metadata, namespace
  `io.envoy.ai_gateway` (api/v1beta1/shared_types.go AIGatewayFilterMetadataNamespace), under the key an
  AIGatewayRoute's `spec.llmRequestCosts[].metadataKey` names, for the type it names (InputToken, OutputToken,
  TotalToken, ...). Its filter runs only on routes an AIGatewayRoute generates (internal/extensionserver/
  post_translate_modify.go: the filter is inserted disabled and enabled per route isRouteGeneratedByAIGateway):
  a plain HTTPRoute (the per-model paths `/<model>/v1`) counts no tokens, so with quotas on the stack makes no
  per-model paths and every model is reached through the shared URL.
- A streaming chat completion gets `stream_options.include_usage: true` forced in when a cost is configured
  (internal/endpointspec/endpointspec.go ChatCompletionsEndpointSpec.ParseBody), so a client cannot dodge the
  count by not asking for usage; `/v1/completions` is not forced (docs/token-quotas.md, "What is counted").
- Envoy Gateway v1.9.0 global rate limit rules (BackendTrafficPolicy rateLimit.global, CRD in schemas/crds/
  envoy-gateway): `cost.request` Number 0 checks the budget without charging, `cost.response` from Metadata
  charges the usage when the answer ends (site/docs/capabilities/traffic/usage-based-ratelimiting.md at
  ai-gateway v1.1.0, and its examples/token_ratelimit/token_ratelimit.yaml). An answer admitted under budget
  finishes even if it overshoots; the next request of that key in the window gets 429.
- The rule's client selector is the client id the API-key check forwards (objects.CLIENT_HEADER, set by
  Envoy's api_key_auth filter from the matched key, so a caller cannot choose it): one Exact rule per client,
  each with its own budget. A rule is not `shared`, so each policy target counts on its own (v1.9.0
  api/v1alpha1/ratelimit_types.go RateLimitRule.Shared, default false): the model's policy targets the model's
  rule of the shared route, so a budget is per key AND model.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .objects import CLIENT_HEADER, NAMESPACE

METADATA_NAMESPACE = "io.envoy.ai_gateway"
# counts -> (AIGatewayRoute llmRequestCosts type, the metadata key the stack names it). The keys are the ones the
# upstream example and docs use (examples/token_ratelimit/token_ratelimit.yaml at v1.1.0).
COST_TYPES = {"total": ("TotalToken", "llm_total_token"), "output": ("OutputToken", "llm_output_token"),
              "input": ("InputToken", "llm_input_token")}
UNIT = "Minute"

# The rate-limit service's Redis (components/gateway/quota_store.py): in the gateway's namespace, where Envoy
# Gateway runs its rate-limit Deployment `envoy-ratelimit` (v1.9.0 internal/infrastructure/kubernetes/ratelimit/
# resource.go InfraName, in the controller's namespace).
REDIS_NAME = "ratelimit-redis"
REDIS_PORT = 6379
REDIS_URL = f"{REDIS_NAME}.{NAMESPACE}.svc.cluster.local:{REDIS_PORT}"
REDIS_PASSWORD_KEY = "password"
REDIS_CONFIG_KEY = "redis.conf"
# One pod on the system nodes: counters of a few clients x models are kilobytes; maxmemory (redis_conf) below it
REDIS_RESOURCES = {"cpu": "250m", "memory": "768Mi"}
# envoyproxy/ratelimit reads the Redis password from REDIS_AUTH (src/settings/settings.go, `envconfig:"REDIS_AUTH"`;
# src/redis/driver_impl.go createDialer splits "user:password" at the first colon, so the password has none:
# quota_store.py makes it alphanumeric);
# Envoy Gateway v1.9.0 has no password field (api/v1alpha1/envoygateway_types.go RateLimitRedisSettings: url,
# urlRef, tls), so the stack adds it to the rate-limit container's env (KubernetesContainerSpec.env, merged by
# resource.go expectedRateLimitContainerEnv -> ExpectedContainerEnv).
REDIS_AUTH_ENV = "REDIS_AUTH"
# The rate-limit pods' labels (resource.go rateLimitLabels): the only pods the Redis NetworkPolicy admits.
RATELIMIT_POD_LABELS = {"app.kubernetes.io/name": "envoy-ratelimit", "app.kubernetes.io/component": "ratelimit",
                        "app.kubernetes.io/managed-by": "envoy-gateway"}


@dataclass(frozen=True)
class TokenQuotas:
    """What the gateway needs of gateway.tokenQuotas: a budget per client (tokens per minute, per model)."""
    budgets: dict[str, int] = field(default_factory=dict)   # client name -> tokens per minute
    counts: str = "total"                                    # total | output | input

    @property
    def cost_type(self) -> str:
        return COST_TYPES[self.counts][0]

    @property
    def metadata_key(self) -> str:
        return COST_TYPES[self.counts][1]


def llm_request_costs(q: TokenQuotas) -> list[dict]:
    """AIGatewayRoute spec.llmRequestCosts: the one count the budgets charge."""
    return [{"metadataKey": q.metadata_key, "type": q.cost_type}]


def token_rules(q: TokenQuotas) -> list[dict]:
    """BackendTrafficPolicy rateLimit.global.rules: per client, its budget per minute, charged from the answer's
    usage (the request itself costs 0: it only checks that the budget has room)."""
    return [{"clientSelectors": [{"headers": [{"name": CLIENT_HEADER, "type": "Exact", "value": client}]}],
             "limit": {"requests": budget, "unit": UNIT},
             "cost": {"request": {"from": "Number", "number": 0},
                      "response": {"from": "Metadata",
                                   "metadata": {"namespace": METADATA_NAMESPACE, "key": q.metadata_key}}}}
            for client, budget in q.budgets.items()]


def ratelimit_spread(zones: bool) -> list[dict]:
    """The rate-limit pods on different nodes (and zones), preferred: ScheduleAnyway, so a full or lost system
    node never leaves one Pending (the service fails open, a Pending pod would only widen that); the budget below,
    not the spread, is what keeps one answering through a drain. pod-template-hash: a rollout's new pods are
    spread among themselves."""
    selector = {"matchLabels": dict(RATELIMIT_POD_LABELS)}
    keys = ["kubernetes.io/hostname", *(["topology.kubernetes.io/zone"] if zones else [])]
    return [{"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": "ScheduleAnyway", "nodeTaintsPolicy": "Honor",
             "labelSelector": selector, "matchLabelKeys": ["pod-template-hash"]} for key in keys]


def rate_limit_config(secret: str, node_selector: dict[str, str] | None = None, replicas: int = 1,
                      zones: bool = False) -> dict:
    """The EnvoyGateway config's part (gateway-helm config.envoyGateway) that runs the global rate-limit service
    on the stack's Redis. The chart merges it over its own defaults (v1.9.0 templates/envoy-gateway-config.yaml
    `merge $userEnvoyGatewayConfig $baseEnvoyGatewayConfig`), so the rate-limit image it sets stays; Envoy
    Gateway fills in the rest of the Deployment (api/v1alpha1/envoygateway_helpers.go defaultKubernetesDeploymentSpec).
    failClosed false (Envoy Gateway's default, envoygateway_types.go "If not set, FailClosed is False", spelled
    out): while the Redis restarts the token budgets are not enforced rather than every request failing with 500;
    the per-key request limits (local, in Envoy) still hold. The rate-limit pods run where the Envoy proxies do
    (the system nodes), as many as the proxies. With two or more (production) they are spread over nodes and
    a PodDisruptionBudget keeps one through a drain (EnvoyGatewayKubernetesProvider.rateLimitPDB, rendered by
    internal/infrastructure/kubernetes/ratelimit/resource_provider.go PodDisruptionBudget over the pods' labels):
    without it a drain of the node holding both would leave every budget unenforced until they reschedule."""
    deployment: dict = {"replicas": replicas, "container": {"env": [
        {"name": REDIS_AUTH_ENV, "valueFrom": {"secretKeyRef": {"name": secret, "key": REDIS_PASSWORD_KEY}}}]}}
    pod: dict = {}
    if node_selector:
        pod["nodeSelector"] = dict(node_selector)
    if replicas > 1:
        pod["topologySpreadConstraints"] = ratelimit_spread(zones)
    if pod:
        deployment["pod"] = pod
    kubernetes: dict = {"rateLimitDeployment": deployment}
    if replicas > 1:  # minAvailable 1 on one pod would block every drain
        kubernetes["rateLimitPDB"] = {"minAvailable": 1}
    return {
        "rateLimit": {"backend": {"type": "Redis", "redis": {"url": REDIS_URL}}, "failClosed": False},
        "provider": {"kubernetes": kubernetes},
    }


def redis_conf(password: str) -> str:
    """Counters only, in memory: each lives one minute's window, so a restart forgets at most one window (a key
    may use up to one extra minute's budget); no append-only file, no snapshots, no volume. Every counter carries
    its window as TTL (envoyproxy/ratelimit sets one with each INCRBY), so when memory is full Redis drops the
    counters closest to expiry instead of refusing writes."""
    return "\n".join([f"requirepass {password}", f"port {REDIS_PORT}", "dir /data", "save \"\"", "appendonly no",
                      "maxmemory 512mb", "maxmemory-policy volatile-ttl"]) + "\n"


def redis_network_policy_spec(selector: dict[str, str]) -> dict:
    """Only Envoy Gateway's rate-limit pods reach the counters."""
    return {"podSelector": {"matchLabels": dict(selector)}, "policyTypes": ["Ingress"],
            "ingress": [{"from": [{"podSelector": {"matchLabels": dict(RATELIMIT_POD_LABELS)}}],
                         "ports": [{"port": REDIS_PORT, "protocol": "TCP"}]}]}


def lora_problems(routes) -> list[str]:
    """Token quotas beside LoRA adapters (engine.lora), refused (components/config/token_quotas.py lora_refusal).
    A stack's plan reports them before any resource is built (the plan check gateway.quota_lora,
    config/token_quotas.py); this is the same check on the routes, for GatewayArgs built without that validation."""
    from ..config.token_quotas import lora_refusal
    return [lora_refusal(r.model) for r in routes if r.lora or r.runtime_lora]


def fleet_tokens_per_minute(counts: str, total_per_s: float, output_per_s: float) -> int:
    """What a model's fleet serves within the SLA at max replicas, in the tokens the budgets count."""
    per_s = {"total": total_per_s, "output": output_per_s, "input": max(total_per_s - output_per_s, 0.0)}[counts]
    return int(per_s * 60)


def capacity_warnings(q: TokenQuotas, fleets: dict[str, int]) -> list[str]:
    """Per model whose summed budgets exceed what its fleet serves at max replicas (fleets: model -> tokens/min;
    0: unknown, no warning): the budgets then cannot keep the model within its SLA when every key spends them."""
    total = sum(q.budgets.values())
    return [f"gateway.tokenQuotas: the clients' budgets sum to {total:,} {q.counts} tokens/min per model, more than "
            f"{model} serves within its SLA at max replicas ({fleet:,}/min): with every key at its budget the "
            f"model queues past its SLA; lower the budgets or raise models[].replicas.max"
            for model, fleet in sorted(fleets.items()) if fleet and total > fleet]


# What Envoy Gateway v1.9.0 requests for each rate-limit pod unless told otherwise (api/v1alpha1/shared_types.go
# DefaultDeploymentCPUResourceRequests / DefaultDeploymentMemoryResourceRequests, kubernetes_helpers.go
# DefaultResourceRequirements): the plan's cost line
RATELIMIT_RESOURCES = {"cpu": "100m", "memory": "512Mi"}


def quota_lines(q: TokenQuotas | None, fleets: dict[str, int], ratelimit_replicas: int = 1) -> list[str]:
    """What `plan` prints: each client's budget, what the budgets cost to run, and each model's fleet capacity
    beside the summed budgets."""
    if q is None:
        return []
    budgets = ", ".join(f"{c} {n:,}" for c, n in q.budgets.items())
    lines = [f"  token quotas ({q.counts} tokens/min per key and model, 429 beyond): {budgets}",
             f"    counted on the shared URL only (no per-model paths) by Envoy Gateway's rate-limit service, "
             f"counters on Redis {REDIS_URL} (in memory: a restart forgets the current minute; while it is down the "
             f"budgets are not enforced, fail open)",
             f"    added cost: no bill line, on the system nodes: Redis 1 pod {REDIS_RESOURCES['cpu']} CPU / "
             f"{REDIS_RESOURCES['memory']}, envoy-ratelimit {ratelimit_replicas} pod(s) {RATELIMIT_RESOURCES['cpu']} "
             f"CPU / {RATELIMIT_RESOURCES['memory']} each"]
    lines += [f"    {model}: budgets sum {sum(q.budgets.values()):,}/min, fleet at max replicas {fleet:,}/min"
              f"{' ⚠ above what the fleet serves' if sum(q.budgets.values()) > fleet else ''}"
              for model, fleet in sorted(fleets.items()) if fleet]
    return lines
