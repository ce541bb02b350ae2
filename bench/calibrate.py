"""Fit the capacity model's efficiency terms to published vLLM measurements and write them to
components/planner/calibrated.py (with the date and the split), then print the error on the held-out half.

    .venv/bin/python bench/calibrate.py            # fit, write, report
    .venv/bin/python bench/calibrate.py --check    # report only, with the constants in calibrated.py

The fit searches the grids below for (HBM efficiency, MFU, step overhead, per-request overhead, KV-read
efficiency), five parameters
for 15 training points, minimising the sum of squared log errors of mean TPOT and of throughput over the `fit`
half of components/catalog/measurements.py (calibration.split). Burst rows are replayed step by step
(planner/burst.py), which is too slow for the full grid, so the search is coordinate descent over the grids from
START (one parameter at a time, its whole grid, until a pass changes nothing). The held-out half is never looked
at by the fit.
"""
from __future__ import annotations

import argparse
import datetime
import math
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from components.planner.calibration import predict, split, summary  # noqa: E402
from components.planner.performance import EFFICIENCY, Efficiency  # noqa: E402

OUT = ROOT / "components" / "planner" / "calibrated.py"
HBM = [round(0.50 + 0.05 * i, 2) for i in range(10)]  # 0.50 .. 0.95
MFU = [round(0.20 + 0.05 * i, 2) for i in range(11)]  # 0.20 .. 0.70
OVERHEAD_S = [0.0005, 0.001, 0.002, 0.003, 0.004, 0.006]
SEQ_GRID = [0.0, 20e-6, 40e-6, 80e-6, 120e-6, 160e-6, 200e-6, 250e-6]
KV_HBM = [0.0, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5]  # 0: KV reads at the weights' efficiency
GRIDS = {"hbm": HBM, "mfu": MFU, "step_overhead_s": OVERHEAD_S, "seq_overhead_s": SEQ_GRID, "kv_hbm": KV_HBM}
START = Efficiency(0.75, 0.45, 0.0005, 250e-6)  # the previous fit (steady-state model, 2026-12-02)


def loss(rows, eff: Efficiency) -> float:
    total = 0.0
    for m in rows:
        p = predict(m, eff)
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


def write(eff: Efficiency, fit_ids: list[str], test_ids: list[str]) -> None:
    today = datetime.date.today().isoformat()
    OUT.write_text(f'''"""Efficiency terms of the step-time model (components/planner/performance.py).

WRITTEN BY bench/calibrate.py on {today}: do not edit by hand. Fitted by coordinate descent on the `fit` half of
components/catalog/measurements.py; tests/planner/test_calibration.py reports the error on the held-out half.
"""
HBM_EFFICIENCY = {eff.hbm}
MFU = {eff.mfu}
STEP_OVERHEAD_S = {eff.step_overhead_s}
SEQ_OVERHEAD_S = {eff.seq_overhead_s}
KV_HBM_EFFICIENCY = {eff.kv_hbm}
FITTED_ON = "{today}"
SPLIT = "alternate usable rows in table order: 1st, 3rd, ... fit; 2nd, 4th, ... held out"
TRAIN: tuple[str, ...] = (
{"".join(f'    "{i}",{chr(10)}' for i in fit_ids)})
TEST: tuple[str, ...] = (
{"".join(f'    "{i}",{chr(10)}' for i in test_ids)})
''')


def report(name: str, rows, eff: Efficiency) -> None:
    s = summary(rows, eff)
    print(f"{name}: {s['points']} points; TPOT median {s['tpot_median']:.1%} worst {s['tpot_worst']:.1%}; "
          f"throughput median {s['throughput_median']:.1%} worst {s['throughput_worst']:.1%}")
    for p in s["predictions"]:
        t = f"{p.tpot_error:.0%}" if p.tpot_error is not None else "-"
        q = f"{p.throughput_error:.0%}" if p.throughput_error is not None else "-"
        print(f"  {p.id:40s} C={p.concurrency:<5d} TPOT {p.tpot_ms:7.1f} ms ({t:>4}), total {p.total_tps:9.0f} tok/s ({q:>4})")


def main() -> int:
    a = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    a.add_argument("--check", action="store_true", help="only report, with the constants in calibrated.py")
    args = a.parse_args()
    fit_rows, test_rows = split()
    eff = EFFICIENCY
    if not args.check:
        eff, value = fit(fit_rows)
        print(f"fitted HBM efficiency {eff.hbm}, MFU {eff.mfu}, step overhead {eff.step_overhead_s * 1e3:g} ms "
              f"+ {eff.seq_overhead_s * 1e6:g} us per running request, KV reads at {eff.kv_hbm} "
              f"(loss {value:.3f}) on {len(fit_rows)} points")
        write(eff, [m.id for m in fit_rows], [m.id for m in test_rows])
    report("fit", fit_rows, eff)
    report("held out", test_rows, eff)
    return 0


if __name__ == "__main__":
    sys.exit(main())
