"""The capacity model against published vLLM measurements: error on the held-out half of the calibration rows
with the efficiencies bench/calibrate.py fitted on the other half, the cross-validation it recorded, and the
rows added after the model's structure was frozen. No fit runs here (bench/calibrate.py does that)."""
import dataclasses

import pytest

from components.catalog import ACCELERATORS, MODELS
from components.catalog.measurements import blind_batches, every_row, usable
from components.planner import calibrated
from components.planner.calibration import FRESH_SINCE_FREEZE, calibration_rows, split, stratum, summary

TARGET_MEDIAN_TPOT_ERROR = 0.15  # issue 14
# What the model reaches today (docs/capacity.md); a change that makes any of them worse fails.
ACHIEVED = {"held out": {"tpot_median": 0.16, "throughput_median": 0.22},  # 15.9 %, 20.2 %
            "fresh": {"tpot_median": 0.31, "throughput_median": 0.54},  # 30.9 %, 53.3 % (135 rows)
            "blind": {"tpot_median": 0.37, "throughput_median": 0.40},  # 36.2 %, 39.4 % (27 rows)
            "blind3": {"tpot_median": 0.28, "throughput_median": 0.28},  # 28.0 %, 27.5 % (33 rows)
            # 29.7 %; throughput 204 %: in a 40-prompt ShareGPT burst the longest reply sets the run's length, and the
            # replay's identical requests (mean lengths) finish together (docs/capacity.md "Fourth blind batch")
            "blind4": {"tpot_median": 0.30, "throughput_median": 2.05},
            "blind5": {"tpot_median": 0.23, "throughput_median": 0.35}}  # 22.5 %, 34.5 % (28 rows)
POINTS = {"blind": 27, "blind3": 33, "blind4": 35, "blind5": 28}  # usable rows of each blind batch


@pytest.fixture(scope="module")
def rows():
    return calibration_rows(calibrated.RESULTS)


@pytest.fixture(scope="module")
def held_out(rows):
    """The held-out half of the split (the rows the structure was chosen with, less the fit half)."""
    fit, test = split(rows)
    return summary([m for m in test if m.id not in FRESH_SINCE_FREEZE])


@pytest.fixture(scope="module")
def fresh(rows):
    """Rows added after the structure was frozen: always held out, never fitted on."""
    return summary([m for m in rows if m.id in FRESH_SINCE_FREEZE])


@pytest.fixture(scope="module")
def batches(rows):
    """Each blind batch (measurements.blind_batches): the one-shot test of the constants and variants of its day."""
    return {name: summary([m for m in rows if m.id in {b.id for b in batch}])
            for name, batch in blind_batches().items()}


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


def test_held_out_error_is_reported_and_no_worse_than_today(held_out, fresh, batches, capsys):
    with capsys.disabled():
        print("\n" + _line("held out (the split's half)", held_out) + "\n" + _line("fresh (all held out)", fresh)
              + "".join("\n" + _line(f"  of which read blind, batch {name!r}", s) for name, s in batches.items()))
    assert held_out["points"] >= 13 and held_out["skipped"] == 0
    assert fresh["points"] == len(FRESH_SINCE_FREEZE) >= 135 and fresh["skipped"] == 0
    assert {name: s["points"] for name, s in batches.items()} == POINTS
    assert all(s["skipped"] == 0 for s in batches.values())
    for name, s in (("held out", held_out), ("fresh", fresh), *batches.items()):
        for k, limit in ACHIEVED[name].items():
            assert s[k] <= limit, f"{name} {k} {s[k]:.1%} is worse than today's {limit:.0%}"


@pytest.mark.xfail(strict=True, reason="issue 14's target is not met: held-out median TPOT error 15.9 %, 30.9 % on "
                                       "the 135 rows added after the structure was frozen (four batches read blind: "
                                       "36.2 %, 28.0 %, 29.7 %, 22.5 %; docs/capacity.md); strict: a change that meets "
                                       "it fails here until this marker goes")
def test_median_tpot_error_meets_the_target(held_out, fresh):
    for name, s in (("held-out", held_out), ("fresh", fresh)):
        assert s["tpot_median"] <= TARGET_MEDIAN_TPOT_ERROR, (
            f"{name} median TPOT error {s['tpot_median']:.1%} exceeds the {TARGET_MEDIAN_TPOT_ERROR:.0%} target")


def test_the_planners_latency_margin_covers_the_held_out_median_error(held_out):
    from components.planner.capacity import LATENCY_MARGIN
    assert LATENCY_MARGIN >= held_out["tpot_median"], (
        f"capacity.LATENCY_MARGIN {LATENCY_MARGIN:.0%} is below the held-out median TPOT error "
        f"{held_out['tpot_median']:.1%}: raise it (the knee must keep the estimate that far under the SLA)")


def test_the_fresh_rows_are_held_out_and_never_fitted(rows):
    fit, test = split(rows)
    assert not set(FRESH_SINCE_FREEZE) & {m.id for m in fit}
    assert set(FRESH_SINCE_FREEZE) <= {m.id for m in test}
    # both evaluation paths are tested on fresh rows: the closed-loop steady state and the burst replay
    assert {m.mode for m in rows if m.id in FRESH_SINCE_FREEZE} == {"closed", "burst"}
    # every usable blind row is fresh; the unusable ones say why
    blind = [m for batch in blind_batches().values() for m in batch]
    assert {m.id for m in blind if m.usable} <= set(FRESH_SINCE_FREEZE)
    assert sum(not m.usable for m in blind) == 21 and all("NOT USABLE" in m.notes for m in blind if not m.usable)
    first = blind_batches()["blind"]
    assert [m.id for m in first if not m.usable] == [f"tt-qwen72b-h100-tp2-c1-{n}x128" for n in (128, 1024, 2048, 4096, 8192)]
    assert all("NOT USABLE" in m.notes for m in first if not m.usable)


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
    assert (calibrated.HBM_EFFICIENCY, calibrated.KV_HBM_EFFICIENCY, calibrated.MFU) == (0.85, 0.15, 0.4)
    assert (calibrated.STEP_OVERHEAD_S, calibrated.SEQ_OVERHEAD_S) == (0.0005, 0.00012)
    assert calibrated.HBM_EFFICIENCY <= 0.90  # the best decode kernels reach ~0.8-0.9 of peak HBM bandwidth
    assert calibrated.AT_GRID_EDGE == ("step_overhead_s=0.0005 (bottom)",)


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
