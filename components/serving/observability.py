"""Scraping, SLA alerts and a Grafana dashboard for one model. Every vLLM metric name comes from
components/metrics.py; `runtime` says where the engine's metrics surface ("vllm": the OpenAI
server's /metrics; "ray": Ray's metrics agent on every Ray pod)."""
from __future__ import annotations

import json
import math

from ..planner import Topology
from ..planner.vllm_args import VLLM_PORT
from .. import metrics
from . import rayservice
from .autoscaling import series_selector
from .disagg import LLMD_ROLE_LABEL
from .network import RAY_ROLES
from ..kube.pods import MODEL_LABEL, ROLE_LABEL, selector

SCRAPE_INTERVAL = "15s"
KV_NEAR_FULL = 0.95
RATE_WINDOW = "5m"
TTFT = "time_to_first_token_seconds"
TPOT = "request_time_per_output_token_seconds"


def service_monitor_spec(model: str, roles: bool = False) -> dict:
    """roles: a P/D model's pods: the series carry the pod's llm-d.ai/role as llm_d_ai_role (podTargetLabels;
    autoscaling.ROLE_SERIES_LABEL), so each pool's ScaledObject reads its own. A decode pod's port http is the
    routing sidecar, which proxies every path it does not handle (/metrics included) to vLLM (llm-d-router v0.10.0
    pkg/sidecar/proxy/proxy.go: mux.Handle("/", s.decoderProxy))."""
    out = {"selector": {"matchLabels": selector(model, "server")},
           "endpoints": [{"port": "http", "path": "/metrics", "interval": SCRAPE_INTERVAL}]}
    if roles:
        out["podTargetLabels"] = [LLMD_ROLE_LABEL]
    return out


def pod_monitor_spec(model: str) -> dict:
    return {"selector": {"matchLabels": {MODEL_LABEL: model},
                         "matchExpressions": [{"key": ROLE_LABEL, "operator": "In", "values": RAY_ROLES}]},
            "podMetricsEndpoints": [{"port": "metrics", "path": "/metrics", "interval": SCRAPE_INTERVAL}]}


def _slower_share(metric: str, bound: float, sel: str, runtime: str) -> str:
    """PromQL: the share of the last window's observations of histogram `metric` above bucket bound `bound`."""
    return metrics.slower_share(metric, bound, sel, RATE_WINDOW, runtime)


def _bound_note(sla_ms: float, bound: float, metric: str) -> str:
    if abs(bound * 1000 - sla_ms) < 1e-6:
        return f"the {sla_ms:g} ms SLA is one of vLLM's bucket bounds for {metric}, so this share is exact"
    return (f"vLLM's buckets for {metric} have no bound at the {sla_ms:g} ms SLA, so the alert reads the next "
            f"bound up, {bound * 1000:g} ms, exactly rather than a quantile interpolated inside the bucket")


def _quantile(q: float, metric: str, sel: str, runtime: str) -> str:
    bucket = metrics.name(metric, runtime, "_bucket")
    return f"histogram_quantile({q:g}, sum by (le) (rate({bucket}{sel}[{RATE_WINDOW}])))"


# What the planner sized is an average at the planned batch for an average prompt (docs/sizing.md), so the
# alerts read the series that measure the same thing, at a quantile that a healthy fleet stays under:
# - TPOT: vLLM's per-request time per output token (decode time / generated tokens of one request), not the
#   per-step inter-token latency, whose p99 one long prefill chunk in the batch inflates. Requests decoding in
#   the same batch see the same step time, so per-request TPOT is tight around the mean: p95 above the SLA
#   means one user in twenty gets a slower stream than planned, for the whole window.
# - TTFT: queueing plus prefill, and prefill grows with the prompt; the SLA describes the average prompt.
#   p90 still moves when everybody queues (the failure that matters) while the longest tenth of prompts,
#   which the SLA never promised, does not page anyone.
# vLLM's histograms have fixed, coarse buckets (metrics.buckets) and an SLA usually falls inside one (30 ms
# TPOT between 25 and 50 ms): histogram_quantile would interpolate linearly across that bucket and report a
# p95 of 46 ms for a fleet whose every request took at most 28 ms. The alerts therefore read the exact share
# of requests above the smallest bucket bound at or above the SLA (the SLA itself when it is a bound): "p95
# above the bound" is "more than 5 % of requests above it", a ratio of two cumulative counters.
TPOT_QUANTILE = 0.95
TTFT_QUANTILE = 0.90
# A deployment whose SLA bounds a percentile (sla.latencyPercentile: p90, the default, or p99) promised that only
# 10 % (1 %) of requests are slower: its alerts fire when more than that share are, on both latencies.
P90_QUANTILE = 0.90
P99_QUANTILE = 0.99


