"""The capacity model against published measurements (components/catalog/data/measurements/*.csv, read by
components/catalog/measurements.py). Pure.

`predict` evaluates one measurement's setup with the capacity model: the planner's memory model sizes the KV
cache for that GPU, TP x PP and max_model_len (at least one max_model_len request: the source's engine started),
counted in tokens of the row's requests; a closed-loop row is evaluated at its concurrency (capacity.at_load), a
burst row (every prompt sent at once) replayed step by step with vLLM V1's scheduling (burst.py). `errors` gives
absolute percentage errors of mean TPOT and of throughput (total tokens/s where published, else output
tokens/s). bench/calibrate.py fits the efficiencies on the `fit` half (`split`) and tests/planner/test_calibration.py
reports the error on the held-out half, on the cross-validation groups (`leave_one_out`) and on the rows added
after the model's structure was frozen (`FRESH_SINCE_FREEZE`).
"""
from __future__ import annotations

import hashlib
import statistics
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from ..catalog import ACCELERATORS, MODELS, instance_types
from ..catalog.bench_results import from_bench_results
from ..catalog.measurements import Measurement, usable
from . import memory as mem
from .burst import burst
from .capacity import LoadPoint, ReplicaShape, Workload, _cost, at_load
from .margins import CONCURRENCY_BUCKETS, Cell, concurrency_bucket, covering_margin, fit_cells, model_class  # noqa: F401
from .performance import EFFICIENCY, Efficiency

GPU_MEMORY_UTILIZATION = 0.90  # vLLM's default; every usable source runs with it
ROOT = Path(__file__).resolve().parents[2]

# The model's structure (burst replay, KV-read efficiency, the engine split of the per-request cost, the GEMM
# efficiency term) was last chosen on this date, after every row below had been looked at: no row is fresh for it.
# The blind batches (docs/calibration-data.md) were the one-shot tests of the structure frozen on 2026-12-02;
# they are ordinary rows of the split now. Rows added after this date are the only truly fresh test: add a row's
# id to FRESH_SINCE_FREEZE in the same change that adds the row (a bench/bench_serve.py run of the pinned vLLM);
# tests/planner/test_calibration.py reports their error on their own, and no fit trains on them.
STRUCTURE_FROZEN_ON = "2026-12-05"
FRESH_SINCE_FREEZE: tuple[str, ...] = ()

SPLIT_RULE = ("stratified by (model, GPU, load mode): within each stratum rows are ordered by sha256 of their id "
              "and alternate fit, held out, fit, ... (a stratum of 2+ rows lands on both sides; a single row is "
              "fit only); adding a row moves only rows of its own stratum; rows in FRESH_SINCE_FREEZE are always "
              "held out and no fit (nor cross-validation fold) trains on them")


@dataclass(frozen=True)
class Prediction:
    id: str
    concurrency: int
    tpot_ms: float
    output_tps: float
    total_tps: float
    tpot_error: float | None  # |predicted - measured| / measured
    throughput_error: float | None


# `vllm serve` flags a row's `flags` may carry that change the replica the model sees (anything else, e.g.
# --async-scheduling, is recorded but not modelled)
ENGINE_FLAGS = ("--kv-cache-dtype", "--max-num-batched-tokens", "--max-num-seqs", "--gpu-memory-utilization")


def engine_flags(m: Measurement) -> dict[str, str]:
    """The ENGINE_FLAGS a row was served with (`--flag value` or `--flag=value`)."""
    words = m.flags.replace("=", " ").split()
    return {w: words[i + 1] for i, w in enumerate(words[:-1]) if w in ENGINE_FLAGS}


def shape_for(m: Measurement) -> ReplicaShape | None:
    """The replica the measurement ran: KV cache from the planner's memory model (None: it would not fit), with
    the engine settings the row's flags name (vLLM's defaults otherwise)."""
    model, acc = MODELS[m.model], ACCELERATORS[m.gpu]
    insts = [i for i in instance_types("aws", m.gpu) + instance_types("gcp", m.gpu) if i.gpus >= m.tp]
    if not insts:
        return None
    inst = max(insts, key=lambda i: (i.gpus, i.network_gbps))
    f = engine_flags(m)
    kv_dtype = {"fp8": "fp8", "fp8_e4m3": "fp8", "fp8_e5m2": "fp8"}.get(f.get("--kv-cache-dtype", "auto"), "auto")
    batched = int(f.get("--max-num-batched-tokens", mem.default_max_num_batched_tokens(acc)))
    seqs = int(f.get("--max-num-seqs", mem.default_max_num_seqs(acc)))
    budget = acc.visible_gib * float(f.get("--gpu-memory-utilization", GPU_MEMORY_UTILIZATION))
    weights = mem.weight_bytes_per_gpu(model, m.precision, m.tp, m.pp) / mem.GiB
    kv_gib = budget - weights - mem.activation_gib(model, acc, m.tp, batched, seqs) - mem.non_torch_gib(m.tp, m.pp)
    if kv_gib <= 0:
        return None
    # vLLM refuses to start unless the KV cache holds one max_model_len request; the source's engine started
    kv = max(kv_gib * mem.GiB, mem.kv_bytes_for_request(model, m.tp, m.pp, kv_dtype, m.max_model_len, batched))
    # counted in tokens of the row's requests: a sliding-window layer holds every token of a request shorter than
    # its window plus the batch, so short requests cost more per token than max_model_len ones
    length = min(m.max_model_len, max(1, round(m.prompt_tokens + m.output_tokens)))
    tokens = mem.kv_cache_tokens(kv, model, m.tp, m.pp, kv_dtype, length, batched)
    return ReplicaShape(model, m.precision, acc, inst, m.tp, m.pp, kv_dtype, tokens, batched, seqs)


