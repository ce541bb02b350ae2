"""Published vLLM serving measurements read blind on 2026-12-03 (fifth batch), for testing the capacity model.

Read by someone who never ran the capacity model, never saw its predictions or errors, and never opened the calibration
code or docs/capacity.md. Same row format and rules as measurements.py (`⚠` marks every inferred field). All numbers are
copied from the source's result JSON files ("completed", "total_input_tokens", "total_output_tokens", "mean_tpot_ms",
"mean_ttft_ms", "output_throughput", "date"), rounded to 2 decimals (lengths, totals / completed, to 0.1).

Selection rule (what was searched, taken, rejected):

* Source: LambdaLabsML/vllm-benchmark only (harness, flags and conventions as in measurements_blind3.py and
  measurements_blind4.py, whose model table, flags, notes and sweep notes are reused). Files listed with the code index's
  `find_files` (the repository is over the fetch limit; the listing is the union over the crawled history) and read with
  `read_file` (the first 16k characters of each file hold every field used).
* Rule as briefed, same rules as blind4 (every catalog-mappable model: Meta-Llama-3.1-8B-FP8, Meta-Llama-3-8B-Instruct,
  Meta-Llama-3.1-70B-Instruct-FP8, Meta-Llama-3-70B-Instruct, Mixtral-8x7B-Instruct-v0.1, Hermes-3-Llama-3.1-405B-FP8;
  the shortest max_model_len stored for that (prompt count, GPU config, model), taken literally over the listing; a path
  stored in two versions is read at both commits and the run with the later JSON "date" is taken; fully successful only,
  completed == num_prompts):
  (a) results/prompt_320 on 4x and 8x A100-80GB-SXM / H100-80GB-SXM: 22 configurations (4x: five models, no Hermes
      file; 8x: all six). ALL 22 READ, all 22 fully successful (320 of 320) -> 22 rows. Not the Sep-7 sweep's
      len 2000 / 2048 (the shortest stored is another run): 8xA100 Hermes (only len 4000 and 128000 stored; len 4000, Aug-20
      run, commit d9f93a7), 4xH100 Llama-3.1-8B-FP8 (len 2000 Aug-19 run, de55d46, shorter than the sweep's 2048),
      4xH100 and 8xH100 Mixtral (len 2000 Aug-19 runs, e04b354), 8xH100 Hermes (len 2000 Aug-19 run, e04b354). The Sep-7
      sweep's 4x/8x files carry dates of Sep 7 and Sep 8 (the sweep ran past midnight; same commits a9b42a5 / a4f9f43).
      Superseded (two stored versions, the earlier run not taken): 4xA100 Llama-3.1-8B-FP8 len2000 (Aug-19 run at
      d9f93a7, 320 completed) and 4xA100 Mixtral len2000 (Aug-19 run at d9f93a7, 320 completed); the Sep-7 runs
      (a9b42a5) are taken.
  (b) results/prompt_10 on 1x-8x (10 ShareGPT prompts at once): the listing selects 37 configurations (1x A100 and H100:
      Llama-3-8B, Llama-3.1-70B-FP8, Llama-3.1-8B-FP8, three each; 2x/4x: five models each; 8xA100: six, with Hermes
      len 2000; 8xH100: five, no Hermes file). READ: the six 1x configurations, all fully successful (10 of 10) -> 6
      rows (1xH100 Llama-3.1-70B-FP8 is the len 2000 Aug-19 run, de55d46; the others the Sep-7 sweep). Superseded: 1xA100
      Llama-3.1-70B-FP8 len2000 and Llama-3.1-8B-FP8 len2000 Aug-19 runs (daa702b, 10 completed each); the Sep-7 runs
      (a9b42a5) are taken. NOT READ: the 31 2x/4x/8x prompt_10 configurations -- the session's time ran out (each file
      is 4k-65k characters through the code index); nothing of their content was seen. For a later batch, the shortest
      lengths in the listing: A100 len 2000 (a9b42a5; 2xA100 Llama-3.1-70B-FP8 at daa702b, 8xA100 Hermes at d9f93a7;
      two stored versions for 2xA100 Llama-3.1-70B-FP8, 2xA100 Mixtral, 8xA100 Mixtral), H100 len 2048 (a4f9f43) except
      2xH100 Mixtral and 4xH100 Llama-3.1-8B-FP8 (len 2000, de55d46) and 8xH100 Mixtral (len 2000, e04b354). The
      later A100 files at len 2048/4096/8192 (commit f093afe) are not the shortest and were not read.
* Not read: Mistral-7B, Mistral-Nemo, Mistral-Large, Mixtral-8x22B (not in the catalog); other max_model_len values;
  prompt_20/40/80/160 (not in this batch's rule; prompt_40 is measurements_blind4.py, prompt_320 1x/2x is
  measurements_blind3.py).

⚠ vLLM version and flags: as in measurements_blind4.py, the Sep-7 sweep's streams carry ~10 tokens per chunk
(multi-step scheduling, v0.6.0 era) while the Aug-2024 files stream one token per chunk; rows keep "0.5.4" as the
repository states it and carry the run date and sweep in the notes.
"""
from __future__ import annotations

from .measurements import Measurement
from .measurements_blind4 import lambda_row

