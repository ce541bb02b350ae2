"""Where a GPU pool's nodes come from, decided before anything is created.

On-demand and spot pools are checked against EC2 instance-type offerings, which only validate: a
single-node pool keeps every private subnet of the cluster (its Auto Scaling group skips zones without the
type), so that the node group's subnets, which EKS cannot change in place (a new subnet list replaces the
group, and its GPUs), never follow a live offerings answer. A pool whose replicas span nodes (EFA) goes to
the first zone.
Reserved capacity is used as reserved: the zone and the instance type come from the reservation itself
(an On-Demand Capacity Reservation or a Capacity Block), never from config; a Capacity Block's group
stays at zero nodes until the block starts and is scaled on the block's own dates.

Every GPU group is created empty (min and desired 0) and Cluster Autoscaler adds nodes as pods ask for
them: a group created at its planned size makes EKS wait for those instances, and an
InsufficientInstanceCapacity (or a Capacity Block not yet active) fails the node group, and with it the
whole `pulumi up`. Min stays 0 too: EKS refuses a min above the desired size, and the desired size is
the autoscaler's after creation (ignore_changes), so a planned min > 0 could never be applied to a
deployed group. Nodes a model's min replicas run on are held by those pods: Cluster Autoscaler removes
only nodes whose pods fit elsewhere.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
import pulumi
import pulumi_aws as aws

from ...config.schema import AwsSettings
from ..pools import PoolSpec

CAPACITY_TYPES = {"onDemand": "ON_DEMAND", "spot": "SPOT", "reservation": "ON_DEMAND", "capacityBlock": "CAPACITY_BLOCK"}
# EC2 starts terminating a Capacity Block's instances 30 minutes before its end time
# (docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-using.html): the group scales in then, so
# that neither the node group nor Cluster Autoscaler keeps asking for capacity that no longer exists.
BLOCK_TERMINATION_LEAD = timedelta(minutes=30)
SCHEDULE_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
ODCR_TYPE = "AWS::EC2::CapacityReservation"


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def reserved(settings: AwsSettings) -> bool:
    return settings.capacity_type in ("reservation", "capacityBlock")


def uses_efa(spec: PoolSpec) -> bool:
    """EFA, a placement group and one zone only where a replica spans nodes: a single-node replica
    talks over NVLink, and a placement group would only narrow where EC2 can find capacity."""
    return spec.multi_node and spec.instance.efa_interfaces > 0


# EKS's smallest maxSize (NodegroupScalingConfig: min and desired may be 0, max may not).
EKS_MIN_MAX_SIZE = 1


def scaling(spec: PoolSpec) -> dict[str, int]:
    """A GPU group's scaling config: created empty, the plan's max caps the bill (module docstring)."""
    return {"min_size": 0, "desired_size": 0, "max_size": max(EKS_MIN_MAX_SIZE, spec.max_nodes)}


@dataclass
class PoolPlacement:
    """Where one GPU pool's nodes go and how many there may be, from plain values known at preview."""
    subnet_indexes: list[int]  # into NetworkFacts.private_subnet_ids
    scaling: dict[str, int]
    # (name suffix, start time, sizes) of scheduled actions on the group's Auto Scaling group
    schedules: list[tuple[str, str, dict[str, int]]] = field(default_factory=list)


def _field(spec: PoolSpec) -> str:
    return f"aws.capacityReservations.{spec.instance.name}"


def offered_subnets(spec: PoolSpec, zonal: bool, zones: list[str], offered: set[str], zones_field: str
                    ) -> tuple[list[int], list[str]]:
    """Indexes of the subnets a pool uses: zonal (EFA) pools the first zone's only, every other pool all of
    them, whatever the offerings say (they change over time; the group's subnets must not). A problem line
    when the instance type is not offered where the pool must go: in the first zone for a zonal pool, in
    at least one zone for any other."""
    itype = spec.instance.name
    where = ", ".join(z for z in zones if z in offered) or "none of them"
    if zonal:
        if zones[0] in offered:
            return [0], []
        return [], [f"{zones_field}: {itype} is not offered in {zones[0]}, the first zone, where pools whose "
                    f"replicas span nodes (EFA) go; offered in: {where}; put one of those first"]
    if any(z in offered for z in zones):
        return list(range(len(zones))), []
    return [], [f"{zones_field}: {itype} is not offered in any of {', '.join(zones)}; choose zones that offer it"]


