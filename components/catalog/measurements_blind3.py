"""Published vLLM serving measurements read blind on 2026-12-03 (third batch), for testing the capacity model.

Read by someone who never ran the capacity model, never saw its predictions or errors, and never opened the calibration
code or docs/capacity.md. Same row format and rules as measurements.py (`⚠` marks every inferred field). All numbers are
copied from the source; JSON results are rounded to 2 decimals (lengths to 0.1) as benchmark_serving prints them.

Selection rule (what was searched, taken, rejected):

* Searched: the `issues`, `pages` and `code` corpora for "Serving Benchmark Result", "Mean TPOT", "max-concurrency"
  with L4 / L40S / A10G / H100 / A100 and the catalog models; GitHub repos holding benchmark_serving result JSON files;
  the gpustack performance-lab pages not used before.
* TAKEN (new source) LambdaLabsML/vllm-benchmark (result JSON files, vLLM v0.5.4 docker image, Sep 2024; the report
  benchmark_v0.md). The repo holds ~2,700 result files (6 prompt counts x 8 GPU configs x 8 models x up to 9
  max_model_len values over several commits), too many to read, so the rule-based subset is: every file under
  results/prompt_320/ (320 ShareGPT prompts at once: the count the report's TP-vs-DP table fixes) on 1x and 2x
  A100-80GB-SXM / H100-80GB-SXM, for every catalog-mappable model (Meta-Llama-3.1-8B-FP8, Meta-Llama-3-8B-Instruct,
  Meta-Llama-3.1-70B-Instruct-FP8, Meta-Llama-3-70B-Instruct, Mixtral-8x7B-Instruct-v0.1), at the shortest
  max_model_len stored for that configuration (2000 on A100 at commit a9b42a5, 2048 on H100 at commit a4f9f43). 16 files
  match; 12 are fully successful (completed == 320) and are rows; 4 are not (the server died mid-run:
  TransferEncodingError): 1xA100 and 1xH100 Llama-3.1-70B-FP8 (21 and 13 of 320 completed), 2xA100 and 2xH100
  Llama-3-70B BF16 (32 and 23 of 320, no output tokens) - left out. Not read: 4x/8x configs, other prompt counts
  (10..160), other max_model_len values, Hermes-3-405B (only on 8x), the Mistral models (not in the catalog).
* TAKEN (item-4 block) dennislee22/vLLM-benchmarking README (commit b474d1e): every run NOT already a row of
  measurements_blind.py. Test 2-5 (Qwen2-7B on A100 80GB, TP2 same node / 1 GPU, utilization 0.25 / 0.5 as the
  earlier rows): 21 fully successful runs -> usable rows. Tests 6-8 (Qwen2.5-32B TP2, Qwen2.5-32B 1 GPU, Qwen2-72B TP2):
  16 fully successful runs kept with usable=False: the README shows no server command for them (gpu-memory-utilization
  and max_model_len unknown; the printed per-GPU KV cache, 8.22 / 9.70 / 6.77 GiB, cannot be rebuilt from the defaults).
  Rejected: Test 1 (12 runs) and Test 9 (10 runs, gpt-oss-120b): TP across pods on different nodes over the cluster
  network (Test 1's log is named '2gpuA10040GB', so the GPU variant is also unclear); 3 runs not fully successful
  (README lines 1300: 1633/2000, 1649: 894/1000, 2005: 924/1000 successful).
* REJECTED: gpustack performance-lab pages other than those already used: glm-4.5-air / glm-4.6 / glm-4.x / glm-5.2,
  gpt-oss-20b, qwen3-8b, qwen3-14b, qwen3-30b-a3b (910B), qwen3.5-*, deepseek-v3.2 (sparse attention, not the
  catalog's DeepSeek-V3 architecture): models not in the catalog; its quantization reference page (Qwen3-8B, not in the
  catalog). vLLM PR 15322 (DeepSeek-R1 on L20: GPU not in the catalog); vLLM PR 18566 and issue 9722 (GPU or model
  not stated); issue 42484 (H100, vLLM 0.19.1: only an excerpt readable, model and lengths not found); blog pages
  (pavlokhmel.com, blog.ori.co, databasemart A40, techcommunity.microsoft.com): only excerpts readable through the
  search tool, or the GPU is not in the catalog (A40, RTX 4090) - not read further for lack of time, not for content.

LambdaLabs rows: `benchmark.py` starts `python3 -m vllm.entrypoints.openai.api_server --model M --max-model-len L
--gpu-memory-utilization 0.95 --max-num-seqs 1024 [--tensor-parallel-size N]` and runs the vendored
benchmark_serving.py with ShareGPT, --num-prompts 320, request rate inf (all at once), /v1/completions, no
--ignore-eos. Lengths = total_input_tokens / completed and total_output_tokens / completed (ShareGPT outputs stop at
EOS: the FP8 8B checkpoint is the base model and stops early, ~137 tokens on average, vs ~205 for the Instruct models).
⚠ In this harness version a request whose first chunk has no text (immediate EOS) counts as completed with TTFT 0, so
the mean TTFT includes zeros (burst mode: TTFT is not compared anyway). No total token throughput is recorded in
these files (left None). ⚠ GPU: the repo names the parts 'A100-80GB-SXM' / 'H100-80GB-SXM' (Lambda Cloud).
"""
from __future__ import annotations

