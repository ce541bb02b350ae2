"""The gateway's Kubernetes objects as plain specs (pure: tests read them without Pulumi).

Gateway API v1 (schemas/crds/gateway-api, v1.6.1), GAIE InferencePool v1 (schemas/crds/gateway-api-inference-
extension, v1.6.0) and Envoy Gateway's policies (schemas/crds/envoy-gateway, v1.9.0). docs/gateway.md.
"""
from __future__ import annotations

from dataclasses import dataclass, field

# Envoy Gateway runs the controller and the Envoy proxies it creates for a Gateway in one namespace (the
# chart's release namespace); the proxies carry these labels (envoyproxy/gateway v1.9.0
# internal/infrastructure/kubernetes/proxy/resource.go, envoyLabels).
NAMESPACE = "envoy-gateway-system"
AI_GATEWAY_NAMESPACE = "envoy-ai-gateway-system"
CONTROLLER_NAME = "gateway.envoyproxy.io/gatewayclass-controller"
PROXY_POD_LABELS = {"app.kubernetes.io/name": "envoy", "app.kubernetes.io/component": "proxy",
                    "app.kubernetes.io/managed-by": "envoy-gateway"}
CLASS_NAME = "vllm-platform"
GATEWAY_NAME = "inference"
# The identity Envoy's api_key_auth filter found, forwarded as this header; rate limits select on it.
CLIENT_HEADER = "x-vllm-platform-client"
# Where a client's key is read from: OpenAI SDKs send `Authorization: Bearer KEY`; Envoy Gateway compares the
# value after the Bearer prefix (v1.9 docs, tasks/security/apikey-auth.md); x-api-key for other tools.
KEY_HEADERS = ["authorization", "x-api-key"]
HTTP_PORT, HTTPS_PORT = 80, 443
# The endpoint picker's ext-proc port (llm-d-router v0.10.0 routerlib values.yaml epp.extProcPort).
EPP_PORT = 9002
# A RayService's Serve Service: components/serving/rayservice.py sets spec.serveService.metadata.name to the
# model's name, and KubeRay v1.7.0 keeps a user-provided name (ray-operator/controllers/ray/common/service.go
# setNameforUserProvidedService; `<name>-serve-svc` only when none is given); its `serve` port is 8000.
SERVE_PORT = 8000


def serve_service(model: str) -> str:
    return model
@dataclass(frozen=True)
class ModelRoute:
    """One model behind the gateway: single-node (an InferencePool over its pods) or multi-node (Ray Serve)."""
    model: str               # served model name = Kubernetes name
    namespace: str
    multi_node: bool
    pod_selector: dict[str, str] = field(default_factory=dict)  # single-node: the vLLM pods' labels
    port: int = 8000         # the vLLM container's port (single-node)
    # Scale to zero (replicas.min 0; serving/cold_start.py): the EPP holds the first request in its flow-control
    # queue for the cold start, at most wake.WAKE_HOLD_S (its queue TTL), then the gateway answers the wake contract
    # (503 + Retry-After, wake.py); the route allows first_request_s (cold start + the longest answer). None: a
    # model that keeps a warm replica (flow control off, the stack's timeout).
    cold_start_s: int | None = None
    first_request_s: int | None = None
    # The plan's ceiling on the model's concurrent requests: max replicas x the requests one replica holds within
    # the SLA (Topology.concurrency_per_replica); the gateway's circuit breaker for the model (503 beyond it).
    max_concurrency: int | None = None
    # LoRA slots (engine.lora): the EPP adds its lora-affinity-scorer (values.py); runtime_lora (engine.lora.
    # runtimeUpdates): vLLM serves its adapter load / unload endpoints, which this route answers itself (403)
    lora: bool = False
    runtime_lora: bool = False
    disaggregated: bool = False  # prefill and decode pods (planner/disagg.py): the picker's P/D profile
    # What the fleet serves within the SLA at max replicas, tokens/s (planner/capacity.py's knee x max replicas):
    # the token quotas' plan line and capacity warning compare the budgets with it (gateway/quotas.py)
    max_total_tokens_per_s: float = 0.0
    max_output_tokens_per_s: float = 0.0

    @property
    def path(self) -> str:
        """The per-model prefix: POST {url}/{model}/v1/chat/completions reaches /v1/chat/completions."""
        return f"/{self.model}/v1"


def gateway_class(envoy_proxy: str) -> dict:
    return {"controllerName": CONTROLLER_NAME,
            "parametersRef": {"group": "gateway.envoyproxy.io", "kind": "EnvoyProxy", "name": envoy_proxy,
                              "namespace": NAMESPACE}}


