"""A replica's knee read from the stack's own measurements (planning.measurements, docs/measurements.md).

Pure. Where the stack measured the candidate shape (model, GPU, TP, PP, precision) at the SLA's prompt and output
lengths, the knee is the highest measured concurrency C such that every measured point at or below C meets the SLA
(at sla.latencyPercentile: p90, p99 or the mean) with NOISE_MARGIN: measured x (1 + NOISE_MARGIN) <= SLA. It is capped
by what the KV cache holds (the memory model, capacity.ReplicaShape.kv_limit). Other shapes keep the estimate.

* No interpolation between points: latency is knee-shaped in concurrency (flat, then steep once the batch turns
  compute-bound or queues), so a straight line between a passing C = 16 and a failing C = 32 would claim 24 users
  nobody ran. bench/bench_serve.py measures 1, 2, 4, ...: the knee is then low by less than a factor 2, and one more
  run (`vllm bench serve --max-concurrency 24`) settles it.
* The model-error margin (planning.latencyMargin) does not apply: it stands for the capacity model's error, which a
  measurement of the shape replaces. NOISE_MARGIN stands for what remains: run-to-run spread, and that a
  synthetic --dataset-name random workload at fixed lengths is not the production traffic.
* Lengths: a point counts only where its average prompt and output lengths are within LENGTH_TOLERANCE of the SLA's.
  bench/bench_serve.py runs `--random-input-len P --random-output-len O --ignore-eos` with vLLM's default
  --random-range-ratio 0, so its averages are the SLA's exactly; the tolerance admits a run at a rounded length
  (1000 for 1024 tokens is 2.3 % off). Prefill time grows with the prompt and decode time with the context, both at
  most in proportion, so 5 % off moves a figure by about the noise margin; further off, the plan says so and keeps
  the estimate.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..catalog.measured import MeasuredPoint, MeasuredShape
from .capacity import Knee, LoadPoint, ReplicaShape

# A policy choice, not a fit (this repository holds no repeated runs of one shape to fit run-to-run spread from):
# 5 % of the SLA kept for the noise of a measured figure.
NOISE_MARGIN = 0.05
LENGTH_TOLERANCE = 0.05  # share of the SLA's prompt / output length a measured average may differ by


@dataclass(frozen=True)
class MeasuredKnee:
    knee: Knee | None  # None: no measurement of this shape is usable (then `warning` says why, if there were some)
    source: str = ""  # "measured: FILE (N points, DATE)"
    warning: str = ""
    refusal: str = ""  # the shape misses the SLA at its lowest measured concurrency: why, for the Refusal


def shape_text(acc: str, tp: int, pp: int) -> str:
    return f"{acc} TP {tp}" + (f" x PP {pp}" if pp > 1 else "")


def matching(shapes: tuple[MeasuredShape, ...], r: ReplicaShape) -> list[MeasuredShape]:
    return [s for s in shapes if (s.accelerator, s.tp, s.pp) == (r.acc.id, r.tp, r.pp)
            and s.precision in (None, r.precision)]


def _at_lengths(p: MeasuredPoint, prompt: int, output: int) -> bool:
    return (abs(p.prompt_tokens - prompt) <= LENGTH_TOLERANCE * prompt
            and abs(p.output_tokens - output) <= LENGTH_TOLERANCE * output)


def _load_point(p: MeasuredPoint) -> LoadPoint:
    """A measured run as the planner's LoadPoint (the decode batch and prefill share are not measured: C and 0)."""
    return LoadPoint(float(p.concurrency), p.requests_per_s, float(p.concurrency), 0.0, p.tpot_ms,
                     p.tpot_p99_ms if p.tpot_p99_ms is not None else p.tpot_ms, p.ttft_ms,
                     p.ttft_p99_ms if p.ttft_p99_ms is not None else p.ttft_ms, p.output_tps, p.total_tps,
                     tpot_p90_ms=p.tpot_p90_ms if p.tpot_p90_ms is not None else p.tpot_ms,
                     ttft_p90_ms=p.ttft_p90_ms if p.ttft_p90_ms is not None else p.ttft_ms)


def _misses(p: MeasuredPoint, tpot_ms: float, ttft_ms: float, percentile: str) -> str | None:
    tpot, ttft = p.latency(percentile)
    if tpot * (1 + NOISE_MARGIN) > tpot_ms:
        return "tpot"
    return "ttft" if ttft * (1 + NOISE_MARGIN) > ttft_ms else None