from .measurements import Measurement
from .measurements_blind import _DL, _DL_1G_025, _DL_1G_050, _DL_2G_025, _DL_2G_050, _DL_COMMON, _DL_DATE

# --- LambdaLabsML/vllm-benchmark, results/prompt_320, 1x and 2x GPUs, shortest max_model_len (vLLM v0.5.4) ---
_LB = "https://github.com/LambdaLabsML/vllm-benchmark/blob/{commit}/results/prompt_320/{n}x{gpu}-80GB-SXM/{file}_tp{n}_len{len}.json"
_LB_COMMIT = {"A100": "a9b42a5f83bc39976bcb6bd44a96b2b15d820e10", "H100": "a4f9f4371a1ccac781293837fce2bce0cc6d25cc"}
_LB_MODEL = {  # file name -> (catalog id, precision, note)
    "Meta-Llama-3.1-8B-FP8": ("llama-3.1-8b", "fp8", "neuralmagic/Meta-Llama-3.1-8B-FP8 (the base model, FP8 weights and "
                              "activations; ⚠ on A100, which has no FP8 compute, vLLM runs it weight-only)"),
    "Meta-Llama-3-8B-Instruct": ("llama-3.1-8b", "bf16", "meta-llama/Meta-Llama-3-8B-Instruct; ⚠ mapped to llama-3.1-8b "
                                 "(same architecture: 32 layers, hidden 4096, 8 KV heads, vocab 128256; Llama 3 has 8k "
                                 "context and plain rope)"),
    "Meta-Llama-3.1-70B-Instruct-FP8": ("llama-3.1-70b", "fp8", "neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8; ⚠ on A100 "
                                        "run weight-only (no FP8 compute)"),
    "Mixtral-8x7B-Instruct-v0.1": ("mixtral-8x7b", "bf16", "mistralai/Mixtral-8x7B-Instruct-v0.1; ⚠ dtype not given: "
                                   "the checkpoint's bfloat16"),
}
_LB_NOTES = ("LambdaLabsML/vllm-benchmark, vllm/vllm-openai:v0.5.4, ShareGPT 320 prompts at once (request rate inf), "
             "/v1/completions, no --ignore-eos; lengths = totals / completed; result file date {date}; ⚠ mean TTFT "
             "counts immediate-EOS requests as 0 ms; ⚠ vLLM version: the repository states v0.5.4, but its September "
             "files stream about 10 tokens a chunk, as vLLM 0.6's multi-step scheduling does (a later reader's finding, "
             "measurements_blind4.py; mean TPOT is unaffected); {model}")
_LB_FLAGS = "--gpu-memory-utilization 0.95 --max-num-seqs 1024"

_LB_ROWS = (  # gpu, n, file, max_model_len, prompt, output, mean TPOT, mean TTFT, output tok/s, file date
    ("A100", 1, "Meta-Llama-3-8B-Instruct", 2000, 204.9, 204.3, 101.46, 3423.17, 3107.49, "20240907-093110"),
    ("A100", 1, "Meta-Llama-3.1-8B-FP8", 2000, 204.9, 137.6, 139.19, 2929.73, 2458.76, "20240907-092912"),
    ("H100", 1, "Meta-Llama-3-8B-Instruct", 2048, 204.9, 204.2, 45.83, 1628.51, 6026.61, "20240907-090004"),
    ("H100", 1, "Meta-Llama-3.1-8B-FP8", 2048, 204.9, 137.4, 34.50, 1026.67, 5723.95, "20240907-085901"),
    ("A100", 2, "Meta-Llama-3-8B-Instruct", 2000, 204.9, 205.6, 68.65, 2458.53, 4609.05, "20240907-114741"),
    ("A100", 2, "Meta-Llama-3.1-70B-Instruct-FP8", 2000, 204.9, 197.9, 483.00, 14154.19, 829.95, "20240907-115527"),
    ("A100", 2, "Meta-Llama-3.1-8B-FP8", 2000, 204.9, 136.2, 70.84, 2060.37, 3491.92, "20240907-114546"),
    ("A100", 2, "Mixtral-8x7B-Instruct-v0.1", 2000, 230.2, 216.7, 156.02, 8373.45, 1529.10, "20240907-120104"),
    ("H100", 2, "Meta-Llama-3-8B-Instruct", 2048, 204.9, 205.2, 30.97, 1317.34, 8338.13, "20240907-101935"),
    ("H100", 2, "Meta-Llama-3.1-70B-Instruct-FP8", 2048, 204.9, 196.5, 122.23, 3492.68, 2352.42, "20240907-102327"),
    ("H100", 2, "Meta-Llama-3.1-8B-FP8", 2048, 204.9, 133.1, 25.37, 870.59, 6852.12, "20240907-101815"),
    ("H100", 2, "Mixtral-8x7B-Instruct-v0.1", 2048, 230.2, 218.9, 97.30, 8536.45, 2178.61, "20240907-102657"),
)


