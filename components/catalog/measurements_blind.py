"""Published vLLM serving measurements collected blind, for testing the capacity model on data it never saw.

Read on 2026-12-03 by someone who never ran the capacity model or saw its errors. They are part of
components/planner/calibration.FRESH_SINCE_FREEZE: always held out, never fitted, reported on their own by
tests/planner/test_calibration.py and docs/capacity.md. They were also the one-shot test of a structural variant
(fixed GPU time per layer and per request per layer) chosen before they were read and not adopted (docs/capacity.md,
"Calibration"). Not every run of each source was taken, and the rule the reader used was not recorded (a review found
about 20 omitted fully successful dennislee22 runs and 3 GPUStack ones); adding them later is fine, as fresh rows.
Same row format and rules as measurements.py (⚠ marks every inferred field). Sources, in short:

* dennislee22/vLLM-benchmarking (commit-pinned): Qwen2-7B-Instruct (⚠ mapped to the identical qwen2.5-7b
  architecture) on A100 80GB, vLLM 0.10.1.1, 1 GPU and TP2, --gpu-memory-utilization 0.25 / 0.5, random prompts all
  sent at once; ⚠ the same seed run after run hits the prefix cache (the logs print hit rates of 1-57 %).
* GPUStack performance lab, Qwen3-235B-A22B on A100 (commit-pinned; only the H100 page is in measurements.py):
  BF16 TP8, FP8 TP8 + expert parallel, FP8 TP4; vLLM 0.11.0.
* tenstorrent/tt-inference-server issue #143 (an issue comment, not pinnable): Qwen2.5-72B-Instruct on "2 x H100"
  at one user; kept for the record, not usable: 67.7 GiB of BF16 weights per GPU leave no KV cache on an 80 GB H100 at
  vLLM's default memory utilization, so the run used settings it does not state and its replica cannot be rebuilt.
"""
from __future__ import annotations

from .measurements import Measurement

_FRESH_READ_ON = "2026-12-03"

# --- dennislee22/vLLM-benchmarking (Cloudera AI, Sep 2025): Qwen2-7B-Instruct on A100 80GB, vLLM 0.10.1.1 ---
_DL = ("https://github.com/dennislee22/vLLM-benchmarking/blob/b474d1e053c35c9aef8c02aae4efbc0d8675f033/README.md")
_DL_DATE = "2025-09 (server logs dated 09-02..09-06; last commit 2025-09-13)"
_DL_COMMON = ("vllm/benchmarks/benchmark_serving.py --backend vllm --endpoint /v1/completions --dataset-name random, "
              "no --max-concurrency / --request-rate (so inf: all prompts at once) and no --ignore-eos; lengths = printed "
              "totals / successful requests; ⚠ model: Qwen/Qwen2-7B-Instruct, mapped to qwen2.5-7b (identical architecture: "
              "28 layers, hidden 3584, 28 heads, 4 KV heads, vocab 152064), not the same weights; server: vllm serve "
              "Qwen2-7B-Instruct --max-model-len 16384 (BF16, prefix caching and chunked prefill on by default, V1 engine); "
              "⚠ the same default seed is reused run after run, so later runs hit the prefix cache (the server log excerpts "
              "print 'Prefix cache hit rate' 1-57%): TTFT and throughput may be flattered")
_DL_1G_050 = (_DL_COMMON + "; 1 x A100 80GB, gpu_memory_utilization 0.5 (log: Available KV cache memory 24.83 GiB, "
              "464,848 tokens)")
_DL_1G_025 = (_DL_COMMON + "; 1 x A100 80GB, gpu_memory_utilization 0.25 (log: 5.01 GiB KV, 93,872 tokens: KV-bound)")
_DL_2G_025 = (_DL_COMMON + "; TP2 over Ray across two single-GPU pods on the same node (A100 80GB), "
              "gpu_memory_utilization 0.25 (log: 12.02 GiB KV per GPU, 450,192 tokens); ⚠ GPU-to-GPU link between the "
              "two pods not stated (may not be NVLink)")
_DL_2G_050 = (_DL_COMMON + "; TP2 over Ray across two single-GPU pods on the same node (A100 80GB), "
              "gpu_memory_utilization 0.5 (log name '0.5GRAM'; log: 31.83 GiB KV per GPU, 1,192,160 tokens); ⚠ link "
              "between the pods not stated")

