"""The capacity model against published vLLM measurements: error on the held-out half of the calibration rows
with the terms bench/calibrate.py fitted on the other half, by concurrency bucket and by TP degree, the
cross-validation it recorded, and any row added after the model's structure was frozen. No fit runs here
(bench/calibrate.py does that)."""
import dataclasses

import pytest

from components.catalog import ACCELERATORS, MODELS
from components.catalog.measurements import blind_batches, every_row, usable
from components.planner import calibrated, calibration
from components.planner.calibration import (
    FRESH_SINCE_FREEZE, calibration_rows, concurrency_bucket, error_by, margin_for, split, stratum, summary,
    unsafe_ratios)

TARGET_MEDIAN_TPOT_ERROR = 0.15  # issue 14
# What the model reaches today (docs/capacity.md "Calibration"); a change that makes any of them worse fails.
ACHIEVED = {"held out": {"tpot_median": 0.30, "throughput_median": 0.30}}  # 29.8 %, 29.5 % (79 rows)
# The held-out median TPOT error by concurrency bucket and by TP degree (docs/capacity.md), rounded up: a change that
# makes a bucket worse fails, and so does one that drops or adds rows to a bucket (the counts are pinned).
BY_CONCURRENCY = {"1": (2, 0.30), "2-8": (6, 0.29), "9-64": (39, 0.35), "65-127": (8, 0.19), "128+": (24, 0.26)}
BY_TP = {"TP 1": (26, 0.36), "TP 2": (22, 0.25), "TP 4": (12, 0.23), "TP 8": (19, 0.35)}


@pytest.fixture(scope="module")
def rows():
    return calibration_rows(calibrated.RESULTS)


@pytest.fixture(scope="module")
def held_rows(rows):
    fit, test = split(rows)
    return [m for m in test if m.id not in FRESH_SINCE_FREEZE]


@pytest.fixture(scope="module")
def held_out(held_rows):
    """The held-out half of the split (the rows the structure was chosen with, less the fit half)."""
    return summary(held_rows)


def _line(name, s):
    pct = lambda v: "-" if v is None else f"{v:.1%}"  # noqa: E731
    return (f"{name}: {s['points']} points, TPOT median {pct(s['tpot_median'])} worst {pct(s['tpot_worst'])}; "
            f"throughput median {pct(s['throughput_median'])} worst {pct(s['throughput_worst'])}")


def test_the_table_names_its_sources_and_marks_what_is_inferred():
    for m in every_row():
        assert m.gpu in ACCELERATORS and m.model in MODELS, m.id
        assert m.source and m.date and m.vllm, m.id
        if not m.usable:
            assert "⚠" in m.notes, m.id
    ids = [m.id for m in every_row()]
    assert len(ids) == len(set(ids))


def test_the_split_is_the_one_the_constants_were_fitted_on(rows):
    fit, test = split(rows)
    assert tuple(m.id for m in fit) == calibrated.TRAIN and tuple(m.id for m in test) == calibrated.TEST
    assert not set(calibrated.TRAIN) & set(calibrated.TEST)
    assert len(fit) + len(test) == len(rows)
    assert calibrated.SPLIT.startswith("stratified by (model, GPU, load mode)")


def test_every_stratum_of_two_or_more_rows_lands_on_both_sides(rows):
    fit, test = split(rows)
    strata = {stratum(m) for m in rows if m.id not in FRESH_SINCE_FREEZE}  # fresh rows: all held out
    fit, test = [m for m in fit if m.id not in FRESH_SINCE_FREEZE], [m for m in test if m.id not in FRESH_SINCE_FREEZE]
    for s in strata:
        n_fit, n_test = sum(stratum(m) == s for m in fit), sum(stratum(m) == s for m in test)
        assert n_fit - n_test in (0, 1), s  # alternating: the fit side has the odd row


def test_the_split_is_stable_under_additions_and_holds_out_closed_loop_rows():
    base = usable()
    fit0, test0 = split(base)
    # a closed-loop sweep on a (model, GPU) that already has burst rows: its own stratum, half held out
    sweep = [dataclasses.replace(base[0], id=f"new-sweep-c{c}", mode="closed", concurrency=c) for c in (1, 2, 4, 8)]
    fit1, test1 = split(base + sweep)
    assert [m.id for m in fit1 if not m.id.startswith("new-")] == [m.id for m in fit0]
    assert [m.id for m in test1 if not m.id.startswith("new-")] == [m.id for m in test0]
    assert sum(m.id.startswith("new-") for m in test1) == 2
    # a row added to a burst stratum moves rows of that stratum only
    extra = dataclasses.replace(base[0], id="new-burst-row")
    fit2, test2 = split(base + [extra])
    moved = [m for m in base if (m.id in {f.id for f in fit2}) != (m.id in {f.id for f in fit0})]
    assert all(stratum(m) == stratum(extra) for m in moved)
    assert len(fit2) + len(test2) == len(base) + 1


