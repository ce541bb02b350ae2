"""How a model is reached: its ClusterIP Service, who may call it (NetworkPolicy), and how many of
its pods a voluntary disruption may take (PodDisruptionBudget)."""
from __future__ import annotations

from ..gateway.objects import NAMESPACE as GATEWAY_NAMESPACE
from ..gateway.objects import PROXY_POD_LABELS as GATEWAY_POD
from ..gateway.values import EPP_POD_LABEL
from ..planner import Topology
from ..planner.vllm_args import VLLM_PORT
from ..kube.pods import MODEL_LABEL, ROLE_LABEL, selector
from .rayservice import METRICS_PORT, worker_min_available

# prometheus-operator labels every Prometheus pod it runs with this (kube-prometheus-stack included).
PROMETHEUS_POD = {"app.kubernetes.io/name": "prometheus"}
# The KubeRay operator polls the head's dashboard (Serve status) and Serve's health endpoint.
KUBERAY_OPERATOR_POD = {"app.kubernetes.io/name": "kuberay-operator"}
RAY_DASHBOARD_PORT = 8265
RAY_ROLES = ["ray-head", "ray-worker"]
# The inference gateway's Envoy proxies (GATEWAY_POD in GATEWAY_NAMESPACE, components/gateway/objects.py) call
# the API port; the endpoint pickers run in the serving namespace itself (its peer `podSelector: {}`).


def service_spec(model: str) -> dict:
    return {"type": "ClusterIP", "selector": selector(model, "server"),
            "ports": [{"name": "http", "port": VLLM_PORT, "targetPort": "http", "protocol": "TCP"}]}


def _ports(*ports: int) -> list[dict]:
    return [{"port": p, "protocol": "TCP"} for p in ports]


def _clients(allowed_namespaces: list[str]) -> list[dict]:
    """The serving namespace itself plus the namespaces named in serving.allowedNamespaces."""
    peers = [{"podSelector": {}}]
    peers += [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}}}
              for ns in sorted(set(allowed_namespaces))]
    return peers


def _from_namespace(namespace: str | None, pod_labels: dict[str, str]) -> list[dict]:
    """Pods with these labels in that namespace. Pod labels alone are no credential (any tenant can set
    them), so the namespace is pinned by the label the API server sets on every namespace; an unknown
    namespace (a cluster's own Prometheus / KubeRay) falls back to any namespace."""
    ns = {"matchLabels": {"kubernetes.io/metadata.name": namespace}} if namespace else {}
    return [{"namespaceSelector": ns, "podSelector": {"matchLabels": dict(pod_labels)}}]


def _kv_events(model: str, port: int | None) -> list[dict]:
    """Precise prefix routing (serving/prefix_routing.py): the model's endpoint pickers, in this namespace, dial each
    pod's KV-cache event socket (planner/engine_args.py KV_EVENTS_PORT; the picker's own render calls use the API
    port, which the namespace may call already)."""
    if port is None:
        return []
    return [{"from": [{"podSelector": {"matchLabels": {EPP_POD_LABEL: f"{model}-epp"}}}], "ports": _ports(port)}]


