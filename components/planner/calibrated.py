"""Efficiency terms of the step-time model (components/planner/performance.py).

WRITTEN BY bench/calibrate.py on 2026-12-03: do not edit by hand. Fitted by coordinate descent on the `fit` half of
the calibration rows (components/catalog/measurements.py plus the bench result files in RESULTS);
tests/planner/test_calibration.py reports the error on the held-out half and the cross-validation below.
"""
HBM_EFFICIENCY = 0.85
MFU = 0.4
STEP_OVERHEAD_S = 0.0005
SEQ_OVERHEAD_S = 0.00012
KV_HBM_EFFICIENCY = 0.15
FITTED_ON = "2026-12-03"
AT_GRID_EDGE: tuple[str, ...] = ('step_overhead_s=0.0005 (bottom)',)  # fitted terms at an end of their search grid
SPLIT = 'stratified by (model, GPU, load mode): within each stratum rows are ordered by sha256 of their id and alternate fit, held out, fit, ... (a stratum of 2+ rows lands on both sides; a single row is fit only); adding a row moves only rows of its own stratum; rows in FRESH_SINCE_FREEZE are always held out and no fit (nor cross-validation fold) trains on them'
RESULTS: tuple[str, ...] = (
)
TRAIN: tuple[str, ...] = (
    "gs-oss120b-h100-tp4-sharegpt",
    "gs-oss120b-h100-tp1-4k",
    "gs-oss120b-h100-tp1-2k",
    "gs-oss120b-a100-tp2-sharegpt",
    "gs-oss120b-a100-tp1-32k",
    "gs-oss120b-a100-tp1-4k",
    "gs-qwen32b-h100-sharegpt",
    "gs-qwen32b-h100-32k",
    "gs-qwen32b-a100-sharegpt",
    "gs-qwen32b-a100-4k",
    "gs-qwen235b-h100-tp8-sharegpt",
    "gs-qwen235b-h100-tp4-fp8-sharegpt",
    "gs-qwen235b-h100-tp8-2k",
    "gs-dsr1-h200-tp8-sharegpt",
    "gs-dsr1-h200-tp8-2k",
    "jm-llama8b-a100-40-c1",
)
TEST: tuple[str, ...] = (
    "gs-oss120b-h100-tp1-sharegpt",
    "gs-oss120b-h100-tp2-sharegpt",
    "gs-oss120b-h100-tp1-32k",
    "gs-oss120b-a100-tp1-sharegpt",
    "gs-oss120b-a100-tp1-2k",
    "gs-qwen32b-h100-4k",
    "gs-qwen32b-h100-2k",
    "gs-qwen32b-a100-32k",
    "gs-qwen32b-a100-2k",
    "gs-qwen235b-h100-tp8-32k",
    "gs-qwen235b-h100-tp8-4k",
    "gs-dsr1-h200-tp8-32k",
    "gs-dsr1-h200-tp8-4k",
    "gs-oss120b-h100-tp1-c4-sharegpt",
    "gs-oss120b-h100-tp2-c4-sharegpt",
    "gs-oss120b-a100-tp1-c4-sharegpt",
    "gs-oss120b-a100-tp1-c4-sharegpt-mnbt4096",
    "gs-dsr1-h200-tp8-c4-sharegpt",
    "vb-fp8kv-llama8b-h100-c8-bf16kv",
    "vb-fp8kv-llama8b-h100-c8-fp8kv",
    "ix-oss120b-b200-tp4-c16",
    "ix-oss120b-b200-tp4-c64",
    "ix-oss120b-b200-tp4-c128",
    "ix-oss120b-b200-tp4-c256",
    "ix-oss120b-b200-tp4-c512",
    "dl-qwen2-7b-a100-tp2-gm025-r1024x1024-n1",
    "dl-qwen2-7b-a100-tp2-gm025-r1024x1024-n20",
    "dl-qwen2-7b-a100-tp2-gm025-r1024x1024-n75",
    "dl-qwen2-7b-a100-tp2-gm025-r7168x1024-n100",
    "dl-qwen2-7b-a100-tp2-gm025-r1024x1024-n200",
    "dl-qwen2-7b-a100-tp2-gm025-r1024x1024-n500",
    "dl-qwen2-7b-a100-tp2-gm025-r128x1024-n500",
    "dl-qwen2-7b-a100-tp2-gm050-r1024x1024-n500",
    "dl-qwen2-7b-a100-gm025-r1024x1024-n10",
    "dl-qwen2-7b-a100-gm025-r1024x1024-n30",
    "dl-qwen2-7b-a100-gm025-r1024x1024-n100",
    "dl-qwen2-7b-a100-gm025-r1024x1024-n500",
    "dl-qwen2-7b-a100-gm050-r1024x1024-n1",
    "dl-qwen2-7b-a100-gm050-r1024x1024-n10",
    "dl-qwen2-7b-a100-gm050-r1024x1024-n30",
    "dl-qwen2-7b-a100-gm050-r1024x1024-n75",
    "dl-qwen2-7b-a100-gm050-r1024x1024-n100",
    "dl-qwen2-7b-a100-gm050-r1024x1024-n200",
    "dl-qwen2-7b-a100-gm050-r1024x1024-n500",
    "gsa-qwen235b-a100-tp8-sharegpt",
    "gsa-qwen235b-a100-tp8-32k",
    "gsa-qwen235b-a100-tp8-4k",
    "gsa-qwen235b-a100-tp8-2k",
    "gsa-qwen235b-a100-tp8ep-fp8-sharegpt",
    "gsa-qwen235b-a100-tp4-fp8-sharegpt",
    "gsa-qwen235b-a100-tp4-fp8-4k",
    "gsa-qwen235b-a100-tp4-fp8-2k",
)

