"""Reserved capacity is used as reserved: zone, type and dates come from EC2, offerings are checked for the
zone a pool goes to, and a Capacity Block's group is scaled on the block's own dates."""
from datetime import datetime, timezone

import pulumi
import pytest

import components.cluster.aws.capacity as capacity
import components.offline.aws_stubs as stubs
from components.config import ConfigError
from components.offline.mocks import CLOUD_OUTPUTS
from tests.support.plans import by_type, one, plan_config

NG = "aws:eks/nodeGroup:NodeGroup"
LT = "aws:ec2/launchTemplate:LaunchTemplate"
SUBNET = "aws:ec2/subnet:Subnet"
SCHEDULE = "aws:autoscaling/schedule:Schedule"
BLOCK = "cr-0123456789abcdef0"  # the stubs' Capacity Block: p5.48xlarge in us-east-1b, 2027-03-01 to 03-15
ODCR = "cr-0fedcba9876543210"  # the stubs' On-Demand Capacity Reservation: p5.48xlarge in us-east-1c
SMALL = {"name": "chat", "model": "llama-3.1-8b", "maxModelLen": 8192, "sla": {"concurrency": 4},
         "replicas": {"min": 1, "max": 2}}
# replicas.max 3 (was 2): under the 0.35 margin a TP 8 x PP 2 replica holds 13 users and no shape holds 32 in 2
# replicas; 3 replicas x 2 p5 nodes keep the pool at 6 nodes, the stubs' whole 6-instance Capacity Block
BIG = {"name": "big", "model": "llama-3.1-405b", "precision": "bf16", "instanceTypes": ["p5.48xlarge"],
       "maxModelLen": 32768, "sla": {"ttftMs": 3000, "tpotMs": 80, "concurrency": 32}, "replicas": {"min": 1, "max": 3}}


def config(itype="p5.48xlarge", models=None, **aws):
    return {"cloud": "aws", "environment": "dev", "models": models or [{**SMALL, "instanceTypes": [itype]}],
            "aws": {"region": "us-east-1", "endpointPublicAccessCidrs": ["203.0.113.7/32"], **aws}}


def at(monkeypatch, when: str):
    monkeypatch.setattr(capacity, "utcnow", lambda: datetime.fromisoformat(when).replace(tzinfo=timezone.utc))


def subnet_ids(res) -> dict[str, str]:
    """zone -> id of the private subnet the stack created there"""
    return {r.inputs["availabilityZone"]: CLOUD_OUTPUTS[SUBNET](r.name, r.inputs)["id"]
            for r in by_type(res, SUBNET) if "-private-" in r.name}


def gpu(res, typ, suffix="gpu-p5-48xlarge"):
    (found,) = [r for r in by_type(res, typ) if suffix in r.name]
    return found


def config_error(values) -> str:
    with pytest.raises(pulumi.RunError) as err:
        plan_config(values)
    assert isinstance(err.value.__cause__, ConfigError)
    return str(err.value)


BLOCK_STACK = dict(capacityType="capacityBlock", capacityReservations={"p5.48xlarge": BLOCK})
ODCR_STACK = dict(capacityType="reservation", capacityReservations={"p5.48xlarge": ODCR})


def test_a_capacity_block_group_waits_closed_in_the_blocks_zone_and_is_scheduled_on_its_dates(monkeypatch):
    """Before the block EC2 refuses every launch into it: the group is created empty at EKS's smallest max (1),
    the block's start opens it to the plan's max and launches the planned nodes (405B: 2 replicas x 2 nodes, TP 8
    x PP 2, 4 of the 6-instance block; its max opens to all 6), its end closes it."""
    at(monkeypatch, "2027-02-01T00:00:00")
    res, _ = plan_config(config(models=[BIG], **BLOCK_STACK))
    group = gpu(res, NG)
    assert group.inputs["subnetIds"] == [subnet_ids(res)["us-east-1b"]]  # the block's zone, not the first one
    assert group.inputs["capacityType"] == "CAPACITY_BLOCK"
    assert group.inputs["scalingConfig"] == {"minSize": 0, "desiredSize": 0, "maxSize": 1}
    asg = CLOUD_OUTPUTS[NG](group.name, group.inputs)["resources"][0]["autoscalingGroups"][0]["name"]
    schedules = {r.inputs["scheduledActionName"]: r.inputs for r in by_type(res, SCHEDULE)}
    start = schedules["vllm-cluster-nodes-gpu-p5-48xlarge-block-start"]
    end = schedules["vllm-cluster-nodes-gpu-p5-48xlarge-block-end"]
    assert start["autoscalingGroupName"] == end["autoscalingGroupName"] == asg
    assert (start["startTime"], start["minSize"], start["desiredCapacity"], start["maxSize"]) == (
        "2027-03-01T11:30:00Z", 0, 4, 6)
    # EC2 starts terminating the block's instances 30 minutes before its end
    assert (end["startTime"], end["minSize"], end["desiredCapacity"], end["maxSize"]) == ("2027-03-15T11:00:00Z", 0, 0, 0)
    lt = gpu(res, LT).inputs
    assert lt["instanceMarketOptions"] == {"marketType": "capacity-block"}
    assert lt["capacityReservationSpecification"] == {"capacityReservationTarget": {"capacityReservationId": BLOCK}}


