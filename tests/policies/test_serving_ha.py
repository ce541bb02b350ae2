"""The advisory that a RayService with upgradeStrategy None leaves cluster spec changes to a maintenance window."""
from __future__ import annotations

from policies.rules import evaluate_plan
from policies.rules.core import ADVISORY, RULES
from tests.support.plans import planned

RULE = "rayservice-cluster-changes-need-a-window"
RAYSERVICE = "kubernetes:ray.io/v1:RayService"


def _rule():
    (r,) = [r for r in RULES if r.name == RULE]
    return r


def test_upgrade_strategy_none_is_reported_as_advisory():
    r = _rule()
    assert r.level == ADVISORY
    props = {"metadata": {"name": "llama-405b"}, "spec": {"upgradeStrategy": {"type": "None"}}}
    assert r.messages(RAYSERVICE, props) == [
        "RayService llama-405b: upgradeStrategy None; a RayCluster spec change needs the maintenance-window step"]


def test_strategies_that_roll_the_cluster_are_not_reported():
    for strategy in ("NewCluster", "NewClusterWithIncrementalUpgrade"):
        assert _rule().messages(RAYSERVICE, {"metadata": {"name": "x"},
                                             "spec": {"upgradeStrategy": {"type": strategy}}}) == []


def test_the_shipped_405b_stack_gets_the_advisory_and_the_70b_stack_does_not():
    got = [v for v in evaluate_plan(planned("prod-llama405b-onprem")) if v.rule == RULE]
    assert len(got) == 1 and got[0].level == ADVISORY and "RayService llama-405b" in got[0].message
    assert not [v for v in evaluate_plan(planned("prod-llama70b-aws")) if v.rule == RULE]