def lb_annotations(cloud: str, scheme: str, tls_mode: str, certificate_arn: str | None) -> dict[str, str]:
    """The Envoy Service's annotations: on AWS the AWS Load Balancer Controller makes an NLB with IP targets
    (kubernetes-sigs/aws-load-balancer-controller docs guide/service/annotations.md); on GKE an internal
    passthrough Network LB (cloud.google.com/kubernetes-engine/docs/concepts/service-load-balancer-parameters)."""
    if cloud == "aws":
        out = {"service.beta.kubernetes.io/aws-load-balancer-type": "external",
               "service.beta.kubernetes.io/aws-load-balancer-nlb-target-type": "ip",
               "service.beta.kubernetes.io/aws-load-balancer-scheme": scheme}
        if tls_mode == "acm":
            out["service.beta.kubernetes.io/aws-load-balancer-ssl-cert"] = str(certificate_arn)
            out["service.beta.kubernetes.io/aws-load-balancer-ssl-ports"] = str(HTTPS_PORT)
        return out
    if cloud == "gcp" and scheme == "internal":
        return {"networking.gke.io/load-balancer-type": "Internal"}
    return {}


# Envoy Gateway labels each Gateway's proxies with its owner (v1.9.0 internal/gatewayapi/translator.go
# OwningGatewayNameLabel / OwningGatewayNamespaceLabel): the spread counts this Gateway's proxies only.
OWNING_GATEWAY_LABELS = {"gateway.envoyproxy.io/owning-gateway-name": GATEWAY_NAME,
                         "gateway.envoyproxy.io/owning-gateway-namespace": NAMESPACE}
HOST_KEY, ZONE_KEY = "kubernetes.io/hostname", "topology.kubernetes.io/zone"


def proxy_spread(zones: bool) -> list[dict]:
    """The proxies on different nodes (DoNotSchedule; with one eligible node both still run there) and, where the
    cloud has zones, preferably in different zones. Tainted nodes (GPU pools) are no domain (nodeTaintsPolicy
    Honor), else a skew towards them would leave the second proxy Pending; pod-template-hash: a rollout's new pods
    are spread among themselves."""
    selector = {"matchLabels": {**PROXY_POD_LABELS, **OWNING_GATEWAY_LABELS}}
    out = [{"maxSkew": 1, "topologyKey": HOST_KEY, "whenUnsatisfiable": "DoNotSchedule",
            "nodeTaintsPolicy": "Honor", "labelSelector": selector, "matchLabelKeys": ["pod-template-hash"]}]
    if zones:
        out.append({"maxSkew": 1, "topologyKey": ZONE_KEY, "whenUnsatisfiable": "ScheduleAnyway",
                    "nodeTaintsPolicy": "Honor", "labelSelector": selector, "matchLabelKeys": ["pod-template-hash"]})
    return out


# AWS: the Load Balancer Controller's webhook adds a target-health readiness gate to every pod created in a
# namespace labelled so (aws-load-balancer-controller v2.17 docs/deploy/pod_readiness_gate.md; the chart's
# enablePodReadinessGateInject defaults to true; IP targets only, which the NLB uses): a new Envoy pod counts as
# ready only once the NLB reports it healthy, so a rollout never removes the last registered target. The label is
# on the namespace from its creation, before the Envoy pods (created after the Gateway) exist.
READINESS_GATE_LABEL = "elbv2.k8s.aws/pod-readiness-gate-inject"


def readiness_gate_labels(cloud: str) -> dict[str, str]:
    return {READINESS_GATE_LABEL: "enabled"} if cloud == "aws" else {}


def envoy_proxy_spec(annotations: dict[str, str], source_ranges: list[str], replicas: int = 1,
                     node_selector: dict[str, str] | None = None, zones: bool = False) -> dict:
    """The Envoy proxies' Service and Deployment (EnvoyProxy v1alpha1 provider.kubernetes). replicas >= 2
    (production, components/wiring.py): a PodDisruptionBudget keeps one proxy up through a node drain
    (envoyPDB minAvailable 1) and the proxies are spread across nodes (and zones)."""
    service: dict = {"type": "LoadBalancer", "annotations": dict(annotations)}
    if source_ranges:
        service["loadBalancerSourceRanges"] = list(source_ranges)
    kubernetes: dict = {"envoyService": service}
    pod: dict = {}
    if node_selector:
        pod["nodeSelector"] = dict(node_selector)
    if replicas > 1:
        pod["topologySpreadConstraints"] = proxy_spread(zones)
        kubernetes["envoyPDB"] = {"minAvailable": 1}
    if replicas != 1 or pod:
        kubernetes["envoyDeployment"] = {"replicas": replicas, **({"pod": pod} if pod else {})}
    return {"provider": {"type": "Kubernetes", "kubernetes": kubernetes}}


