"""Published vLLM serving measurements, for calibrating the capacity model (bench/calibrate.py).

Each row records what its source says: GPU, model, weights' precision, vLLM version, TP x PP, average prompt
and output tokens, the load, and the mean TPOT / TTFT and output / total tokens per second that
`vllm bench serve` (or the source's harness) printed. `⚠` in `notes` marks every field that is inferred rather
than stated (a version, a GPU variant, an average length taken from the nominal setting). Rows with
`usable=False` are kept for the record but cannot be modelled (their prompt/output lengths are not published).

Load: `mode="closed"` is a fixed number of concurrent requests (`--max-concurrency C`); `mode="burst"` is
`--request-rate inf` with every prompt sent at once (`concurrency` = the number of prompts): the engine runs as
many as its KV cache and max_num_seqs admit, so the model is evaluated at that limit, and TTFT (queueing for
the whole run) is not compared.

Averages of lengths come from the printed totals (total input tokens / successful requests, total generated
tokens / successful requests) where the source prints them.

The block at the end of MEASUREMENTS ("closed-loop sweeps, added 2026-12-03") was added after the capacity model's
constants were frozen, without running the model on it: it is a fresh held-out test, not fit material.
"""
from __future__ import annotations

from dataclasses import dataclass

READ_ON = "2026-12-02"  # when the sources below were read


@dataclass(frozen=True)
class Measurement:
    id: str
    gpu: str  # catalog accelerator id
    model: str  # catalog model id
    precision: str
    vllm: str  # vLLM version
    tp: int
    pp: int
    prompt_tokens: float  # average
    output_tokens: float  # average
    mode: str  # "closed" | "burst"
    concurrency: int  # closed: --max-concurrency; burst: prompts sent at once
    tpot_ms: float | None  # mean TPOT (excl. the first token)
    ttft_ms: float | None  # mean TTFT
    output_tps: float | None  # output tokens/s
    total_tps: float | None  # input + output tokens/s
    max_model_len: int
    source: str  # URL (a commit-pinned file where there is one)
    date: str  # the source's date, or ⚠ where it states none
    notes: str = ""
    flags: str = ""  # vllm serve flags beyond the model (they change what is measured)
    usable: bool = True


_GS = "https://github.com/gpustack/gpustack/blob/{commit}/docs/performance-lab/{path}"
_GS_DATE = "⚠ not stated (vLLM {v} era); read " + READ_ON
_OSS_H100 = _GS.format(commit="72aee9dd195ff5c9bf3a4886add80038ce79aef8", path="gpt-oss-120b/h100.md")
_OSS_A100 = _GS.format(commit="1f37f1b8bd79c6b424a0cb55c7abd08a5c2132dc", path="gpt-oss-120b/a100.md")
_Q32_H100 = _GS.format(commit="10e9444a07c73556f2ef0d10d2b2766bbf54c9c0", path="qwen3-32b/h100.md")
_Q32_A100 = _GS.format(commit="10e9444a07c73556f2ef0d10d2b2766bbf54c9c0", path="qwen3-32b/a100.md")
_Q235_H100 = _GS.format(commit="10e9444a07c73556f2ef0d10d2b2766bbf54c9c0", path="qwen3-235b-a22b/h100.md")
_DSR1_H200 = _GS.format(commit="a5c9fafc3022e81779c2c5ade32c5b703ce2248c", path="deepseek-r1/h200.md")
_R1 = "⚠ model: DeepSeek-R1-0528, the catalog's DeepSeek-V3 architecture (same config, other weights)"
_SUMMARY = "⚠ from the page's summary table (total tok/s and mean TPOT only); output length the nominal setting"
_A100 = "⚠ A100 variant: the page says 'NVIDIA A100 GPUs'; 64 GB of BF16 weights on one GPU needs the 80 GB part"
_SG = "ShareGPT, 1000 prompts"
# closed-loop sources (added 2026-12-03)
_OSS_H100_C4 = _GS.format(commit="1f37f1b8bd79c6b424a0cb55c7abd08a5c2132dc", path="gpt-oss-120b/h100.md")
_OSS_A100_C4 = _GS.format(commit="1f37f1b8bd79c6b424a0cb55c7abd08a5c2132dc", path="gpt-oss-120b/a100.md")
_DSR1_H200_C4 = _GS.format(commit="1f37f1b8bd79c6b424a0cb55c7abd08a5c2132dc", path="deepseek-r1/h200.md")
_SG4 = ("ShareGPT, 100 prompts, 4 at a time ('ShareGPT batch size 4'); ⚠ the bench command for this case is not "
        "shown (the page's ShareGPT command has no --max-concurrency): closed loop read from the printed maximum "
        "request concurrency")
