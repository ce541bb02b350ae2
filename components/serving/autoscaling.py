"""KEDA autoscaling of single-node replicas, from vLLM's own queue and KV-cache gauges.

The ScaledObject targets the Deployment or a LeaderWorkerSet (both have a scale subresource; a set's replicas
are its groups, lws.py); a RayCluster or RayService has none, so those replicas scale through Ray Serve
instead, see rayservice.py. Every trigger is
AverageValue: the HPA divides the summed metric by the replica count, so thresholds are per replica.

Scale to zero (replicas.min 0, dev and staging, single-node only; docs/scale-to-zero.md): with no model
pod running, vLLM's gauges have no series at all, so they cannot wake the model. The gateway's endpoint
picker (EPP) holds the first request in its flow-control queue while the pool has no endpoint, and counts
it in metrics.EPP_PENDING_REQUESTS: that trigger activates KEDA (0 -> 1), and the
in-flight vLLM gauge keeps the model up while any request runs (1 -> 0 only after COOLDOWN_S of none).
"""
from __future__ import annotations

import math

from ..config.schema import Serving
from ..planner import Topology
from .. import metrics

POLLING_S = 15
FALLBACK_FAILURES = 4  # polls in a row a trigger's query fails before KEDA holds the fallback count (1 min)
COOLDOWN_S = 300
# Waiting requests per replica before adding one: a tenth of the batch the plan sized a replica for,
# i.e. the newest queued request waits about a tenth of a request's duration for a slot.
WAITING_FRACTION = 0.1
KV_USAGE_KV_BOUND = 0.75  # the batch fills KV before max_num_seqs: act before preemptions start
KV_USAGE_DEFAULT = 0.9


def waiting_threshold(t: Topology, serving: Serving) -> float:
    if serving.waiting_per_replica is not None:
        return serving.waiting_per_replica
    return float(max(1, math.ceil(t.concurrency_per_replica * WAITING_FRACTION)))


def kv_threshold(t: Topology, serving: Serving) -> float:
    if serving.kv_cache_usage is not None:
        return serving.kv_cache_usage
    return KV_USAGE_KV_BOUND if t.concurrency_bound == "kv-cache" else KV_USAGE_DEFAULT


def series_selector(namespace: str, t: Topology) -> str:
    return f'{{namespace="{namespace}",model_name="{t.served_model_name}"}}'


def inference_pool_name(t: Topology) -> str:
    """The InferencePool the gateway routes this model to: named after the model, in its namespace (the pool
    names its EPP by a same-namespace Service, so the EPP's series carry this namespace too)."""
    return t.served_model_name


def queries(namespace: str, t: Topology) -> dict[str, str]:
    sel = series_selector(namespace, t)
    return {
        "waiting": f"sum({metrics.name('num_requests_waiting')}{sel})",
        "kv": f"sum({metrics.name('kv_cache_usage_perc')}{sel})",
        "running": f"sum({metrics.name('num_requests_running')}{sel})",
        # the EPP's flow-control queue for this model's pool (the gateway's ServiceMonitor scrapes it)
        "gateway": f'sum({metrics.EPP_PENDING_REQUESTS}{{namespace="{namespace}",'
                   f'inference_pool="{inference_pool_name(t)}"}})',
    }


def _fmt(x: float) -> str:
    return f"{x:g}"


def scales_to_zero(t: Topology) -> bool:
    return t.min_replicas == 0


# Activation (0 <-> 1) when scaling to zero: a trigger is active while its value is ABOVE this. vLLM's KV
# usage is a scaling signal only (its value never exceeds 1, so it never activates): whether the model is
# busy comes from the request counts, exactly 0 on an idle engine.
ACTIVATION = {"waiting-requests": 0, "kv-cache-usage": 1, "running-requests": 0, "gateway-queue": 0}