def block_schedules(spec: PoolSpec, start: str, end: str, instances: int, now: datetime
                    ) -> tuple[dict, list, list[str]]:
    """(scaling, scheduled actions, problems) for a Capacity Block of `instances` from its own dates. The
    group may never ask for more nodes than the block holds (a capacity-block launch goes nowhere else).
    Before the block starts EC2 refuses every launch into it, so the group waits at EKS's smallest max (1:
    a pod Pending early makes Cluster Autoscaler try one node, which fails until the start and is retried);
    at the start a scheduled action opens it to the plan's max and launches the planned nodes (the block is
    paid for); shortly before its end it goes back to zero. A rerun during the block keeps the plan's max."""
    t0, t1 = (datetime.fromisoformat(d.replace("Z", "+00:00")) for d in (start, end))
    scale_in = t1 - BLOCK_TERMINATION_LEAD
    planned = scaling(spec)
    if spec.max_nodes > instances:
        return planned, [], [f"{_field(spec)}: the Capacity Block holds {instances} instances, but pool {spec.name} "
                             f"may grow to {spec.max_nodes} nodes (the models' replicas.max); lower replicas.max "
                             f"or buy a block of {spec.max_nodes} instances"]
    if now >= scale_in:
        return planned, [], [f"{_field(spec)}: the Capacity Block ends {end}; buy a new block and put its id here"]
    closed = {"min_size": 0, "desired_size": 0, "max_size": EKS_MIN_MAX_SIZE}
    schedules = [("block-end", scale_in.strftime(SCHEDULE_FORMAT), {**closed, "max_size": 0})]
    if now < t0:
        opened = {**planned, "desired_size": spec.desired_nodes}
        return closed, [("block-start", t0.strftime(SCHEDULE_FORMAT), opened), *schedules], []
    return planned, schedules, []


def plan_placement(spec: PoolSpec, settings: AwsSettings, zones: list[str], zones_field: str,
                   invoke: pulumi.InvokeOptions, now: datetime) -> tuple[PoolPlacement | None, list[str]]:
    """Ask EC2 where the pool can run; problems name the field to change."""
    if settings.capacity_type == "capacityBlock":
        rid = settings.capacity_reservations.get(spec.instance.name)
        if rid is None:
            return None, []  # reported by the component's check
        block = aws.ec2.get_capacity_block_reservation(id=rid, opts=invoke)
        problems = reservation_problems(spec, rid, block.instance_type, block.availability_zone, zones, zones_field)
        sizes, schedules, late = block_schedules(spec, block.start_date, block.end_date, block.instance_count,
                                                 now)
        if problems or late:
            return None, problems + late
        return PoolPlacement([zones.index(block.availability_zone)], sizes, schedules), []
    if settings.capacity_type == "reservation":
        rid = settings.capacity_reservations.get(spec.instance.name)
        if rid is None:
            return None, []
        # No EC2 invoke reads an On-Demand Capacity Reservation (getCapacityBlockReservation answers only for
        # blocks); Cloud Control reads it by id (ec2:DescribeCapacityReservations underneath).
        odcr = json.loads(aws.cloudcontrol.get_resource(type_name=ODCR_TYPE, identifier=rid, opts=invoke).properties)
        zone = odcr["AvailabilityZone"]
        problems = reservation_problems(spec, rid, odcr["InstanceType"], zone, zones, zones_field)
        group = (odcr.get("PlacementGroupArn") or "").rsplit("/", 1)[-1]
        if group and group != settings.placement_group:
            problems.append(f"aws.placementGroup: {rid} was created in placement group {group}; instances use "
                            f"it only when launched there, so set placementGroup: {group}")
        if problems:
            return None, problems
        return PoolPlacement([zones.index(zone)], scaling(spec)), []
    offered = set(aws.ec2.get_instance_type_offerings(
        location_type="availability-zone", opts=invoke,
        filters=[{"name": "instance-type", "values": [spec.instance.name]},
                 {"name": "location", "values": list(zones)}]).locations)
    indexes, problems = offered_subnets(spec, uses_efa(spec), zones, offered, zones_field)
    return (PoolPlacement(indexes, scaling(spec)) if not problems else None), problems


def reservation_problems(spec: PoolSpec, rid: str, reserved_type: str, zone: str, zones: list[str],
                         zones_field: str) -> list[str]:
    problems = []
    if reserved_type != spec.instance.name:
        problems.append(f"{_field(spec)}: {rid} reserves {reserved_type}, not the planned {spec.instance.name}; "
                        f"name a reservation of {spec.instance.name}")
    if zone not in zones:
        problems.append(f"{zones_field}: {rid} is in {zone}, where the cluster has no subnet "
                        f"({', '.join(zones)}); add {zone}")
    return problems


def schedule_actions(name: str, asg: pulumi.Output, placement: PoolPlacement, parent: pulumi.Resource) -> list:
    return [aws.autoscaling.Schedule(f"{name}-{suffix}", autoscaling_group_name=asg,
                                     scheduled_action_name=f"{name}-{suffix}", start_time=when,
                                     min_size=sizes["min_size"], max_size=sizes["max_size"],
                                     desired_capacity=sizes["desired_size"],
                                     opts=pulumi.ResourceOptions(parent=parent))
            for suffix, when, sizes in placement.schedules]