def _lambda(gpu, n, file, mml, prompt, output, tpot, ttft, otps, date) -> Measurement:
    model, precision, note = _LB_MODEL[file]
    kind = "-bf16" if file.startswith("Meta-Llama-3-") else ""
    return Measurement(
        f"lb-{model}{kind}-{gpu.lower()}-tp{n}-sharegpt320", {"A100": "a100-80gb", "H100": "h100"}[gpu], model, precision,
        "0.5.4", n, 1, prompt, output, "burst", 320, tpot, ttft, otps, None, mml,
        _LB.format(commit=_LB_COMMIT[gpu], n=n, gpu=gpu, file=file, len=mml), f"{date[:4]}-{date[4:6]}-{date[6:8]}",
        _LB_NOTES.format(date=date, model=note), flags=_LB_FLAGS)


# --- dennislee22/vLLM-benchmarking README runs not already in measurements_blind.py (item-4 block) ---
_DL_TEST = {2: (2, _DL_2G_025, "025", "--gpu-memory-utilization 0.25"), 3: (2, _DL_2G_050, "050", "--gpu-memory-utilization 0.5"),
            4: (1, _DL_1G_025, "025", "--gpu-memory-utilization 0.25"), 5: (1, _DL_1G_050, "050", "--gpu-memory-utilization 0.5")}
_DL_UNKNOWN = (_DL_COMMON.split("; ⚠ model:")[0] + "; ⚠ server command not shown for this test (no startup log linked): "
               "gpu-memory-utilization and max_model_len unknown (max_model_len here is a placeholder, the model's "
               "default, which the printed KV cache could not hold); NOT USABLE: the replica cannot be rebuilt")
_DL_BIG = {6: ("qwen2.5-32b", 2, "Qwen/Qwen2.5-32B (base model), TP2 over two pods on the same node, printed KV cache "
               "8.22 GiB per GPU; ⚠ link between the pods not stated"),
           7: ("qwen2.5-32b", 1, "Qwen/Qwen2.5-32B (base model), 1 GPU, printed KV cache 9.70 GiB"),
           8: ("qwen2.5-72b", 2, "Qwen/Qwen2-72B, ⚠ mapped to qwen2.5-72b (same architecture: 80 layers, hidden 8192, 64 "
               "heads, 8 KV heads), TP2 over two pods on the same node, printed KV cache 6.77 GiB per GPU")}
_DL_BIG_MML = {"qwen2.5-32b": 131072, "qwen2.5-72b": 131072}  # ⚠ config defaults, unverified placeholders

