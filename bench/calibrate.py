"""Fit the capacity model's efficiency terms to published vLLM measurements and write them to
components/planner/calibrated.py (with the date, the split and the cross-validation), then print the errors.

    .venv/bin/python bench/calibrate.py                      # fit, cross-validate, write, report
    .venv/bin/python bench/calibrate.py --no-cross-validate  # fit, write (keeps no stale cross-validation), report
    .venv/bin/python bench/calibrate.py --check              # report only, with the constants in calibrated.py
    .venv/bin/python bench/calibrate.py --results bench/results/STACK-NAME.json ...  # add bench_serve.py rows

The fit searches the grids below for (HBM efficiency, MFU, step overhead, per-request overhead, KV-read
efficiency), minimising the sum of squared log errors of mean TPOT and of throughput over the `fit` half of the
calibration rows (components/catalog/measurements.py plus any --results files; calibration.split). Burst rows
are replayed step by step (planner/burst.py), which is too slow for the full grid, so the search is coordinate
descent over the grids from START (one parameter at a time, its whole grid, until a pass changes nothing). The
held-out half is never looked at by the fit. Cross-validation fits again once per left-out model and per
left-out GPU (leave-one-model-out, leave-one-GPU-out) on every other row, held-out half included but never
the rows in calibration.FRESH_SINCE_FREEZE, and records
the error on the left-out rows: about 8 fits, several minutes on 2 cores (--jobs).
"""
from __future__ import annotations

import argparse
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
    FRESH_SINCE_FREEZE, SPLIT_RULE, calibration_rows, leave_one_out, predict, split, summary)
from components.planner.performance import EFFICIENCY, Efficiency  # noqa: E402

OUT = ROOT / "components" / "planner" / "calibrated.py"
HBM = [round(0.50 + 0.05 * i, 2) for i in range(9)]  # 0.50 .. 0.90: the best decode kernels reach ~0.8-0.9
MFU = [round(0.20 + 0.05 * i, 2) for i in range(11)]  # 0.20 .. 0.70
OVERHEAD_S = [0.0005, 0.001, 0.002, 0.003, 0.004, 0.006]
SEQ_GRID = [0.0, 20e-6, 40e-6, 80e-6, 120e-6, 160e-6, 200e-6, 250e-6]
KV_HBM = [0.0, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5]  # 0: KV reads at the weights' efficiency
GRIDS = {"hbm": HBM, "mfu": MFU, "step_overhead_s": OVERHEAD_S, "seq_overhead_s": SEQ_GRID, "kv_hbm": KV_HBM}
# A grid's ends that are physical limits rather than search limits: 0 s of per-request overhead and KV reads at
# the weights' efficiency (kv_hbm 0) are models, not edges of a search range.
NATURAL_ENDS = {("seq_overhead_s", 0.0), ("kv_hbm", 0.0)}
START = Efficiency(0.75, 0.45, 0.0005, 250e-6)  # the steady-state model's fit (2026-12-02)

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


def fit(rows) -> tuple[Efficiency, float]:
    best = (START, loss(rows, START))
    changed = True
    while changed:
        changed = False
        for name, grid in GRIDS.items():
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


def _fit_fold(rows) -> Efficiency:
    return fit(rows)[0]


def cross_validate(rows, jobs: int = 2) -> dict:
    """{"model": {model: figures}, "gpu": {gpu: figures}}: each fitted on every row of the other models (GPUs)."""
    folds = [(by, v, train, test) for by in ("model", "gpu") for v, train, test in leave_one_out(rows, by)]
    trains = {}
    for _, _, train, _ in folds:  # leaving out a model can leave out the same rows as a GPU: fit once
        trains.setdefault(tuple(m.id for m in train), train)
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        fitted = dict(zip(trains, pool.map(_fit_fold, trains.values())))
    out: dict = {"model": {}, "gpu": {}}
    for by, v, train, test in folds:
        eff = fitted[tuple(m.id for m in train)]
        out[by][v] = {**_figures(summary(test, eff)),
                      "fitted": (eff.hbm, eff.kv_hbm, eff.mfu, eff.step_overhead_s, eff.seq_overhead_s)}
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


def write(eff: Efficiency, fit_ids, test_ids, results, cv: dict, cv_on: str | None, edges: list[str]) -> None:
    today = datetime.date.today().isoformat()
    OUT.write_text(f'''"""Efficiency terms of the step-time model (components/planner/performance.py).

WRITTEN BY bench/calibrate.py on {today}: do not edit by hand. Fitted by coordinate descent on the `fit` half of
the calibration rows (components/catalog/measurements.py plus the bench result files in RESULTS);
tests/planner/test_calibration.py reports the error on the held-out half and the cross-validation below.
"""
HBM_EFFICIENCY = {eff.hbm}
MFU = {eff.mfu}
STEP_OVERHEAD_S = {eff.step_overhead_s}
SEQ_OVERHEAD_S = {eff.seq_overhead_s}
KV_HBM_EFFICIENCY = {eff.kv_hbm}
FITTED_ON = "{today}"
AT_GRID_EDGE: tuple[str, ...] = {tuple(edges)!r}  # fitted terms at an end of their search grid
SPLIT = {SPLIT_RULE!r}
{_ids("RESULTS", results)}{_ids("TRAIN", fit_ids)}{_ids("TEST", test_ids)}
# Leave-one-model-out and leave-one-GPU-out: for each model (GPU), the five terms fitted on every row of the
# other models (GPUs), and the error on its own rows. "fitted": (HBM, KV-read, MFU, step s, per-request s).
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
        print(f"fitted HBM efficiency {eff.hbm}, MFU {eff.mfu}, step overhead {eff.step_overhead_s * 1e3:g} ms "
              f"+ {eff.seq_overhead_s * 1e6:g} us per running request, KV reads at {eff.kv_hbm} "
              f"(loss {value:.3f}) on {len(fit_rows)} points; at a grid edge: {', '.join(edges) or 'none'}")
        cv, cv_on = {}, None
        if args.cv is not False:
            cv, cv_on = cross_validate(rows, args.jobs), datetime.date.today().isoformat()
        write(eff, [m.id for m in fit_rows], [m.id for m in test_rows], results, cv, cv_on, edges)
        report_cv(cv)
    elif args.cv:
        report_cv(cross_validate(rows, args.jobs))
    else:
        report_cv(calibrated.CROSS_VALIDATION)
    fresh = set(FRESH_SINCE_FREEZE)
    report("fit", fit_rows, eff)
    report("held out (the split's half)", [m for m in test_rows if m.id not in fresh], eff)
    report("fresh since the structure was frozen (all held out)", [m for m in test_rows if m.id in fresh], eff)
    return 0


if __name__ == "__main__":
    sys.exit(main())
