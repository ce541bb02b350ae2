"""The real-engine run splits its stacks between control planes side by side (tests/e2e/run.py --lanes)."""
from __future__ import annotations

from tests.e2e.run import DEFAULT_STACK_S, split_lanes


def test_the_longest_stacks_go_to_different_lanes_and_each_lane_keeps_the_given_order():
    seconds = {"dev": 1200, "a": 600, "b": 500, "c": 400, "d": 300}
    lanes = split_lanes(["dev", "a", "b", "c", "d"], 2, seconds)
    assert lanes == [["dev", "d"], ["a", "b", "c"]]
    assert [sum(seconds[n] for n in lane) for lane in lanes] == [1500, 1500]


def test_a_stack_never_run_weighs_the_default_and_one_lane_takes_everything():
    assert split_lanes(["x", "y", "z"], 2, {"x": DEFAULT_STACK_S * 2}) == [["x"], ["y", "z"]]
    assert split_lanes(["x", "y"], 1, {}) == [["x", "y"]]
    assert split_lanes(["x"], 3, {}) == [["x"]]  # no empty lane (no control plane started for nothing)


def test_the_runs_remember_what_each_passing_stack_took(tmp_path):
    from tests.e2e.run import Report, keep_seconds, last_seconds
    kept = tmp_path / "stack-seconds.json"
    assert last_seconds(kept) == {}
    report = Report(tmp_path / "report.json")
    report.data["stacks"] = {"dev": {"seconds": 1200.5, "ok": True}, "pd": {"seconds": 90, "ok": False}}
    keep_seconds(kept, report)
    report.data["stacks"] = {"lws": {"seconds": 480, "ok": True}}
    keep_seconds(kept, report)
    assert last_seconds(kept) == {"dev": 1200.5, "lws": 480.0}  # a failed stack's time says nothing