def alert_quantiles(t: Topology) -> tuple[float, float]:
    """(TTFT, TPOT) quantiles the SLA alerts watch: the SLA's own percentile (p90 / p99), the defaults above for a
    mean SLA."""
    if t.latency_percentile == "p99":
        return P99_QUANTILE, P99_QUANTILE
    if t.latency_percentile == "p90":
        return P90_QUANTILE, P90_QUANTILE
    return TTFT_QUANTILE, TPOT_QUANTILE
# A quantile over a handful of requests is noise: latency alerts need at least this much traffic.
MIN_REQUESTS_PER_S = 0.05  # 3 a minute
LATENCY_FOR = "10m"
QUEUE_FOR = "10m"
KV_FOR = "5m"
# A queue below max replicas should be gone once the autoscaler's new replica is up: GPU node provisioning
# and the image pull (this margin) plus the replica's start-up budget (probes.py).
SCALE_UP_MARGIN_S = 600
# KEDA names the HPA it creates for a ScaledObject `keda-hpa-<ScaledObject name>` (keda.sh, ScaledObject
# specification, advanced.horizontalPodAutoscalerConfig.name); the ScaledObject is named after the model.
KEDA_HPA_PREFIX = "keda-hpa-"


# A model whose pods export nothing silences every alert above: each reads series the model's own pods export.
# VllmMetricsAbsent watches the scrape itself. prometheus-operator sets a target's `job` label to the Service's
# name for a ServiceMonitor and to "<namespace>/<PodMonitor name>" for a PodMonitor (prometheus-operator
# pkg/prometheus/promcfg.go, as its golden files under pkg/prometheus/testdata show: `target_label: job`,
# `replacement: default/testpodmonitor1`); the Service, the ServiceMonitor and the PodMonitor are all named
# after the model. It waits a cold start (a replica from nothing: GPU node, image, start-up budget;
# cold_start.py), at least this long, so a first deploy or a lone replica's restart does not page before it
# could be back.
METRICS_ABSENT_MIN_S = 600


def scrape_job(model: str, namespace: str, runtime: str) -> str:
    """The `job` label of the model's scrape targets (see METRICS_ABSENT_MIN_S)."""
    return f"{namespace}/{model}" if runtime == "ray" else model


def metrics_absent_expr(t: Topology, namespace: str, runtime: str) -> str:
    """No target of the model's scrape job up, or (up but) none of the series the alerts read. A RayService's head
    keeps its target up while no replica runs, so there the second term is Serve's healthy replicas; a
    Deployment's /metrics serves vLLM's gauges from the engine's start (a renamed metric or a model_name
    that is not the served name leaves it empty). A scale-to-zero model at zero replicas exports nothing by
    design: its alert holds while KEDA keeps the Deployment at 0 (kube-state-metrics' desired replicas)."""
    m = t.served_model_name
    target = f'absent({metrics.SCRAPE_UP}{{job="{scrape_job(m, namespace, runtime)}",namespace="{namespace}"}} == 1)'
    if runtime == "ray":
        sel = (f'{{namespace="{namespace}",application="{rayservice.APP_NAME}",'
               f'deployment="{rayservice.serve_deployment_name(m)}"}}')
        series = f"absent(sum({metrics.RAY_SERVE_REPLICA_HEALTHY}{sel} == 1))"
    else:
        series = f"absent(sum({metrics.name('num_requests_running')}{series_selector(namespace, t)}))"
    expr = f"{target} or on() {series}"
    if t.min_replicas == 0:
        wanted = f'max({metrics.KSM_DEPLOYMENT_SPEC_REPLICAS}{{namespace="{namespace}",deployment="{m}"}}) > 0'
        expr = f"({expr}) and on() ({wanted})"
    return expr


def _minutes(seconds: float) -> str:
    return f"{math.ceil(seconds / 60)}m"


