"""The text summaries `python -m components topology` and `plan` print: one model's plan (shape, KV cache,
latency, capacity, cost, engine options) and its serving terms (start-up budget, first deploy, cold start,
rollout, warnings). Pure (no Pulumi)."""
from __future__ import annotations

from ..costs.notes import cost_lines, hourly, legend_lines
from ..planner import Topology
from ..planner.disagg import disagg_lines


def summary(t: Topology, serve: str | None = None) -> str:
    """`serve`: the command line the stack's serving shape really runs, where it differs from the planner's
    arguments (a LeaderWorkerSet's leader: serving.service.serving_summary)."""
    par = f"TP {t.tensor_parallel_size}" + (f" x PP {t.pipeline_parallel_size}" if t.pipeline_parallel_size > 1 else "")
    if t.wide_ep:
        par = f"DP {t.data_parallel_size} x EP {t.data_parallel_size} (TP 1 per rank, all2all {t.all2all_backend})"
    return "\n".join([
        f"{t.served_model_name}: {t.model_name} {t.precision} on {t.instance_type} ({t.gpus_per_node} x {t.accelerator})",
        f"  {par} = {t.gpus_per_replica} GPU(s)/replica, {t.nodes_per_replica} node(s)/replica, "
        f"{t.replicas_per_node} replica(s)/node; {t.replicas} replica(s) on {t.nodes} node(s), {hourly(t, t.cost_per_hour)}",
        f"  KV cache {t.kv_cache_tokens:,} tokens/replica ({t.kv_cache_dtype}), "
        f"{t.concurrency_at_full_length:g} requests at max_model_len {t.max_model_len:,}; "
        f"{t.concurrency_per_replica} concurrent/replica (bound: {t.concurrency_bound})",
        f"  {'measured' if t.knee_measured else 'est.'} TPOT {t.est_tpot_ms:.2f} ms (SLA {t.sla_tpot_ms:g}), TTFT {t.est_ttft_ms:.0f} ms (SLA {t.sla_ttft_ms:g})"
        + (f"; the SLA bounds the {t.latency_percentile} figures" if t.latency_percentile != "mean" else ""),
        *knee_lines(t),
        *cost_lines(t),
        *legend_lines(t),  # what a mark beside the price means
        *disagg_lines(t),  # serving.disaggregation auto | on (planner/disagg.py)
        *([f"  engine: {'; '.join(t.engine_notes)}"] if t.engine_notes else []),
        f"  {serve}" if serve else f"  vllm serve {' '.join(t.vllm_args)}",
        f"  why: {t.reason}",
    ])


# The CLI's --kv-cache-dtype: a stack's models[].kvCacheDtype, with the same default (auto: the model's dtype).
KV_CACHE_DTYPE_CHOICES = ("auto", "fp8", "allow-fp8")
DEFAULT_KV_CACHE_DTYPE = "auto"


def kv_cache_dtypes(option: str) -> tuple[str, ...]:
    """The KV cache dtypes the planner may choose for --kv-cache-dtype, as a stack's kvCacheDtype maps them
    (planning.deployment_request): `table`, `topology` and `capacity` ask the planner what `plan` of a stack asks."""
    from ..planning import KV_CACHE_DTYPES
    return KV_CACHE_DTYPES.get(option, (option,))


def kv_dtype_text(option: str, chosen: str | None = None) -> str:
    """What a command's header says of the KV cache dtype: the dtypes considered (and the option that set them) and,
    for one plan, the one chosen."""
    considered = " or ".join(kv_cache_dtypes(option))
    text = f"KV cache dtype considered: {considered} (--kv-cache-dtype {option})"
    return text + (f"; chosen: {chosen}" if chosen else "")