def network_policy_spec(model: str, multi_node: bool, allowed_namespaces: list[str],
                        prometheus_namespace: str | None = None, kuberay_namespace: str | None = None,
                        gateway: bool = True, peers: bool = False, kv_events_port: int | None = None) -> dict:
    """Ingress only; egress stays open (the prefetch reaches the Hub, engines reach each other).
    gateway: the inference gateway's Envoy proxies may call the API port (the stack's `gateway:` block).
    peers: a P/D model's pods reach each other on every port (the decode sidecar calls the prefill pod's API,
    NIXL's side channel, 5600, and UCX's TCP transport on ports of its own choosing; serving/disagg.py).
    kv_events_port: the model's endpoint pickers may dial its KV-cache event socket (precise prefix routing)."""
    callers = _clients(allowed_namespaces) + (_from_namespace(GATEWAY_NAMESPACE, GATEWAY_POD) if gateway else [])
    if not multi_node:
        # vLLM serves /metrics on the API port
        own = [{"from": [{"podSelector": {"matchLabels": selector(model, "server")}}]}] if peers else []
        return {"podSelector": {"matchLabels": selector(model, "server")}, "policyTypes": ["Ingress"],
                "ingress": [*own, {"from": callers, "ports": _ports(VLLM_PORT)},
                            {"from": _from_namespace(prometheus_namespace, PROMETHEUS_POD),
                             "ports": _ports(VLLM_PORT)}, *_kv_events(model, kv_events_port)]}
    ray_pods = {"matchLabels": {MODEL_LABEL: model},
                "matchExpressions": [{"key": ROLE_LABEL, "operator": "In", "values": RAY_ROLES}]}
    return {"podSelector": ray_pods, "policyTypes": ["Ingress"],
            "ingress": [
                # GCS, raylets, object transfer and NCCL's bootstrap between the model's own Ray pods
                {"from": [{"podSelector": ray_pods}]},
                {"from": callers, "ports": _ports(VLLM_PORT)},
                {"from": _from_namespace(prometheus_namespace, PROMETHEUS_POD), "ports": _ports(METRICS_PORT)},
                # the dashboard port also takes Ray job submissions: only the operator may reach it
                {"from": _from_namespace(kuberay_namespace, KUBERAY_OPERATOR_POD),
                 "ports": _ports(RAY_DASHBOARD_PORT, VLLM_PORT)},
            ]}


def lws_network_policy_spec(model: str, allowed_namespaces: list[str], prometheus_namespace: str | None = None,
                            gateway: bool = True, kv_events_port: int | None = None) -> dict:
    """A LeaderWorkerSet's pods (lws.py): any port between the set's own pods (torch.distributed's store on the
    master port, NCCL, the executor's message queues); the API and /metrics on the leaders only (workers are
    headless and listen on nothing else)."""
    from .lws import ROLES
    callers = _clients(allowed_namespaces) + (_from_namespace(GATEWAY_NAMESPACE, GATEWAY_POD) if gateway else [])
    pods = {"matchLabels": {MODEL_LABEL: model},
            "matchExpressions": [{"key": ROLE_LABEL, "operator": "In", "values": list(ROLES)}]}
    return {"podSelector": pods, "policyTypes": ["Ingress"],
            "ingress": [{"from": [{"podSelector": pods}]},
                        {"from": callers, "ports": _ports(VLLM_PORT)},
                        {"from": _from_namespace(prometheus_namespace, PROMETHEUS_POD), "ports": _ports(VLLM_PORT)},
                        *_kv_events(model, kv_events_port)]}


def pdb_spec(model: str, t: Topology) -> dict:
    """Single-node replicas: voluntary disruptions (drains, node upgrades, autoscaler scale-down) take at most
    one replica at a time. Not minAvailable = min replicas: at idle the fleet runs exactly that many, and such a budget
    would block every node upgrade forever (EKS managed node groups then fail with PodEvictionFailure).
    Production keeps serving through a drain because its replicas are spread over at least two nodes (the
    planner's spread_nodes).

    Ray workers: rayservice.worker_min_available (npr x min - 1), the same rule counted in worker pods: one
    node's worker may go at the minimum fleet, so a drain takes one replica at a time and never waits for
    ever. A minAvailable that keeps replicas.min multi-node replicas whole would allow no eviction at the
    minimum fleet, and every node-group upgrade would stall on it (docs/serving.md, "The GPU workers")."""
    if t.multi_node:
        spec = {"minAvailable": worker_min_available(t), "selector": {"matchLabels": selector(model, "ray-worker")}}
    else:
        spec = {"maxUnavailable": 1, "selector": {"matchLabels": selector(model, "server")}}
    # A pod that is not Ready (crash-looping, stuck pulling, still loading) serves nothing: a drain may always
    # evict it, instead of the budget pinning its node until an operator steps in.
    return {**spec, "unhealthyPodEvictionPolicy": "AlwaysAllow"}