_DL_ROWS = (  # test, README line, nominal input, nominal output, prompts, avg input, avg output, TPOT, TTFT, out/s, total/s
    (2, 598, 1024, 1024, 30, 1023.3, 1020.6, 15.52, 633.56, 1847.17, 3699.3),
    (2, 666, 1024, 1024, 10, 1023.9, 1024.0, 12.99, 601.91, 735.47, 1470.87),
    (2, 700, 4096, 4096, 10, 4095.2, 4096.0, 13.88, 1676.3, 699.24, 1398.34),
    (2, 735, 1024, 7168, 10, 1023.9, 6905.8, 13.23, 111.47, 726.59, 834.32),
    (2, 770, 1024, 1024, 50, 1019.5, 1021.9, 19.53, 2154.87, 2291.62, 4577.87),
    (2, 804, 4096, 4096, 50, 4089.3, 4014.2, 27.01, 5291.07, 1957.56, 3951.74),
    (2, 839, 1024, 7168, 50, 1019.5, 6998.3, 20.4, 279.73, 2380.86, 2727.71),
    (2, 874, 1024, 1024, 100, 1021.4, 1016.9, 28.98, 5023.97, 2895.58, 5803.86),
    (2, 908, 4096, 4096, 100, 4090.5, 3976.5, 44.04, 20237.07, 1635.76, 3318.4),
    (2, 943, 1024, 7168, 100, 1021.4, 7105.5, 32.63, 3659.36, 2404.42, 2750.05),
    (2, 1083, 1024, 1024, 1000, 1021.6, 1002.4, 73.12, 132939.26, 3127.81, 6315.67),
    (2, 1154, 1024, 128, 500, 1020.8, 127.2, 174.1, 27812.72, 1036.74, 9358.19),
    (3, 1230, 1024, 128, 500, 1020.8, 127.2, 174.26, 27092.85, 1056.89, 9540.17),
    (3, 1265, 1024, 128, 1000, 1021.6, 127.0, 189.35, 55811.58, 1097.47, 9927.94),
    (4, 1340, 1024, 1024, 1, 1024.0, 1024.0, 11.76, 36.46, 84.88, 169.76),
    (4, 1408, 1024, 1024, 20, 1023.0, 1018.9, 14.36, 463.1, 1338.72, 2682.9),
    (4, 1476, 1024, 1024, 50, 1019.5, 1022.4, 18.46, 693.75, 2338.38, 4670.27),
    (4, 1510, 1024, 1024, 75, 1020.8, 1022.9, 24.02, 1140.94, 2131.91, 4259.34),
    (4, 1579, 1024, 1024, 200, 1020.0, 1000.4, 29.87, 28904.67, 2057.51, 4155.36),
    (5, 1757, 1024, 1024, 20, 1023.0, 1020.0, 14.12, 195.24, 1387.31, 2778.76),
    (5, 1826, 1024, 1024, 50, 1019.5, 1022.4, 18.47, 2580.51, 2356.12, 4705.7),
    (6, 2042, 1024, 1024, 1, 1024.0, 1024.0, 29.21, 61.26, 34.2, 68.4),
    (6, 2076, 1024, 1024, 10, 1023.9, 1024.0, 39.38, 1853.66, 242.57, 485.11),
    (6, 2111, 1024, 1024, 15, 1022.7, 1024.0, 39.44, 213.45, 378.49, 756.49),
    (6, 2145, 1024, 1024, 20, 1023.0, 1024.0, 42.81, 284.31, 464.29, 928.13),
    (6, 2179, 1024, 1024, 30, 1023.3, 1024.0, 50.04, 5368.61, 540.32, 1080.27),
    (6, 2213, 1024, 1024, 50, 1019.5, 1024.0, 68.64, 6119.18, 508.18, 1014.14),
    (6, 2248, 1024, 1024, 100, 1021.4, 1024.0, 80.12, 44143.73, 529.23, 1057.13),
    (7, 2285, 1024, 1024, 10, 1023.9, 1024.0, 51.64, 2017.23, 186.31, 372.6),
    (7, 2320, 1024, 1024, 50, 1019.5, 1024.0, 79.95, 21486.84, 319.41, 637.42),
    (7, 2354, 1024, 1024, 75, 1020.8, 1024.0, 76.73, 61850.53, 339.77, 678.47),
    (7, 2388, 1024, 1024, 100, 1021.4, 1024.0, 77.73, 97867.77, 362.73, 724.55),
    (8, 2426, 1024, 1024, 1, 1024.0, 1024.0, 58.0, 93.18, 17.23, 34.46),
    (8, 2460, 1024, 1024, 10, 1023.9, 1024.0, 73.04, 3842.51, 130.06, 260.1),
    (8, 2494, 1024, 1024, 30, 1023.3, 1005.2, 104.71, 10949.72, 203.16, 409.98),
    (8, 2529, 1024, 1024, 50, 1019.5, 1007.5, 123.66, 26588.12, 240.74, 484.37),
    (8, 2564, 1024, 1024, 100, 1021.4, 996.1, 139.24, 142448.58, 219.94, 445.46),
)


def _dennislee(test, line, isl, osl, n, prompt, output, tpot, ttft, otps, ttps) -> Measurement:
    where = f"random {isl}/{osl}, {n} prompts (README line {line})"
    if test in _DL_TEST:
        tp, notes, gm, flags = _DL_TEST[test]
        return Measurement(f"dl3-qwen2-7b-a100{'-tp2' if tp == 2 else ''}-gm{gm}-r{isl}x{osl}-n{n}-l{line}", "a100-80gb",
                           "qwen2.5-7b", "bf16", "0.10.1.1", tp, 1, prompt, output, "burst", n, tpot, ttft, otps, ttps,
                           16384, _DL, _DL_DATE, f"{notes}; {where}", flags=flags)
    model, tp, what = _DL_BIG[test]
    return Measurement(f"dl3-{model}-a100-tp{tp}-r{isl}x{osl}-n{n}-l{line}", "a100-80gb", model, "bf16", "0.10.1.1", tp, 1,
                       prompt, output, "burst", n, tpot, ttft, otps, ttps, _DL_BIG_MML[model], _DL, _DL_DATE,
                       f"{_DL_UNKNOWN}; {what}; {where}", usable=False)


BLIND3: tuple[Measurement, ...] = (
    *(_lambda(*row) for row in _LB_ROWS),
    *(_dennislee(*row) for row in _DL_ROWS),
)
