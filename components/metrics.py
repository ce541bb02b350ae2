"""The one list of vLLM Prometheus metric names, pinned to the vLLM image version.

Every KEDA query, alert rule and dashboard panel gets its metric names from `name()` here, so
that a name vLLM removed (`vllm:gpu_cache_usage_perc` in v0.12, `vllm:time_per_output_token_seconds`)
cannot slip back in. The list is read off the released vLLM 0.31.0 package (docs/vllm-0.31.md);
bumping versions.VLLM_VERSION without adding the new release's list here fails at import.

Ray Serve LLM exports the same engine metrics through Ray's metrics agent (vLLM's
RayPrometheusStatLogger). Ray's OpenTelemetry metrics allow only [a-zA-Z0-9_] in a name, so vLLM's
Ray wrappers replace the colon (vllm/v1/metrics/ray_wrappers.py, _get_sanitized_opentelemetry_name)
and Ray prefixes every application metric with `ray_`: `vllm:num_requests_waiting` is scraped as
`ray_vllm_num_requests_waiting` (Ray's own Serve LLM Grafana panels query these names,
ray/dashboard/modules/metrics/dashboards/serve_llm_dashboard_panels.py). The multi-node shape asks
for `name(..., runtime="ray")`; the older `ray_vllm:` spelling matches no series and counts as unknown.
"""
from __future__ import annotations

import re

from .versions import VLLM_VERSION

_V0_31 = """
vllm:cache_config_info
vllm:corrupted_requests
vllm:diffusion_num_canvas_positions
vllm:diffusion_num_committed_tokens
vllm:diffusion_num_denoising_steps
vllm:e2e_request_latency_seconds
vllm:engine_sleep_state
vllm:estimated_flops_per_gpu_total
vllm:estimated_read_bytes_per_gpu_total
vllm:estimated_write_bytes_per_gpu_total
vllm:external_prefix_cache_hits
vllm:external_prefix_cache_queries
vllm:generation_tokens
vllm:inter_token_latency_seconds
vllm:iteration_tokens_total
vllm:kv_block_idle_before_evict_seconds
vllm:kv_block_lifetime_seconds
vllm:kv_block_reuse_gap_seconds
vllm:kv_cache_usage_perc
vllm:lora_requests_info
vllm:mm_cache_hits
vllm:mm_cache_queries
vllm:num_preemptions
vllm:num_requests_running
vllm:num_requests_waiting
vllm:num_requests_waiting_by_reason
vllm:prefix_cache_hits
vllm:prefix_cache_queries
vllm:prompt_tokens
vllm:prompt_tokens_by_source
vllm:prompt_tokens_cached
vllm:request_decode_time_seconds
vllm:request_generation_tokens
vllm:request_inference_time_seconds
vllm:request_max_num_generation_tokens
vllm:request_num_preemptions
vllm:request_params_max_tokens
vllm:request_params_n
vllm:request_prefill_kv_computed_tokens
vllm:request_prefill_time_seconds
vllm:request_prompt_tokens
vllm:request_queue_time_seconds
vllm:request_success
vllm:request_time_per_output_token_seconds
vllm:spec_decode_num_accepted_tokens
vllm:spec_decode_num_accepted_tokens_per_pos
vllm:spec_decode_num_draft_tokens
vllm:spec_decode_num_drafts
vllm:time_to_first_token_seconds
"""

# vLLM image tag -> the metric names that release exposes (source: docs/vllm-0.31.md).
METRICS_BY_VERSION: dict[str, frozenset[str]] = {
    "v0.31.0": frozenset(_V0_31.split()),
}
if VLLM_VERSION not in METRICS_BY_VERSION:
    raise RuntimeError(f"components/metrics.py has no metric list for vLLM {VLLM_VERSION}; read the new "
                       f"release's metric names off its package and add them before bumping the image")
VLLM_METRICS: frozenset[str] = METRICS_BY_VERSION[VLLM_VERSION]

