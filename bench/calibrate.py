"""Fit the capacity model's efficiency terms to published vLLM measurements and write them to
components/planner/calibrated.py (with the date and the split), then print the error on the held-out half.

    .venv/bin/python bench/calibrate.py            # fit, write, report
    .venv/bin/python bench/calibrate.py --check    # report only, with the constants in calibrated.py

The fit is a grid search over (HBM efficiency, MFU, step overhead, per-request overhead) minimising the sum of squared log errors of
mean TPOT and of throughput over the `fit` half of components/catalog/measurements.py (calibration.split).
The held-out half is never looked at by the fit.
"""
from __future__ import annotations

import argparse
import datetime
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from components.planner.calibration import predict, split, summary  # noqa: E402
from components.planner.performance import EFFICIENCY, Efficiency  # noqa: E402

OUT = ROOT / "components" / "planner" / "calibrated.py"
HBM = [round(0.30 + 0.05 * i, 2) for i in range(14)]  # 0.30 .. 0.95
MFU = [round(0.10 + 0.05 * i, 2) for i in range(13)]  # 0.10 .. 0.70
OVERHEAD_S = [0.0005, 0.001, 0.002, 0.003, 0.004, 0.006]
SEQ_GRID = [0.0, 20e-6, 40e-6, 80e-6, 120e-6, 160e-6, 200e-6, 250e-6]


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
    best = None
    for h in HBM:
        for f in MFU:
            for o in OVERHEAD_S:
                for q in SEQ_GRID:
                    eff = Efficiency(h, f, o, q)
                    value = loss(rows, eff)
                    if best is None or value < best[1]:
                        best = (eff, value)
    return best


def write(eff: Efficiency, fit_ids: list[str], test_ids: list[str]) -> None:
    today = datetime.date.today().isoformat()
    OUT.write_text(f'''"""Efficiency terms of the step-time model (components/planner/performance.py).

WRITTEN BY bench/calibrate.py on {today}: do not edit by hand. Fitted by grid search on the `fit` half of
components/catalog/measurements.py; tests/planner/test_calibration.py reports the error on the held-out half.
"""
HBM_EFFICIENCY = {eff.hbm}
MFU = {eff.mfu}
STEP_OVERHEAD_S = {eff.step_overhead_s}
SEQ_OVERHEAD_S = {eff.seq_overhead_s}
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
              f"+ {eff.seq_overhead_s * 1e6:g} us per running request "
              f"(loss {value:.3f}) on {len(fit_rows)} points")
        write(eff, [m.id for m in fit_rows], [m.id for m in test_rows])
    report("fit", fit_rows, eff)
    report("held out", test_rows, eff)
    return 0


if __name__ == "__main__":
    sys.exit(main())
