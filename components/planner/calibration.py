"""The capacity model against published measurements (components/catalog/measurements.py). Pure.

`predict` evaluates one measurement's setup with the capacity model: the planner's memory model sizes the KV
cache for that GPU, TP x PP and max_model_len (at least one max_model_len request: the source's engine started),
counted in tokens of the row's requests; a closed-loop row is evaluated at its concurrency (capacity.at_load), a
burst row (every prompt sent at once) replayed step by step with vLLM V1's scheduling (burst.py). `errors` gives
absolute percentage errors of mean TPOT and of throughput (total tokens/s where published, else output
tokens/s). bench/calibrate.py fits the efficiencies on the `fit` half (`split`) and tests/planner/test_calibration.py
reports the error on the held-out half.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass

from ..catalog import ACCELERATORS, MODELS, instance_types
from ..catalog.measurements import Measurement, usable
from . import memory as mem
from .burst import burst
from .capacity import LoadPoint, ReplicaShape, Workload, _cost, at_load
from .performance import EFFICIENCY, Efficiency

GPU_MEMORY_UTILIZATION = 0.90  # vLLM's default; every usable source runs with it


@dataclass(frozen=True)
class Prediction:
    id: str
    concurrency: int
    tpot_ms: float
    output_tps: float
    total_tps: float
    tpot_error: float | None  # |predicted - measured| / measured
    throughput_error: float | None


def shape_for(m: Measurement) -> ReplicaShape | None:
    """The replica the measurement ran: KV cache from the planner's memory model (None: it would not fit)."""
    model, acc = MODELS[m.model], ACCELERATORS[m.gpu]
    insts = [i for i in instance_types("aws", m.gpu) + instance_types("gcp", m.gpu) if i.gpus >= m.tp]
    if not insts:
        return None
    inst = max(insts, key=lambda i: (i.gpus, i.network_gbps))
    budget = acc.visible_gib * GPU_MEMORY_UTILIZATION
    weights = mem.weight_bytes_per_gpu(model, m.precision, m.tp, m.pp) / mem.GiB
    kv_gib = budget - weights - mem.activation_gib(model, acc, m.tp) - mem.non_torch_gib(m.tp, m.pp)
    if kv_gib <= 0:
        return None
    batched = mem.default_max_num_batched_tokens(acc)
    # vLLM refuses to start unless the KV cache holds one max_model_len request; the source's engine started
    kv = max(kv_gib * mem.GiB, mem.kv_bytes_for_request(model, m.tp, m.pp, "auto", m.max_model_len, batched))
    # counted in tokens of the row's requests: a sliding-window layer holds every token of a request shorter than
    # its window plus the batch, so short requests cost more per token than max_model_len ones
    length = min(m.max_model_len, max(1, round(m.prompt_tokens + m.output_tokens)))
    tokens = mem.kv_cache_tokens(kv, model, m.tp, m.pp, "auto", length, batched)
    return ReplicaShape(model, m.precision, acc, inst, m.tp, m.pp, "auto", tokens,
                        mem.default_max_num_batched_tokens(acc), mem.default_max_num_seqs(acc))


def _err(pred: float, meas: float | None) -> float | None:
    return None if not meas else abs(pred - meas) / meas


def predict(m: Measurement, eff: Efficiency = EFFICIENCY) -> Prediction | None:
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


def split(rows: list[Measurement] | None = None) -> tuple[list[Measurement], list[Measurement]]:
    """(fit, held out): alternate usable rows in table order (1st, 3rd, ... fit; 2nd, 4th, ... held out), so
    that each source, GPU and model lands on both sides."""
    rows = usable() if rows is None else rows
    return rows[0::2], rows[1::2]


def summary(rows: list[Measurement], eff: Efficiency = EFFICIENCY) -> dict:
    """Median and worst absolute percentage error for TPOT and throughput over `rows`."""
    preds = [p for p in (predict(m, eff) for m in rows) if p is not None]
    tpot = [p.tpot_error for p in preds if p.tpot_error is not None]
    tput = [p.throughput_error for p in preds if p.throughput_error is not None]
    return {"points": len(preds), "skipped": len(rows) - len(preds),
            "tpot_median": statistics.median(tpot) if tpot else None, "tpot_worst": max(tpot, default=None),
            "throughput_median": statistics.median(tput) if tput else None,
            "throughput_worst": max(tput, default=None), "predictions": preds}
