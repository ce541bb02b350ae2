"""One metric contract: every vLLM metric name the stack uses comes from components/metrics.py, whose
list is the pinned vLLM release's (docs/vllm-0.31.md), and nothing uses a name outside it."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from components import metrics
from components.offline.runner import stack_names
from components.upstream.versions import VLLM_VERSION
from tests.support.plans import planned, sanitize

ROOT = Path(__file__).resolve().parents[1]
FACTS = ROOT / "docs" / "vllm-0.31.md"


def test_list_is_the_pinned_releases_list():
    assert VLLM_VERSION == "v0.31.0"
    block = FACTS.read_text().split("## Prometheus metric names", 1)[1].split("```")[1]
    assert metrics.VLLM_METRICS == frozenset(block.split())


@pytest.mark.parametrize("removed", ["gpu_cache_usage_perc", "time_per_output_token_seconds", "num_requests_swapped"])
def test_removed_metrics_cannot_be_asked_for(removed):
    with pytest.raises(metrics.UnknownMetric, match=f"vllm:{removed} is not a metric of vLLM v0.31.0"):
        metrics.name(removed)


def test_series_names_per_runtime():
    assert metrics.name("num_requests_waiting") == "vllm:num_requests_waiting"
    assert metrics.name("time_to_first_token_seconds", suffix="_bucket") == "vllm:time_to_first_token_seconds_bucket"
    # Ray's metrics agent: "ray_" prefix and the colon sanitized (vLLM ray_wrappers.py), as Ray's own
    # Serve LLM dashboard queries them
    assert metrics.name("vllm:kv_cache_usage_perc", "ray") == "ray_vllm_kv_cache_usage_perc"
    assert metrics.name("time_to_first_token_seconds", "ray", "_bucket") == "ray_vllm_time_to_first_token_seconds_bucket"
    assert metrics.name("generation_tokens", "ray", "_total") == "ray_vllm_generation_tokens_total"
    with pytest.raises(metrics.UnknownMetric):
        metrics.name("num_requests_waiting", suffix="_p99")


def test_checker_finds_unknown_names_in_text():
    text = ('sum(vllm:num_requests_waiting{a="b"}) / vllm:gpu_cache_usage_perc '
            'and rate(ray_vllm_time_to_first_token_seconds_bucket[5m]) + vllm:time_per_output_token_seconds_sum '
            '+ ray_vllm:num_requests_waiting + ray_vllm_gpu_cache_usage_perc')
    assert metrics.names_in(text) >= {"vllm:num_requests_waiting", "ray_vllm_time_to_first_token_seconds_bucket"}
    # removed names, and the unsanitized Ray spelling no Ray metrics agent exposes
    assert metrics.unknown_names(text) == {"vllm:gpu_cache_usage_perc", "vllm:time_per_output_token_seconds_sum",
                                           "ray_vllm:num_requests_waiting", "ray_vllm_gpu_cache_usage_perc"}


def _rendered_texts(stack: str) -> dict[str, str]:
    """Every resource's inputs: Kubernetes objects, Helm values (e.g. dashboards an add-on ships), anything."""
    return {f"{r.type} {r.name}": json.dumps(sanitize(r.inputs), default=str) for r in planned(stack).resources}


@pytest.mark.parametrize("stack", stack_names())
def test_every_rendered_vllm_metric_name_is_in_the_contract(stack):
    """KEDA queries, alert rules and dashboards alike (anything the program sends, whoever wrote it)."""
    texts = _rendered_texts(stack)
    used = set().union(*(metrics.names_in(t) for t in texts.values()))
    assert used, f"{stack}: no vLLM metric is used at all (no autoscaling, alerts or dashboard?)"
    bad = {name: sorted(metrics.unknown_names(t)) for name, t in texts.items() if metrics.unknown_names(t)}
    assert not bad, f"{stack}: metric names vLLM {VLLM_VERSION} does not expose: {bad}"


def test_the_sla_metrics_are_actually_used():
    texts = " ".join(_rendered_texts("dev").values())
    for metric in ("num_requests_waiting", "kv_cache_usage_perc", "time_to_first_token_seconds",
                   "inter_token_latency_seconds"):
        assert metrics.name(metric) in texts


def test_no_code_spells_a_metric_name_outside_the_contract_module():
    """Code asks metrics.name(...) for its names, so the list above is the only place they are written."""
    offenders = []
    for path in sorted((ROOT / "components").rglob("*.py")) + sorted((ROOT / "policies").rglob("*.py")):
        if path == ROOT / "components" / "metrics.py" or (ROOT / "policies" / "venv") in path.parents:
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"(?<![A-Za-z0-9_])(?:(?:ray_)?vllm:|ray_vllm_)[a-z_]+", line):
                offenders.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


def test_alerts_join_only_the_declared_series_of_other_exporters():
    """Besides vLLM's, the alerts read kube-state-metrics' HPA counts (Deployments) and Ray Serve's replica
    health (RayServices), spelt once in components/metrics.py."""
    declared = {metrics.KSM_HPA_CURRENT_REPLICAS, metrics.KSM_HPA_MAX_REPLICAS, metrics.RAY_SERVE_REPLICA_HEALTHY}
    assert declared == {"kube_horizontalpodautoscaler_status_current_replicas",
                        "kube_horizontalpodautoscaler_spec_max_replicas", "ray_serve_deployment_replica_healthy"}
    for stack, expected in (("dev", set(declared) - {metrics.RAY_SERVE_REPLICA_HEALTHY}),
                            ("prod-llama405b-onprem", {metrics.RAY_SERVE_REPLICA_HEALTHY})):
        rules = [t for name, t in _rendered_texts(stack).items() if "PrometheusRule" in name]
        used = set(re.findall(r"\b(?:kube_[a-z_]+|ray_serve_[a-z_]+)", " ".join(rules)))
        assert used == expected, f"{stack}: {sorted(used)}"