def serving_lines(s: dict) -> str:
    """The serving summary of one model (serving.service.serving_summary): start-up terms, the cold start a
    first request waits after scaling to zero, rollout, warnings."""
    lines = [f"  {s['image']}"] if s.get("image") else []
    if s.get("startup"):
        lines.append(f"  {s['startup']['text']}")
    if s.get("firstDeployS"):
        lines.append(f"  first deploy within {s['firstDeployS']} s (GPU nodes, cache fill, image pull, start-up budget)")
    if s.get("coldStart"):
        lines.append(f"  {s['coldStart']['text']}")
    if s.get("lora"):
        lines.append(f"  {s['lora']['text']}")
    if s.get("rollout"):
        r = s["rollout"]
        lines.append(f"  rollout: maxSurge {r['maxSurge']} / maxUnavailable {r['maxUnavailable']}; "
                     f"drain {s['drainS']} s after a 15 s preStop")
    if s.get("autoscaling"):  # what each pool scales on and its bounds (serving/autoscaling.py plan_lines)
        lines += s["autoscaling"]["lines"]
    lines += [f"  WARNING: {w}" for w in s.get("warnings", [])]
    return "\n".join(lines)


def margin_text(percentile: str, margin: float, cell: str = "") -> str:
    """What the knee's margin means, for `capacity`, `plan` and `topology`: the calibration's cell it was read from
    (planner/margins.py; `cell` is Cell.text()), or the stack's planning.latencyMargin."""
    pct = f"{margin * 100:g} %"
    head = (f"the knee keeps the {percentile} TPOT and TTFT a {pct} margin under the SLA (estimate x {1 + margin:g} "
            f"<= SLA)")
    tail = (f"; the {percentile} figures are the tail model's (docs/capacity.md compares it with published tails)"
            if percentile != "mean" else "")
    if not cell:  # the stack's planning.latencyMargin, not the calibration's
        return (f"{head}: planning.latencyMargin, for every model of the stack in place of the calibration's margin "
                f"by model class and load (docs/measurements.md){tail}")
    return (f"{head}: the calibration's margin for {cell}; TTFT and the pinned vLLM are not in the held-out rows: a "
            f"measured knee (planning.measurements, planning.profile) settles it "
            f"(docs/capacity.md#the-planning-margin-and-the-sla-percentile){tail}")


def knee_lines(t) -> list[str]:
    """The replica's knee and the load the fleet carries at min and max replicas (capacity model)."""
    if not t.knee_requests_per_second:
        return []
    load = t.fleet_load
    target = (f"{t.target_requests_per_second:g} requests/s" if t.target_requests_per_second is not None
              else f"{t.target_concurrency} concurrent users")

    def fleet(k: str) -> str:
        f = load[k]
        return (f"{k} {f['replicas']} replica(s): {f['concurrency']} users, {f['requests_per_second']:g} requests/s, "
                f"{f['output_tokens_per_s']:,.0f} output tok/s")
    return [f"  knee: {t.concurrency_per_replica} concurrent/replica at {t.prompt_tokens}+{t.output_tokens} tokens "
            f"= {t.knee_requests_per_second:.2f} requests/s, {t.knee_output_tokens_per_s:,.0f} output tok/s "
            f"(p90 TPOT {t.knee_tpot_p90_ms:.1f} ms, TTFT {t.knee_ttft_p90_ms:.0f} ms; p99 TPOT {t.knee_tpot_tail_ms:.1f} "
            f"ms, TTFT {t.knee_ttft_tail_ms:.0f} ms); sized for {target}"
            + (f"; {t.knee_source}" if t.knee_source else ""),
            *_source_lines(t),
            f"  fleet carries {fleet('min')}; {fleet('max')}"]


def _source_lines(t) -> list[str]:
    """Where the knee came from (planning.measurements or the capacity model) and the margin it was judged with."""
    if t.knee_measured:
        from ..planner.measured import NOISE_MARGIN
        lines = [f"  margin: the knee is the highest measured concurrency whose {t.latency_percentile} TPOT and TTFT "
                 f"x {1 + NOISE_MARGIN:g} meet the SLA ({NOISE_MARGIN * 100:g} % for measurement noise; "
                 f"planning.latencyMargin is for estimates, docs/measurements.md)"]
    elif t.knee_source or t.latency_margin:
        lines = [f"  margin: {margin_text(t.latency_percentile, t.latency_margin, t.margin_cell)}"]
        if t.estimator_why:
            lines.append(f"  estimator: {t.estimator_why}")
    else:
        lines = []
    return lines + [f"  WARNING: {n}" for n in t.knee_notes]