def listener_port(tls_mode: str) -> int:
    return HTTP_PORT if tls_mode == "none" else HTTPS_PORT


# Routes attach only from namespaces this project made (components/platform.py labels its serving namespace so),
# also those of workloads stacks on a shared cluster; a route elsewhere is ignored by the Gateway.
ROUTE_NAMESPACES = {"app.kubernetes.io/part-of": "vllm-platform"}


# tls modes in which Envoy terminates HTTPS with a kubernetes.io/tls Secret in the gateway namespace: certificate (the
# stack makes it from the secrets gatewayTlsCert / gatewayTlsKey) and secret (yours or cert-manager's)
ENVOY_TERMINATES = ("certificate", "secret")
# the Secret the stack makes in tls.mode certificate
TLS_SECRET = "vllm-gateway-tls"


def gateway_spec(tls_mode: str, secret_name: str | None, hostname: str | None) -> dict:
    """One listener. tls certificate / secret: Envoy terminates HTTPS with the Secret; acm: the NLB terminates TLS
    on 443 and hands Envoy plain HTTP on the same port; none: plain HTTP on 80."""
    terminates = tls_mode in ENVOY_TERMINATES
    listener: dict = {"name": "api", "port": listener_port(tls_mode),
                      "protocol": "HTTPS" if terminates else "HTTP",
                      "allowedRoutes": {"namespaces": {"from": "Selector",
                                                       "selector": {"matchLabels": dict(ROUTE_NAMESPACES)}}}}
    if terminates:
        name = TLS_SECRET if tls_mode == "certificate" else str(secret_name)
        listener["tls"] = {"mode": "Terminate", "certificateRefs": [{"kind": "Secret", "name": name}]}
    if hostname:
        listener["hostname"] = hostname
    return {"gatewayClassName": CLASS_NAME, "listeners": [listener]}


def http_route_spec(r: ModelRoute, timeout_s: int, hostname: str | None) -> dict:
    """{prefix}/... -> the model's InferencePool (the endpoint picker chooses the pod) or its Ray Serve Service;
    the prefix is rewritten to /v1 so vLLM / Serve see the OpenAI paths. The request timeout is the stack's
    gateway.requestTimeoutS, raised to the first request's wait for a model that scales to zero."""
    if r.multi_node:
        backend = {"kind": "Service", "name": serve_service(r.model), "port": SERVE_PORT}
    else:
        backend = {"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": r.model}
    spec: dict = {
        "parentRefs": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": GATEWAY_NAME,
                        "namespace": NAMESPACE}],
        "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": r.path}}],
                   "filters": [{"type": "URLRewrite", "urlRewrite": {"path": {"type": "ReplacePrefixMatch",
                                                                               "replacePrefixMatch": "/v1"}}}],
                   "backendRefs": [backend],
                   "timeouts": {"request": f"{max(timeout_s, r.first_request_s or 0)}s"}}],
    }
    if r.runtime_lora:
        spec["rules"].insert(0, lora_admin_rule(r))
    if hostname:
        spec["hostnames"] = [hostname]
    return spec


# vLLM 0.31's adapter endpoints (vllm/entrypoints/serve/lora/api_router.py, registered only with
# VLLM_ALLOW_RUNTIME_LORA_UPDATING): the route never forwards them. Envoy Gateway normalises the path first (v1.9.0
# internal/xds/translator/listener.go: normalize_path on, merge_slashes on by default), so `//` or a percent-encoded
# letter does not slip past the match; a PathPrefix also takes a trailing slash or a sub-path.
LORA_ADMIN_ENDPOINTS = ("load_lora_adapter", "unload_lora_adapter")
EG_FILTER_API = "gateway.envoyproxy.io/v1alpha1"


def lora_admin_filter_name(model: str) -> str:
    return f"{model}-lora-admin"


def lora_admin_filter_spec() -> dict:
    """Envoy Gateway HTTPRouteFilter (v1.9.0 api/v1alpha1/httproutefilter_types.go directResponse): a fixed 403."""
    return {"directResponse": {"statusCode": 403, "contentType": "application/json", "body": {
        "type": "Inline", "inline": '{"error": "adapters are loaded and unloaded inside the cluster, not through '
                                    'the gateway (docs/lora.md)"}'}}}


