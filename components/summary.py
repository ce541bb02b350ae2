"""The text summaries `python -m components topology` and `plan` print: one model's plan (shape, KV cache,
latency, capacity, cost, engine options) and its serving terms (start-up budget, first deploy, cold start,
rollout, warnings). Pure (no Pulumi)."""
from __future__ import annotations

from .capacity_table import knee_lines
from .cost import cost_lines, hourly
from .planner import Topology
from .planner.disagg import disagg_lines


def summary(t: Topology, serve: str | None = None) -> str:
    """`serve`: the command line the stack's serving shape really runs, where it differs from the planner's
    arguments (a LeaderWorkerSet's leader: serving.service.serving_summary)."""
    par = f"TP {t.tensor_parallel_size}" + (f" x PP {t.pipeline_parallel_size}" if t.pipeline_parallel_size > 1 else "")
    return "\n".join([
        f"{t.served_model_name}: {t.model_name} {t.precision} on {t.instance_type} ({t.gpus_per_node} x {t.accelerator})",
        f"  {par} = {t.gpus_per_replica} GPU(s)/replica, {t.nodes_per_replica} node(s)/replica, "
        f"{t.replicas_per_node} replica(s)/node; {t.replicas} replica(s) on {t.nodes} node(s), {hourly(t, t.cost_per_hour)}",
        f"  KV cache {t.kv_cache_tokens:,} tokens/replica ({t.kv_cache_dtype}), "
        f"{t.concurrency_at_full_length:g} requests at max_model_len {t.max_model_len:,}; "
        f"{t.concurrency_per_replica} concurrent/replica (bound: {t.concurrency_bound})",
        f"  {'measured' if t.knee_measured else 'est.'} TPOT {t.est_tpot_ms:.2f} ms (SLA {t.sla_tpot_ms:g}), TTFT {t.est_ttft_ms:.0f} ms (SLA {t.sla_ttft_ms:g})"
        + ("; the SLA bounds the p99 figures" if t.latency_percentile == "p99" else ""),
        *knee_lines(t),  # capacity_table.py
        *cost_lines(t),
        *disagg_lines(t),  # serving.disaggregation auto | on (planner/disagg.py)
        *([f"  engine: {'; '.join(t.engine_notes)}"] if t.engine_notes else []),
        f"  {serve}" if serve else f"  vllm serve {' '.join(t.vllm_args)}",
        f"  why: {t.reason}",
    ])


def serving_lines(s: dict) -> str:
    """The serving summary of one model (serving.service.serving_summary): start-up terms, the cold start a
    first request waits after scaling to zero, rollout, warnings."""
    lines = []
    if s.get("startup"):
        lines.append(f"  {s['startup']['text']}")
    if s.get("firstDeployS"):
        lines.append(f"  first deploy within {s['firstDeployS']} s (GPU nodes, cache fill, image pull, start-up budget)")
    if s.get("coldStart"):
        lines.append(f"  {s['coldStart']['text']}")
    if s.get("rollout"):
        r = s["rollout"]
        lines.append(f"  rollout: maxSurge {r['maxSurge']} / maxUnavailable {r['maxUnavailable']}; "
                     f"drain {s['drainS']} s after a 15 s preStop")
    lines += [f"  WARNING: {w}" for w in s.get("warnings", [])]
    return "\n".join(lines)