def measured_knee(shapes: tuple[MeasuredShape, ...], r: ReplicaShape, prompt: int, output: int, tpot_ms: float,
                  ttft_ms: float, cap: int, percentile: str = "mean") -> MeasuredKnee:
    """The knee of replica `r` from the measurements of its shape, or why there is none (see the module)."""
    found = matching(shapes, r)
    if not found:
        return MeasuredKnee(None)
    files = ", ".join(dict.fromkeys(s.file for s in found))
    what = f"planning.measurements {files} ({shape_text(r.acc.id, r.tp, r.pp)})"
    every = [p for s in found for p in s.points]
    points = [p for p in every if _at_lengths(p, prompt, output)]
    if not points:
        lengths = ", ".join(sorted({f"{p.prompt_tokens:g}+{p.output_tokens:g}" for p in every}))
        return MeasuredKnee(None, warning=(
            f"MEASUREMENT NOT USED: {what} was measured at {lengths} prompt+output tokens, not within "
            f"{LENGTH_TOLERANCE * 100:g} % of the SLA's {prompt}+{output}: the knee is estimated; measure at "
            f"--random-input-len {prompt} --random-output-len {output} (bench/bench_serve.py does)"))
    if percentile in ("p90", "p99"):
        points = [p for p in points if None not in p.latency(percentile)]
        if not points:
            return MeasuredKnee(None, warning=(
                f"MEASUREMENT NOT USED: {what} reports no {percentile} TPOT and TTFT and sla.latencyPercentile is "
                f"{percentile}: the knee is estimated; measure with --percentile-metrics ttft,tpot "
                f"--metric-percentiles 90,99 (bench/bench_serve.py does)"))
    points.sort(key=lambda p: p.concurrency)
    date = max(p.date for p in points)
    source = f"measured: {files} ({len(points)} point{'s' if len(points) != 1 else ''}, {date})"
    best, bound = None, "measured"
    for p in points:
        miss = _misses(p, tpot_ms, ttft_ms, percentile)
        if miss:
            bound = miss
            break
        best = p
    if best is None:
        p = points[0]
        tpot, ttft = p.latency(percentile)
        name, got, limit = ("TPOT", tpot, tpot_ms) if bound == "tpot" else ("TTFT", ttft, ttft_ms)
        tail = f"{percentile} " if percentile != "mean" else ""
        return MeasuredKnee(Knee(0, _load_point(p), bound, cap, percentile, NOISE_MARGIN), source, refusal=(
            f"measured {tail}{name} {got:.1f} ms at concurrency {p.concurrency} ({files}); {got * (1 + NOISE_MARGIN):.1f} "
            f"ms with the {NOISE_MARGIN * 100:g} % measurement margin > SLA {limit:g} ms"))
    if best.concurrency >= cap:
        c = max(1, cap)
        bound = "max-num-seqs" if cap == r.max_num_seqs else "kv-cache"
        at = next((p for p in reversed(points) if p.concurrency <= c), best)
    else:
        c, at = best.concurrency, best
    return MeasuredKnee(Knee(c, _load_point(at), bound, cap, percentile, NOISE_MARGIN), source)


def production_problems(production: bool, topologies: dict, floor: float | None = None) -> list[str]:
    """`planning.latencyMargin: problem` lines: in production an estimated knee keeps at least the calibration's
    margin for its model class and load (Topology.calibrated_margin, planner/margins.py; `floor` overrides it); a
    smaller one is for a shape the stack measured. Policy latency-margin-in-production checks the same on the
    workload's annotations."""
    if not production:
        return []
    out = []
    for t in topologies.values():
        least = floor if floor is not None else (t.calibrated_margin or 0.0)
        if t.knee_measured or t.latency_margin >= least - 1e-9:
            continue
        out.append(f"planning.latencyMargin: {t.latency_margin:g} is below the calibration's {least:g} for "
                   f"{t.served_model_name} ({t.calibrated_cell or 'its model class and load'}) and its knee on "
                   f"{shape_text(t.accelerator, t.tensor_parallel_size, t.pipeline_parallel_size)} is estimated, in "
                   f"production; measure that shape (planning.profile, or bench/bench_serve.py) and list the file under "
                   f"planning.measurements (docs/measurements.md), or set planning.latencyMargin to {least:g} or more")
    return out
