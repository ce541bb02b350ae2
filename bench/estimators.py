"""AIConfigurator against the step model on the held-out calibration rows (issue 40): each estimator prices every
held-out row through the same capacity model (calibration.predict with Efficiency.estimator "step-model" or
"aiconfigurator"), and this prints the TPOT and throughput error of both by concurrency bucket, TP degree, GPU and
dense vs MoE, over the rows AIC can price (with how many it cannot, and why), then writes the per-cell table
components/catalog/data/estimators/heldout.csv.

    .venv/bin/python bench/estimators.py            # report and write the table
    .venv/bin/python bench/estimators.py --check    # report only

Needs the optional dependency (`pip install 'vllm-platform[aiconfigurator]'`). Only the held-out half of
calibration.split() is read: the fit half is never looked at, and nothing here is chosen from the figures.
Deterministic: rows in the split's order, medians and nearest-rank percentiles, no sampling.
"""
from __future__ import annotations

import argparse
import datetime
import importlib
import math
import statistics
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from components.catalog import MODELS  # noqa: E402
from components.planner import aic, calibrated  # noqa: E402
from components.planner.calibration import (  # noqa: E402
    CONCURRENCY_BUCKETS, SPLIT_RULE, concurrency_bucket, predict, shape_for, split)
from components.planner.performance import EFFICIENCY, ENGINE_ERAS, engine_generation  # noqa: E402

OUT = ROOT / "components" / "catalog" / "data" / "estimators" / "heldout.csv"
# "aiconfigurator": AIC's kernels alone; "aiconfigurator+engine": plus the step model's engine CPU terms and era
# factor (planner/estimators.py). The table in OUT is of the latter (the one planning.estimator: auto may choose).
AIC = replace(EFFICIENCY, estimator="aiconfigurator+engine")


@dataclass(frozen=True)
class Row:
    id: str
    gpu: str
    tp: int
    cls: str  # "dense" | "moe"
    bucket: str  # concurrency bucket of the step model's prediction (calibration.error_by's grouping)
    measured_tpot: float
    step_tpot: float
    step_tput_err: float | None
    aic_tpot: float | None  # None: AIC cannot price the row
    aic_tput_err: float | None
    aic_reason: str | None
    era: str  # the engine era of the row's vLLM (performance.ENGINE_ERAS): AIC's kernels are of 0.14 / 0.24


def evaluate(rows) -> tuple[list[Row], Counter, float]:
    """Both estimators' predictions of the rows with a measured TPOT; (rows, rows the step model skips by reason,
    seconds AIC took)."""
    out, skipped, aic_s = [], Counter(), 0.0
    for m in rows:
        if not m.tpot_ms:
            continue
        s = predict(m)
        if s is None:
            skipped["the memory model does not fit the row's setup (both estimators)"] += 1
            continue
        shape = shape_for(m)
        reason = aic.supports(MODELS[m.model], m.precision, shape.acc, m.tp, m.pp, shape.kv_cache_dtype)
        a = None
        if reason is None:
            t = time.perf_counter()
            try:
                a = predict(m, AIC)
            except aic.EstimatorUnavailable as exc:
                reason = str(exc)
            aic_s += time.perf_counter() - t
        out.append(Row(m.id, m.gpu, m.tp, "moe" if MODELS[m.model].is_moe else "dense",
                       concurrency_bucket(s.concurrency), m.tpot_ms, s.tpot_ms, s.throughput_error,
                       a.tpot_ms if a else None, a.throughput_error if a else None, reason,
                       engine_generation(m.vllm)))
    return out, skipped, aic_s