def _replicas(t: Topology, namespace: str, runtime: str) -> tuple[str, str]:
    """(running replicas, at max replicas) as PromQL: the HPA's counts from kube-state-metrics for a
    Deployment, Serve's healthy replicas of the model's LLM deployment for a RayService."""
    m = t.served_model_name
    if runtime == "ray":
        sel = (f'{{namespace="{namespace}",application="{rayservice.APP_NAME}",'
               f'deployment="{rayservice.serve_deployment_name(m)}"}}')
        running = f"sum({metrics.RAY_SERVE_REPLICA_HEALTHY}{sel})"
        return running, f"{running} >= {t.max_replicas}"
    if t.disaggregated:  # issue 39: a ScaledObject per pool, named after its Deployment (<model>-prefill | -decode)
        sel = f'{{namespace="{namespace}",horizontalpodautoscaler=~"{KEDA_HPA_PREFIX}{m}-(prefill|decode)"}}'
        running = f"sum({metrics.KSM_HPA_CURRENT_REPLICAS}{sel})"
        return running, f"{running} >= sum({metrics.KSM_HPA_MAX_REPLICAS}{sel})"
    sel = f'{{namespace="{namespace}",horizontalpodautoscaler="{KEDA_HPA_PREFIX}{m}"}}'
    running = f"max({metrics.KSM_HPA_CURRENT_REPLICAS}{sel})"
    return running, f"{running} >= max({metrics.KSM_HPA_MAX_REPLICAS}{sel})"


