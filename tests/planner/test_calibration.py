"""The capacity model against published vLLM measurements: error on the held-out half of
components/catalog/measurements.py, with the efficiencies bench/calibrate.py fitted on the other half."""
import pytest

from components.catalog import ACCELERATORS, MODELS
from components.catalog.measurements import MEASUREMENTS, usable
from components.planner import calibrated
from components.planner.calibration import split, summary

TARGET_MEDIAN_TPOT_ERROR = 0.15  # issue 14
# What the model reaches today (docs/capacity.md: 14.0 % and 29.0 %); a change that makes it worse fails here.
ACHIEVED_MEDIAN_THROUGHPUT_ERROR = 0.30


@pytest.fixture(scope="module")
def held_out():
    fit, test = split()
    return summary(test)


def test_the_table_names_its_sources_and_marks_what_is_inferred():
    for m in MEASUREMENTS:
        assert m.gpu in ACCELERATORS and m.model in MODELS, m.id
        assert m.source and m.date and m.vllm, m.id
        if not m.usable:
            assert "⚠" in m.notes, m.id
    ids = [m.id for m in MEASUREMENTS]
    assert len(ids) == len(set(ids))


def test_the_split_is_the_one_the_constants_were_fitted_on():
    fit, test = split()
    assert tuple(m.id for m in fit) == calibrated.TRAIN and tuple(m.id for m in test) == calibrated.TEST
    assert not set(calibrated.TRAIN) & set(calibrated.TEST)
    assert len(fit) + len(test) == len(usable())


def test_held_out_error_is_reported(held_out, capsys):
    with capsys.disabled():
        print(f"\nheld-out ({held_out['points']} points): TPOT median {held_out['tpot_median']:.1%}, "
              f"worst {held_out['tpot_worst']:.1%}; throughput median {held_out['throughput_median']:.1%}, "
              f"worst {held_out['throughput_worst']:.1%}")
    assert held_out["points"] >= 14 and held_out["skipped"] == 0
    assert held_out["throughput_median"] <= ACHIEVED_MEDIAN_THROUGHPUT_ERROR


def test_median_tpot_error_meets_the_target(held_out):
    assert held_out["tpot_median"] <= TARGET_MEDIAN_TPOT_ERROR, (
        f"held-out median TPOT error {held_out['tpot_median']:.1%} exceeds the {TARGET_MEDIAN_TPOT_ERROR:.0%} target")


def test_the_fitted_constants_are_the_ones_calibrate_wrote():
    # bench/calibrate.py on the fit half (docs/capacity.md); a hand edit or a refit shows here
    assert (calibrated.HBM_EFFICIENCY, calibrated.KV_HBM_EFFICIENCY, calibrated.MFU) == (0.95, 0.15, 0.45)
    assert (calibrated.STEP_OVERHEAD_S, calibrated.SEQ_OVERHEAD_S) == (0.001, 0.00012)
