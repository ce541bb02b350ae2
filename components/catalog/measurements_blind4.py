"""Published vLLM serving measurements read blind on 2026-12-03 (fourth batch), for testing the capacity model.

Read by someone who never ran the capacity model, never saw its predictions or errors, and never opened the calibration
code or docs/capacity.md. Same row format and rules as measurements.py (`⚠` marks every inferred field). All numbers are
copied from the source's result JSON files, rounded to 2 decimals (lengths, totals / completed, to 0.1).

Selection rule (what was searched, taken, rejected):

* Source: LambdaLabsML/vllm-benchmark (results/*.json; harness and conventions as in measurements_blind3.py, whose
  helpers are reused). Files listed with the code index's `find_files` (the repository snapshot, 807 MB, is over the
  500 MB fetch limit, so `git ls-tree` could not be used; the listing is the union over the crawled history).
* Rule as briefed: every fully successful (completed == num_prompts) file under results/prompt_10, prompt_40, prompt_160
  for 1x/2x/4x/8x A100-80GB-SXM and H100-80GB-SXM, every catalog-mappable model (Meta-Llama-3.1-8B-FP8,
  Meta-Llama-3-8B-Instruct, Meta-Llama-3.1-70B-Instruct-FP8, Meta-Llama-3-70B-Instruct, Mixtral-8x7B-Instruct-v0.1,
  Hermes-3-Llama-3.1-405B-FP8), at the shortest max_model_len stored for that (prompt count, GPU config, model), plus
  prompt_320 for 4x and 8x. That selects ~38 configurations per prompt count (about 136 files with prompt_10 and
  prompt_160), more than the ~80 allowed, so, as briefed, it is RESTRICTED to prompt_40 (38 configurations) and
  prompt_320 for 4x/8x (22 configurations). prompt_10, prompt_20, prompt_80, prompt_160 not read.
* "Shortest max_model_len stored" is taken literally over the listing: on H100 some configurations hold both an
  Aug-2024 run at len 2000 (commits de55d46 / e04b354) and the Sep-7 sweep at len 2048 (a4f9f43); the len-2000 file is
  taken. The 8x Hermes-405B configurations have no len-2000/2048 file on 8xA100 prompt_320 (shortest: 4000).
* A path stored in two versions (re-run) is read at both commits and the later run (the later "date" in the JSON,
  i.e. the file as the repository now holds it) is taken; the earlier run is listed below as superseded.
* Left out, not fully successful: prompt_40 1xA100 Llama-3.1-70B-FP8 len2000 (Sep-7 run: 5 of 40 completed; its
  superseded Aug-19 run completed 40), prompt_40 1xH100 Llama-3.1-70B-FP8 len2048 (4 of 40).
* Superseded versions not taken: prompt_40 1xA100 Llama-3.1-8B-FP8 len2000 (Aug-19 run, commit daa702b).
* Not read (other models): Mistral-7B, Mistral-Nemo, Mistral-Large, Mixtral-8x22B (not in the catalog).

⚠ vLLM version: the repository's run script names the vllm/vllm-openai:v0.5.4 image and the report says v0.5.4, but in
the Sep-7 files (commits a9b42a5 / a4f9f43) each stream chunk carries ~10 tokens (a request of 120 output tokens has 12
inter-token gaps; median ITL is ~9-10x median TPOT), the signature of multi-step scheduling (--num-scheduler-steps 10,
vLLM >= 0.6.0), which the report compares separately. The Aug-2024 files stream one token per chunk. The version and the
flags of the Sep-7 files are therefore uncertain (this also applies to the measurements_blind3.py LambdaLabs rows).
Rows keep "0.5.4" as the source states it and carry the run date in the notes so the two sweeps can be told apart.
"""
from __future__ import annotations

from .measurements import Measurement
from .measurements_blind3 import _LB_FLAGS, _LB_MODEL

_LB4 = ("https://github.com/LambdaLabsML/vllm-benchmark/blob/{commit}/results/prompt_{p}/{n}x{gpu}-80GB-SXM/"
        "{file}_tp{n}_len{len}.json")
_COMMIT = {
    "a9b42a5": "a9b42a5f83bc39976bcb6bd44a96b2b15d820e10", "a4f9f43": "a4f9f4371a1ccac781293837fce2bce0cc6d25cc",
    "de55d46": "de55d46ea652cfc8f3edd3121a7a826f47d20611", "e04b354": "e04b354be3700225a40818a81c90b360e6505e7a",
    "d9f93a7": "d9f93a796770f253ac5d84296513e26ff9c66797",
}
_MODEL = {  # file name -> (catalog id, precision, note); the blind3 table plus the two models it had no row for
    **_LB_MODEL,
    "Meta-Llama-3-70B-Instruct": ("llama-3.1-70b", "bf16", "meta-llama/Meta-Llama-3-70B-Instruct; ⚠ mapped to "
                                  "llama-3.1-70b (same architecture: 80 layers, hidden 8192, 8 KV heads, vocab 128256; "
                                  "Llama 3 has 8k context and plain rope)"),
    "Hermes-3-Llama-3.1-405B-FP8": ("llama-3.1-405b", "fp8", "NousResearch/Hermes-3-Llama-3.1-405B-FP8; ⚠ mapped to "
                                    "llama-3.1-405b (a fine-tune of Llama-3.1-405B, same architecture); ⚠ FP8 scheme "
                                    "not checked; ⚠ on A100 run weight-only (no FP8 compute)"),
}
_NOTES = ("LambdaLabsML/vllm-benchmark, ShareGPT {p} prompts at once (request rate inf), /v1/completions, no "
          "--ignore-eos; lengths = totals / completed; result file date {date} ({sweep}); ⚠ vLLM version: the repo "
          "states v0.5.4, {stream}; ⚠ mean TTFT counts immediate-EOS requests as 0 ms; {model}")