def _err(pred: float, meas: float | None) -> float | None:
    return None if not meas else abs(pred - meas) / meas


def predict(m: Measurement, eff: Efficiency = EFFICIENCY) -> Prediction | None:
    """The capacity model's figures for the row's setup, with the per-request cost of the row's vLLM engine."""
    eff = eff.for_engine(m.vllm)
    shape = shape_for(m)
    if shape is None:
        return None
    P, O = max(1, round(m.prompt_tokens)), max(2, round(m.output_tokens))
    w = Workload(P, O)
    if m.mode == "closed":
        users = m.concurrency
        p = at_load(shape, Workload(P, O, concurrency=users), eff)
    else:
        b = burst(_cost(shape, w, eff), m.concurrency, P, O, shape.kv_tokens, shape.max_num_batched_tokens,
                  shape.max_num_seqs)
        users = b.peak_running
        p = LoadPoint(users, 0.0, users, 0.0, b.tpot_ms, b.tpot_ms, b.ttft_ms, b.ttft_ms, b.output_tps, b.total_tps)
    tput = _err(p.total_tps, m.total_tps) if m.total_tps else _err(p.output_tps, m.output_tps)
    return Prediction(m.id, users, p.tpot_ms, p.output_tps, p.total_tps, _err(p.tpot_ms, m.tpot_ms), tput)


def calibration_rows(results: tuple[str, ...] | list[str] = ()) -> list[Measurement]:
    """The usable rows of the measurement tables (components/catalog/data/measurements/) plus those of
    bench/bench_serve.py result files (paths relative to the
    repository root or absolute). A result row whose id is already taken is an error."""
    rows = usable()
    seen = {m.id for m in rows}
    for path in results:
        for m in from_bench_results(ROOT / path):
            if m.id in seen:
                raise ValueError(f"{path}: row id {m.id!r} is already in the calibration set; rename it "
                                 "(bench_serve.py ids are DEPLOYMENT-GPU-tpN-cC) or drop the duplicate file")
            seen.add(m.id)
            rows.append(m)
    return rows


def stratum(m: Measurement) -> tuple[str, str, str]:
    return m.model, m.gpu, m.mode


def _rank(m: Measurement) -> str:
    return hashlib.sha256(m.id.encode()).hexdigest()


def split(rows: list[Measurement] | None = None) -> tuple[list[Measurement], list[Measurement]]:
    """(fit, held out) by SPLIT_RULE, each in the order of `rows` (default: calibration_rows() with the result
    files calibrated.RESULTS names)."""
    if rows is None:
        from .calibrated import RESULTS
        rows = calibration_rows(RESULTS)
    strata: dict[tuple, list[Measurement]] = defaultdict(list)
    for m in rows:
        if m.id not in FRESH_SINCE_FREEZE:
            strata[stratum(m)].append(m)
    held = {m.id for group in strata.values() for m in sorted(group, key=_rank)[1::2]} | set(FRESH_SINCE_FREEZE)
    return [m for m in rows if m.id not in held], [m for m in rows if m.id in held]


def leave_one_out(rows: list[Measurement], by: str) -> list[tuple[str, list[Measurement], list[Measurement]]]:
    """Cross-validation folds: for each value of `by` ("model" or "gpu"), (value, every other row but the fresh ones,
    its rows)."""
    if by not in ("model", "gpu"):
        raise ValueError(f"leave_one_out: by must be 'model' or 'gpu', not {by!r}")
    values = sorted({getattr(m, by) for m in rows})
    return [(v, [m for m in rows if getattr(m, by) != v and m.id not in FRESH_SINCE_FREEZE],
             [m for m in rows if getattr(m, by) == v]) for v in values]