def timings() -> tuple[tuple[float, float], tuple[float, float]]:
    """Seconds to import the library (its package, its engine module), and to build one step_cost grid: the first
    (compiling the engine and loading the GPU's perf data) and one more context on the same engine."""
    from components.catalog import ACCELERATORS, instance_types
    t = time.perf_counter()
    importlib.import_module("aiconfigurator_core")
    package = time.perf_counter() - t
    importlib.import_module("aiconfigurator_core.sdk.engine")
    engine = time.perf_counter() - t - package
    acc = ACCELERATORS["h100"]
    inst = instance_types("aws", "h100")[0]
    grids = []
    for context in (1500, 1600):
        t = time.perf_counter()
        aic.step_cost(MODELS["llama-3.1-70b"], "bf16", acc, inst, 2, 1, "auto", context, 500)
        grids.append(time.perf_counter() - t)
    return (package, engine), (grids[0], grids[1])


def _p90(values: list[float]) -> float:
    """Nearest-rank 90th percentile."""
    v = sorted(values)
    return v[max(0, math.ceil(0.9 * len(v)) - 1)]


def stats(rows: list[Row], which: str) -> dict:
    """TPOT median |error|, median signed error (+: the estimate is slower than measured), median throughput
    error, p90 of measured/estimated TPOT, for `which` estimator ("step" or "aic")."""
    est = [(r, r.step_tpot if which == "step" else r.aic_tpot) for r in rows]
    err = [(e - r.measured_tpot) / r.measured_tpot for r, e in est]
    tput = [t for t in ((r.step_tput_err if which == "step" else r.aic_tput_err) for r in rows) if t is not None]
    return {"n": len(rows), "median": statistics.median(abs(e) for e in err), "bias": statistics.median(err),
            "tput": statistics.median(tput) if tput else None,
            "unsafe_p90": _p90([r.measured_tpot / e for r, e in est])}


def table(title: str, rows: list[Row], key, order=None) -> None:
    groups: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        groups[key(r)].append(r)
    print(f"\n{title:<12} {'rows':>4} | {'step model: TPOT |err| bias  tput  p90':>38} | "
          f"{'AIC: TPOT |err| bias  tput  p90':>33}")
    for k in (order or sorted(groups)):
        if k not in groups:
            continue
        s, a = stats(groups[k], "step"), stats(groups[k], "aic")
        print(f"{k:<12} {s['n']:>4} | {100 * s['median']:>20.0f}% {100 * s['bias']:+5.0f}% "
              f"{_tput(s['tput'])} {s['unsafe_p90']:5.2f} | {100 * a['median']:>15.0f}% {100 * a['bias']:+5.0f}% "
              f"{_tput(a['tput'])} {a['unsafe_p90']:5.2f}")


def _tput(v: float | None) -> str:
    return "    -" if v is None else f"{100 * v:4.0f}%"