# --- GPUStack performance-lab, Qwen3-235B-A22B on A100 (page not used before; only the H100 page was) ---
_GSA = ("https://github.com/gpustack/gpustack/blob/9babbd2674ad9b74c2ea48d804c79d845b6c329b/docs/performance-lab/"
        "qwen3-235b-a22b/a100.md")
_GSA_DATE = "⚠ not stated (vLLM v0.11.0 / SGLang v0.5.5.post1 era); read " + _FRESH_READ_ON
_GSA_COMMON = ("vllm bench serve --backend openai-chat --endpoint /v1/chat/completions, --request-rate inf (default), "
               "printed 'Peak concurrent requests' = number of prompts; lengths = printed totals / successful requests; "
               "⚠ A100 variant: page says 'NVIDIA A100 GPUs'; 235B BF16 on 8 and FP8 (235 GB) on 4 GPUs need the 80 GB "
               "part; ⚠ max_model_len not given: the model's default 262144; FP8 on A100 runs as W8A16 (Marlin)")
_GSA_BF16 = _GSA_COMMON + "; baseline `vllm serve Qwen/Qwen3-235B-A22B-Instruct-2507 -tp 8`"
_GSA_FP8 = (_GSA_COMMON + "; optimized `vllm serve Qwen/Qwen3-235B-A22B-Instruct-2507-FP8 -tp 4` "
            "(FP8 block-quantized checkpoint)")

# --- tenstorrent/tt-inference-server issue #143: GPU reference run, Qwen2.5-72B-Instruct on 2 x H100 ---
_TT = "https://github.com/tenstorrent/tt-inference-server/issues/143"
_TT_NOTES = ("'Performance Benchmarks for Qwen2.5-72B-Instruct on 2xH100' (comment by gtobarTT, 2025-04-01): tt-inference-"
             "server benchmark workflow against a vLLM server, fixed ISL/OSL random prompts, concurrency 1 (closed loop), "
             "N Req 8; ⚠ lengths are the nominal ISL/OSL (no totals printed; outputs assumed forced to OSL); ⚠ TTFT/TPOT: the "
             "table's values, taken as means (the workflow reports vLLM benchmark_serving mean_ttft/mean_tpot) ⚠; ⚠ TP=2 "
             "inferred from '2xH100'; ⚠ precision BF16 inferred (TPOT ~31 ms at batch 1 fits 72.7 GB BF16 over two H100s, "
             "FP8 would be ~2x faster); ⚠ vLLM version not stated: the vllm field '0.8' is a guess from the date (April 2025); ⚠ max_model_len not stated "
             "(set here to the model's 32768); ⚠ H100 variant (SXM/PCIe) not stated; output tok/s not printed "
             "(table's 'Tput Decode' is 1000/TPOT, not measured), left None; flags unknown; NOT USABLE: 72.7B BF16 parameters are 67.7 GiB per GPU at "
             "TP 2, which leaves no KV cache on an 80 GB H100 at vLLM's default --gpu-memory-utilization 0.9 (the memory "
             "model: 0.9 x 79.2 - 67.7 - non-torch 1.25 - activations 2.4 = -0.1 GiB); the run needed unstated settings (a higher "
             "utilization, --enforce-eager, a short max_model_len) or another H100 (NVL, 94 GB), so the replica it measured "
             "cannot be rebuilt")

