"""A reservation / Capacity Block fixes the instance type: the plan does not set the block's rate against
another type's on-demand price, nor suggest a type the block does not hold (review of issue 14, item D)."""
from __future__ import annotations

from components.config import parse
from components.cost import cost_lines
from components.offline.runner import load_stack_yaml, stack_file
from components.planning import plan_stack

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
    assert cost_lines(t)[-1] == ("  NOTE: pinned instanceTypes cost $46.78/h more than the planner's best unpinned "
                                 "shape: 1 x TP 8 on 1 x p5en.48xlarge at $63.30/h")


def test_a_capacity_block_gets_no_pin_note_against_on_demand_types():
    t = _shipped("prod-llama405b-aws", capacityType="capacityBlock", **RESERVED)["llama-405b"]
    # before: "$15.36/h more than ... p5en.48xlarge at $63.30/h": a $39.33 block rate against on-demand p5en
    assert (t.pinned_best, t.pinned_extra_per_hour) == (None, 0.0)
    lines = cost_lines(t)
    assert not any("NOTE: pinned" in line for line in lines)
    assert lines[-1] == FIXED


def test_a_reservation_gets_no_cheaper_shape_of_another_type_for_its_idle_gpus():
    # 40 users at 21 per replica (the knee): 2 TP 4 replicas spread over 2 p5 nodes leave 8 GPUs idle on demand
    on_demand = _shipped("prod-llama70b-aws", users=40)["llama-70b"]
    assert (on_demand.replicas, on_demand.idle_gpus) == (2, 8)
    assert on_demand.idle_alternative == "3 x TP 8 on 3 x p4d.24xlarge at $65.88/h"
    t = _shipped("prod-llama70b-aws", users=40, capacityType="reservation", **RESERVED)["llama-70b"]
    assert t.idle_alternative is None
    lines = cost_lines(t)
    assert lines[1] == "  idle paid GPUs: 24 of 32 at 2 replica(s) (idle at min replicas: 24, at max: 0)"
    assert lines[-1] == FIXED