_FP8KV = ("https://github.com/vllm-project/vllm-project.github.io/blob/5ffe2dd543a30f34309d71d8374803612223e9fb/"
          "_posts/2026-04-22-fp8-kvcache.md")
_FP8KV_NOTES = ("meta-llama/Llama-3.1-8B, 150 requests at concurrency 8; ⚠ lengths the nominal ~20k / ~2k (±15%), "
                "no totals printed; ⚠ TPOT is the table's median ITL and TTFT its median; ⚠ vLLM version: the post's "
                "'after (v0.19.1)' runs, not stated for this table; ⚠ H100 variant not stated; ⚠ max_model_len not "
                "stated, the model's default; ⚠ harness not named for this table (the post uses vllm bench serve)")
_IX = ("https://github.com/SemiAnalysisAI/InferenceX/blob/2a6a04c041af9fd8bac36de567b45ca50cf005b6/together_runner/"
       "baselines/b200/vllm/gptoss-fp4/1k1k/untuned/conc{c}.json")
_IX_NOTES = ("InferenceX together_runner baseline (PR #1713, not merged; README table 'vllm · gptoss-fp4'): one TP4 server "
             "on an 8 x B200 node, the vendored benchmark_serving.py, random 1024/1024 with --random-range-ratio 0 and no "
             "--ignore-eos, 10 x C prompts after 2 x C warm-ups; ⚠ average lengths derived from the file's rates (input = "
             "(total - output tok/s) / req/s, output = output tok/s / req/s; no token totals recorded); ⚠ TPOT and TTFT "
             "are medians (no means recorded); ⚠ precision: the file says 'fp4', the MXFP4 checkpoint, served with "
             "VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1 and a fused allreduce+RMSNorm compilation pass")
_IX_FLAGS = ("--kv-cache-dtype fp8 --no-enable-prefix-caching --max-num-batched-tokens 8192 --max-num-seqs 512 "
             "--max-cudagraph-capture-size 2048 --gpu-memory-utilization 0.9")

