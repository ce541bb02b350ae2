"""Efficiency terms of the step-time model (components/planner/performance.py).

WRITTEN BY bench/calibrate.py on 2026-12-02: do not edit by hand. Fitted by coordinate descent on the `fit` half of
components/catalog/measurements.py; tests/planner/test_calibration.py reports the error on the held-out half.
"""
HBM_EFFICIENCY = 0.95
MFU = 0.45
STEP_OVERHEAD_S = 0.001
SEQ_OVERHEAD_S = 0.00012
KV_HBM_EFFICIENCY = 0.15
FITTED_ON = "2026-12-02"
SPLIT = "alternate usable rows in table order: 1st, 3rd, ... fit; 2nd, 4th, ... held out"
TRAIN: tuple[str, ...] = (
    "gs-oss120b-h100-tp1-sharegpt",
    "gs-oss120b-h100-tp4-sharegpt",
    "gs-oss120b-h100-tp1-4k",
    "gs-oss120b-a100-tp1-sharegpt",
    "gs-oss120b-a100-tp1-32k",
    "gs-oss120b-a100-tp1-2k",
    "gs-qwen32b-h100-32k",
    "gs-qwen32b-h100-2k",
    "gs-qwen32b-a100-32k",
    "gs-qwen32b-a100-2k",
    "gs-qwen235b-h100-tp4-fp8-sharegpt",
    "gs-qwen235b-h100-tp8-4k",
    "gs-dsr1-h200-tp8-sharegpt",
    "gs-dsr1-h200-tp8-4k",
    "jm-llama8b-a100-40-c1",
)
TEST: tuple[str, ...] = (
    "gs-oss120b-h100-tp2-sharegpt",
    "gs-oss120b-h100-tp1-32k",
    "gs-oss120b-h100-tp1-2k",
    "gs-oss120b-a100-tp2-sharegpt",
    "gs-oss120b-a100-tp1-4k",
    "gs-qwen32b-h100-sharegpt",
    "gs-qwen32b-h100-4k",
    "gs-qwen32b-a100-sharegpt",
    "gs-qwen32b-a100-4k",
    "gs-qwen235b-h100-tp8-sharegpt",
    "gs-qwen235b-h100-tp8-32k",
    "gs-qwen235b-h100-tp8-2k",
    "gs-dsr1-h200-tp8-32k",
    "gs-dsr1-h200-tp8-2k",
)