BLIND: tuple[Measurement, ...] = (
    # dennislee22/vLLM-benchmarking
    Measurement("dl-qwen2-7b-a100-tp2-gm025-r1024x1024-n1", "a100-80gb", "qwen2.5-7b", "bf16", "0.10.1.1", 2, 1, 1024.0, 1024.0,
                "burst", 1, 8.82, 34.69, 113.07, 226.14, 16384, _DL, _DL_DATE,
                _DL_2G_025 + "; random 1024/1024, 1 prompts (README line 529)", flags="--gpu-memory-utilization 0.25"),
    Measurement("dl-qwen2-7b-a100-tp2-gm025-r1024x1024-n20", "a100-80gb", "qwen2.5-7b", "bf16", "0.10.1.1", 2, 1, 1023.0, 1018.9,
                "burst", 20, 14.17, 550.45, 1349.66, 2704.81, 16384, _DL, _DL_DATE,
                _DL_2G_025 + "; random 1024/1024, 20 prompts (README line 563)", flags="--gpu-memory-utilization 0.25"),
    Measurement("dl-qwen2-7b-a100-tp2-gm025-r1024x1024-n75", "a100-80gb", "qwen2.5-7b", "bf16", "0.10.1.1", 2, 1, 1020.8, 1022.8,
                "burst", 75, 24.93, 1740.61, 2787.42, 5569.32, 16384, _DL, _DL_DATE,
                _DL_2G_025 + "; random 1024/1024, 75 prompts (README line 632)", flags="--gpu-memory-utilization 0.25"),
    Measurement("dl-qwen2-7b-a100-tp2-gm025-r7168x1024-n100", "a100-80gb", "qwen2.5-7b", "bf16", "0.10.1.1", 2, 1, 7165.3, 1017.3,
                "burst", 100, 55.1, 48097.87, 809.82, 6513.54, 16384, _DL, _DL_DATE,
                _DL_2G_025 + "; random 7168/1024, 100 prompts (README line 978)", flags="--gpu-memory-utilization 0.25"),
    Measurement("dl-qwen2-7b-a100-tp2-gm025-r1024x1024-n200", "a100-80gb", "qwen2.5-7b", "bf16", "0.10.1.1", 2, 1, 1020.0, 1007.4,
                "burst", 200, 49.23, 3490.37, 3700.99, 7448.37, 16384, _DL, _DL_DATE,
                _DL_2G_025 + "; random 1024/1024, 200 prompts (README line 1013)", flags="--gpu-memory-utilization 0.25"),
    Measurement("dl-qwen2-7b-a100-tp2-gm025-r1024x1024-n500", "a100-80gb", "qwen2.5-7b", "bf16", "0.10.1.1", 2, 1, 1020.8, 1008.6,
                "burst", 500, 62.28, 38204.56, 3515.49, 7073.64, 16384, _DL, _DL_DATE,
                _DL_2G_025 + "; random 1024/1024, 500 prompts (README line 1048)", flags="--gpu-memory-utilization 0.25"),
    Measurement("dl-qwen2-7b-a100-tp2-gm025-r128x1024-n500", "a100-80gb", "qwen2.5-7b", "bf16", "0.10.1.1", 2, 1, 127.4, 916.4,
                "burst", 500, 44.52, 23181.68, 4980.67, 5673.05, 16384, _DL, _DL_DATE,
                _DL_2G_025 + "; random 128/1024, 500 prompts (README line 1118)", flags="--gpu-memory-utilization 0.25"),
    Measurement("dl-qwen2-7b-a100-tp2-gm050-r1024x1024-n500", "a100-80gb", "qwen2.5-7b", "bf16", "0.10.1.1", 2, 1, 1020.8, 1007.8,
                "burst", 500, 63.4, 43636.24, 3541.34, 7128.55, 16384, _DL, _DL_DATE,
                _DL_2G_050 + "; random 1024/1024, 500 prompts (README line 1195)", flags="--gpu-memory-utilization 0.5"),
    Measurement("dl-qwen2-7b-a100-gm025-r1024x1024-n10", "a100-80gb", "qwen2.5-7b", "bf16", "0.10.1.1", 1, 1, 1023.9, 1024.0,
                "burst", 10, 13.46, 503.72, 715.43, 1430.8, 16384, _DL, _DL_DATE,
                _DL_1G_025 + "; random 1024/1024, 10 prompts (README line 1374)", flags="--gpu-memory-utilization 0.25"),
    Measurement("dl-qwen2-7b-a100-gm025-r1024x1024-n30", "a100-80gb", "qwen2.5-7b", "bf16", "0.10.1.1", 1, 1, 1023.3, 1021.3,
                "burst", 30, 15.19, 1033.68, 1830.69, 3664.96, 16384, _DL, _DL_DATE,
                _DL_1G_025 + "; random 1024/1024, 30 prompts (README line 1442)", flags="--gpu-memory-utilization 0.25"),
    Measurement("dl-qwen2-7b-a100-gm025-r1024x1024-n100", "a100-80gb", "qwen2.5-7b", "bf16", "0.10.1.1", 1, 1, 1021.4, 1015.8,
                "burst", 100, 28.69, 6772.41, 2124.52, 4260.8, 16384, _DL, _DL_DATE,
                _DL_1G_025 + "; random 1024/1024, 100 prompts (README line 1544)", flags="--gpu-memory-utilization 0.25"),
    Measurement("dl-qwen2-7b-a100-gm025-r1024x1024-n500", "a100-80gb", "qwen2.5-7b", "bf16", "0.10.1.1", 1, 1, 1020.8, 1002.9,
                "burst", 500, 31.56, 95836.65, 2170.51, 4379.75, 16384, _DL, _DL_DATE,
                _DL_1G_025 + "; random 1024/1024, 500 prompts (README line 1614)", flags="--gpu-memory-utilization 0.25"),
    Measurement("dl-qwen2-7b-a100-gm050-r1024x1024-n1", "a100-80gb", "qwen2.5-7b", "bf16", "0.10.1.1", 1, 1, 1024.0, 1024.0,
                "burst", 1, 11.75, 36.23, 84.95, 169.91, 16384, _DL, _DL_DATE,
                _DL_1G_050 + "; random 1024/1024, 1 prompts (README line 1688)", flags="--gpu-memory-utilization 0.5"),
    Measurement("dl-qwen2-7b-a100-gm050-r1024x1024-n10", "a100-80gb", "qwen2.5-7b", "bf16", "0.10.1.1", 1, 1, 1023.9, 1024.0,
                "burst", 10, 13.47, 488.52, 715.92, 1431.76, 16384, _DL, _DL_DATE,
                _DL_1G_050 + "; random 1024/1024, 10 prompts (README line 1722)", flags="--gpu-memory-utilization 0.5"),
    Measurement("dl-qwen2-7b-a100-gm050-r1024x1024-n30", "a100-80gb", "qwen2.5-7b", "bf16", "0.10.1.1", 1, 1, 1023.3, 1020.5,
                "burst", 30, 14.93, 241.74, 1967.9, 3941.19, 16384, _DL, _DL_DATE,
                _DL_1G_050 + "; random 1024/1024, 30 prompts (README line 1791)", flags="--gpu-memory-utilization 0.5"),
    Measurement("dl-qwen2-7b-a100-gm050-r1024x1024-n75", "a100-80gb", "qwen2.5-7b", "bf16", "0.10.1.1", 1, 1, 1020.8, 1022.6,
                "burst", 75, 22.21, 2598.85, 2991.02, 5976.62, 16384, _DL, _DL_DATE,
                _DL_1G_050 + "; random 1024/1024, 75 prompts (README line 1861)", flags="--gpu-memory-utilization 0.5"),
    Measurement("dl-qwen2-7b-a100-gm050-r1024x1024-n100", "a100-80gb", "qwen2.5-7b", "bf16", "0.10.1.1", 1, 1, 1021.4, 1015.9,
                "burst", 100, 25.26, 3983.1, 3352.15, 6722.45, 16384, _DL, _DL_DATE,
                _DL_1G_050 + "; random 1024/1024, 100 prompts (README line 1896)", flags="--gpu-memory-utilization 0.5"),
    Measurement("dl-qwen2-7b-a100-gm050-r1024x1024-n200", "a100-80gb", "qwen2.5-7b", "bf16", "0.10.1.1", 1, 1, 1020.0, 1002.1,
                "burst", 200, 40.34, 3158.7, 4442.73, 8964.99, 16384, _DL, _DL_DATE,
                _DL_1G_050 + "; random 1024/1024, 200 prompts (README line 1931)", flags="--gpu-memory-utilization 0.5"),
    Measurement("dl-qwen2-7b-a100-gm050-r1024x1024-n500", "a100-80gb", "qwen2.5-7b", "bf16", "0.10.1.1", 1, 1, 1020.8, 1005.2,
                "burst", 500, 52.41, 34943.37, 4215.38, 8496.12, 16384, _DL, _DL_DATE,
                _DL_1G_050 + "; random 1024/1024, 500 prompts (README line 1966)", flags="--gpu-memory-utilization 0.5"),
    # GPUStack qwen3-235b-a22b/a100.md
    Measurement("gsa-qwen235b-a100-tp8-sharegpt", "a100-80gb", "qwen3-235b-a22b", "bf16", "0.11.0", 8, 1, 217.4, 196.0,
                "burst", 1000, 123.36, 38065.91, 1798.14, 3792.50, 262144, _GSA, _GSA_DATE,
                "ShareGPT, 1000 prompts; " + _GSA_BF16),
    Measurement("gsa-qwen235b-a100-tp8-32k", "a100-80gb", "qwen3-235b-a22b", "bf16", "0.11.0", 8, 1, 32000, 81.9,
                "burst", 100, 298.86, 240229.05, 17.00, 6657.49, 262144, _GSA, _GSA_DATE,
                "random 32000/100, 100 prompts; " + _GSA_BF16),
    Measurement("gsa-qwen235b-a100-tp8-4k", "a100-80gb", "qwen3-235b-a22b", "bf16", "0.11.0", 8, 1, 3995.9, 182.7,
                "burst", 500, 205.64, 122190.64, 357.26, 8170.72, 262144, _GSA, _GSA_DATE,
                "random 4000/200, 500 prompts (outputs stop early: 183 on average); " + _GSA_BF16),
    Measurement("gsa-qwen235b-a100-tp8-2k", "a100-80gb", "qwen3-235b-a22b", "bf16", "0.11.0", 8, 1, 1996.4, 99.3,
                "burst", 500, 190.79, 54722.50, 442.54, 9342.67, 262144, _GSA, _GSA_DATE,
                "random 2000/100, 500 prompts; " + _GSA_BF16),
    Measurement("gsa-qwen235b-a100-tp8ep-fp8-sharegpt", "a100-80gb", "qwen3-235b-a22b", "fp8", "0.11.0", 8, 1, 217.4,
                196.6, "burst", 1000, 115.74, 37366.87, 1776.73, 3740.89, 262144, _GSA, _GSA_DATE,
                "ShareGPT, 1000 prompts; " + _GSA_COMMON + "; `vllm serve Qwen/Qwen3-235B-A22B-Instruct-2507-FP8 -tp 8 "
                "--enable-expert-parallel` (the page: TP8 alone is incompatible with the FP8 weights)",
                flags="--enable-expert-parallel"),
    Measurement("gsa-qwen235b-a100-tp4-fp8-sharegpt", "a100-80gb", "qwen3-235b-a22b", "fp8", "0.11.0", 4, 1, 217.4, 195.1,
                "burst", 1000, 150.72, 45879.29, 1428.16, 3019.19, 262144, _GSA, _GSA_DATE,
                "ShareGPT, 1000 prompts; " + _GSA_FP8),
    Measurement("gsa-qwen235b-a100-tp4-fp8-4k", "a100-80gb", "qwen3-235b-a22b", "fp8", "0.11.0", 4, 1, 3995.9, 180.8,
                "burst", 500, 347.13, 216485.01, 200.55, 4633.41, 262144, _GSA, _GSA_DATE,
                "random 4000/200, 500 prompts (outputs stop early: 181 on average); " + _GSA_FP8),
    Measurement("gsa-qwen235b-a100-tp4-fp8-2k", "a100-80gb", "qwen3-235b-a22b", "fp8", "0.11.0", 4, 1, 1996.4, 99.0,
                "burst", 500, 342.39, 95261.76, 251.99, 5333.91, 262144, _GSA, _GSA_DATE,
                "random 2000/100, 500 prompts; " + _GSA_FP8),
    # tt-inference-server GPU reference: Qwen2.5-72B-Instruct, 2 x H100, concurrency 1 (not usable: _TT_NOTES)
    *(Measurement(f"tt-qwen72b-h100-tp2-c1-{isl}x128", "h100", "qwen2.5-72b", "bf16", "0.8", 2, 1, isl, 128, "closed",
                  1, tpot, ttft, None, None, 32768, _TT, "2025-04-01", f"ISL {isl} / OSL 128; " + _TT_NOTES,
                  usable=False)
      for isl, tpot, ttft in ((128, 30.9, 41.1), (1024, 31.0, 129.2), (2048, 31.0, 149.5), (4096, 31.1, 505.1),
                              (8192, 31.3, 1063.8))),
)