# Leave-one-model-out and leave-one-GPU-out: for each model (GPU), the five terms fitted on every row of the
# other models (GPUs), and the error on its own rows. "fitted": (HBM, KV-read, MFU, step s, per-request s).
CROSS_VALIDATED_ON = '2026-12-03'
CROSS_VALIDATION: dict[str, dict[str, dict]] = {
    "model": {
        "deepseek-v3": {'points': 5, 'tpot_median': 0.3648, 'tpot_worst': 0.7162, 'throughput_median': 0.9835, 'throughput_worst': 2.6199, 'fitted': (0.7, 0.15, 0.5, 0.0005, 8e-05)},
        "gpt-oss-120b": {'points': 20, 'tpot_median': 0.3631, 'tpot_worst': 3.0458, 'throughput_median': 0.2865, 'throughput_worst': 0.7832, 'fitted': (0.9, 0.2, 0.5, 0.004, 0.0002)},
        "llama-3.1-8b": {'points': 3, 'tpot_median': 1.4267, 'tpot_worst': 2.4948, 'throughput_median': 0.5926, 'throughput_worst': 0.6687, 'fitted': (0.9, 0.15, 0.45, 0.0005, 0.00012)},
        "qwen2.5-7b": {'points': 19, 'tpot_median': 0.2442, 'tpot_worst': 1.3888, 'throughput_median': 0.2727, 'throughput_worst': 0.6703, 'fitted': (0.9, 0.15, 0.45, 0.0005, 0.00012)},
        "qwen3-235b-a22b": {'points': 13, 'tpot_median': 0.3712, 'tpot_worst': 0.4675, 'throughput_median': 0.5998, 'throughput_worst': 0.9153, 'fitted': (0.9, 0.15, 0.45, 0.0005, 0.00012)},
        "qwen3-32b": {'points': 8, 'tpot_median': 0.0911, 'tpot_worst': 0.98, 'throughput_median': 0.2915, 'throughput_worst': 0.4657, 'fitted': (0.85, 0.15, 0.4, 0.0005, 0.00012)},
    },
    "gpu": {
        "a100-40gb": {'points': 1, 'tpot_median': 0.0201, 'tpot_worst': 0.0201, 'throughput_median': None, 'throughput_worst': None, 'fitted': (0.9, 0.15, 0.45, 0.0005, 0.00012)},
        "a100-80gb": {'points': 38, 'tpot_median': 0.3539, 'tpot_worst': 1.4497, 'throughput_median': 0.3907, 'throughput_worst': 0.833, 'fitted': (0.8, 0.15, 0.4, 0.0005, 0.00012)},
        "b200": {'points': 5, 'tpot_median': 0.7018, 'tpot_worst': 1.3651, 'throughput_median': 0.4966, 'throughput_worst': 0.6301, 'fitted': (0.9, 0.15, 0.45, 0.0005, 0.00012)},
        "h100": {'points': 19, 'tpot_median': 0.3379, 'tpot_worst': 3.5122, 'throughput_median': 0.2724, 'throughput_worst': 0.8956, 'fitted': (0.9, 0.5, 0.45, 0.0005, 0.00025)},
        "h200": {'points': 5, 'tpot_median': 0.3648, 'tpot_worst': 0.7162, 'throughput_median': 0.9835, 'throughput_worst': 2.6199, 'fitted': (0.7, 0.15, 0.5, 0.0005, 8e-05)},
    },
}
