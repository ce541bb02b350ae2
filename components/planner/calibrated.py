"""Efficiency terms of the step-time model (components/planner/performance.py).

WRITTEN BY bench/calibrate.py: do not edit by hand. Placeholder until the first fit.
"""
HBM_EFFICIENCY = 0.85
MFU = 0.5
STEP_OVERHEAD_S = 0.0005
FITTED_ON = None  # date of the fit
SPLIT = None  # how the measurements were split into fit / held-out
TRAIN: tuple[str, ...] = ()
TEST: tuple[str, ...] = ()