def test_held_out_error_is_reported_and_no_worse_than_today(held_out, capsys):
    with capsys.disabled():
        print("\n" + _line("held out (the split's half)", held_out))
    assert held_out["points"] == 79 and held_out["skipped"] == 0
    for k, limit in ACHIEVED["held out"].items():
        assert held_out[k] <= limit, f"held out {k} {held_out[k]:.1%} is worse than today's {limit:.0%}"


def test_held_out_error_by_concurrency_and_tp_is_reported_and_no_worse_than_today(held_rows, capsys):
    for by, achieved in (("concurrency", BY_CONCURRENCY), ("tp", BY_TP)):
        groups = error_by(held_rows, by)
        with capsys.disabled():
            print(f"\nheld-out TPOT error by {by}: " + "; ".join(
                f"{k}: {v['points']} rows, median {v['median']:.1%} (bias {v['bias']:+.1%})" for k, v in groups.items()))
        assert {k: v["points"] for k, v in groups.items()} == {k: n for k, (n, _) in achieved.items()}, by
        for k, (_, limit) in achieved.items():
            assert groups[k]["median"] <= limit, f"{by} {k}: median {groups[k]['median']:.1%} is worse than {limit:.0%}"


def test_the_buckets_cover_every_concurrency_without_gaps():
    assert [concurrency_bucket(c) for c in (1, 2, 8, 9, 16, 64, 65, 127, 128, 320, 10_000)] == [
        "1", "2-8", "2-8", "9-64", "9-64", "9-64", "65-127", "65-127", "128+", "128+", "128+"]
    with pytest.raises(ValueError, match="by must be 'concurrency' or 'tp'"):
        error_by([], "model")


@pytest.mark.xfail(strict=True, reason="issue 14's target is not met: held-out median TPOT error 29.8 % "
                                       "(docs/capacity.md); strict: a change that meets it fails here until this "
                                       "marker goes")
def test_median_tpot_error_meets_the_target(held_out):
    assert held_out["tpot_median"] <= TARGET_MEDIAN_TPOT_ERROR, (
        f"held-out median TPOT error {held_out['tpot_median']:.1%} exceeds the {TARGET_MEDIAN_TPOT_ERROR:.0%} target")


def test_the_planners_latency_margin_is_the_smallest_5_percent_step_covering_9_in_10_held_out_rows(held_rows):
    # the knee keeps estimate x (1 + margin) <= SLA: a deployment misses only where the engine is slower than the
    # estimate by more than the margin, so the margin is read off the unsafe side of the held-out rows
    from components.planner.capacity import HELD_OUT_COVERED, HELD_OUT_WORST_UNDER, LATENCY_MARGIN, MARGIN_COVERAGE
    ratios = unsafe_ratios(held_rows)
    assert MARGIN_COVERAGE == 0.90 and LATENCY_MARGIN == 0.35
    assert margin_for(held_rows, MARGIN_COVERAGE) == LATENCY_MARGIN, (
        f"capacity.LATENCY_MARGIN {LATENCY_MARGIN:.0%} is not the smallest 5 % step covering {MARGIN_COVERAGE:.0%} of "
        f"the held-out rows ({margin_for(held_rows, MARGIN_COVERAGE):.0%}): set it, HELD_OUT_COVERED and "
        "HELD_OUT_WORST_UNDER from this refit (the knee must keep the estimate that far under the SLA)")
    # 72 of 79 within x 1.35, 70 within x 1.30 (88.6 %: one step short); the model is faster than measured on 26
    assert (sum(r <= 1 + LATENCY_MARGIN for r in ratios), len(ratios)) == HELD_OUT_COVERED == (72, 79)
    assert sum(r <= 1.30 for r in ratios) == 70 and sum(r > 1 for r in ratios) == 26
    assert round(max(ratios), 2) == HELD_OUT_WORST_UNDER == 3.66


def test_margin_for_reads_the_unsafe_side_not_the_average_error(held_rows):
    # half of the held-out rows need no margin at all (the model is slower than measured on 53 of 79), the
    # median absolute error (29.8 %) is not what protects the SLA
    assert margin_for(held_rows, 0.5) == 0.0
    assert margin_for(held_rows, 0.88) == 0.30 and margin_for(held_rows, 0.95) > 0.5
    with pytest.raises(ValueError, match="no row with a measured TPOT"):
        margin_for([], 0.9)


def test_a_fresh_row_is_always_held_out_and_never_fitted(rows, monkeypatch):
    # today no row is fresh (the structure was frozen after every row had been read); a bench_serve.py row added
    # later is listed in FRESH_SINCE_FREEZE and must land on the held-out side whatever its stratum
    assert calibration.FRESH_SINCE_FREEZE == () and calibration.STRUCTURE_FROZEN_ON == "2026-12-05"
    fit0, _ = split(rows)
    victim = fit0[0]
    monkeypatch.setattr(calibration, "FRESH_SINCE_FREEZE", (victim.id,))
    fit1, test1 = split(rows)
    assert victim.id in {m.id for m in test1} and victim.id not in {m.id for m in fit1}
    # the blind batches are ordinary rows of the split now; their unusable rows say why
    blind = [m for batch in blind_batches().values() for m in batch]
    assert sum(not m.usable for m in blind) == 21 and all("NOT USABLE" in m.notes for m in blind if not m.usable)


