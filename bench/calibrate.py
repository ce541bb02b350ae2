"""Fit the capacity model's efficiency terms to published vLLM measurements and write them to
components/planner/calibrated.py (with the date, the split and the cross-validation), then print the errors.

    .venv/bin/python bench/calibrate.py                      # fit, cross-validate, write, report
    .venv/bin/python bench/calibrate.py --no-cross-validate  # fit, write (keeps no stale cross-validation), report
    .venv/bin/python bench/calibrate.py --check              # report only, with the constants in calibrated.py
    .venv/bin/python bench/calibrate.py --results bench/results/STACK-NAME.json ...  # add bench_serve.py rows

The fit searches the grids below for the step model's terms (performance.Efficiency: the GPU terms every row
shares, and each engine era's CPU costs and GPU-time factor), minimising the sum of squared log errors of mean TPOT
and of throughput over the `fit` half of the calibration rows (components/catalog/data/measurements/ plus any
--results files; calibration.split). Burst rows are replayed step by step (planner/burst.py), so the search is
coordinate descent over the grids from START, the last fit (one parameter at a time, its whole grid, until a pass
changes nothing). The held-out half is never looked at by the fit. Cross-validation refits the GPU terms once per
left-out model and per left-out GPU (leave-one-model-out, leave-one-GPU-out) on every other row, held-out half
included but never the rows in calibration.FRESH_SINCE_FREEZE, and records the error on the left-out rows (about
15 fits from the full fit, several minutes on 2 cores, --jobs). The report gives the TPOT error by concurrency
bucket and by TP degree (calibration.error_by).
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import math
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from components.planner import calibrated  # noqa: E402
from components.planner.calibration import (  # noqa: E402
    FRESH_SINCE_FREEZE, SPLIT_RULE, calibration_rows, error_by, leave_one_out, predict, split, summary)
from components.planner.performance import EFFICIENCY, Efficiency  # noqa: E402

OUT = ROOT / "components" / "planner" / "calibrated.py"
# The grids stay inside what the kernels physically reach (a fit on old, noisy rows otherwise wanders to a 50 %
# HBM efficiency and a 3 ms step that no single-user measurement supports): weight-streaming GEMMs reach 0.75-0.9 of
# peak HBM bandwidth, large GEMMs 0.45-0.75 of dense peak, paged-attention decode kernels 0.5-0.9 of HBM bandwidth.
# The GPU terms are shared by every row; the CPU terms and the GPU-time factor belong to an engine era
# (performance.ENGINE_ERAS): rows of older engines carry their era's, the planner the pinned engine's ("v1", factor 1).
GRIDS = {
    "hbm": [0.75, 0.8, 0.85, 0.9],
    "mfu": [0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75],
    "kv_hbm": [0.5, 0.6, 0.7, 0.8, 0.9],
    "gemm_half_rows": [0.0, 16.0, 32.0, 64.0, 128.0, 256.0],
    "attn_seq_s": [0.0, 0.25e-6, 0.5e-6, 1e-6, 2e-6],
    "allreduce_s": [0.0, 10e-6, 15e-6, 20e-6, 30e-6, 50e-6, 80e-6],
    "step_overhead_s": [0.0002, 0.0005, 0.001, 0.0015, 0.002, 0.003],
    "seq_overhead_s": [0.0, 5e-6, 10e-6, 20e-6, 40e-6],
    "early_step_overhead_s": [0.0005, 0.001, 0.002, 0.003, 0.004, 0.006],
    "early_seq_overhead_s": [0.0, 10e-6, 20e-6, 40e-6, 80e-6],
    "early_gpu_factor": [1.0, 1.1, 1.2, 1.35, 1.5, 1.75, 2.0, 2.5],
    "v0_step_overhead_s": [0.0005, 0.001, 0.002, 0.003, 0.004, 0.006, 0.008],
    "v0_seq_overhead_s": [0.0, 40e-6, 80e-6, 120e-6, 160e-6],
    "v0_gpu_factor": [1.0, 1.1, 1.2, 1.35, 1.5, 1.75, 2.0, 2.5],
}
# A grid's ends that are physical limits rather than search limits: no per-request or per-sequence cost, GEMMs at MFU
# whatever their rows, all-reduces at the catalog's latency estimate (0) and an older engine's kernels as fast as
# today's are models, not edges of a search range.
NATURAL_ENDS = {("seq_overhead_s", 0.0), ("early_seq_overhead_s", 0.0), ("v0_seq_overhead_s", 0.0),
                ("gemm_half_rows", 0.0), ("attn_seq_s", 0.0), ("allreduce_s", 0.0), ("early_gpu_factor", 1.0), ("v0_gpu_factor", 1.0)}
# where the search starts: the last fit (a refit on the same rows converges in one pass)
START = Efficiency(**calibrated.TERMS)
# Cross-validation refits the GPU terms per fold (they are what a left-out model or GPU tests); the engine eras' CPU
# terms and factors stay at the full fit (they describe engines, not models or GPUs). A fold records them in this order.
CV_TERMS = ("hbm", "kv_hbm", "mfu", "gemm_half_rows", "attn_seq_s", "allreduce_s")

_memo: dict = {}


def _predict(m, eff):
    key = (m, eff)
    if key not in _memo:
        _memo[key] = predict(m, eff)
    return _memo[key]


def loss(rows, eff: Efficiency) -> float:
    total = 0.0
    for m in rows:
        p = _predict(m, eff)
        if p is None:
            continue
        if m.tpot_ms:
            total += math.log(p.tpot_ms / m.tpot_ms) ** 2
        meas, pred = (m.total_tps, p.total_tps) if m.total_tps else (m.output_tps, p.output_tps)
        if meas:
            total += math.log(max(pred, 1e-9) / meas) ** 2
    return total


def fit(rows, start: Efficiency | None = None, terms=None) -> tuple[Efficiency, float]:
    """Coordinate descent from `start` (default START) over the grids of `terms` (default every term)."""
    start = START if start is None else start
    grids = {name: GRIDS[name] for name in (terms or GRIDS)}
    best = (start, loss(rows, start))
    changed = True
    while changed:
        changed = False
        for name, grid in grids.items():
            for v in grid:
                eff = replace(best[0], **{name: v})
                value = loss(rows, eff)
                if value < best[1] - 1e-12:
                    best, changed = (eff, value), True
    return best


def at_grid_edge(eff: Efficiency) -> list[str]:
    """The fitted terms that sit at an end of their grid (a search limit, not a physical one)."""
    return [f"{name}={getattr(eff, name):g} ({'top' if getattr(eff, name) == grid[-1] else 'bottom'})"
            for name, grid in GRIDS.items()
            if getattr(eff, name) in (grid[0], grid[-1]) and (name, getattr(eff, name)) not in NATURAL_ENDS]


def _figures(s: dict) -> dict:
    r = {k: (None if s[k] is None else round(s[k], 4))
         for k in ("tpot_median", "tpot_worst", "throughput_median", "throughput_worst")}
    return {"points": s["points"], **r}


def _fit_fold(args) -> Efficiency:
    rows, start = args
    return fit(rows, start, CV_TERMS)[0]


def cross_validate(rows, start: Efficiency, jobs: int = 2) -> dict:
    """{"model": {model: figures}, "gpu": {gpu: figures}}: the GPU terms (CV_TERMS) refitted from `start` (the full
    fit) on every row of the other models (GPUs), the engine eras' terms kept at `start`."""
    folds = [(by, v, train, test) for by in ("model", "gpu") for v, train, test in leave_one_out(rows, by)]
    trains = {}
    for _, _, train, _ in folds:  # leaving out a model can leave out the same rows as a GPU: fit once
        trains.setdefault(tuple(m.id for m in train), train)
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        fitted = dict(zip(trains, pool.map(_fit_fold, [(t, start) for t in trains.values()])))
    out: dict = {"model": {}, "gpu": {}}
    for by, v, train, test in folds:
        eff = fitted[tuple(m.id for m in train)]
        out[by][v] = {**_figures(summary(test, eff)),
                      "fitted": tuple(getattr(eff, t) for t in CV_TERMS)}
    return out


