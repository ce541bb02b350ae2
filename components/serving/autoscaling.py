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
from dataclasses import dataclass

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


# issue 39: the P/D pools' series told apart. The ServiceMonitor copies the pods' llm-d.ai/role label onto every
# series it scrapes (observability.service_monitor_spec podTargetLabels); prometheus-operator v0.93.0
# pkg/prometheus/promcfg.go generateServiceMonitorConfig relabels __meta_kubernetes_pod_label_<l> to target label
# sanitizeLabelName(l), which replaces every character outside [a-zA-Z0-9_] with "_" (invalidLabelCharRE).
ROLE_SERIES_LABEL = "llm_d_ai_role"


def series_selector(namespace: str, t: Topology, role: str | None = None) -> str:
    """One model's vLLM series; role: one P/D pool's (prefill | decode)."""
    extra = f',{ROLE_SERIES_LABEL}="{role}"' if role else ""
    return f'{{namespace="{namespace}",model_name="{t.served_model_name}"{extra}}}'


def inference_pool_name(t: Topology) -> str:
    """The InferencePool the gateway routes this model to: named after the model, in its namespace (the pool
    names its EPP by a same-namespace Service, so the EPP's series carry this namespace too)."""
    return t.served_model_name


def queries(namespace: str, t: Topology) -> dict[str, str]:
    sel = series_selector(namespace, t)
    return {
        "waiting": f"sum({metrics.name('num_requests_waiting')}{sel})",
        # one series per engine: a wide-EP group's leader publishes one per DP rank (vLLM's internal DP load balancer
        # keeps a stat logger per engine it manages), so the group's usage is their mean, not their sum
        "kv": f"sum({metrics.name('kv_cache_usage_perc')}{sel})" + (
            f" / {t.data_parallel_size}" if t.wide_ep and t.data_parallel_size > 1 else ""),
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
ACTIVATION = {"waiting-requests": 0, "kv-cache-usage": 1, "running-requests": 0, "in-flight-requests": 0,
              "gateway-queue": 0,
              # the latency guards are 0 or above 1 (guard_query); with no pod there is no series: 0
              "ttft-tail": 0, "tpot-tail": 0}


def cooldown_s(t: Topology, cold_start_s: int = 0) -> int:
    """KEDA's wait after the last active trigger before 1 -> 0. A scale-to-zero model woken by one request that
    gave up (the gateway answers 503 + Retry-After after its hold, gateway/wake.py) must not be sent back to zero
    while its first replica still starts (a new GPU node, the weights): the wait covers the cold start, so a
    client that retries within it finds the model up."""
    return max(COOLDOWN_S, cold_start_s) if scales_to_zero(t) else COOLDOWN_S


# --- issue 39: SLO-driven autoscaling (serving.autoscaling / models[].replicas.autoscaling: slo) and the P/D pools ---
MODES = ("queue", "slo")
FIELD = "serving.autoscaling"
# The latency guards' rate window: 8 scrapes at the ServiceMonitor's 15 s interval (observability.SCRAPE_INTERVAL), so
# one missed scrape leaves the rate defined, and 8 KEDA polls (POLLING_S) read the same breach before it ages out.
# The scale-down stabilisation (serving.scaleDownWindowS, 600 s by default) outlasts it: a replica a breach added
# stays for the window after the tail recovers, and the queue/KV/knee triggers decide whether it goes then.
LATENCY_WINDOW = "2m"
QUANTILES = {"p90": 0.9, "p99": 0.99}  # Sla.latency_percentile -> histogram_quantile's q; "mean": sum / count
# Fewest requests in the window for a tail to mean anything: below 1 / (1 - q) observations the quantile is the
# slowest request (or NaN); the guard stays 0 there instead of adding a GPU replica for one slow request.
MIN_OBSERVATIONS = {"p90": 10, "p99": 100, "mean": 10}
TTFT_METRIC = "time_to_first_token_seconds"
# vLLM's per-request time per output token (decode time / generated tokens), the series the SLA alerts read
# (observability.TPOT), not the per-step inter-token latency
TPOT_METRIC = "request_time_per_output_token_seconds"


@dataclass(frozen=True)
class Signal:
    """One KEDA trigger and what the plan says of it."""
    name: str
    query: str
    threshold: float
    what: str  # the plan's words: the series it reads and why this threshold
    guard: bool = False  # a latency guard: only ever adds a replica (guard_query)


def autoscaling_mode(serving: Serving, override: str | None = None) -> str:
    """A model's mode: models[].replicas.autoscaling, else serving.autoscaling."""
    return override or serving.autoscaling


def breach_query(metric: str, sel: str, percentile: str, sla_s: float) -> str:
    """1 while the window's requests miss the SLA at its percentile, else 0 (NaN with no request, which `> bool`
    makes 0). p90 / p99: the share of requests slower than the first bucket bound at or above the SLA
    (metrics.bucket_at_or_above) exceeds 1 - q, read exactly off the cumulative bucket, as the SLA alerts do
    (serving/observability.py). Not histogram_quantile: it interpolates linearly inside a bucket, so with vLLM's TPOT
    buckets 25 / 50 ms and a 40 ms SLA, requests all at 30 ms read p90 47.5 ms, a breach that is not there (checked
    with promtool in the review of issue 39). Mean: sum / count over the window above the SLA."""
    if percentile in QUANTILES:
        bound = metrics.bucket_at_or_above(metric, sla_s)
        return (f"({metrics.slower_share(metric, bound, sel, LATENCY_WINDOW)} > bool "
                f"{round(1 - QUANTILES[percentile], 4):g})")
    total, count = metrics.name(metric, suffix="_sum"), metrics.name(metric, suffix="_count")
    return (f"((sum(rate({total}{sel}[{LATENCY_WINDOW}])) / sum(rate({count}{sel}[{LATENCY_WINDOW}]))) > bool "
            f"{sla_s:g})")


def guard_query(metric: str, sel: str, percentile: str, sla_s: float) -> str:
    """A latency guard as an AverageValue trigger of threshold 1 that can only scale OUT: its value is 0 while the
    measured tail meets the SLA (breach_query), and while it misses it, N + 1 + floor(N / 10) for the N pods
    serving, so the HPA's proposal ceil(value / 1) is at least one replica more than run now.

    Why this form (KEDA v2.20.2 and the HPA it feeds):
    - a raw latency as AverageValue would be divided by the replica count (pkg/scalers/prometheus_scaler.go
      GetMetricSpecForScaling: metricType AverageValue -> the HPA's external AverageValue target), but a latency is
      no per-replica share of a total: halving it by doubling replicas is wrong both ways, and a low latency would
      ask to scale IN. As 0 the guard's proposal is 0, which the HPA's max over the triggers ignores: the other
      triggers alone decide scale-in.
    - the HPA acts only when usage / (target x replicas) leaves 1 +- its tolerance (kubernetes
      pkg/controller/podautoscaler/replica_calculator.go GetExternalPerPodMetricReplicas; 0.1 by default): N + 1
      alone is inside it from N = 10, hence + floor(N / 10) (ratio 1 + (1 + floor(N/10)) / N > 1.1 for every N).
    - N counts pods (`count by (pod)`), not series: a wide-EP group's leader exports one series per DP rank.
    - fewer than MIN_OBSERVATIONS requests multiply it by 0; no series at all is an empty result, which
      ignoreNullValues turns into 0 (prometheus_scaler.go ExecutePromQuery: empty result, NaN or Inf -> 0 with
      ignoreNullValues). Every operand is an aggregation without labels, so the query returns one element (more is
      an error there: "returned multiple elements").
    - pods still loading weights export no series yet, so while one added replica starts the guard asks for no
      second: one replica per breach, each judged once it serves."""
    pods = f"count(count by (pod) ({metrics.name('num_requests_running')}{sel}))"
    count = metrics.name(metric, suffix="_count")
    return (f"({pods} + 1 + floor({pods} / 10))"
            f" * {breach_query(metric, sel, percentile, sla_s)}"
            f" * (sum(increase({count}{sel}[{LATENCY_WINDOW}])) >= bool {MIN_OBSERVATIONS[percentile]})")


def _tail_signal(name: str, metric: str, sel: str, t: Topology, sla_ms: float, what: str) -> Signal:
    pct = t.latency_percentile
    if pct in QUANTILES:
        bound_ms = metrics.bucket_at_or_above(metric, sla_ms / 1000) * 1000
        at = (f"more than {round(1 - QUANTILES[pct], 4):.0%} of requests over {LATENCY_WINDOW} slower than "
              f"{bound_ms:g} ms" + ("" if abs(bound_ms - sla_ms) < 1e-6 else
                                    f" (vLLM's first bucket bound at or above the {sla_ms:g} ms SLA)"))
        said = f"{what} (vLLM {metrics.name(metric)}): {at}"
    else:
        said = f"mean {what} over {LATENCY_WINDOW} (vLLM {metrics.name(metric)}) above {sla_ms:g} ms"
    return Signal(name, guard_query(metric, sel, pct, sla_ms / 1000), 1, f"{said}: one more", guard=True)


def signals(namespace: str, t: Topology, serving: Serving, mode: str = "queue") -> list[Signal]:
    """An aggregated model's triggers: queue (waiting requests and KV usage, the default) or slo (also the
    running requests against the planner's knee and the SLA's latency tail as scale-out guards)."""
    q, sel = queries(namespace, t), series_selector(namespace, t)
    waiting = waiting_threshold(t, serving)
    out = []
    if mode == "slo":
        out.append(Signal("in-flight-requests", f"{q['running']} + {q['waiting']}", t.concurrency_per_replica,
                          f"requests in flight (vLLM {metrics.name('num_requests_running')} + "
                          f"{metrics.name('num_requests_waiting')}): the planner's knee, the concurrency a replica "
                          f"holds within the SLA (running alone never passes it: --max-num-seqs is the knee)"))
    out += [Signal("waiting-requests", q["waiting"], waiting,
                   f"waiting requests (vLLM {metrics.name('num_requests_waiting')})"),
            Signal("kv-cache-usage", q["kv"], kv_threshold(t, serving),
                   f"KV-cache usage (vLLM {metrics.name('kv_cache_usage_perc')})")]
    if mode == "slo":
        out += [_tail_signal("ttft-tail", TTFT_METRIC, sel, t, t.sla_ttft_ms, "TTFT"),
                _tail_signal("tpot-tail", TPOT_METRIC, sel, t, t.sla_tpot_ms, "TPOT")]
    if scales_to_zero(t):
        # the wake-up: requests the gateway holds for the empty pool (also scales out when it queues there)
        out.append(Signal("gateway-queue", q["gateway"], waiting,
                          f"requests the gateway holds for the pool (EPP {metrics.EPP_PENDING_REQUESTS}), the wake-up"))
        if mode != "slo":  # keeps the model up while it answers; a full batch per replica is the planned concurrency
            out.append(Signal("running-requests", q["running"], t.concurrency_per_replica,
                              f"requests in flight (vLLM {metrics.name('num_requests_running')}), keeps it up while "
                              f"it answers"))
    return out


def pool_signals(namespace: str, t: Topology, role: str, serving: Serving, mode: str = "queue") -> list[Signal]:
    """One P/D pool's triggers, on its own series (ROLE_SERIES_LABEL). Prefill: the prompts waiting per instance
    against the planner's prefill queue target (a new prompt behind them still meets the TTFT SLA), and in slo
    mode the prefill side's TTFT tail. Decode: the requests in flight per instance against the decode batch the
    planner sized for the TPOT SLA (its --max-num-seqs, so above it requests wait), the requests waiting and KV
    usage, and in slo mode the TPOT tail. (Dynamo's SLA planner splits the same way: prefill on TTFT / prefill
    queue, decode on TPOT / KV load.)"""
    d, sel = t.disaggregation, series_selector(namespace, t, role)
    waiting_q = f"sum({metrics.name('num_requests_waiting')}{sel})"
    if role == "prefill":
        queue = serving.waiting_per_replica if serving.waiting_per_replica is not None else d.prefill_queue
        out = [Signal("waiting-requests", waiting_q, queue,
                      f"prompts waiting (vLLM {metrics.name('num_requests_waiting')}): the planner's prefill queue, "
                      f"the TTFT budget left for queueing over one prompt's prefill")]
        if mode == "slo":
            out.append(_tail_signal("ttft-tail", TTFT_METRIC, sel, t, d.prefill_ttft_ms,
                                    "prefill TTFT (the SLA less the KV transfer and first decode step)"))
        return out
    out = [Signal("in-flight-requests", f"sum({metrics.name('num_requests_running')}{sel}) + {waiting_q}",
                  d.decode_concurrency,
                  f"requests in flight (vLLM {metrics.name('num_requests_running')} + "
                  f"{metrics.name('num_requests_waiting')}): the planner's decode batch within the TPOT SLA (its "
                  f"--max-num-seqs, which caps running alone)"),
           Signal("waiting-requests", waiting_q,
                  serving.waiting_per_replica if serving.waiting_per_replica is not None
                  else float(max(1, math.ceil(d.decode_concurrency * WAITING_FRACTION))),
                  f"requests waiting (vLLM {metrics.name('num_requests_waiting')})"),
           Signal("kv-cache-usage", f"sum({metrics.name('kv_cache_usage_perc')}{sel})", kv_threshold(t, serving),
                  f"KV-cache usage (vLLM {metrics.name('kv_cache_usage_perc')})")]
    if mode == "slo":
        out.append(_tail_signal("tpot-tail", TPOT_METRIC, sel, t, t.sla_tpot_ms, "TPOT"))
    return out


def pool_bounds(t: Topology, role: str) -> tuple[int, int]:
    """(min, max) of one P/D pool: the planned instances, and the planner's share of replicas.max."""
    d = t.disaggregation
    return ((d.prefill_instances, d.prefill_max) if role == "prefill"
            else (d.decode_instances, d.decode_max))


def scaled_object_spec(deployment: str, namespace: str, t: Topology, prometheus_url: str,
                       serving: Serving, target: dict | None = None, cold_start_s: int = 0,
                       mode: str = "queue") -> dict:
    """target: the scaleTargetRef when it is not the Deployment of that name (a LeaderWorkerSet, lws.py);
    cold_start_s: the plan's cold start of one replica (cold_start.py), the cooldown of a scale-to-zero model;
    mode: queue | slo (signals())."""
    return _spec(deployment, t, prometheus_url, serving, signals(namespace, t, serving, mode),
                 t.min_replicas, t.max_replicas, t.replicas, target, cold_start_s)


def pool_scaled_object_spec(deployment: str, namespace: str, t: Topology, role: str, prometheus_url: str,
                            serving: Serving, mode: str = "queue") -> dict:
    """One P/D pool's ScaledObject: its Deployment (serving/disagg.py deployment_name), its signals, its bounds."""
    low, high = pool_bounds(t, role)
    return _spec(deployment, t, prometheus_url, serving, pool_signals(namespace, t, role, serving, mode),
                 low, high, low, None, 0)


def _spec(deployment: str, t: Topology, prometheus_url: str, serving: Serving, sigs: list[Signal], low: int,
          high: int, planned: int, target: dict | None, cold_start_s: int) -> dict:
    zero = low == 0

    def trigger(s: Signal) -> dict:
        meta = {"serverAddress": prometheus_url, "query": s.query, "threshold": _fmt(s.threshold),
                # no samples (e.g. Prometheus restarting, no traffic for a tail) means no load, not an error
                "ignoreNullValues": "true"}
        if zero:
            meta["activationThreshold"] = _fmt(ACTIVATION[s.name])
        return {"type": "prometheus", "name": s.name, "metricType": "AverageValue", "metadata": meta}

    return {
        "scaleTargetRef": target or {"apiVersion": "apps/v1", "kind": "Deployment", "name": deployment},
        "pollingInterval": POLLING_S,
        "cooldownPeriod": cooldown_s(t, cold_start_s),
        "minReplicaCount": low,
        "maxReplicaCount": high,
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
        **({} if zero else {"fallback": {"failureThreshold": FALLBACK_FAILURES, "replicas": planned,
                                         "behavior": "currentReplicasIfHigher"}}),
        "triggers": [trigger(s) for s in sigs],
    }


def _line(head: str, unit: str, sigs: list[Signal]) -> list[str]:
    return [f"  {head}:", *(f"    {s.name}: {s.what}" if s.guard else
                            f"    {s.name} > {_fmt(s.threshold)}/{unit}: {s.what}" for s in sigs)]


def plan_lines(namespace: str, t: Topology, serving: Serving, mode: str = "queue") -> list[str]:
    """What the plan prints under a KEDA-scaled model: per pool, its bounds and what it scales on (signal,
    threshold, source)."""
    if t.disaggregated:
        out = []
        for role in ("prefill", "decode"):
            low, high = pool_bounds(t, role)
            out += _line(f"autoscaling ({FIELD}: {mode}) {role} pool {low}-{high} instances (KEDA, {POLLING_S} s polls)",
                         "instance", pool_signals(namespace, t, role, serving, mode))
        return out
    return _line(f"autoscaling ({FIELD}: {mode}) {t.min_replicas}-{t.max_replicas} replicas (KEDA, {POLLING_S} s "
                 f"polls)", "replica", signals(namespace, t, serving, mode))