def lora_admin_rule(r: ModelRoute) -> dict:
    """The rule that answers the adapter endpoints with the filter's 403: no backend, so nothing is forwarded
    (the longest matching prefix wins over the model's /<model>/v1 rule, Gateway API HTTPRoute precedence)."""
    return {"matches": [{"path": {"type": "PathPrefix", "value": f"{r.path}/{e}"}} for e in LORA_ADMIN_ENDPOINTS],
            "filters": [{"type": "ExtensionRef", "extensionRef": {
                "group": "gateway.envoyproxy.io", "kind": "HTTPRouteFilter", "name": lora_admin_filter_name(r.model)}}]}


def _route_ref(model: str) -> dict:
    return {"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": model}


def security_policy_spec(model: str, keys_secret: str, keys_namespace: str) -> dict:
    """API keys: a request without one of the Secret's keys gets 401 from Envoy and never reaches a pod.
    `model`: the HTTPRoute it guards (a model's, or the shared route AI Gateway generates)."""
    return {"targetRefs": [_route_ref(model)],
            "apiKeyAuth": {"credentialRefs": [{"group": "", "kind": "Secret", "name": keys_secret,
                                               "namespace": keys_namespace}],
                           "extractFrom": [{"headers": list(KEY_HEADERS)}],
                           "forwardClientIDHeader": CLIENT_HEADER, "sanitize": True}}


def backend_traffic_policy_spec(model: str, clients: list[str], requests_per_second: int, concurrent: int | None,
                                max_request_mib: int, auth: bool, targets: list[dict] | None = None,
                                token_rules: list[dict] | None = None,
                                response_override: list[dict] | None = None) -> dict:
    """Per key: requests/s (local rate limit per client id, 429 beyond it); per model: concurrent requests
    (circuit breaker on the model's backend, 503 beyond it; None: no breaker, for a route without a backend of its
    own) and the request size (buffered up to the limit, 413 beyond it). targets: the HTTPRoute (rules) it
    governs, by default the model's own route. token_rules: the per-key token budgets (gateway/quotas.py), global
    rules beside the local request limits (Envoy Gateway v1.9.0 takes both when `type`, deprecated, is unset:
    internal/gatewayapi/backendtrafficpolicy.go buildBothRateLimit). response_override: a model at zero's wake
    contract (gateway/wake.py: the picker's 503 for an empty pool answered with Retry-After)."""
    if auth:
        rules = [{"clientSelectors": [{"headers": [{"name": CLIENT_HEADER, "type": "Exact", "value": c}]}],
                  "limit": {"requests": requests_per_second, "unit": "Second"}} for c in clients]
    else:  # no identity: one bucket for everyone
        rules = [{"limit": {"requests": requests_per_second, "unit": "Second"}}]
    rate_limit: dict = {"type": "Local", "local": {"rules": rules}}
    if token_rules:
        rate_limit = {"local": {"rules": rules}, "global": {"rules": list(token_rules)}}
    spec: dict = {"targetRefs": targets or [_route_ref(model)], "rateLimit": rate_limit,
                  "requestBuffer": {"limit": f"{max_request_mib}Mi"}}
    if concurrent is not None:
        # maxPendingRequests only queues for an upstream connection; a request beyond maxParallelRequests is
        # refused at once (Envoy: 503 with x-envoy-overloaded: true)
        spec["circuitBreaker"] = {"maxParallelRequests": concurrent, "maxPendingRequests": concurrent}
    if response_override:
        spec["responseOverride"] = list(response_override)
    return spec


def url(host: str, tls_mode: str, r: ModelRoute) -> str:
    scheme = "http" if tls_mode == "none" else "https"
    return f"{scheme}://{host}{r.path}"


# Ray Serve LLM's prefix-cache-aware replica router for multi-node models (docs.ray.io serve/llm
# prefix-aware-request-router, "PrefixCacheAffinityRouter", alpha API; ray.serve.config.RequestRouterConfig
# field request_router_class). Set in the LLM deployment's deployment_config (components/serving/rayservice.py).
RAY_PREFIX_ROUTER = "ray.serve.llm.request_router.PrefixCacheAffinityRouter"


def ray_request_router() -> dict:
    return {"request_router_config": {"request_router_class": RAY_PREFIX_ROUTER}}


def with_api_key(deployment_spec: dict, secret: str, key: str) -> dict:
    """Without a gateway (dev): vLLM checks the key itself. vLLM reads VLLM_API_KEY when --api-key is not given
    (vllm/entrypoints/openai/api_server.py: `args.api_key or envs.VLLM_API_KEY`), so the key comes from the
    Secret by reference and never appears in the pod's args. One key: the first client's."""
    for c in deployment_spec["template"]["spec"]["containers"]:
        if c["name"] == "vllm":
            c["env"] = [*c.get("env", []), {"name": "VLLM_API_KEY",
                                            "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}}]
    return deployment_spec