def _ids(name: str, ids) -> str:
    return f"{name}: tuple[str, ...] = (\n" + "".join(f'    "{i}",\n' for i in ids) + ")\n"


def _cv_text(cv: dict) -> str:
    lines = ["CROSS_VALIDATION: dict[str, dict[str, dict]] = {"]
    for by in ("model", "gpu"):
        lines.append(f'    "{by}": {{')
        lines += [f'        "{k}": {v!r},' for k, v in cv.get(by, {}).items()]
        lines.append("    },")
    return "\n".join(lines) + "\n}\n"


def _terms_text(eff: Efficiency) -> str:
    return "".join(f"    {f.name!r}: {getattr(eff, f.name)!r},\n" for f in dataclasses.fields(eff) if f.name != "gpu_factor")


def write(eff: Efficiency, fit_ids, test_ids, results, cv: dict, cv_on: str | None, edges: list[str]) -> None:
    today = datetime.date.today().isoformat()
    OUT.write_text(f'''"""Efficiency terms of the step-time model (components/planner/performance.py).

WRITTEN BY bench/calibrate.py on {today}: do not edit by hand. Fitted by coordinate descent on the `fit` half of
the calibration rows (components/catalog/data/measurements/*.csv plus the bench result files in RESULTS);
tests/planner/test_calibration.py reports the error on the held-out half and the cross-validation below.
"""
TERMS: dict[str, float | None] = {{
{_terms_text(eff)}}}
FITTED_ON = "{today}"
AT_GRID_EDGE: tuple[str, ...] = {tuple(edges)!r}  # fitted terms at an end of their search grid
SPLIT = {SPLIT_RULE!r}
{_ids("RESULTS", results)}{_ids("TRAIN", fit_ids)}{_ids("TEST", test_ids)}
# Leave-one-model-out and leave-one-GPU-out: for each model (GPU), the five terms fitted on every row of the
# other models (GPUs), and the error on its own rows. "fitted": {CV_TERMS}.
CROSS_VALIDATED_ON = {cv_on!r}
{_cv_text(cv)}''')


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:.1%}"


