"""A reservation or Capacity Block is bought for the nodes the pool may grow to and billed for all of them
whether used or not (review of issue 14, item A): cost at min and at max is the reserved node count times
the rate, and the GPUs of reserved-but-unused nodes are idle paid GPUs. Figures as `plan` prints them."""
from __future__ import annotations

from components.config import parse
from components.costs.notes import cost_lines
from components.offline.runner import load_stack_yaml, stack_file
from components.planning import plan_stack

RESERVED = {"capacityReservations": {"p5.48xlarge": "cr-0123456789abcdef0", "p4d.24xlarge": "cr-0123456789abcdef1"}}


def _shipped(stack: str, concurrency: int | None = None, max_replicas: int | None = None, **aws) -> dict:
    raw = {k.split(":", 1)[1]: v for k, v in load_stack_yaml(stack_file(stack)).items()}
    raw["aws"] = {**raw["aws"], **aws}
    if concurrency is not None:  # a copy whose first model serves `concurrency` users
        raw["models"][0]["sla"] = {**raw["models"][0]["sla"], "concurrency": concurrency}
    if max_replicas is not None:  # a copy whose first model grows to `max_replicas`
        raw["models"][0]["replicas"] = {**raw["models"][0]["replicas"], "max": max_replicas}
    return plan_stack(parse(raw, secrets={"hfToken"}))


def test_a_capacity_block_copy_of_the_405b_stack_pays_for_all_six_reserved_nodes():
    # 26 users, not the shipped 32: at its p90 knee a replica holds 23 (13 under the old 0.35 margin), so 26 users
    # need 2 replicas; more than 46 would fill all 3 replicas and leave no reserved node unused as planned
    # replicas.max 3: the shipped 4 would grow the pool to 8 nodes, beyond the stubs' 6-instance block (refused)
    t = _shipped("prod-llama405b-aws", 26, 3, capacityType="capacityBlock", **RESERVED)["llama-405b"]
    # 1 replica = 2 x p5.48xlarge; 26 users need 2 replicas of 23 (its knee); its max 3 replicas: 6 nodes, all in
    # the block at $39.33 each
    assert (t.min_nodes, t.max_nodes, t.reserved_nodes) == (2, 6, 6)
    assert (t.cost_min_per_hour, t.cost_max_per_hour) == (235.98, 235.98)  # 6 x $39.33, not 2 x $39.33 = $78.66
    lines = cost_lines(t)
    assert lines[0].startswith(
        "  cost: $235.98/h at min 1 replica(s) (2 node(s)), $235.98/h at max 3 (6 node(s)); reserved: billed for "
        "6 node(s) whether used or not; $39.33/node-hour Capacity Block us-east-1 (rate expired 2025-01-01) ⚠; ")
    # as planned the 2 replicas use 4 of the 6 reserved nodes: 2 x 8 H100 unused; at min 1 replica, 4 nodes x 8
    assert (t.idle_gpus, t.idle_gpus_min, t.idle_gpus_max) == (16, 32, 0)
    assert lines[1] == "  idle paid GPUs: 16 of 48 at 2 replica(s) (idle at min replicas: 32, at max: 0)"
    d = t.to_dict()
    assert (d["cost_min_per_hour"], d["cost_max_per_hour"], d["reserved_nodes"]) == (235.98, 235.98, 6)


def test_the_on_demand_405b_stack_still_pays_by_the_running_node():
    t = _shipped("prod-llama405b-aws")["llama-405b"]
    assert (t.reserved_nodes, t.cost_min_per_hour, t.cost_max_per_hour) == (0, 110.08, 440.32)  # 2 / 8 x $55.04
    assert (t.idle_gpus_min, t.idle_gpus_max) == (0, 0)
    assert "reserved" not in cost_lines(t)[0]


def test_an_on_demand_capacity_reservation_bills_the_reserved_nodes_at_the_on_demand_rate():
    t = _shipped("prod-llama70b-aws", capacityType="reservation", **RESERVED)["llama-70b"]
    # the shipped TP 4 plan: min 2 replicas on 2 nodes, 4 planned (two per node), max 6 replicas = 3 x p5.48xlarge
    # reserved
    assert (t.instance_type, t.min_nodes, t.max_nodes, t.reserved_nodes) == ("p5.48xlarge", 2, 3, 3)
    assert (t.cost_min_per_hour, t.cost_max_per_hour) == (165.12, 165.12)  # 3 x $55.04
    # 24 reserved GPUs - 4 x 4 planned / 2 x 4 at min / 6 x 4 at max
    assert (t.idle_gpus, t.idle_gpus_min, t.idle_gpus_max) == (8, 16, 0)
    # the on-demand rate read from regional.csv (us-east-1 row): no mark
    assert "reserved: billed for 3 node(s) whether used or not; $55.04/node-hour reserved (on-demand rate) " \
           "us-east-1; " in cost_lines(t)[0]


def test_a_gke_reservation_is_billed_whole():
    cfg = parse({"cloud": "gcp", "environment": "dev", "gcp": {
        "project": "my-project-1", "region": "us-central1", "zone": "us-central1-a", "reservation": "l4-pool",
        "kubeconfigEndpoint": "dns"}, "models": [{
            "name": "small", "model": "llama-3.1-8b", "instanceTypes": ["g2-standard-8"], "maxModelLen": 8192,
            "sla": {"concurrency": 4}, "replicas": {"min": 1, "max": 3}}]}, {"hfToken"})
    t = plan_stack(cfg)["small"]
    assert (t.min_nodes, t.max_nodes, t.reserved_nodes) == (1, 3, 3)
    assert (t.price_per_node_hour, t.cost_min_per_hour, t.cost_max_per_hour) == (0.853624, 2.56, 2.56)  # 3 x $0.853624 (regional.csv)
    assert (t.idle_gpus_min, t.idle_gpus_max) == (2, 0)  # two reserved L4 nodes wait for replicas 2 and 3


def test_the_cost_per_hour_output_of_a_capacity_block_stack_is_the_whole_block():
    """`pulumi stack output costPerHour` is what the stack pays as planned: the six reserved p5 nodes."""
    from tests.support.plans import plan_config
    raw = {k.split(":", 1)[1]: v for k, v in load_stack_yaml(stack_file("prod-llama405b-aws")).items()}
    raw["aws"] = {**raw["aws"], "capacityType": "capacityBlock", **RESERVED}
    # 26 users: 2 replicas of 23 (the p90 knee) run on 4 of the 6 nodes (more than 46 users would run all 6, hiding
    # the difference)
    raw["models"][0]["sla"] = {**raw["models"][0]["sla"], "concurrency": 26}
    raw["models"][0]["replicas"] = {**raw["models"][0]["replicas"], "max": 3}  # the pool's 6 nodes: the whole block
    _, exports = plan_config(raw)
    assert exports["costPerHour"] == 235.98  # 6 x $39.33, not the running 4 x $39.33 = $157.32
