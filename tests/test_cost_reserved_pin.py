"""A reservation / Capacity Block fixes the instance type: the plan does not set the block's rate against
another type's on-demand price, nor suggest a type the block does not hold (review of issue 14, item D);
the advisory policy pinned-instance-cost agrees, on the `vllm-platform/capacity: reserved` annotation the
serving pods of a reserved pool carry."""
from __future__ import annotations

from components.config import parse
from components.costs.notes import cost_lines
from components.offline.runner import load_stack_yaml, stack_file
from components.planning import plan_stack
from policies.rules import RULES_BY_NAME
from policies.rules.podspec import pod_templates
from tests.support.gcp import GCP
from tests.support.plans import by_type, one, plan_config

RESERVED = {"capacityReservations": {"p5.48xlarge": "cr-0123456789abcdef0"}}
FIXED = ("  NOTE: the reservation fixes the instance type (p5.48xlarge): no other type is compared (it would need "
         "its own reservation at its own rate)")


def _shipped(stack: str, users: int | None = None, **aws) -> dict:
    raw = {k.split(":", 1)[1]: v for k, v in load_stack_yaml(stack_file(stack)).items()}
    raw["aws"] = {**raw["aws"], **aws}
    if users:  # the first model's load
        raw["models"][0]["sla"] = {**raw["models"][0]["sla"], "concurrency": users}
    return plan_stack(parse(raw, secrets={"hfToken"}))


def test_on_demand_the_pin_note_names_the_cheaper_type():
    t = _shipped("prod-llama405b-aws")["llama-405b"]
    # 32 users: 2 replicas of TP 8 x PP 2 (23 each at the p90 knee) on 4 p5 nodes, 4 x $55.04 = $220.16/h; unpinned,
    # one B200 node at TP 8 holds 82 (p5en TP 8 holds 30: 2 nodes, $126.59/h): $220.16 - $113.93 = $106.23
    assert cost_lines(t)[-1] == ("  NOTE: pinned instanceTypes cost $106.23/h more than the planner's best unpinned "
                                 "shape: 1 x TP 8 on 1 x p6-b200.48xlarge at $113.93/h")


def test_a_capacity_block_gets_no_pin_note_against_on_demand_types():
    t = _shipped("prod-llama405b-aws", capacityType="capacityBlock", **RESERVED)["llama-405b"]
    # before: "$15.36/h more than ... p5en.48xlarge at $63.30/h": a $39.33 block rate against on-demand p5en
    assert (t.pinned_best, t.pinned_extra_per_hour) == (None, 0.0)
    lines = cost_lines(t)
    assert not any("NOTE: pinned" in line for line in lines)
    assert lines[-1] == FIXED


def test_a_reservation_gets_no_cheaper_shape_of_another_type_for_its_idle_gpus():
    # 40 users at 17 per replica (the TP 4 p90 knee): 3 TP 4 replicas spread over 2 p5 nodes leave 4 GPUs idle on
    # demand (24 users now need only 2 replicas; 40 is the load that leaves 3 replicas, as 24 did under the 0.35 margin)
    on_demand = _shipped("prod-llama70b-aws", users=40)["llama-70b"]
    assert (on_demand.replicas, on_demand.idle_gpus) == (3, 4)
    assert on_demand.idle_alternative == "3 x TP 8 on 3 x p4de.24xlarge at $82.34/h"  # 3 x $27.44705
    t = _shipped("prod-llama70b-aws", users=40, capacityType="reservation", **RESERVED)["llama-70b"]
    assert t.idle_alternative is None
    lines = cost_lines(t)
    # reserved: the 3 nodes of max 6 TP 4 replicas (the shipped replicas.max 6), 24 GPUs, 12 of them idle at 3 replicas
    assert lines[1] == "  idle paid GPUs: 12 of 24 at 3 replica(s) (idle at min replicas: 16, at max: 0)"
    assert lines[-1] == FIXED


# 70B pinned to A3 Mega: A3 High holds the same TP 2 pods for less (both 8 x H100)
MEGA = {"name": "mega", "model": "llama-3.1-70b", "instanceTypes": ["a3-megagpu-8g"], "maxModelLen": 8192,
        "sla": {"concurrency": 16}, "replicas": {"min": 1, "max": 2}}
ANNOTATION = {"vllm-platform/capacity": "reserved"}


def _gcp(**gcp) -> dict:
    return {"cloud": "gcp", "environment": "dev", "models": [MEGA], "gcp": {**GCP, **gcp}}


def _pin_advice(values: dict) -> tuple[dict, list[str]]:
    """The rendered Deployment's pod-template annotations and what pinned-instance-cost says of it."""
    resources, _ = plan_config(values)
    d = one(resources, "kubernetes:apps/v1:Deployment")
    return (d.inputs["spec"]["template"]["metadata"].get("annotations", {}),
            RULES_BY_NAME["pinned-instance-cost"].messages(d.type, d.inputs))


def test_on_demand_the_policy_advises_against_the_pinned_type_as_the_plan_does():
    # 16 users: one A100-80GB TP 2 replica (17 at its p90 knee under the dense 10 % margin; 13 under the old 0.35),
    # $10.14/h
    assert plan_stack(parse(_gcp(), {"hfToken"}))["mega"].pinned_best == "1 x TP 2 on 1 x a2-ultragpu-2g at $10.14/h"
    annotations, advice = _pin_advice(_gcp())
    assert "vllm-platform/capacity" not in annotations
    assert advice == ["template: a replica of 2 GPU(s) per node on a3-megagpu-8g costs $23.00/h; a3-highgpu-8g holds "
                      "it for $22.06/h ($0.94/h less per replica, on-demand 2025-10)"]


def test_a_gcp_reservation_gets_neither_the_plan_note_nor_the_policy_advice():
    assert plan_stack(parse(_gcp(reservation="h100-mega"), {"hfToken"}))["mega"].pinned_best is None
    annotations, advice = _pin_advice(_gcp(reservation="h100-mega"))
    assert annotations == ANNOTATION
    assert advice == []  # before: the same "$0.94/h less" advice as on demand


def test_the_ray_workers_of_a_capacity_block_carry_the_reserved_annotation():
    raw = {k.split(":", 1)[1]: v for k, v in load_stack_yaml(stack_file("prod-llama405b-aws")).items()}
    raw = {k: v for k, v in raw.items() if k != "hfToken"}

    # replicas.max 3: the pool's 6 nodes fit the stubs' 6-instance block (the shipped 4 would need 8)
    raw["models"][0]["replicas"] = {**raw["models"][0]["replicas"], "max": 3}

    def workers(**aws) -> list[dict]:
        resources, _ = plan_config({**raw, "aws": {**raw["aws"], **aws}}, stack="prod-llama405b-aws")
        return [t.annotations for r in by_type(resources, "kubernetes:ray.io/v1:RayService")
                for t in pod_templates(r.type, r.inputs) if t.gpus()]
    assert workers(capacityType="capacityBlock", **RESERVED) == [ANNOTATION]
    assert workers() == [{}]