def test_cross_validation_covers_every_model_and_gpu(rows, capsys):
    cv = calibrated.CROSS_VALIDATION
    assert calibrated.CROSS_VALIDATED_ON, "no cross-validation recorded: run bench/calibrate.py (a full run)"
    for by in ("model", "gpu"):
        counts = {}
        for m in rows:
            counts[getattr(m, by)] = counts.get(getattr(m, by), 0) + 1
        # the recorded folds are those of today's rows: a row added since shows as a changed count
        assert {k: v["points"] for k, v in cv[by].items()} == counts, f"re-run bench/calibrate.py ({by})"
    with capsys.disabled():
        print("\ncross-validation (fitted without the group, error on its rows):")
        for by in ("model", "gpu"):
            for k, v in cv[by].items():
                print(f"  leave out {by} {k:18s} " + _line("", v)[2:] + f"; fitted {v['fitted']}")


def test_fresh_ids_name_calibration_rows(rows):
    assert set(FRESH_SINCE_FREEZE) <= {m.id for m in rows}, "FRESH_SINCE_FREEZE names ids that are not calibration rows"


def test_the_fitted_constants_are_the_ones_calibrate_wrote():
    # bench/calibrate.py on the fit half (docs/capacity.md); a hand edit or a refit shows here
    assert calibrated.TERMS == {
        "hbm": 0.75, "mfu": 0.5, "step_overhead_s": 0.0002, "seq_overhead_s": 1e-05, "kv_hbm": 0.9,
        "gemm_half_rows": 0.0, "v0_seq_overhead_s": 4e-05, "v0_step_overhead_s": 0.003, "attn_seq_s": 1e-06,
        "allreduce_s": 3e-05, "early_seq_overhead_s": 4e-05, "early_step_overhead_s": 0.002, "v0_gpu_factor": 1.75,
        "early_gpu_factor": 1.35}
    assert calibrated.FITTED_ON == "2026-12-05" and calibrated.RESULTS == ()
    # the physical bounds of the grids bind here (docs/capacity.md "Calibration")
    assert calibrated.AT_GRID_EDGE == ("hbm=0.75 (bottom)", "kv_hbm=0.9 (top)", "step_overhead_s=0.0002 (bottom)")


def test_a_rows_engine_flags_size_its_replica():
    from components.planner.calibration import shape_for
    base = next(m for m in usable() if m.id == "dl-qwen2-7b-a100-gm050-r1024x1024-n500")  # one A100, KV not floored
    plain = shape_for(base)
    assert (plain.max_num_batched_tokens, plain.max_num_seqs, plain.kv_cache_dtype) == (2048, 256, "auto")
    seqs = shape_for(dataclasses.replace(base, flags=base.flags + " --max-num-seqs 1024"))
    # the profile run's sampler holds max_num_seqs x vocab fp32 logits twice: 768 more x 152,064 x 8 B = 0.87 GiB
    # less KV: 934,281,216 B / 57,344 B a token (Qwen2-7B: 28 layers x 4 KV heads x 128 x 2 x 2 B) = 16,292.6, in
    # whole 16-token blocks 16,288
    assert seqs.max_num_seqs == 1024 and plain.kv_tokens - seqs.kv_tokens == 16_288
    chunk = shape_for(dataclasses.replace(base, flags=base.flags + " --max-num-batched-tokens 8192"))
    # the profile run's forward pass over 8192 tokens, not 2048: 6144 more x 3584 hidden x 2 B x 16 live copies =
    # 704,643,072 B = 12,288 tokens of 57,344 B
    assert chunk.max_num_batched_tokens == 8192 and plain.kv_tokens - chunk.kv_tokens == 12_288
    fp8 = shape_for(dataclasses.replace(base, flags=base.flags + " --kv-cache-dtype fp8_e4m3"))
    assert fp8.kv_cache_dtype == "fp8" and fp8.kv_tokens >= 2 * plain.kv_tokens - 32


def test_the_margin_cells_are_read_off_the_held_out_rows(held_rows):
    """planner/margins.py CELLS for the step model are what the held-out half gives today: a refit or a new row
    that moves a cell fails here until CELLS follows (docs/capacity.md "The planning margin")."""
    from components.planner.calibration import margin_cells
    from components.planner.margins import CELLS
    assert set(margin_cells(held_rows)) == {c for c in CELLS if c.estimator == "step-model"}


def test_the_aic_margin_cells_are_read_off_the_rows_it_prices(held_rows):
    pytest.importorskip("aiconfigurator_core")
    from dataclasses import replace

    from components.planner.calibration import margin_cells
    from components.planner.margins import CELLS
    from components.planner.performance import EFFICIENCY
    got = margin_cells(held_rows, replace(EFFICIENCY, estimator="aiconfigurator+engine"))
    assert set(got) == {c for c in CELLS if c.estimator == "aiconfigurator+engine"}