def test_a_rerun_during_the_block_keeps_the_planned_max_and_only_the_end_schedule(monkeypatch):
    at(monkeypatch, "2027-03-05T00:00:00")
    res, _ = plan_config(config(models=[BIG], **BLOCK_STACK))
    assert gpu(res, NG).inputs["scalingConfig"] == {"minSize": 0, "desiredSize": 0, "maxSize": 6}
    assert [r.inputs["scheduledActionName"] for r in by_type(res, SCHEDULE)] == [
        "vllm-cluster-nodes-gpu-p5-48xlarge-block-end"]


def test_a_pool_that_may_outgrow_its_capacity_block_is_a_config_error(monkeypatch):
    at(monkeypatch, "2027-02-01T00:00:00")
    monkeypatch.setitem(stubs.RESERVATIONS, BLOCK, {**stubs.RESERVATIONS[BLOCK], "instanceCount": 2})
    assert ("aws.capacityReservations.p5.48xlarge: the Capacity Block holds 2 instances, but pool gpu-p5-48xlarge "
            "may grow to 6 nodes (the models' replicas.max); lower replicas.max or buy a block of 6 instances"
            in config_error(config(models=[BIG], **BLOCK_STACK)))


def test_an_ended_block_and_a_block_of_another_type_or_zone_are_config_errors(monkeypatch):
    at(monkeypatch, "2027-03-15T11:10:00")
    assert ("aws.capacityReservations.p5.48xlarge: the Capacity Block ends 2027-03-15T11:30:00Z; buy a new block"
            in config_error(config(**BLOCK_STACK)))
    at(monkeypatch, "2027-02-01T00:00:00")
    message = config_error(config("p5en.48xlarge", capacityType="capacityBlock",
                                  capacityReservations={"p5en.48xlarge": BLOCK}))
    assert f"aws.capacityReservations.p5en.48xlarge: {BLOCK} reserves p5.48xlarge, not the planned p5en.48xlarge" in message
    message = config_error(config(**BLOCK_STACK, availabilityZones=["us-east-1a", "us-east-1c"]))
    assert (f"aws.availabilityZones: {BLOCK} is in us-east-1b, where the cluster has no subnet (us-east-1a, "
            f"us-east-1c); add us-east-1b") in message


def test_an_odcr_pool_goes_to_the_reservations_zone_without_a_new_placement_group():
    res, _ = plan_config(config(models=[BIG], **ODCR_STACK))
    group = gpu(res, NG)
    assert group.inputs["subnetIds"] == [subnet_ids(res)["us-east-1c"]]
    assert group.inputs["capacityType"] == "ON_DEMAND"
    lt = gpu(res, LT).inputs
    assert lt["capacityReservationSpecification"] == {"capacityReservationTarget": {"capacityReservationId": ODCR}}
    assert "placement" not in lt and by_type(res, "aws:ec2/placementGroup:PlacementGroup") == []
    assert by_type(res, SCHEDULE) == []


def test_an_odcr_in_a_placement_group_needs_that_group_named(monkeypatch):
    arn = "arn:aws:ec2:us-east-1:123456789012:placement-group/odcr-pg"
    monkeypatch.setitem(stubs.RESERVATIONS, ODCR, {**stubs.RESERVATIONS[ODCR], "placementGroupArn": arn})
    message = config_error(config(models=[BIG], **ODCR_STACK))
    assert f"aws.placementGroup: {ODCR} was created in placement group odcr-pg" in message
    res, _ = plan_config(config(models=[BIG], placementGroup="odcr-pg", **ODCR_STACK))
    assert gpu(res, LT).inputs["placement"] == {"groupName": "odcr-pg"}


def test_an_odcr_of_another_type_is_a_config_error():
    message = config_error(config("p5en.48xlarge", capacityType="reservation",
                                  capacityReservations={"p5en.48xlarge": ODCR}))
    assert f"aws.capacityReservations.p5en.48xlarge: {ODCR} reserves p5.48xlarge, not the planned p5en.48xlarge" in message


def test_an_efa_pool_needs_its_type_offered_in_the_first_zone(monkeypatch):
    monkeypatch.setitem(stubs.NOT_OFFERED, "us-east-1a", {"p5.48xlarge"})
    message = config_error(config(models=[BIG]))
    assert ("aws.availabilityZones: p5.48xlarge is not offered in us-east-1a, the first zone, where pools whose "
            "replicas span nodes (EFA) go; offered in: us-east-1b, us-east-1c; put one of those first") in message
    res, _ = plan_config(config(models=[BIG], availabilityZones=["us-east-1b", "us-east-1a", "us-east-1c"]))
    assert gpu(res, NG).inputs["subnetIds"] == [subnet_ids(res)["us-east-1b"]]