def report(name: str, rows, eff: Efficiency) -> None:
    s = summary(rows, eff)
    if not s["points"]:
        print(f"{name}: no points")
        return
    print(f"{name}: {s['points']} points; TPOT median {_pct(s['tpot_median'])} worst {_pct(s['tpot_worst'])}; "
          f"throughput median {_pct(s['throughput_median'])} worst {_pct(s['throughput_worst'])}")
    for by in ("concurrency", "tp"):
        print(f"  TPOT error by {by}: " + "; ".join(
            f"{k}: {v['points']} rows, median {v['median']:.0%} (bias {v['bias']:+.0%})"
            for k, v in error_by(rows, by, eff).items()))
    meas = {m.id: m for m in rows}
    for p in s["predictions"]:
        t = f"{(p.tpot_ms - meas[p.id].tpot_ms) / meas[p.id].tpot_ms:+.0%}" if p.tpot_error is not None else "-"
        q = f"{p.throughput_error:.0%}" if p.throughput_error is not None else "-"
        print(f"  {p.id:40s} C={p.concurrency:<5d} TPOT {p.tpot_ms:7.1f} ms vs {meas[p.id].tpot_ms or 0:7.1f} "
              f"({t:>5}), total {p.total_tps:9.0f} tok/s ({q:>4})")


def report_cv(cv: dict) -> None:
    for by in ("model", "gpu"):
        for v, f in cv.get(by, {}).items():
            print(f"leave out {by} {v:18s} {f['points']:3d} points; TPOT median {_pct(f['tpot_median'])} worst "
                  f"{_pct(f['tpot_worst'])}; throughput median {_pct(f['throughput_median'])} worst "
                  f"{_pct(f['throughput_worst'])}; fitted {f['fitted']}")


def main(argv: list[str] | None = None) -> int:
    a = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    a.add_argument("--check", action="store_true", help="only report, with the constants in calibrated.py")
    a.add_argument("--cross-validate", dest="cv", action="store_true", default=None,
                   help="leave-one-model-out and leave-one-GPU-out fits (the default of a full run)")
    a.add_argument("--no-cross-validate", dest="cv", action="store_false",
                   help="skip them (calibrated.py then records none: the test asks for a full run)")
    a.add_argument("--results", nargs="+", default=None, metavar="PATH",
                   help="bench/bench_serve.py result files to add to the rows (default: calibrated.RESULTS)")
    a.add_argument("--jobs", type=int, default=2, help="processes for the cross-validation fits (default 2)")
    args = a.parse_args(argv)
    results = tuple(args.results) if args.results is not None else calibrated.RESULTS
    try:
        rows = calibration_rows(results)
    except ValueError as e:
        print(f"--results: {e}", file=sys.stderr)
        return 2
    fit_rows, test_rows = split(rows)
    eff = EFFICIENCY
    if not args.check:
        eff, value = fit(fit_rows)
        edges = at_grid_edge(eff)
        print(f"fitted (loss {value:.3f} on {len(fit_rows)} points): "
              + ", ".join(f"{k} {v:g}" for k, v in dataclasses.asdict(eff).items() if v is not None)
              + f"; at a grid edge: {', '.join(edges) or 'none'}")
        cv, cv_on = {}, None
        if args.cv is not False:
            cv, cv_on = cross_validate(rows, eff, args.jobs), datetime.date.today().isoformat()
        write(eff, [m.id for m in fit_rows], [m.id for m in test_rows], results, cv, cv_on, edges)
        report_cv(cv)
    elif args.cv:
        report_cv(cross_validate(rows, eff, args.jobs))
    else:
        report_cv(calibrated.CROSS_VALIDATION)
    fresh = set(FRESH_SINCE_FREEZE)
    report("fit", fit_rows, eff)
    report("held out (the split's half)", [m for m in test_rows if m.id not in fresh], eff)
    report("fresh since the structure was frozen (all held out)", [m for m in test_rows if m.id in fresh], eff)
    return 0


if __name__ == "__main__":
    sys.exit(main())