def rules_spec(t: Topology, namespace: str, runtime: str, waiting_threshold: float, severity: str,
               startup_s: int = 300, cold_start_s: int = 0) -> dict:
    """PrometheusRule spec: every alert has a `for:`, a severity and a description that says what to do.
    waiting_threshold: KEDA's waiting requests per replica (autoscaling.py); startup_s: a replica's
    start-up budget (probes.py); cold_start_s: how long a replica takes from nothing (cold_start.py)."""
    sel = series_selector(namespace, t)
    m = t.served_model_name
    n = lambda metric, suffix="": metrics.name(metric, runtime, suffix)  # noqa: E731
    waiting = f"sum({n('num_requests_waiting')}{sel})"
    replicas, at_max = _replicas(t, namespace, runtime)
    per_replica_queue = f"{waiting} / {replicas} > {waiting_threshold:g}"
    labels = {"severity": severity, "model": m}

    def rule(alert, expr, for_, summary, description, sev=None):
        return {"alert": alert, "expr": expr, "for": for_, "labels": {**labels, **({"severity": sev} if sev else {})},
                "annotations": {"summary": summary, "description": description}}

    def busy(metric):
        return f"sum(rate({n(metric, '_count')}{sel}[{RATE_WINDOW}])) > {MIN_REQUESTS_PER_S:g}"

    ttft_q, tpot_q = alert_quantiles(t)
    planned = t.latency_percentile if t.latency_percentile in ("p90", "p99") else "mean"
    ttft_est, tpot_est = ((t.knee_ttft_tail_ms, t.knee_tpot_tail_ms) if planned == "p99" and t.knee_tpot_tail_ms
                          else (t.knee_ttft_p90_ms, t.knee_tpot_p90_ms) if planned == "p90" and t.knee_tpot_p90_ms
                          else (t.est_ttft_ms, t.est_tpot_ms))
    ttft_le = metrics.bucket_at_or_above(TTFT, t.sla_ttft_ms / 1000)
    tpot_le = metrics.bucket_at_or_above(TPOT, t.sla_tpot_ms / 1000)
    stalled_for = _minutes(startup_s + SCALE_UP_MARGIN_S)
    absent_for = _minutes(max(cold_start_s, METRICS_ABSENT_MIN_S))
    job = scrape_job(m, namespace, runtime)
    port = rayservice.METRICS_PORT if runtime == "ray" else VLLM_PORT
    monitor = "PodMonitor" if runtime == "ray" else "ServiceMonitor"
    engine = (f"Serve reports no healthy replica of {rayservice.serve_deployment_name(m)} (the head is up, the "
              f"workers or their replicas are not: `kubectl -n {namespace} get rayservice {m}`, the head's "
              f"`serve status`)" if runtime == "ray" else
              f"the targets are up but export no {metrics.name('num_requests_running')}{{model_name=\"{m}\"}}: "
              f"the vLLM image renamed its metrics (components/metrics.py pins them) or serves another model name")
    zero = (" A scale-to-zero model at 0 replicas exports nothing by design; this alert only runs while the "
            "Deployment wants a replica." if t.min_replicas == 0 else "")
    return {"groups": [{"name": f"vllm-{m}-sla", "rules": [
        rule("VllmTimeToFirstTokenAboveSla",
             f"({_slower_share(TTFT, ttft_le, sel, runtime)} > {1 - ttft_q:.2f}) and on() ({busy(TTFT)})",
             LATENCY_FOR, f"{m}: p{ttft_q * 100:.0f} time to first token above {ttft_le * 1000:g} ms "
                          f"(SLA {t.sla_ttft_ms:g} ms)",
             f"More than {1 - ttft_q:.0%} of requests waited over {ttft_le * 1000:g} ms for their first "
             f"token ({_bound_note(t.sla_ttft_ms, ttft_le, TTFT)}). "
             f"The plan sized {ttft_est:.0f} ms ({planned}) for an average prompt at {t.concurrency_per_replica} concurrent "
             f"requests per replica. Check the queue (VllmQueue* alerts, dashboard 'Requests running / waiting'): "
             f"queueing means too few replicas; without a queue, prompts are longer than the SLA's average "
             f"prompt (dashboard 'Tokens per second', prompt vs generated)."),
        rule("VllmTimePerOutputTokenAboveSla",
             f"({_slower_share(TPOT, tpot_le, sel, runtime)} > {1 - tpot_q:.2f}) and on() ({busy(TPOT)})",
             LATENCY_FOR, f"{m}: p{tpot_q * 100:.0f} per-request time per output token above "
                          f"{tpot_le * 1000:g} ms (SLA {t.sla_tpot_ms:g} ms)",
             f"More than {1 - tpot_q:.0%} of requests streamed slower than {tpot_le * 1000:g} ms per output "
             f"token ({_bound_note(t.sla_tpot_ms, tpot_le, TPOT)}). "
             f"The plan sized {tpot_est:.1f} ms ({planned}) per token at a batch of {t.concurrency_per_replica} "
             f"(--max-num-seqs). A larger running batch than planned, preemptions (dashboard 'Preemptions per "
             f"second', VllmKvCacheNearFull) or a degraded GPU/fabric slow decoding; compare the replicas on "
             f"the dashboard and drain a node whose replica alone is slow."),
        rule("VllmQueueHighAtMaxReplicas",
             f"({per_replica_queue}) and on() ({at_max})",
             QUEUE_FOR, f"{m}: requests keep queueing and the autoscaler is already at max replicas "
                        f"({t.max_replicas})",
             f"More than {waiting_threshold:g} requests per replica have waited for 10 minutes with all "
             f"{t.max_replicas} replicas running: the fleet is short of capacity. Raise replicas.max in the "
             f"stack (the GPU pool grows with it) or shed load upstream."),
        rule("VllmQueueHighScaleUpStalled",
             f"({per_replica_queue}) unless on() ({at_max})",
             stalled_for, f"{m}: requests keep queueing below max replicas: new replicas are not coming up",
             f"More than {waiting_threshold:g} requests per replica have waited for longer than a new replica "
             f"needs ({startup_s} s start-up budget plus {SCALE_UP_MARGIN_S // 60} min for a GPU node). Look for "
             f"Pending serving pods (kubectl get pods; events: insufficient GPUs, quota, capacity) and for "
             f"replicas stuck loading (logs of the new pod)."),
        rule("VllmKvCacheNearFull",
             f"max({n('kv_cache_usage_perc')}{sel}) > {KV_NEAR_FULL:g}",
             KV_FOR, f"{m}: KV cache above {KV_NEAR_FULL:.0%} on a replica",
             "Requests are being preempted and recomputed; TTFT and throughput suffer. Sustained: requests are "
             "longer than planned (raise maxModelLen only with more KV) or the autoscaler's KV threshold is "
             "too high.", sev="warning"),
        rule("VllmMetricsAbsent", metrics_absent_expr(t, namespace, runtime),
             absent_for, f"{m}: no metrics for {absent_for}: every other alert of this model is silent",
             f"Prometheus has scraped nothing usable from {m} for longer than a replica takes to come back from "
             f"nothing. Either no target of job=\"{job}\" (namespace {namespace}) is up, or {engine}. Runbook: "
             f"1) `kubectl -n {namespace} get pods -l vllm-platform/model={m}`: none, Pending (GPU capacity, "
             f"quota) or crash-looping means the model is down, not only unmonitored; 2) Prometheus' Targets page "
             f"for {job}: missing means the {monitor} is not selected (its labels against the Prometheus' "
             f"selector) or selects no pod; down means the scrape fails (the NetworkPolicy must admit "
             f"Prometheus on port {port}).{zero}"),
    ]}]}


