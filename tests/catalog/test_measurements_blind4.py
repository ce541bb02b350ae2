"""The fourth blind batch (measurements_blind4.py): rows hang together with the catalog and the other tables."""
from components.catalog import ACCELERATORS, MODELS, PRECISIONS
from components.catalog.measurements import MEASUREMENTS
from components.catalog.measurements_blind import BLIND
from components.catalog.measurements_blind3 import BLIND3
from components.catalog.measurements_blind4 import BLIND4


def test_ids_are_unique_across_every_table():
    ids = [m.id for m in MEASUREMENTS + BLIND + BLIND3 + BLIND4]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)


def test_every_row_names_catalog_ids_and_a_commit_pinned_url():
    for m in BLIND4:
        assert m.model in MODELS and m.gpu in ACCELERATORS and m.precision in PRECISIONS, m.id
        assert m.source.startswith("https://github.com/LambdaLabsML/vllm-benchmark/blob/"), m.id
        assert len(m.source.split("/blob/")[1].split("/")[0]) == 40, m.id  # a full commit sha
        assert m.mode == "burst" and m.tp >= 1 and m.pp == 1, m.id


def test_usable_rows_can_be_modelled():
    for m in (m for m in BLIND4 if m.usable):
        assert m.prompt_tokens > 0 and m.output_tokens > 0 and m.concurrency > 0 and m.max_model_len > 0, m.id
        assert m.tpot_ms is not None or m.output_tps is not None, m.id


def test_row_counts_and_hand_checked_figures():
    assert len(BLIND4) == 35  # 38 prompt_40 configurations, 3 not fully successful
    assert sum(m.gpu == "h100" for m in BLIND4) == 17 and sum(m.date.startswith("2024-08") for m in BLIND4) == 2
    rows = {m.id: m for m in BLIND4}
    # prompt_40/2xH100-80GB-SXM/Meta-Llama-3.1-70B-Instruct-FP8_tp2_len2048.json, read by hand:
    # 8595 input / 7130 output tokens over 40 completed, mean TPOT 31.1508..., output 460.5299... tok/s
    m = rows["lb4-llama-3.1-70b-h100-tp2-sharegpt40"]
    assert (m.prompt_tokens, m.output_tokens, m.tpot_ms, m.output_tps) == (214.9, 178.2, 31.15, 460.53)
    assert (m.concurrency, m.max_model_len, m.precision) == (40, 2048, "fp8")
    llama3 = rows["lb4-llama-3.1-70b-bf16-a100-tp2-sharegpt40"]  # Meta-Llama-3-70B-Instruct, 6797 / 40 output tokens
    assert (llama3.output_tokens, llama3.tpot_ms, llama3.gpu) == (169.9, 88.99, "a100-80gb")
    hermes = rows["lb4-llama-3.1-405b-a100-tp8-sharegpt40"]  # Aug-19 run, 7822 / 40 output tokens, commit d9f93a7
    assert (hermes.output_tokens, hermes.tpot_ms, hermes.precision, hermes.date) == (195.6, 205.65, "fp8", "2024-08-19")
    assert "d9f93a796770f253ac5d84296513e26ff9c66797" in hermes.source