MEASUREMENTS: tuple[Measurement, ...] = (
    # gpt-oss-120b (MXFP4 MoE) on H100 SXM, vLLM v0.10.2, `vllm serve openai/gpt-oss-120b --max-model-len 32768`
    Measurement("gs-oss120b-h100-tp1-sharegpt", "h100", "gpt-oss-120b", "mxfp4", "0.10.2", 1, 1, 215.3, 195.5,
                "burst", 1000, 54.10, 24830.45, 2901.05, 6095.37, 32768, _OSS_H100, _GS_DATE.format(v="0.10.2"),
                _SG),
    Measurement("gs-oss120b-h100-tp2-sharegpt", "h100", "gpt-oss-120b", "mxfp4", "0.10.2", 2, 1, 215.3, 196.2,
                "burst", 1000, 86.54, 4612.68, 7648.67, 16042.19, 32768, _OSS_H100, _GS_DATE.format(v="0.10.2"),
                _SG, flags="--async-scheduling"),
    Measurement("gs-oss120b-h100-tp4-sharegpt", "h100", "gpt-oss-120b", "mxfp4", "0.10.2", 4, 1, 215.3, 196.2,
                "burst", 1000, 55.77, 2952.04, 11327.22, 23759.49, 32768, _OSS_H100, _GS_DATE.format(v="0.10.2"),
                _SG, flags="--async-scheduling"),
    Measurement("gs-oss120b-h100-tp1-32k", "h100", "gpt-oss-120b", "mxfp4", "0.10.2", 1, 1, 32000, 98.8,
                "burst", 100, 23.99, 99444.04, 49.65, 16136.57, 32768, _OSS_H100, _GS_DATE.format(v="0.10.2"),
                "random 32000/100, 100 prompts"),
    Measurement("gs-oss120b-h100-tp1-4k", "h100", "gpt-oss-120b", "mxfp4", "0.10.2", 1, 1, 3998.5, 134.4,
                "burst", 500, 31.70, 72954.68, 463.35, 14247.47, 32768, _OSS_H100, _GS_DATE.format(v="0.10.2"),
                "random 4000/200, 500 prompts (outputs stop early: 134 on average)"),
    Measurement("gs-oss120b-h100-tp1-2k", "h100", "gpt-oss-120b", "mxfp4", "0.10.2", 1, 1, 2000, 100,
                "burst", 500, 41.35, None, None, 14385.69, 32768, _OSS_H100, _GS_DATE.format(v="0.10.2"),
                "random 2000/100, 500 prompts; " + _SUMMARY),
    # gpt-oss-120b on A100 SXM 80GB, vLLM v0.11.0
    Measurement("gs-oss120b-a100-tp1-sharegpt", "a100-80gb", "gpt-oss-120b", "mxfp4", "0.11.0", 1, 1, 215.3, 196.7,
                "burst", 1000, 97.57, 25918.79, 2276.40, 4768.75, 32768, _OSS_A100, _GS_DATE.format(v="0.11.0"),
                _SG),
    Measurement("gs-oss120b-a100-tp2-sharegpt", "a100-80gb", "gpt-oss-120b", "mxfp4", "0.11.0", 2, 1, 215.3, 196.2,
                "burst", 1000, 57.98, 16190.50, 3765.02, 7897.72, 32768, _OSS_A100, _GS_DATE.format(v="0.11.0"),
                _SG, flags="--async-scheduling"),
    Measurement("gs-oss120b-a100-tp1-32k", "a100-80gb", "gpt-oss-120b", "mxfp4", "0.11.0", 1, 1, 32000, 99.9,
                "burst", 100, 224.58, 368856.64, 13.50, 4337.21, 32768, _OSS_A100, _GS_DATE.format(v="0.11.0"),
                "random 32000/100, 100 prompts"),
    Measurement("gs-oss120b-a100-tp1-4k", "a100-80gb", "gpt-oss-120b", "mxfp4", "0.11.0", 1, 1, 3998.5, 134.5,
                "burst", 500, 112.18, 133561.13, 249.67, 7671.00, 32768, _OSS_A100, _GS_DATE.format(v="0.11.0"),
                "random 4000/200, 500 prompts (outputs stop early: 135 on average)"),
    Measurement("gs-oss120b-a100-tp1-2k", "a100-80gb", "gpt-oss-120b", "mxfp4", "0.11.0", 1, 1, 2000, 100,
                "burst", 500, 131.94, None, None, 8456.65, 32768, _OSS_A100, _GS_DATE.format(v="0.11.0"),
                "random 2000/100, 500 prompts; " + _SUMMARY),
    # Qwen3-32B BF16 on one H100, vLLM v0.11.0, `vllm serve Qwen/Qwen3-32B` (max_model_len: the model's 40960)
    Measurement("gs-qwen32b-h100-sharegpt", "h100", "qwen3-32b", "bf16", "0.11.0", 1, 1, 217.4, 201.4,
                "burst", 1000, 88.09, 78118.74, 1131.55, 2352.82, 40960, _Q32_H100, _GS_DATE.format(v="0.11.0"),
                _SG),
    Measurement("gs-qwen32b-h100-32k", "h100", "qwen3-32b", "bf16", "0.11.0", 1, 1, 32000, 76.8,
                "burst", 100, 43.42, 585981.22, 6.64, 2771.81, 40960, _Q32_H100, _GS_DATE.format(v="0.11.0"),
                "random 32000/100, 100 prompts"),
    Measurement("gs-qwen32b-h100-4k", "h100", "qwen3-32b", "bf16", "0.11.0", 1, 1, 3995.9, 199.6,
                "burst", 500, 66.61, 482284.21, 102.21, 2148.69, 40960, _Q32_H100, _GS_DATE.format(v="0.11.0"),
                "random 4000/200, 500 prompts"),
    Measurement("gs-qwen32b-h100-2k", "h100", "qwen3-32b", "bf16", "0.11.0", 1, 1, 1996.4, 100,
                "burst", 500, 86.62, 163909.40, 152.42, 3195.30, 40960, _Q32_H100, _GS_DATE.format(v="0.11.0"),
                "random 2000/100, 500 prompts"),
    # Qwen3-32B BF16 on one A100, vLLM v0.11.0
    Measurement("gs-qwen32b-a100-sharegpt", "a100-80gb", "qwen3-32b", "bf16", "0.11.0", 1, 1, 217.4, 201.4,
                "burst", 1000, 149.67, 105557.78, 832.43, 1730.98, 32768, _Q32_A100, _GS_DATE.format(v="0.11.0"),
                _SG + "; " + _A100),
    Measurement("gs-qwen32b-a100-32k", "a100-80gb", "qwen3-32b", "bf16", "0.11.0", 1, 1, 32000, 77.0,
                "burst", 100, 67.87, 890711.38, 4.32, 1798.45, 40960, _Q32_A100, _GS_DATE.format(v="0.11.0"),
                "random 32000/100, 100 prompts; " + _A100),
    Measurement("gs-qwen32b-a100-4k", "a100-80gb", "qwen3-32b", "bf16", "0.11.0", 1, 1, 4000, 200,
                "burst", 500, 96.19, None, None, 1837.08, 40960, _Q32_A100, _GS_DATE.format(v="0.11.0"),
                "random 4000/200, 500 prompts; " + _SUMMARY + "; " + _A100),
    Measurement("gs-qwen32b-a100-2k", "a100-80gb", "qwen3-32b", "bf16", "0.11.0", 1, 1, 2000, 100,
                "burst", 500, 143.23, None, None, 2521.38, 40960, _Q32_A100, _GS_DATE.format(v="0.11.0"),
                "random 2000/100, 500 prompts; " + _SUMMARY + "; " + _A100),
    # Qwen3-235B-A22B-Instruct-2507 (MoE) on 8 x H100, vLLM v0.11.0
    Measurement("gs-qwen235b-h100-tp8-sharegpt", "h100", "qwen3-235b-a22b", "bf16", "0.11.0", 8, 1, 216.4, 197.0,
                "burst", 984, 147.56, 8730.69, 4015.36, 8424.86, 262144, _Q235_H100, _GS_DATE.format(v="0.11.0"),
                "ShareGPT, 984 prompts"),
    Measurement("gs-qwen235b-h100-tp4-fp8-sharegpt", "h100", "qwen3-235b-a22b", "fp8", "0.11.0", 4, 1, 216.5, 197.6,
                "burst", 984, 169.20, 9924.69, 3592.57, 7527.80, 262144, _Q235_H100, _GS_DATE.format(v="0.11.0"),
                "ShareGPT, 984 prompts; Qwen3-235B-A22B-Instruct-2507-FP8"),
    Measurement("gs-qwen235b-h100-tp8-32k", "h100", "qwen3-235b-a22b", "bf16", "0.11.0", 8, 1, 32000, 81.9,
                "burst", 100, 132.10, 70409.55, 57.85, 22657.51, 262144, _Q235_H100, _GS_DATE.format(v="0.11.0"),
                "random 32000/100, 100 prompts"),
    Measurement("gs-qwen235b-h100-tp8-4k", "h100", "qwen3-235b-a22b", "bf16", "0.11.0", 8, 1, 3995.9, 184.4,
                "burst", 500, 68.94, None, 931.21, 21113.53, 262144, _Q235_H100, _GS_DATE.format(v="0.11.0"),
                "random 4000/200, 500 prompts (total tok/s from the summary table)"),
    Measurement("gs-qwen235b-h100-tp8-2k", "h100", "qwen3-235b-a22b", "bf16", "0.11.0", 8, 1, 2000, 100,
                "burst", 500, 101.08, None, None, 23858.69, 262144, _Q235_H100, _GS_DATE.format(v="0.11.0"),
                "random 2000/100, 500 prompts; " + _SUMMARY),
    # DeepSeek-R1-0528 (FP8, the DeepSeek-V3 architecture) on 8 x H200, vLLM v0.11.0, `vllm serve ... -tp 8`
    Measurement("gs-dsr1-h200-tp8-sharegpt", "h200", "deepseek-v3", "fp8", "0.11.0", 8, 1, 219.2, 200.8,
                "burst", 1000, 227.45, 17743.08, 2621.05, 5482.59, 163840, _DSR1_H200, _GS_DATE.format(v="0.11.0"),
                _SG + "; " + _R1),
    Measurement("gs-dsr1-h200-tp8-32k", "h200", "deepseek-v3", "fp8", "0.11.0", 8, 1, 31999, 100,
                "burst", 100, 365.79, 101351.99, 48.33, 15514.57, 163840, _DSR1_H200, _GS_DATE.format(v="0.11.0"),
                "random 32000/100, 100 prompts; " + _R1),
    Measurement("gs-dsr1-h200-tp8-4k", "h200", "deepseek-v3", "fp8", "0.11.0", 8, 1, 3995.1, 200,
                "burst", 500, 164.23, 63058.71, 753.67, 15808.55, 163840, _DSR1_H200, _GS_DATE.format(v="0.11.0"),
                "random 4000/200, 500 prompts; " + _R1),
    Measurement("gs-dsr1-h200-tp8-2k", "h200", "deepseek-v3", "fp8", "0.11.0", 8, 1, 2000, 100,
                "burst", 500, 237.02, None, None, 17690.89, 163840, _DSR1_H200, _GS_DATE.format(v="0.11.0"),
                "random 2000/100, 500 prompts; " + _SUMMARY + "; " + _R1),
    # Llama-3.1-8B-Instruct BF16 on one A100 40GB, vLLM 0.23.0, random 1024/128 --ignore-eos
    Measurement("jm-llama8b-a100-40-c1", "a100-40gb", "llama-3.1-8b", "bf16", "0.23.0", 1, 1, 1024, 128,
                "closed", 1, 13.3, None, None, None, 131072, "https://johnmusgrave.com/p/vllm-throughput-latency-sweep-on",
                "⚠ not stated; read " + READ_ON,
                "⚠ TPOT = 1000 / the 'about 75 tokens/sec' the text gives for one request (the table was not readable)"),
    # Llama-3.1-8B-Instruct on one H100 80GB HBM3, vLLM 0.21.0, 'chatbot-short' profile (lengths not published)
    *(Measurement(f"yb-llama8b-h100-c{c}", "h100", "llama-3.1-8b", "bf16", "0.21.0", 1, 1, 0, 0, "closed", c, tpot,
                  None, tps, None, 131072, "https://yobitelcomm.github.io/bench/recipes/concurrency-sweep/",
                  "2026-05-16", "⚠ TPOT is the p50, throughput 'tok/s' kind not stated, lengths of "
                  "llm.inference.chatbot-short not published; fp16 as stated", usable=False)
      for c, tpot, tps in ((1, 6.48, 122.2), (4, 6.59, 580.3), (16, 10.94, 1384.2), (64, 46.91, 1312.3))),
    # MLPerf Inference v5.1 (Red Hat): Llama-3.1-8B FP8, vLLM 0.10.0, Offline scenario
    Measurement("rh-mlperf51-llama8b-l40s-offline", "l40s", "llama-3.1-8b", "fp8", "0.10.0", 1, 1, 0, 0, "burst", 0,
                None, None, 1642, None, 131072,
                "redhat.com/zh-cn/blog/efficient-and-reproducible-llm-inference-red-hat-mlperf-inference-v51-results ⚠ host "
                "inferred (read through a mirror)",
                "⚠ 2025 (MLPerf Inference v5.1)", "Offline tokens/s; ⚠ dataset lengths (CNN/DailyMail) not given "
                "in the post", usable=False),
    Measurement("rh-mlperf51-llama8b-h100-offline", "h100", "llama-3.1-8b", "fp8", "0.10.0", 1, 1, 0, 0, "burst", 0,
                None, None, 5777, None, 131072,
                "redhat.com/zh-cn/blog/efficient-and-reproducible-llm-inference-red-hat-mlperf-inference-v51-results ⚠ host "
                "inferred (read through a mirror)",
                "⚠ 2025 (MLPerf Inference v5.1)", "Offline tokens/s; ⚠ dataset lengths (CNN/DailyMail) not given "
                "in the post", usable=False),
    # --- closed-loop sweeps, added 2026-12-03 (read 2026-12-03; not fitted on: the held-out test of the frozen model) ---
    # GPUStack pages, "Other Benchmark Cases": `# ShareGPT batch size 4`, printed 'Maximum request concurrency: 4',
    # 100 prompts; lengths from the printed totals / 100.
    Measurement("gs-oss120b-h100-tp1-c4-sharegpt", "h100", "gpt-oss-120b", "mxfp4", "0.10.2", 1, 1, 229.46, 216.91,
                "closed", 4, 8.31, 49.00, 453.04, 932.29, 32768, _OSS_H100_C4, _GS_DATE.format(v="0.10.2"),
                _SG4 + "; baseline `vllm serve openai/gpt-oss-120b --max-model-len 32768`"),
    Measurement("gs-oss120b-h100-tp2-c4-sharegpt", "h100", "gpt-oss-120b", "mxfp4", "0.10.2", 2, 1, 229.46, 216.91,
                "closed", 4, 5.75, 37.51, 645.55, 1328.44, 131072, _OSS_H100_C4, _GS_DATE.format(v="0.10.2"),
                _SG4 + "; optimized `vllm serve openai/gpt-oss-120b --async-scheduling -tp 2`; ⚠ max_model_len: "
                "none given, the model's default", flags="--async-scheduling"),
    Measurement("gs-oss120b-a100-tp1-c4-sharegpt", "a100-80gb", "gpt-oss-120b", "mxfp4", "0.11.0", 1, 1, 229.46,
                216.91, "closed", 4, 11.67, 61.91, 326.09, 671.05, 32768, _OSS_A100_C4, _GS_DATE.format(v="0.11.0"),
                _SG4 + "; baseline `vllm serve openai/gpt-oss-120b --max-model-len 32768`"),
    Measurement("gs-oss120b-a100-tp1-c4-sharegpt-mnbt4096", "a100-80gb", "gpt-oss-120b", "mxfp4", "0.11.0", 1, 1,
                229.46, 216.91, "closed", 4, 11.03, 71.15, 344.39, 708.71, 32768, _OSS_A100_C4,
                _GS_DATE.format(v="0.11.0"), _SG4 + "; optimized command (one GPU: no -tp)",
                flags="--async-scheduling --max-num-batched-tokens 4096"),
    Measurement("gs-dsr1-h200-tp8-c4-sharegpt", "h200", "deepseek-v3", "fp8", "0.11.0", 8, 1, 228.36, 213.38,
                "closed", 4, 19.36, 123.30, 196.81, 407.45, 163840, _DSR1_H200_C4, _GS_DATE.format(v="0.11.0"),
                _SG4 + "; baseline `vllm serve deepseek-ai/DeepSeek-R1-0528 -tp 8`; " + _R1),
    # vLLM blog "The State of FP8 KV-Cache and Attention Quantization in vLLM" (2026-04-22), 'Throughput under Load',
    # Table 4: Llama-3.1-8B on one H100, 150 requests at concurrency 8, ~20k input / ~2k output tokens (±15%).
    Measurement("vb-fp8kv-llama8b-h100-c8-bf16kv", "h100", "llama-3.1-8b", "bf16", "0.19.1", 1, 1, 20000, 2000,
                "closed", 8, 15.18, 763.6, 450.3, None, 131072, _FP8KV, "2026-04-22", _FP8KV_NOTES + "; KV cache BF16"),
    Measurement("vb-fp8kv-llama8b-h100-c8-fp8kv", "h100", "llama-3.1-8b", "bf16", "0.19.1", 1, 1, 20000, 2000,
                "closed", 8, 12.93, 742.8, 517.5, None, 131072, _FP8KV, "2026-04-22", _FP8KV_NOTES + "; KV cache FP8",
                flags="--kv-cache-dtype fp8"),
    # InferenceX (SemiAnalysis) together_runner: gpt-oss-120b on B200, vLLM v0.22.0 image, TP4, max_model_len 2068
    # (1024 + 1024 + 20), closed loop at --max-concurrency C; every level the PR committed.
    *(Measurement(f"ix-oss120b-b200-tp4-c{c}", "b200", "gpt-oss-120b", "mxfp4", "0.22.0", 4, 1, p, o, "closed", c,
                  tpot, ttft, otps, ttps, 2068, _IX.format(c=c), "2026-06-12", _IX_NOTES, flags=_IX_FLAGS)
      for c, p, o, tpot, ttft, otps, ttps in (
          (16, 521.2, 169.0, 3.65, 26.27, 3415.83, 13952.03),
          (64, 516.9, 147.7, 6.20, 41.32, 8295.85, 37332.67),
          (128, 501.9, 184.4, 8.07, 101.52, 13227.21, 49231.90),
          (256, 508.9, 172.7, 14.56, 368.75, 15650.11, 61759.81),
          (512, 508.0, 166.5, 22.45, 686.68, 18708.26, 75788.24))),
)


def blind_batches() -> dict[str, tuple[Measurement, ...]]:
    """The rows read blind, batch by batch (each by someone who never ran the capacity model or saw its errors):
    measurements_blind.py, measurements_blind3.py, measurements_blind4.py, measurements_blind5.py. docs/capacity.md
    reports each."""
    from .measurements_blind import BLIND
    from .measurements_blind3 import BLIND3
    from .measurements_blind4 import BLIND4
    from .measurements_blind5 import BLIND5
    return {"blind": BLIND, "blind3": BLIND3, "blind4": BLIND4, "blind5": BLIND5}


def every_row() -> tuple[Measurement, ...]:
    """MEASUREMENTS and every blind batch."""
    return MEASUREMENTS + tuple(m for batch in blind_batches().values() for m in batch)


def usable() -> list[Measurement]:
    return [m for m in every_row() if m.usable]