def _panel(pid: int, title: str, targets: list[tuple[str, str]], unit: str, x: int, y: int) -> dict:
    return {"id": pid, "type": "timeseries", "title": title,
            "datasource": {"type": "prometheus", "uid": "${datasource}"},
            "gridPos": {"h": 8, "w": 12, "x": x, "y": y},
            "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
            "targets": [{"refId": chr(65 + i), "expr": e, "legendFormat": legend}
                        for i, (e, legend) in enumerate(targets)]}


def dashboard(t: Topology, namespace: str, runtime: str) -> dict:
    sel = series_selector(namespace, t)
    n = lambda metric, suffix="": metrics.name(metric, runtime, suffix)  # noqa: E731
    q = lambda p, metric: _quantile(p, metric, sel, runtime)  # noqa: E731
    ttft_q, tpot_q = alert_quantiles(t)
    panels = [
        ("Requests running / waiting", [(f"sum({n('num_requests_running')}{sel})", "running"),
                                        (f"sum({n('num_requests_waiting')}{sel})", "waiting")], "short"),
        ("KV-cache usage per pod", [(f"{n('kv_cache_usage_perc')}{sel}", "{{pod}}")], "percentunit"),
        ("Time to first token", [(q(0.5, "time_to_first_token_seconds"), "p50"),
                                 *([(q(ttft_q, "time_to_first_token_seconds"), f"p{ttft_q * 100:.0f} (alert)")]
                                   if ttft_q != P99_QUANTILE else []),
                                 (q(0.99, "time_to_first_token_seconds"),
                                  "p99 (alert)" if ttft_q == P99_QUANTILE else "p99")], "s"),
        ("Time per output token (per request)", [(q(0.5, "request_time_per_output_token_seconds"), "p50"),
                                                 (q(tpot_q, "request_time_per_output_token_seconds"),
                                                  f"p{tpot_q * 100:.0f} (alert)")], "s"),
        ("Inter-token latency (per step)", [(q(0.5, "inter_token_latency_seconds"), "p50"),
                                            (q(0.99, "inter_token_latency_seconds"), "p99")], "s"),
        ("End-to-end request latency", [(q(0.99, "e2e_request_latency_seconds"), "p99")], "s"),
        ("Tokens per second", [(f"sum(rate({n('prompt_tokens', '_total')}{sel}[{RATE_WINDOW}]))", "prompt"),
                               (f"sum(rate({n('generation_tokens', '_total')}{sel}[{RATE_WINDOW}]))", "generated")],
         "short"),
        ("Preemptions per second", [(f"sum(rate({n('num_preemptions', '_total')}{sel}[{RATE_WINDOW}]))",
                                     "preemptions")], "short"),
    ]
    m = t.served_model_name
    return {
        "uid": f"vllm-{m}"[:40], "title": f"vLLM {m}", "tags": ["vllm", "vllm-platform"],
        "schemaVersion": 39, "editable": True, "time": {"from": "now-6h", "to": "now"}, "refresh": "30s",
        "templating": {"list": [{"name": "datasource", "type": "datasource", "query": "prometheus",
                                 "label": "Prometheus"}]},
        "annotations": {"list": []},
        "panels": [_panel(i + 1, title, targets, unit, (i % 2) * 12, (i // 2) * 8)
                   for i, (title, targets, unit) in enumerate(panels)],
        "description": (f"{t.model_name} {t.precision}, TP {t.tensor_parallel_size} x PP {t.pipeline_parallel_size} "
                        f"on {t.instance_type}; SLA TTFT {t.sla_ttft_ms:g} ms, TPOT {t.sla_tpot_ms:g} ms"),
    }


def dashboard_json(t: Topology, namespace: str, runtime: str) -> str:
    return json.dumps(dashboard(t, namespace, runtime), indent=2, sort_keys=True)
