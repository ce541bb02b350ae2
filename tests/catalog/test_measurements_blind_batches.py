"""The blind batches (measurements.blind_batches, components/catalog/data/measurements/blind*.csv): every batch's rows hang together with the catalog and the other
tables, and each batch's counts and a few rows read by hand from their sources."""
import pytest

from components.catalog import ACCELERATORS, MODELS, PRECISIONS
from components.catalog.measurements import blind_batches, every_row

BATCHES = blind_batches()
BLIND3, BLIND4, BLIND5 = BATCHES["blind3"], BATCHES["blind4"], BATCHES["blind5"]


def test_ids_are_unique_across_every_table():
    ids = [m.id for m in every_row()]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)


@pytest.mark.parametrize("batch", sorted(BATCHES))
def test_every_row_names_catalog_ids_and_a_url_source(batch):
    for m in BATCHES[batch]:
        assert m.model in MODELS and m.gpu in ACCELERATORS and m.precision in PRECISIONS, m.id
        assert m.source.startswith("https://"), m.id
        assert m.mode in ("closed", "burst") and m.tp >= 1 and m.pp >= 1, m.id
        if "LambdaLabsML" in m.source:  # result files at a full commit sha, named by prompt count and length
            assert len(m.source.split("/blob/")[1].split("/")[0]) == 40, m.id
            assert f"_len{m.max_model_len}.json" in m.source and f"/prompt_{m.concurrency}/" in m.source, m.id


@pytest.mark.parametrize("batch", sorted(BATCHES))
def test_usable_rows_can_be_modelled(batch):
    for m in (m for m in BATCHES[batch] if m.usable):
        assert m.prompt_tokens > 0 and m.output_tokens > 0 and m.concurrency > 0 and m.max_model_len > 0, m.id
        assert m.tpot_ms is not None or m.output_tps is not None, m.id


def test_third_batch_counts_and_hand_checked_figures():
    assert len(BLIND3) == 49 and sum(m.usable for m in BLIND3) == 33
    rows = {m.id: m for m in BLIND3}
    h100 = rows["lb-llama-3.1-70b-h100-tp2-sharegpt320"]  # 2xH100 Llama-3.1-70B-FP8 file, read by hand
    assert (h100.tpot_ms, h100.output_tps, h100.output_tokens, h100.max_model_len) == (122.23, 2352.42, 196.5, 2048)
    dl = rows["dl3-qwen2-7b-a100-tp2-gm025-r1024x1024-n30-l598"]  # README line 598
    assert (dl.tpot_ms, dl.ttft_ms, dl.total_tps, dl.flags) == (15.52, 633.56, 3699.3, "--gpu-memory-utilization 0.25")
    assert not rows["dl3-qwen2.5-72b-a100-tp2-r1024x1024-n100-l2564"].usable


def test_fourth_batch_counts_and_hand_checked_figures():
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


def test_fifth_batch_counts_and_hand_checked_figures():
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


def test_fifth_batch_prompt_10_rows_cover_the_1x_configurations_only():
    p10 = {m.id: m for m in BLIND5 if m.concurrency == 10}
    assert len(BLIND5) == 28 and len(p10) == 6 and {m.tp for m in p10.values()} == {1}
    # prompt_10/1xH100-80GB-SXM/Meta-Llama-3.1-8B-FP8_tp1_len2048.json (commit a4f9f43): 1369 / 442 tokens over 10,
    # mean TPOT 6.0185..., output 413.8942... tok/s
    m = p10["lb5-llama-3.1-8b-h100-tp1-sharegpt10"]
    assert (m.prompt_tokens, m.output_tokens, m.tpot_ms, m.output_tps, m.max_model_len) == (136.9, 44.2, 6.02, 413.89, 2048)