def test_a_single_node_pools_subnets_do_not_follow_the_offerings_answer(monkeypatch):
    """A node group's subnet list cannot change in place (EKS replaces the group, GPUs and all): a single-node
    pool keeps every private subnet whatever EC2 offers today; the offerings only refuse a type offered nowhere."""
    res, _ = plan_config(config("g6.xlarge"))
    zones = subnet_ids(res)
    everywhere = sorted(zones.values())
    assert len(everywhere) == 3
    assert sorted(gpu(res, NG, "gpu-g6-xlarge").inputs["subnetIds"]) == everywhere
    monkeypatch.setitem(stubs.NOT_OFFERED, "us-east-1a", {"g6.xlarge"})
    res, _ = plan_config(config("g6.xlarge"))
    assert sorted(gpu(res, NG, "gpu-g6-xlarge").inputs["subnetIds"]) == everywhere
    assert len(one(res, "aws:eks/cluster:Cluster").inputs["vpcConfig"]["subnetIds"]) == 3
    for zone in ("us-east-1b", "us-east-1c"):
        monkeypatch.setitem(stubs.NOT_OFFERED, zone, {"g6.xlarge"})
    assert ("aws.availabilityZones: g6.xlarge is not offered in any of us-east-1a, us-east-1b, us-east-1c"
            in config_error(config("g6.xlarge")))


def test_a_given_vpcs_zones_come_from_its_subnets_and_errors_name_subnet_ids(monkeypatch):
    vpc = {"vpcId": "vpc-0123456789abcdef0", "subnetIds": ["subnet-0123456789abcdef0", "subnet-0fedcba9876543210"]}
    zones = [stubs._get_subnet({"id": s})["availabilityZone"] for s in vpc["subnetIds"]]
    monkeypatch.setitem(stubs.NOT_OFFERED, zones[0], {"p5.48xlarge"})
    message = config_error(config(models=[BIG], **vpc))
    assert f"aws.subnetIds: p5.48xlarge is not offered in {zones[0]}, the first zone" in message


def test_cluster_autoscaler_owns_the_gpu_groups_desired_size():
    """Created at 0, then resized by Cluster Autoscaler (or a Capacity Block's start action): a later `pulumi up`
    ignores the desired size (no diff on every run, no size read at preview sent over the autoscaler's newer
    one), as GKE ignores its node count; and no group is replaced over it."""
    res, _ = plan_config(config(models=[BIG]))  # first `pulumi up`: no cluster yet, the group is created empty
    # max 6: 3 replicas x 2 nodes (TP 8 x PP 2)
    group = gpu(res, NG)
    assert group.inputs["scalingConfig"] == {"minSize": 0, "desiredSize": 0, "maxSize": 6}
    assert group.ignore_changes == ("scalingConfig.desiredSize",)


def test_a_run_that_changes_a_groups_bounds_sends_its_live_size_not_the_stored_one(monkeypatch):
    """The provider sends the whole scaling config when min or max change: with the desired size ignored it would
    send the stored one (0: a running Capacity Block fleet scaled to zero). That run sends the live size, within
    the new bounds; a run with the bounds unchanged keeps ignoring it."""
    live = {"minSize": 0, "desiredSize": 3, "maxSize": 4}  # deployed at max 4; the plan now says 6
    monkeypatch.setitem(stubs.EXISTING_CLUSTERS, "vllm", {"version": "1.35", "tags": {}})
    monkeypatch.setitem(stubs.EXISTING_NODE_GROUPS, "vllm", {
        "vllm-cluster-nodes-gpu-p5-48xlarge-0a1b2c3": live, "hand-made-group": 7})
    res, _ = plan_config(config(models=[BIG]))
    group = gpu(res, NG)
    assert group.inputs["scalingConfig"] == {"minSize": 0, "desiredSize": 3, "maxSize": 6}
    assert group.ignore_changes == ()
    # bounds as deployed: ignored again
    monkeypatch.setitem(stubs.EXISTING_NODE_GROUPS, "vllm", {
        "vllm-cluster-nodes-gpu-p5-48xlarge-0a1b2c3": {**live, "maxSize": 6}})
    assert gpu(plan_config(config(models=[BIG]))[0], NG).ignore_changes == ("scalingConfig.desiredSize",)
    # a group the autoscaler left above a lowered max is sent the max (EKS refuses desired > max)
    monkeypatch.setitem(stubs.EXISTING_NODE_GROUPS, "vllm", {
        "vllm-cluster-nodes-gpu-p5-48xlarge-0a1b2c3": {"minSize": 0, "desiredSize": 9, "maxSize": 9}})
    res, _ = plan_config(config(models=[BIG]))
    assert gpu(res, NG).inputs["scalingConfig"]["desiredSize"] == 6