def write(rows: list[Row], when: str) -> None:
    cells: dict[tuple, list[Row]] = defaultdict(list)
    for r in rows:
        cells[(r.gpu, r.cls, r.bucket)].append(r)
    order = [b[0] for b in CONCURRENCY_BUCKETS]
    systems = "; ".join(f"{acc}: {s.system} vLLM {s.vllm}" for acc, s in aic.SYSTEMS.items())
    lines = [
        "# The step model (components/planner/performance.py, terms fitted by bench/calibrate.py on "
        f"{calibrated.FITTED_ON}) and {AIC.estimator}: AIConfigurator's kernel times (aiconfigurator-core "
        f"{aic.AIC_VERSION}; its vLLM perf data by GPU: {systems}) plus the step model's engine CPU terms and era "
        "factor (planner/estimators.py), on the held-out calibration rows, both through the capacity model "
        "(calibration.predict).",
        f"# Written by bench/estimators.py on {when}. Split: {SPLIT_RULE}.",
        "# One row per (gpu, class, concurrency bucket) cell of held-out rows with a measured mean TPOT; the bucket is "
        "that of the step model's predicted concurrency (calibration.error_by). rows / step_model_*: every such row "
        "of the cell; aic_rows / aic_*: those AIC prices (planner/aic.py supports). *_tpot_median: median |estimated "
        "- measured| / measured mean TPOT; *_unsafe_p90: nearest-rank 90th percentile of measured / estimated TPOT "
        "(> 1: the estimate is faster than the engine). Empty: no row AIC prices.",
        "gpu,class,concurrency,rows,step_model_tpot_median,step_model_unsafe_p90,aic_rows,aic_tpot_median,"
        "aic_unsafe_p90",
    ]
    for (gpu, cls, bucket) in sorted(cells, key=lambda k: (k[0], k[1], order.index(k[2]))):
        group = cells[(gpu, cls, bucket)]
        s = stats(group, "step")
        priced = [r for r in group if r.aic_tpot is not None]
        a = stats(priced, "aic") if priced else None
        lines.append(f"{gpu},{cls},{bucket},{len(group)},{s['median']:.3f},{s['unsafe_p90']:.3f},{len(priced)},"
                     + (f"{a['median']:.3f},{a['unsafe_p90']:.3f}" if a else ","))
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    global AIC
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="report only; do not write " + str(OUT.relative_to(ROOT)))
    ap.add_argument("--estimator", choices=["aiconfigurator+engine", "aiconfigurator"], default="aiconfigurator+engine",
                    help="the AIC variant set against the step model (the table is written for the default only)")
    args = ap.parse_args(argv)
    AIC = replace(EFFICIENCY, estimator=args.estimator)
    print(f"estimator set against the step model: {args.estimator}")
    import_s, grid_s = timings()
    _, held = split()
    rows, skipped, aic_s = evaluate(held)
    priced = [r for r in rows if r.aic_tpot is not None]
    print(f"held-out rows: {len(held)}, with a measured TPOT and a replica the memory model fits: {len(rows)}; "
          f"AIC prices {len(priced)}, cannot price {len(rows) - len(priced)}")
    print(f"step model: terms fitted on {calibrated.FITTED_ON}; AIC: aiconfigurator-core {aic.AIC_VERSION}, "
          f"vLLM data {', '.join(sorted({f'{s.system} {s.vllm}' for s in aic.SYSTEMS.values()}))}")
    print(f"import aiconfigurator_core: {import_s[0]:.3f} s (its engine module, aiconfigurator_core.sdk.engine: "
          f"{import_s[1]:.2f} s); one step_cost grid (Llama-3.1-70B bf16 TP2 on h100, {len(aic.DECODE_GRID)} decode x "
          f"{len(aic.PREFILL_GRID)} prefill points): {grid_s[0]:.2f} s with the engine compiled and h100's perf data "
          f"loaded, {grid_s[1]:.3f} s for another context on that engine; all {len(priced)} AIC predictions "
          f"(engines, grids, capacity model): {aic_s:.1f} s")
    for reason, n in Counter(r.aic_reason for r in rows if r.aic_reason).most_common():
        print(f"  not priced by AIC: {n:3d}  {reason}")
    for reason, n in skipped.items():
        print(f"  skipped: {n:3d}  {reason}")
    if not priced:
        print("AIC priced no row")
        return 1
    every = stats(rows, "step")
    print(f"\nstep model over all {every['n']} rows: TPOT |err| median {100 * every['median']:.0f}%, bias "
          f"{100 * every['bias']:+.0f}%, throughput {_tput(every['tput']).strip()}, p90 measured/estimated "
          f"{every['unsafe_p90']:.2f}")
    print(f"\nOver the {len(priced)} rows AIC prices (the same rows for both; p90 = 90th percentile of measured / "
          "estimated TPOT, > 1 unsafe):")
    table("all", priced, lambda r: "all")
    table("concurrency", priced, lambda r: r.bucket, [b[0] for b in CONCURRENCY_BUCKETS])
    table("TP", priced, lambda r: f"TP {r.tp}", [f"TP {n}" for n in (1, 2, 4, 8, 16)])
    table("GPU", priced, lambda r: r.gpu)
    table("class", priced, lambda r: r.cls, ["dense", "moe"])
    table("engine era", priced, lambda r: r.era, [e[0] for e in ENGINE_ERAS])
    if not args.check and args.estimator == "aiconfigurator+engine":
        write(rows, datetime.date.today().isoformat())
        print(f"\nwrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
