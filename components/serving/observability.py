"""Scraping, SLA alerts and a Grafana dashboard for one model. Every vLLM metric name comes from
components/metrics.py; `runtime` says where the engine's metrics surface ("vllm": the OpenAI
server's /metrics; "ray": Ray's metrics agent on every Ray pod)."""
from __future__ import annotations

import json

from ..planner import Topology
from .. import metrics
from .autoscaling import series_selector
from .network import RAY_ROLES
from .pods import MODEL_LABEL, ROLE_LABEL, selector

SCRAPE_INTERVAL = "15s"
KV_NEAR_FULL = 0.95
RATE_WINDOW = "5m"


def service_monitor_spec(model: str) -> dict:
    return {"selector": {"matchLabels": selector(model, "server")},
            "endpoints": [{"port": "http", "path": "/metrics", "interval": SCRAPE_INTERVAL}]}


def pod_monitor_spec(model: str) -> dict:
    return {"selector": {"matchLabels": {MODEL_LABEL: model},
                         "matchExpressions": [{"key": ROLE_LABEL, "operator": "In", "values": RAY_ROLES}]},
            "podMetricsEndpoints": [{"port": "metrics", "path": "/metrics", "interval": SCRAPE_INTERVAL}]}


def _quantile(q: float, metric: str, sel: str, runtime: str) -> str:
    bucket = metrics.name(metric, runtime, "_bucket")
    return f"histogram_quantile({q:g}, sum by (le) (rate({bucket}{sel}[{RATE_WINDOW}])))"


def rules_spec(t: Topology, namespace: str, runtime: str, waiting_threshold: float, severity: str) -> dict:
    sel = series_selector(namespace, t)
    m = t.served_model_name
    waiting = f"sum({metrics.name('num_requests_waiting', runtime)}{sel})"
    labels = {"severity": severity, "model": m}

    def rule(alert, expr, for_, summary, description, sev=None):
        return {"alert": alert, "expr": expr, "for": for_, "labels": {**labels, **({"severity": sev} if sev else {})},
                "annotations": {"summary": summary, "description": description}}

    return {"groups": [{"name": f"vllm-{m}-sla", "rules": [
        rule("VllmTimeToFirstTokenAboveSla",
             f"{_quantile(0.99, 'time_to_first_token_seconds', sel, runtime)} > {t.sla_ttft_ms / 1000:g}",
             "10m", f"{m}: p99 time to first token above the {t.sla_ttft_ms:g} ms SLA",
             "p99 TTFT has been {{ $value | humanizeDuration }} for 10 minutes."),
        rule("VllmInterTokenLatencyAboveSla",
             f"{_quantile(0.99, 'inter_token_latency_seconds', sel, runtime)} > {t.sla_tpot_ms / 1000:g}",
             "10m", f"{m}: p99 inter-token latency above the {t.sla_tpot_ms:g} ms SLA",
             "p99 inter-token latency has been {{ $value | humanizeDuration }} for 10 minutes."),
        rule("VllmQueueGrowing",
             f"deriv({waiting}[10m:1m]) > 0 and {waiting} > {waiting_threshold:g}",
             "10m", f"{m}: requests keep queueing although the autoscaler had time to add replicas",
             "{{ $value }} requests waiting and still growing: at max replicas, or new nodes are not coming up."),
        rule("VllmKvCacheNearFull",
             f"max({metrics.name('kv_cache_usage_perc', runtime)}{sel}) > {KV_NEAR_FULL:g}",
             "5m", f"{m}: KV cache above {KV_NEAR_FULL:.0%} on a replica",
             "Requests will be preempted and recomputed; TTFT and throughput suffer.", sev="warning"),
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
    panels = [
        ("Requests running / waiting", [(f"sum({n('num_requests_running')}{sel})", "running"),
                                        (f"sum({n('num_requests_waiting')}{sel})", "waiting")], "short"),
        ("KV-cache usage per pod", [(f"{n('kv_cache_usage_perc')}{sel}", "{{pod}}")], "percentunit"),
        ("Time to first token", [(q(0.5, "time_to_first_token_seconds"), "p50"),
                                 (q(0.99, "time_to_first_token_seconds"), "p99")], "s"),
        ("Inter-token latency", [(q(0.5, "inter_token_latency_seconds"), "p50"),
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
