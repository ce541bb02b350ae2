"""The tail-latency columns of the measurement tables (tpot_p90_ms, tpot_p99_ms, ttft_p90_ms, ttft_p99_ms; read
2026-12-06, docs/calibration-data.md "Tails read 2026-12-06"): figures copied from the sources load as read, rows whose
source prints no tail load with None, and a tail that cannot be a tail (under the mean or the p90, negative) is refused
naming the file, line, row and column."""
from pathlib import Path

import pytest

from components.catalog import measurements
from components.catalog.measurements import every_row
from components.catalog.tables import DataError

ROWS = {m.id: m for m in every_row()}

# (row id, tpot_p99_ms, ttft_p99_ms) as printed by each row's source at its pinned commit
READ = [
    # gpustack docs/performance-lab/gpt-oss-120b/h100.md @72aee9d, first "Serving Benchmark Result" block
    # (P99 TTFT 54033.43, P99 TPOT 193.25)
    ("gs-oss120b-h100-tp1-sharegpt", 193.25, 54033.43),
    # gpustack docs/performance-lab/qwen3-235b-a22b/a100.md @9babbd2, the BF16 TP8 ShareGPT block
    ("gsa-qwen235b-a100-tp8-sharegpt", 448.36, 77082.58),
    # gpustack gpt-oss-120b/h100.md @72aee9d "random 2K input" block; the row's means come from the summary table
    ("gs-oss120b-h100-tp1-2k", 48.36, 70634.63),
    # dennislee22/vLLM-benchmarking README.md @b474d1e, TP2 gpu-memory-utilization 0.25, 1 prompt of 1024x1024
    ("dl-qwen2-7b-a100-tp2-gm025-r1024x1024-n1", 8.82, 34.69),
    # same README, line 2049 block (Qwen2.5-32B TP2, a usable=false row)
    ("dl3-qwen2.5-32b-a100-tp2-r1024x1024-n1-l2042", 29.21, 61.26),
    # LambdaLabsML results/prompt_10/1xA100-80GB-SXM/Meta-Llama-3-8B-Instruct_tp1_len2000.json @a9b42a5:
    # "p99_tpot_ms": 53.73797138780356, "p99_ttft_ms": 140.39139926433563
    ("lb5-llama-3.1-8b-bf16-a100-tp1-sharegpt10", 53.74, 140.39),
    # LambdaLabsML results/prompt_40/8xA100-80GB-SXM/Hermes-3-Llama-3.1-405B-FP8_tp8_len2000.json @d9f93a7:
    # "p99_tpot_ms": 1810.0879843160506, "p99_ttft_ms": 6641.024263668805
    ("lb4-llama-3.1-405b-a100-tp8-sharegpt40", 1810.09, 6641.02),
    # SemiAnalysisAI/InferenceX together_runner/.../conc64.json @2a6a04c:
    # "p99_ttft_ms": 362.18235563486814, "p99_tpot_ms": 17.411088001575656
    ("ix-oss120b-b200-tp4-c64", 17.41, 362.18),
]


@pytest.mark.parametrize("rid, tpot_p99, ttft_p99", READ)
def test_tails_read_from_the_sources(rid, tpot_p99, ttft_p99):
    m = ROWS[rid]
    assert (m.tpot_p99_ms, m.ttft_p99_ms) == (tpot_p99, ttft_p99)
    assert m.tpot_p90_ms is None and m.ttft_p90_ms is None  # these sources print no p90 (a median is no p90)


@pytest.mark.parametrize("rid", ["vb-fp8kv-llama8b-h100-c8-bf16kv", "tt-qwen72b-h100-tp2-c1-128x128",
                                 "yb-llama8b-h100-c16", "jm-llama8b-a100-40-c1", "rh-mlperf51-llama8b-h100-offline"])
def test_rows_whose_source_prints_no_tail_load_with_none(rid):
    m = ROWS[rid]
    assert (m.tpot_p90_ms, m.tpot_p99_ms, m.ttft_p90_ms, m.ttft_p99_ms) == (None, None, None, None)


def test_how_many_rows_carry_tails():
    rows = every_row()
    assert sum(m.tpot_p99_ms is not None for m in rows) == 177
    assert sum(m.ttft_p99_ms is not None for m in rows) == 177
    assert sum(m.tpot_p90_ms is not None or m.ttft_p90_ms is not None for m in rows) == 0
    by_table = [sum(m.tpot_p99_ms is not None for m in measurements.load(n))
                for n in ("published", "blind", "blind3", "blind4", "blind5")]
    assert by_table == [38, 27, 49, 35, 28]


def test_every_tail_is_at_least_its_rows_mean():
    for m in every_row():
        for what in ("tpot", "ttft"):
            p99, mean = getattr(m, f"{what}_p99_ms"), getattr(m, f"{what}_ms")
            if p99 is not None and mean is not None:
                assert p99 >= mean, (m.id, what)


HEADER = ("id,gpu,model,precision,vllm,tp,pp,prompt_tokens,output_tokens,mode,concurrency,tpot_ms,ttft_ms,output_tps,"
          "total_tps,max_model_len,source,date,notes,flags,usable,read,"
          "tpot_p90_ms,tpot_p99_ms,ttft_p90_ms,ttft_p99_ms\n")
ROW = ("x-llama8b-h100-c4,h100,llama-3.1-8b,bf16,0.31.0,1,1,1024,128,closed,4,10.5,80,300,2700,8192,"
       "https://example.org/run,2026-12-01,note,,true,2026-12-04,{tails}\n")


def load_one(tmp_path: Path, tails: str):
    (tmp_path / "b.csv").write_text(HEADER + ROW.format(tails=tails))
    return measurements.load("b", tmp_path)


def test_a_row_with_tails_loads_them_and_one_without_loads_none(tmp_path):
    (m,) = load_one(tmp_path, "12,15.5,100,140")
    assert (m.tpot_p90_ms, m.tpot_p99_ms, m.ttft_p90_ms, m.ttft_p99_ms) == (12.0, 15.5, 100.0, 140.0)
    (m,) = load_one(tmp_path, ",,,")
    assert (m.tpot_p90_ms, m.tpot_p99_ms, m.ttft_p90_ms, m.ttft_p99_ms) == (None, None, None, None)


@pytest.mark.parametrize("tails, why", [
    (",9.5,,", "column tpot_p99_ms: 9.5 is below the mean tpot_ms 10.5; a p99 is never under the mean"),
    (",,,70", "column ttft_p99_ms: 70 is below the mean ttft_ms 80; a p99 is never under the mean"),
    ("14,13,,", "column tpot_p99_ms: 13 is below tpot_p90_ms 14; a p99 is never under the p90"),
    (",,150,120", "column ttft_p99_ms: 120 is below ttft_p90_ms 150; a p99 is never under the p90"),
    ("-1,,,", "column tpot_p90_ms: -1.0 is negative"),
])
def test_a_tail_that_cannot_be_one_is_refused_naming_row_and_column(tmp_path, tails, why):
    with pytest.raises(DataError) as e:
        load_one(tmp_path, tails)
    assert str(e.value).startswith(f"{tmp_path}/b.csv: line 2 (x-llama8b-h100-c4): {why}")