def summary(rows: list[Measurement], eff: Efficiency = EFFICIENCY) -> dict:
    """Median and worst absolute percentage error for TPOT and throughput over `rows`."""
    preds = [p for p in (predict(m, eff) for m in rows) if p is not None]
    tpot = [p.tpot_error for p in preds if p.tpot_error is not None]
    tput = [p.throughput_error for p in preds if p.throughput_error is not None]
    return {"points": len(preds), "skipped": len(rows) - len(preds),
            "tpot_median": statistics.median(tpot) if tpot else None, "tpot_worst": max(tpot, default=None),
            "throughput_median": statistics.median(tput) if tput else None,
            "throughput_worst": max(tput, default=None), "predictions": preds}


def unsafe_ratios(rows: list[Measurement], eff: Efficiency = EFFICIENCY) -> list[float]:
    """Measured mean TPOT over the estimate for each row with a TPOT (> 1: the model was faster than the engine, the
    side on which a deployment sized from the estimate misses its SLA), in the order of `rows`."""
    return [m.tpot_ms / p.tpot_ms for m in rows if m.tpot_ms and (p := predict(m, eff)) is not None]


def margin_for(rows: list[Measurement], coverage: float, eff: Efficiency = EFFICIENCY, step: float = 0.05) -> float:
    """The smallest multiple of `step` whose estimate x (1 + margin) covers `coverage` of the rows' measured TPOT."""
    ratios = unsafe_ratios(rows, eff)
    if not ratios:
        raise ValueError("margin_for: no row with a measured TPOT")
    return covering_margin(ratios, coverage, step)


def error_by(rows: list[Measurement], by: str, eff: Efficiency = EFFICIENCY) -> dict[str, dict]:
    """TPOT error grouped `by` "concurrency" (CONCURRENCY_BUCKETS) or "tp": {group: {points, median (absolute),
    bias (median signed: + the model is slower than measured), worst}}, groups in order."""
    if by not in ("concurrency", "tp"):
        raise ValueError(f"error_by: by must be 'concurrency' or 'tp', not {by!r}")
    groups: dict[str, list[float]] = defaultdict(list)
    for m in rows:
        p = predict(m, eff)
        if p is None or p.tpot_error is None:
            continue
        key = concurrency_bucket(p.concurrency) if by == "concurrency" else f"TP {m.tp}"
        groups[key].append((p.tpot_ms - m.tpot_ms) / m.tpot_ms)
    order = [b[0] for b in CONCURRENCY_BUCKETS] if by == "concurrency" else sorted(groups, key=lambda k: int(k[3:]))
    return {k: {"points": len(groups[k]), "median": statistics.median(abs(e) for e in groups[k]),
                "bias": statistics.median(groups[k]), "worst": max(abs(e) for e in groups[k])}
            for k in order if groups.get(k)}


def margin_cells(rows: list[Measurement], eff: Efficiency = EFFICIENCY) -> tuple[Cell, ...]:
    """The planning margin's cells (margins.py) read off `rows` (the held-out half): each row's measured mean TPOT
    over the estimate, by model class and the regime of the load it ran at."""
    from .estimators import EstimatorUnavailable
    ratios = []
    for m in rows:
        try:
            p = predict(m, eff) if m.tpot_ms else None
        except EstimatorUnavailable:  # a row the estimator cannot price (GPU, precision) is not in its cells
            continue
        if p is not None:
            ratios.append((model_class(MODELS[m.model]), concurrency_bucket(p.concurrency), m.tpot_ms / p.tpot_ms))
    return fit_cells(ratios, eff.estimator)



@dataclass(frozen=True)
class TailCheck:
    id: str
    mode: str  # "closed": the queueing tail model (capacity.py); "burst": the replay's per-request percentiles
    tpot_p99: tuple[float, float]  # (measured, estimated) ms
    ttft_p99: tuple[float, float]


def tail_checks(rows: list[Measurement], eff: Efficiency = EFFICIENCY) -> list[TailCheck]:
    """The rows that publish p99 TPOT and TTFT, each against the capacity model's p99 for its setup: a closed-loop
    row the tail model at its concurrency (capacity._at_decode), a burst row the replay's per-request 99th
    percentile (burst.py). No term is fitted to these figures."""
    out = []
    for m in rows:
        if m.tpot_p99_ms is None or m.ttft_p99_ms is None:
            continue
        shape = shape_for(m)
        if shape is None:
            continue
        e = eff.for_engine(m.vllm)
        P, O = max(1, round(m.prompt_tokens)), max(2, round(m.output_tokens))
        if m.mode == "closed":
            p = at_load(shape, Workload(P, O, concurrency=m.concurrency), e)
            est = (p.tpot_tail_ms, p.ttft_tail_ms)
        else:
            b = burst(_cost(shape, Workload(P, O), e), m.concurrency, P, O, shape.kv_tokens,
                      shape.max_num_batched_tokens, shape.max_num_seqs)
            est = (b.tpot_p99_ms, b.ttft_p99_ms)
        out.append(TailCheck(m.id, m.mode, (m.tpot_p99_ms, est[0]), (m.ttft_p99_ms, est[1])))
    return out