# Counters are exposed with `_total`, histograms as `_bucket`/`_sum`/`_count` (prometheus_client).
SERIES_SUFFIXES = ("_total", "_bucket", "_sum", "_count")
RUNTIME_PREFIX = {"vllm": "", "ray": "ray_"}
RAY_PREFIX = "ray_vllm_"  # "ray_" + "vllm:" with the colon sanitized
# A metric name as it appears in PromQL, dashboards or rules: vllm:..., ray_vllm_... (Ray), and the
# unsanitized ray_vllm:... so that the checker can report it.
NAME_IN_TEXT = re.compile(r"(?<![A-Za-z0-9_:])((?:ray_)?vllm:[A-Za-z0-9_:]+|ray_vllm_[A-Za-z0-9_:]+)")


# Series of other exporters that the alerts join with vLLM's (spelt here, next to vLLM's, so that rules never
# invent one). kube-state-metrics, which kube-prometheus-stack ships, publishes every HPA's replica counts
# (kube-state-metrics docs/metrics/workload/horizontalpodautoscaler-metrics.md; labels namespace,
# horizontalpodautoscaler). Ray Serve's controller reports one 0/1 gauge per replica (docs.ray.io
# serve/monitoring, "serve_deployment_replica_healthy"; labels application, deployment, replica), prefixed
# `ray_` by Ray's metrics agent as Ray's own Serve dashboard queries it.
KSM_HPA_CURRENT_REPLICAS = "kube_horizontalpodautoscaler_status_current_replicas"
KSM_HPA_MAX_REPLICAS = "kube_horizontalpodautoscaler_spec_max_replicas"
RAY_SERVE_REPLICA_HEALTHY = "ray_serve_deployment_replica_healthy"


def _sanitize(series: str) -> str:
    """What Ray's metrics agent accepts as a name (vLLM's _get_sanitized_opentelemetry_name)."""
    return re.sub(r"[^a-zA-Z0-9_]", "_", series)


class UnknownMetric(ValueError):
    pass


def name(metric: str, runtime: str = "vllm", suffix: str = "") -> str:
    """The series name for `metric` (e.g. "num_requests_waiting" or "vllm:num_requests_waiting").

    runtime: "vllm" (the OpenAI server's /metrics) or "ray" (Ray Serve LLM through Ray's metrics agent);
    suffix: "" or one of SERIES_SUFFIXES.
    """
    full = metric if metric.startswith("vllm:") else f"vllm:{metric}"
    if full not in VLLM_METRICS:
        raise UnknownMetric(f"{full} is not a metric of vLLM {VLLM_VERSION}; known: see components/metrics.py")
    if suffix and suffix not in SERIES_SUFFIXES:
        raise UnknownMetric(f"suffix {suffix!r}: allowed {', '.join(SERIES_SUFFIXES)}")
    if runtime not in RUNTIME_PREFIX:
        raise UnknownMetric(f"runtime {runtime!r}: allowed {', '.join(RUNTIME_PREFIX)}")
    series = full + suffix
    return RUNTIME_PREFIX[runtime] + (_sanitize(series) if runtime == "ray" else series)


def base_name(series: str) -> str | None:
    """The listed metric a series name belongs to, or None when the list has no such metric (or the
    name is spelt the way its runtime never exposes it, e.g. `ray_vllm:...`)."""
    if series.startswith(RAY_PREFIX) and ":" not in series:
        # listed names hold no other character Ray would replace, so this maps back exactly
        bare = "vllm:" + series.removeprefix(RAY_PREFIX)
    elif series.startswith("vllm:"):
        bare = series
    else:
        return None
    if bare in VLLM_METRICS:
        return bare
    for suffix in SERIES_SUFFIXES:
        if bare.endswith(suffix) and bare[: -len(suffix)] in VLLM_METRICS:
            return bare[: -len(suffix)]
    return None


def names_in(text: str) -> set[str]:
    """Every vLLM series name mentioned in a query, rule or dashboard."""
    return set(NAME_IN_TEXT.findall(text))


def unknown_names(text: str) -> set[str]:
    """The vLLM series names in `text` that the pinned vLLM release does not expose."""
    return {n for n in names_in(text) if base_name(n) is None}
