"""The third blind batch (measurements_blind3.py): rows hang together with the catalog and the other tables."""
from components.catalog import ACCELERATORS, MODELS, PRECISIONS
from components.catalog.measurements import MEASUREMENTS
from components.catalog.measurements_blind import BLIND
from components.catalog.measurements_blind3 import BLIND3


def test_ids_are_unique_across_every_table():
    ids = [m.id for m in MEASUREMENTS + BLIND + BLIND3]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)


def test_every_row_names_catalog_ids_and_a_url_source():
    for m in BLIND3:
        assert m.model in MODELS and m.gpu in ACCELERATORS and m.precision in PRECISIONS, m.id
        assert m.source.startswith("https://github.com/") and "/blob/" in m.source, m.id
        assert m.mode in ("closed", "burst") and m.tp >= 1 and m.pp >= 1, m.id


def test_usable_rows_can_be_modelled():
    for m in (m for m in BLIND3 if m.usable):
        assert m.prompt_tokens > 0 and m.output_tokens > 0 and m.concurrency > 0 and m.max_model_len > 0, m.id
        assert m.tpot_ms is not None or m.output_tps is not None, m.id


def test_row_counts_and_hand_checked_figures():
    assert len(BLIND3) == 49 and sum(m.usable for m in BLIND3) == 33
    rows = {m.id: m for m in BLIND3}
    h100 = rows["lb-llama-3.1-70b-h100-tp2-sharegpt320"]  # 2xH100 Llama-3.1-70B-FP8 file, read by hand
    assert (h100.tpot_ms, h100.output_tps, h100.output_tokens, h100.max_model_len) == (122.23, 2352.42, 196.5, 2048)
    dl = rows["dl3-qwen2-7b-a100-tp2-gm025-r1024x1024-n30-l598"]  # README line 598
    assert (dl.tpot_ms, dl.ttft_ms, dl.total_tps, dl.flags) == (15.52, 633.56, 3699.3, "--gpu-memory-utilization 0.25")
    assert not rows["dl3-qwen2.5-72b-a100-tp2-r1024x1024-n100-l2564"].usable