_ROWS = (  # prompts, gpu, n, file, max_model_len, commit, prompt, output, mean TPOT, mean TTFT, output tok/s, file date
    # (a) prompt_320, 4x and 8x
    (320, "A100", 4, "Meta-Llama-3-70B-Instruct", 2000, "a9b42a5", 204.9, 173.9, 197.54, 6141.79, 1196.05,
     "20240907-165750"),
    (320, "A100", 4, "Meta-Llama-3-8B-Instruct", 2000, "a9b42a5", 204.9, 202.8, 45.68, 2125.98, 5970.09,
     "20240907-165417"),
    (320, "A100", 4, "Meta-Llama-3.1-70B-Instruct-FP8", 2000, "a9b42a5", 204.9, 197.3, 265.04, 8275.72, 1335.7,
     "20240907-170115"),
    (320, "A100", 4, "Meta-Llama-3.1-8B-FP8", 2000, "a9b42a5", 204.9, 137.8, 56.74, 1561.06, 4126.27,
     "20240907-165209"),
    (320, "A100", 4, "Mixtral-8x7B-Instruct-v0.1", 2000, "a9b42a5", 230.2, 217.1, 95.84, 8187.4, 2183.54,
     "20240907-170630"),
    (320, "A100", 8, "Hermes-3-Llama-3.1-405B-FP8", 4000, "d9f93a7", 204.9, 211.2, 697.62, 29320.84, 470.23,
     "20240820-050601"),
    (320, "A100", 8, "Meta-Llama-3-70B-Instruct", 2000, "a9b42a5", 204.9, 176.9, 128.48, 4382.89, 1773.68,
     "20240908-011959"),
    (320, "A100", 8, "Meta-Llama-3-8B-Instruct", 2000, "a9b42a5", 204.9, 204.5, 38.01, 1908.56, 6916.19,
     "20240908-011635"),
    (320, "A100", 8, "Meta-Llama-3.1-70B-Instruct-FP8", 2000, "a9b42a5", 204.9, 197.4, 171.27, 5537.59, 1787.67,
     "20240908-012325"),
    (320, "A100", 8, "Meta-Llama-3.1-8B-FP8", 2000, "a9b42a5", 204.9, 137.6, 48.95, 1385.47, 4129.0,
     "20240908-011412"),
    (320, "A100", 8, "Mixtral-8x7B-Instruct-v0.1", 2000, "a9b42a5", 230.2, 221.7, 74.27, 7293.57, 2860.49,
     "20240908-012905"),
    (320, "H100", 4, "Meta-Llama-3-70B-Instruct", 2048, "a4f9f43", 204.9, 176.7, 88.09, 2764.06, 2445.3,
     "20240907-141959"),
    (320, "H100", 4, "Meta-Llama-3-8B-Instruct", 2048, "a4f9f43", 204.9, 204.3, 24.68, 1108.14, 9906.36,
     "20240907-141740"),
    (320, "H100", 4, "Meta-Llama-3.1-70B-Instruct-FP8", 2048, "a4f9f43", 204.9, 196.9, 76.25, 2576.56, 3360.35,
     "20240907-142207"),
    (320, "H100", 4, "Meta-Llama-3.1-8B-FP8", 2000, "de55d46", 204.9, 134.0, 40.28, 606.44, 3475.27,
     "20240819-132745"),
    (320, "H100", 4, "Mixtral-8x7B-Instruct-v0.1", 2000, "e04b354", 230.2, 219.4, 141.71, 4627.36, 2102.86,
     "20240819-134653"),
    (320, "H100", 8, "Hermes-3-Llama-3.1-405B-FP8", 2000, "e04b354", 204.9, 213.2, 207.62, 6954.99, 1230.74,
     "20240819-201045"),
    (320, "H100", 8, "Meta-Llama-3-70B-Instruct", 2048, "a4f9f43", 204.9, 174.3, 61.71, 2098.58, 3301.05,
     "20240908-002442"),
    (320, "H100", 8, "Meta-Llama-3-8B-Instruct", 2048, "a4f9f43", 204.9, 205.8, 24.05, 1172.05, 10242.68,
     "20240908-001837"),
    (320, "H100", 8, "Meta-Llama-3.1-70B-Instruct-FP8", 2048, "a4f9f43", 204.9, 198.7, 60.84, 2089.29, 4097.4,
     "20240908-003045"),
    (320, "H100", 8, "Meta-Llama-3.1-8B-FP8", 2048, "a4f9f43", 204.9, 136.8, 24.72, 865.85, 8061.79,
     "20240908-001637"),
    (320, "H100", 8, "Mixtral-8x7B-Instruct-v0.1", 2000, "e04b354", 230.2, 214.7, 178.75, 6441.17, 2073.9,
     "20240819-203247"),
    # (b) prompt_10, 1x only (2x-8x not read, see the docstring)
    (10, "A100", 1, "Meta-Llama-3-8B-Instruct", 2000, "a9b42a5", 136.9, 194.5, 17.95, 139.23, 227.04,
     "20240907-082900"),
    (10, "A100", 1, "Meta-Llama-3.1-70B-Instruct-FP8", 2000, "a9b42a5", 136.9, 221.6, 57.01, 908.22, 58.07,
     "20240907-083331"),
    (10, "A100", 1, "Meta-Llama-3.1-8B-FP8", 2000, "a9b42a5", 136.9, 124.9, 8.77, 107.76, 216.46,
     "20240907-082717"),
    (10, "H100", 1, "Meta-Llama-3-8B-Instruct", 2048, "a4f9f43", 136.9, 186.7, 11.11, 62.43, 347.89,
     "20240907-082731"),
    (10, "H100", 1, "Meta-Llama-3.1-70B-Instruct-FP8", 2000, "de55d46", 137.1, 252.3, 33.11, 155.46, 100.03,
     "20240819-062211"),
    (10, "H100", 1, "Meta-Llama-3.1-8B-FP8", 2048, "a4f9f43", 136.9, 44.2, 6.02, 44.16, 413.89,
     "20240907-082634"),
)


BLIND5: tuple[Measurement, ...] = tuple(lambda_row("lb5", *row) for row in _ROWS)
