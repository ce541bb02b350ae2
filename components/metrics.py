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

from .upstream.versions import VLLM_VERSION

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

# Histogram bucket upper bounds of vLLM 0.31 (vllm/v1/metrics/loggers.py, PrometheusStatLogger: the
# `buckets=` of histogram_time_to_first_token, histogram_inter_token_latency,
# histogram_request_time_per_output_token and the request latency histograms, which share one list).
# They are fixed in code (no flag changes them), and Prometheus reads quantiles off them by linear
# interpolation inside a bucket, so the SLA alerts compare against these bounds rather than a quantile.
_TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
                 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)
_TOKEN_LATENCY_BUCKETS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5,
                          10.0, 20.0, 40.0, 80.0)
_REQUEST_LATENCY_BUCKETS = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0,
                            120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0)
BUCKETS_BY_VERSION: dict[str, dict[str, tuple[float, ...]]] = {
    "v0.31.0": {
        "vllm:time_to_first_token_seconds": _TTFT_BUCKETS,
        "vllm:inter_token_latency_seconds": _TOKEN_LATENCY_BUCKETS,
        "vllm:request_time_per_output_token_seconds": _TOKEN_LATENCY_BUCKETS,
        "vllm:e2e_request_latency_seconds": _REQUEST_LATENCY_BUCKETS,
        "vllm:request_queue_time_seconds": _REQUEST_LATENCY_BUCKETS,
        "vllm:request_inference_time_seconds": _REQUEST_LATENCY_BUCKETS,
        "vllm:request_prefill_time_seconds": _REQUEST_LATENCY_BUCKETS,
        "vllm:request_decode_time_seconds": _REQUEST_LATENCY_BUCKETS,
    },
}
if VLLM_VERSION not in BUCKETS_BY_VERSION:
    raise RuntimeError(f"components/metrics.py has no histogram buckets for vLLM {VLLM_VERSION}; read them off "
                       f"the release's vllm/v1/metrics/loggers.py before bumping the image")


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
# The Deployment's desired replicas (kube-state-metrics docs/metrics/workload/deployment-metrics.md; labels
# namespace, deployment): 0 while KEDA holds a scale-to-zero model at zero.
KSM_DEPLOYMENT_SPEC_REPLICAS = "kube_deployment_spec_replicas"
# Prometheus' own per-target series: 1 when the last scrape of the target succeeded, 0 when it failed.
SCRAPE_UP = "up"
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


def buckets(metric: str) -> tuple[float, ...]:
    """The finite bucket upper bounds vLLM exposes for histogram `metric` (ascending; +Inf follows)."""
    full = metric if metric.startswith("vllm:") else f"vllm:{metric}"
    table = BUCKETS_BY_VERSION[VLLM_VERSION]
    if full not in table:
        raise UnknownMetric(f"{full} has no bucket list for vLLM {VLLM_VERSION} in components/metrics.py")
    return table[full]


def bucket_at_or_above(metric: str, seconds: float) -> float:
    """The smallest bucket bound of `metric` at or above `seconds`: the share of observations above it is
    exact (a cumulative bucket), where a quantile read at `seconds` would be interpolated."""
    for bound in buckets(metric):
        if bound >= seconds - 1e-12:
            return bound
    raise UnknownMetric(f"{seconds:g} s is above every bucket of {metric} ({buckets(metric)[-1]:g} s)")


def slower_share(metric: str, bound: float, sel: str, window: str, runtime: str = "vllm") -> str:
    """PromQL: the share of the window's observations of histogram `metric` above bucket bound `bound` (exact: a
    cumulative bucket; read at a bound from bucket_at_or_above). No request in the window: 0 / 0, NaN."""
    bucket, count = name(metric, runtime, "_bucket"), name(metric, runtime, "_count")
    le_sel = sel[:-1] + f',le="{le_label(bound)}"}}'
    return f"(1 - sum(rate({bucket}{le_sel}[{window}])) / sum(rate({count}{sel}[{window}])))"


def le_label(bound: float) -> str:
    """A bucket bound as the `le` label value prometheus_client exposes it (floatToGoString: repr of the
    float, so 1 -> "1.0", 0.05 -> "0.05"; +Inf for infinity)."""
    if bound == float("inf"):
        return "+Inf"
    s = repr(float(bound))
    dot = s.find(".")
    if bound > 0 and dot > 6:  # client_python writes large bounds in Go's exponent form
        mantissa = f"{s[0]}.{s[1:dot]}{s[dot + 1:]}".rstrip("0.")
        return f"{mantissa}e+0{dot - 1}"
    return s


# The endpoint picker (llm-d-router v0.10.0, the EPP Gateway API Inference Extension v1.6.0 points to; its chart
# components/gateway/values.py installs per single-node model). It scrapes each vLLM pod's /metrics for these
# (pkg/epp/server/options.go and pkg/epp/framework/plugins/datalayer/extractor/metrics/factories.go, the vllm
# engine defaults): queue depth, running requests, KV-cache use, LoRA adapters, cache block config.
EPP_READS_VLLM = ("vllm:num_requests_waiting", "vllm:num_requests_running", "vllm:kv_cache_usage_perc",
                  "vllm:lora_requests_info", "vllm:cache_config_info")
# What the EPP itself exports (pkg/epp/metrics/llm_d_router_metrics.go, subsystem llm_d_epp), served on its
# metrics port whether or not any model pod runs: the requests its flow-control queue holds (labels
# inference_pool, model_name, target_model_name, fairness_id, priority) and every request it saw (model_name,
# target_model_name). The one name for the queue everywhere: the scale-from-zero KEDA trigger
# (components/serving/autoscaling.py) and the EPP's scrape. v0.10.0 also exports the same gauge under GAIE's
# old name inference_extension_flow_control_queue_size (pkg/epp/metrics/metrics.go: "Deprecated: Use
# llm_d_epp_flow_control_queue_size instead"; IncFlowControlQueueSize sets both), so the current name is used.
# The gauge only moves with the EPP's flowControl feature gate on (cmd/epp/runner/runner.go registers it off).
EPP_PENDING_REQUESTS = "llm_d_epp_flow_control_queue_size"
EPP_REQUESTS_TOTAL = "llm_d_epp_request_total"
EPP_METRICS_SOURCE = "github.com/llm-d/llm-d-router v0.10.0 pkg/epp/metrics/llm_d_router_metrics.go"
missing = [m for m in EPP_READS_VLLM if m not in VLLM_METRICS]
if missing:
    raise RuntimeError(f"the endpoint picker reads {', '.join(missing)}, which vLLM {VLLM_VERSION} does not export")
del missing
