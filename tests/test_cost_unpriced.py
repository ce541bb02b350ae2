"""An existing cluster whose stack file gives no existing.gpuNodes.pricePerNodeHour is unpriced, not free
(review of issue 14, item B): the plan says so and prints no $ figures; the JSON keeps them at 0."""
from __future__ import annotations

from components.config import parse
from components.cost import cost_lines, total_line
from components.offline.runner import load_stack_yaml, stack_file
from components.planning import plan_stack
from components.summary import summary


def _shipped(stack: str, **gpu_nodes) -> dict:
    raw = {k.split(":", 1)[1]: v for k, v in load_stack_yaml(stack_file(stack)).items()}
    raw["existing"] = {**raw["existing"], "gpuNodes": {**raw["existing"]["gpuNodes"], **gpu_nodes}}
    return plan_stack(parse(raw, secrets={"hfToken"}))


def test_the_dev_stack_without_a_node_price_reads_unpriced():
    t = _shipped("dev")["llama-8b"]
    assert cost_lines(t)[0] == ("  cost: unpriced (set existing.gpuNodes.pricePerNodeHour): 1 replica(s) (1 node(s)) "
                                "at min, 2 (2 node(s)) at max; no price per million output tokens")
    assert not [line for line in summary(t).splitlines() if "$0.00" in line and "why:" not in line]
    assert "2 replica(s) on 2 node(s), unpriced (set existing.gpuNodes.pricePerNodeHour)" in summary(t)  # 8 users, 7 each
    d = t.to_dict()
    assert (d["cost_per_hour"], d["cost_min_per_hour"], d["cost_max_per_hour"]) == (0.0, 0.0, 0.0)
    assert d["cost_per_million_output_tokens"] is None
    assert total_line({"a": t, "b": t}) == "total for 2 models: unpriced (set existing.gpuNodes.pricePerNodeHour)"


def test_the_onprem_405b_stack_reads_unpriced():
    t = _shipped("prod-llama405b-onprem")["llama-405b"]
    assert cost_lines(t)[0].startswith("  cost: unpriced (set existing.gpuNodes.pricePerNodeHour): 1 replica(s) "
                                       "(2 node(s)) at min, 2 (4 node(s)) at max")


def test_a_stated_node_price_prints_dollars():
    t = _shipped("dev", pricePerNodeHour=1.5)["llama-8b"]
    assert cost_lines(t)[0].startswith("  cost: $1.50/h at min 1 replica(s) (1 node(s)), $3.00/h at max 2 (2 node(s)); "
                                       "$1.50/node-hour existing.gpuNodes.pricePerNodeHour; ")
    assert "2 replica(s) on 2 node(s), $3.00/h" in summary(t)
