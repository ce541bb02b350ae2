"""Zones are pinned (issue 36): a deployed stack keeps the zones its cluster runs in whatever getAvailabilityZones
answers after an AZ event; configured zones are checked against the account's; production is told to pin them."""
import pulumi
import pytest

import components.offline.aws_stubs as stubs
from components.config import ConfigError
from tests.cluster.aws.test_capacity import subnet_ids
from tests.support.aws import G6, NG
from tests.support.plans import by_type, plan_config

US = {**G6, "aws": {**G6["aws"], "region": "us-east-1"}}


def planned_zones(res) -> list[str]:
    return sorted(subnet_ids(res))


def test_a_deployed_stack_keeps_its_clusters_zones_when_the_live_answer_changes(monkeypatch):
    """us-east-1a impaired: the live answer (state available) no longer lists it. A first run would pick b, c, d;
    a deployed cluster in a, b, c keeps them: no subnet, NAT gateway or node group is re-planned."""
    monkeypatch.setattr(stubs, "IMPAIRED_ZONES", {"us-east-1a"})
    res, _ = plan_config(US)
    assert planned_zones(res) == ["us-east-1b", "us-east-1c", "us-east-1d"]  # a new stack: the live answer
    monkeypatch.setitem(stubs.EXISTING_CLUSTERS, "vllm", {"version": "1.35", "tags": {}})
    res, _ = plan_config(US)
    assert planned_zones(res) == ["us-east-1a", "us-east-1b", "us-east-1c"]
    assert sorted(r.name for r in by_type(res, NG) if "-system-" in r.name) == [
        f"vllm-cluster-nodes-system-us-east-1{z}" for z in "abc"]


def test_a_zone_the_account_does_not_have_is_refused_before_anything_is_created():
    with pytest.raises(pulumi.RunError) as err:
        plan_config({**US, "aws": {**US["aws"], "availabilityZones": ["us-east-1a", "us-east-1g"]}})
    assert isinstance(err.value.__cause__, ConfigError)
    assert ("aws.availabilityZones: us-east-1g: no such Availability Zone in us-east-1 for this account (its zones: "
            "us-east-1a, us-east-1b, us-east-1c, us-east-1d, us-east-1e, us-east-1f); e.g. availabilityZones: "
            "[us-east-1a, us-east-1b, us-east-1c]") in str(err.value)


def test_an_impaired_configured_zone_is_a_warning_not_a_refusal(monkeypatch):
    warned = []
    monkeypatch.setattr(pulumi.log, "warn", lambda msg, *a, **k: warned.append(msg))
    monkeypatch.setattr(stubs, "IMPAIRED_ZONES", {"us-east-1b"})
    res, _ = plan_config({**US, "aws": {**US["aws"], "availabilityZones": ["us-east-1a", "us-east-1b"]}})
    assert planned_zones(res) == ["us-east-1a", "us-east-1b"]
    assert any(w.startswith("aws.availabilityZones: us-east-1b not in state `available` in us-east-1") for w in warned)


def test_production_without_zones_is_told_the_line_to_pin(monkeypatch):
    from tests.cluster.aws.test_teardown import PROD
    warned = []
    monkeypatch.setattr(pulumi.log, "warn", lambda msg, *a, **k: warned.append(msg))
    aws = {k: v for k, v in PROD["aws"].items() if k != "availabilityZones"}
    plan_config({**PROD, "aws": aws})
    assert ("aws.availabilityZones: not set; the cluster gets the region's first three (us-east-1a, us-east-1b, "
            "us-east-1c). Pin them in the stack file: availabilityZones: [us-east-1a, us-east-1b, us-east-1c]"
            in warned)
    warned.clear()
    plan_config(PROD)
    assert not [w for w in warned if w.startswith("aws.availabilityZones")]