_SWEEP = {  # run month -> (sweep, what its stream shows)
    "09": ("the Sep-7 sweep", "but this file's stream carries ~10 tokens per chunk, as multi-step scheduling "
           "(--num-scheduler-steps 10, v0.6.0) would: version and flags uncertain"),
    "08": ("an Aug-2024 run", "one token per stream chunk; ⚠ the harness at this commit was not read, flags assumed "
           "as the later benchmark.py"),
}

_ROWS = (  # prompts, gpu, n, file, max_model_len, commit, prompt, output, mean TPOT, mean TTFT, output tok/s, file date
    (40, "A100", 1, "Meta-Llama-3-8B-Instruct", 2000, "a9b42a5", 214.9, 193.0, 27.5, 534.87, 785.76, "20240907-085357"),
    (40, "A100", 1, "Meta-Llama-3.1-8B-FP8", 2000, "a9b42a5", 214.9, 127.9, 15.1, 495.46, 735.88, "20240907-085212"),
    (40, "A100", 2, "Meta-Llama-3-70B-Instruct", 2000, "a9b42a5", 214.9, 169.9, 88.99, 1786.53, 164.6, "20240907-105432"),
    (40, "A100", 2, "Meta-Llama-3-8B-Instruct", 2000, "a9b42a5", 214.9, 190.2, 17.02, 406.62, 1164.08, "20240907-105045"),
    (40, "A100", 2, "Meta-Llama-3.1-70B-Instruct-FP8", 2000, "a9b42a5", 214.9, 168.0, 63.99, 2495.75, 256.43,
     "20240907-105801"),
    (40, "A100", 2, "Meta-Llama-3.1-8B-FP8", 2000, "a9b42a5", 214.9, 127.9, 11.19, 327.49, 1019.57, "20240907-104858"),
    (40, "A100", 2, "Mixtral-8x7B-Instruct-v0.1", 2000, "a9b42a5", 233.7, 221.7, 57.66, 3761.78, 303.83,
     "20240907-110257"),
    (40, "H100", 1, "Meta-Llama-3-8B-Instruct", 2048, "a4f9f43", 214.9, 192.3, 14.14, 260.86, 1294.07, "20240907-084047"),
    (40, "H100", 1, "Meta-Llama-3.1-8B-FP8", 2048, "a4f9f43", 214.9, 108.2, 8.57, 152.57, 1273.54, "20240907-083945"),
    (40, "H100", 2, "Meta-Llama-3-70B-Instruct", 2048, "a4f9f43", 214.9, 174.3, 46.85, 749.71, 296.54, "20240907-094649"),
    (40, "H100", 2, "Meta-Llama-3-8B-Instruct", 2048, "a4f9f43", 214.9, 191.7, 9.13, 208.25, 1820.47, "20240907-094439"),
    (40, "H100", 2, "Meta-Llama-3.1-70B-Instruct-FP8", 2048, "a4f9f43", 214.9, 178.2, 31.15, 578.15, 460.53,
     "20240907-094841"),
    (40, "H100", 2, "Meta-Llama-3.1-8B-FP8", 2048, "a4f9f43", 214.9, 116.8, 5.72, 130.2, 1388.58, "20240907-094335"),
    (40, "H100", 4, "Meta-Llama-3.1-70B-Instruct-FP8", 2000, "de55d46", 244.8, 143.0, 28.11, 265.13, 473.9,
     "20240819-114648"),
)


def _row(p, gpu, n, file, mml, commit, prompt, output, tpot, ttft, otps, date) -> Measurement:
    model, precision, note = _MODEL[file]
    kind = "-bf16" if file.startswith("Meta-Llama-3-") else ""
    sweep, stream = _SWEEP[date[4:6]]
    return Measurement(
        f"lb4-{model}{kind}-{gpu.lower()}-tp{n}-sharegpt{p}", {"A100": "a100-80gb", "H100": "h100"}[gpu], model,
        precision, "0.5.4", n, 1, prompt, output, "burst", p, tpot, ttft, otps, None, mml,
        _LB4.format(commit=_COMMIT[commit], p=p, n=n, gpu=gpu, file=file, len=mml), f"{date[:4]}-{date[4:6]}-{date[6:8]}",
        _NOTES.format(p=p, date=date, sweep=sweep, stream=stream, model=note), flags=_LB_FLAGS)


BLIND4: tuple[Measurement, ...] = tuple(_row(*row) for row in _ROWS)
