"""The fifth blind batch (measurements_blind5.py): rows hang together with the catalog and the other tables."""
from components.catalog import ACCELERATORS, MODELS, PRECISIONS
from components.catalog.measurements import MEASUREMENTS
from components.catalog.measurements_blind import BLIND
from components.catalog.measurements_blind3 import BLIND3
from components.catalog.measurements_blind4 import BLIND4
from components.catalog.measurements_blind5 import BLIND5


def test_ids_are_unique_across_every_table():
    ids = [m.id for m in MEASUREMENTS + BLIND + BLIND3 + BLIND4 + BLIND5]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)


def test_every_row_names_catalog_ids_and_a_commit_pinned_url():
    for m in BLIND5:
        assert m.id.startswith("lb5-"), m.id
        assert m.model in MODELS and m.gpu in ACCELERATORS and m.precision in PRECISIONS, m.id
        assert m.source.startswith("https://github.com/LambdaLabsML/vllm-benchmark/blob/"), m.id
        assert len(m.source.split("/blob/")[1].split("/")[0]) == 40, m.id  # a full commit sha
        assert f"_len{m.max_model_len}.json" in m.source and f"/prompt_{m.concurrency}/" in m.source, m.id
        assert m.mode == "burst" and m.tp >= 1 and m.pp == 1, m.id


def test_usable_rows_can_be_modelled():
    for m in (m for m in BLIND5 if m.usable):
        assert m.prompt_tokens > 0 and m.output_tokens > 0 and m.concurrency > 0 and m.max_model_len > 0, m.id
        assert m.tpot_ms is not None or m.output_tps is not None, m.id


def test_row_counts_and_hand_checked_figures():
    rows = {m.id: m for m in BLIND5}
    p320 = [m for m in BLIND5 if m.concurrency == 320]
    assert len(p320) == 22  # 22 prompt_320 4x/8x configurations, all fully successful
    assert sum(m.gpu == "h100" for m in p320) == 11 and sum(m.date.startswith("2024-08") for m in p320) == 5
    # prompt_320/8xA100-80GB-SXM/Hermes-3-Llama-3.1-405B-FP8_tp8_len4000.json (commit d9f93a7), read by hand:
    # 65578 input / 67589 output tokens over 320 completed, mean TPOT 697.6173..., output 470.2287... tok/s
    hermes = rows["lb5-llama-3.1-405b-a100-tp8-sharegpt320"]
    assert (hermes.prompt_tokens, hermes.output_tokens, hermes.tpot_ms, hermes.output_tps) == (204.9, 211.2, 697.62, 470.23)
    assert (hermes.max_model_len, hermes.date, hermes.precision) == (4000, "2024-08-20", "fp8")
    assert "d9f93a796770f253ac5d84296513e26ff9c66797" in hermes.source
    # prompt_320/4xH100-80GB-SXM/Mixtral-8x7B-Instruct-v0.1_tp4_len2000.json (commit e04b354): 73671 / 70216 tokens
    mixtral = rows["lb5-mixtral-8x7b-h100-tp4-sharegpt320"]
    assert (mixtral.prompt_tokens, mixtral.output_tokens, mixtral.tpot_ms, mixtral.ttft_ms) == (230.2, 219.4, 141.71, 4627.36)
    assert (mixtral.max_model_len, mixtral.gpu, mixtral.tp) == (2000, "h100", 4)


def test_prompt_10_rows_cover_the_1x_configurations_only():
    p10 = {m.id: m for m in BLIND5 if m.concurrency == 10}
    assert len(BLIND5) == 28 and len(p10) == 6 and {m.tp for m in p10.values()} == {1}
    # prompt_10/1xH100-80GB-SXM/Meta-Llama-3.1-8B-FP8_tp1_len2048.json (commit a4f9f43): 1369 / 442 tokens over 10,
    # mean TPOT 6.0185..., output 413.8942... tok/s
    m = p10["lb5-llama-3.1-8b-h100-tp1-sharegpt10"]
    assert (m.prompt_tokens, m.output_tokens, m.tpot_ms, m.output_tps, m.max_model_len) == (136.9, 44.2, 6.02, 413.89, 2048)