def cooldown_s(t: Topology, cold_start_s: int = 0) -> int:
    """KEDA's wait after the last active trigger before 1 -> 0. A scale-to-zero model woken by one request that
    gave up (the gateway answers 503 + Retry-After after its hold, gateway/wake.py) must not be sent back to zero
    while its first replica still starts (a new GPU node, the weights): the wait covers the cold start, so a
    client that retries within it finds the model up."""
    return max(COOLDOWN_S, cold_start_s) if scales_to_zero(t) else COOLDOWN_S


def scaled_object_spec(deployment: str, namespace: str, t: Topology, prometheus_url: str,
                       serving: Serving, target: dict | None = None, cold_start_s: int = 0) -> dict:
    """target: the scaleTargetRef when it is not the Deployment of that name (a LeaderWorkerSet, lws.py);
    cold_start_s: the plan's cold start of one replica (cold_start.py), the cooldown of a scale-to-zero model."""
    q = queries(namespace, t)
    zero = scales_to_zero(t)

    def trigger(name: str, query: str, threshold: float) -> dict:
        meta = {"serverAddress": prometheus_url, "query": query, "threshold": _fmt(threshold),
                # no samples (e.g. Prometheus restarting) means no load, not an error
                "ignoreNullValues": "true"}
        if zero:
            meta["activationThreshold"] = _fmt(ACTIVATION[name])
        return {"type": "prometheus", "name": name, "metricType": "AverageValue", "metadata": meta}

    triggers = [trigger("waiting-requests", q["waiting"], waiting_threshold(t, serving)),
                trigger("kv-cache-usage", q["kv"], kv_threshold(t, serving))]
    if zero:
        # the wake-up: requests the gateway holds for the empty pool (also scales out when it queues there)
        triggers.append(trigger("gateway-queue", q["gateway"], waiting_threshold(t, serving)))
        # keeps the model up while it answers; a full batch per replica is the planned concurrency
        triggers.append(trigger("running-requests", q["running"], t.concurrency_per_replica))
    return {
        "scaleTargetRef": target or {"apiVersion": "apps/v1", "kind": "Deployment", "name": deployment},
        "pollingInterval": POLLING_S,
        "cooldownPeriod": cooldown_s(t, cold_start_s),
        "minReplicaCount": t.min_replicas,
        "maxReplicaCount": t.max_replicas,
        "advanced": {"horizontalPodAutoscalerConfig": {"behavior": {
            # up fast: a queue grows while a new replica spends minutes loading weights
            "scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
                        "policies": [{"type": "Percent", "value": 100, "periodSeconds": 60},
                                     {"type": "Pods", "value": 2, "periodSeconds": 60}]},
            # down slowly: one replica at a time, after the load stayed low for the whole window
            "scaleDown": {"stabilizationWindowSeconds": serving.scale_down_window_s, "selectPolicy": "Min",
                          "policies": [{"type": "Pods", "value": 1, "periodSeconds": 300}]},
        }}},
        # Prometheus down (a drain, a full disk): every trigger's query fails. After FALLBACK_FAILURES polls in a row
        # KEDA v2.20.2 replaces the failing triggers' metric so the HPA asks for `replicas`, with currentReplicasIfHigher
        # never fewer than run now (pkg/fallback/fallback.go doFallback): scaling holds the planned count instead of
        # reading "no load" and scaling the fleet in. Valid for AverageValue triggers that are not cpu / memory
        # (apis/keda/v1alpha1/scaledobject_types.go CheckFallbackValid), as these are. Not for a scale-to-zero model:
        # RequestScale (pkg/scaling/executor/scale_scaledobjects.go) honours a fallback only when replicas != 0, and
        # a fallback of 0 with minReplicaCount 0 falls through to scaleToZeroOrIdle, which would take a serving model
        # to zero; without a fallback it reports TriggerError and leaves the replicas as they are.
        **({} if zero else {"fallback": {"failureThreshold": FALLBACK_FAILURES, "replicas": t.replicas,
                                         "behavior": "currentReplicasIfHigher"}}),
        "triggers": triggers,
    }
