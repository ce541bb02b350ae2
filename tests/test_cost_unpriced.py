"""An existing cluster whose stack file gives no existing.gpuNodes.pricePerNodeHour is unpriced, not free
(review of issue 14, item B): the plan says so and prints no $ figures; the JSON keeps them at 0."""
from __future__ import annotations

from dataclasses import replace

from components.config import parse
from components.costs.notes import cost_lines, total_line
from components.offline.runner import load_stack_yaml, stack_file
from components.planning import plan_stack
from components.planner import plan_topology
from components.cli.summary import summary
from tests.support.planner import request


def _shipped(stack: str, **gpu_nodes) -> dict:
    raw = {k.split(":", 1)[1]: v for k, v in load_stack_yaml(stack_file(stack)).items()}
    raw["existing"] = {**raw["existing"], "gpuNodes": {**raw["existing"]["gpuNodes"], **gpu_nodes}}
    return plan_stack(parse(raw, secrets={"hfToken"}))


def test_the_dev_stack_without_a_node_price_reads_unpriced():
    t = _shipped("dev")["llama-8b"]
    assert cost_lines(t)[0] == ("  cost: unpriced (set existing.gpuNodes.pricePerNodeHour): 1 replica(s) (1 node(s)) "
                                "at min, 2 (2 node(s)) at max; no price per million output tokens")
    assert "$0.00" not in summary(t)
    assert t.reason.startswith("1 x TP 1 on 1 x existing-l4x1, unpriced; ")
    # 8 users, 53 a replica at the p90 knee (TPOT SLA 100 ms)
    assert "1 replica(s) on 1 node(s), unpriced (set existing.gpuNodes.pricePerNodeHour)" in summary(t)
    d = t.to_dict()
    assert (d["cost_per_hour"], d["cost_min_per_hour"], d["cost_max_per_hour"]) == (0.0, 0.0, 0.0)
    assert d["cost_per_million_output_tokens"] is None
    assert total_line({"a": t, "b": t}) == "total for 2 models: unpriced (set existing.gpuNodes.pricePerNodeHour)"


def test_the_onprem_405b_stack_reads_unpriced():
    t = _shipped("prod-llama405b-onprem")["llama-405b"]
    assert cost_lines(t)[0].startswith("  cost: unpriced (set existing.gpuNodes.pricePerNodeHour): 1 replica(s) "
                                       "(2 node(s)) at min, 4 (8 node(s)) at max; no price per million")
    # the why line: no "$0.00/h", and the runner-up is not called the next cheapest (both cost unknown)
    why = summary(t).splitlines()[-1]
    # 32 users, 23 per replica at the p90 knee: 2 replicas of 2 nodes (the runner-up, PP 3: 2 replicas of 3 nodes)
    assert why.startswith("  why: 2 x TP 8 x PP 2 on 4 x existing-h100x8, unpriced; TP 8 refused (memory: ")
    assert why.endswith("; next (unpriced, not compared on cost): 2 x TP 8 x PP 3 on 6 x existing-h100x8, unpriced")
    assert "$0.00" not in why and "cheapest" not in why


def test_an_unpriced_shape_is_never_ranked_cheaper_than_a_priced_one():
    req = request("llama-3.1-8b", "l4", max_model_len=8192)
    g6 = req.candidates[0]
    free = replace(g6, cloud="existing", name="existing-l4x1", price_hour=0.0)  # same node, no price stated
    t = plan_topology(replace(req, candidates=(free, g6)))
    # before: the unpriced node's cost of 0 won the rank and the why line read "at $0.00/h"
    # 16 users at 12 per replica (the p90 knee under the dense 10 % margin): 2 nodes, 2 x $0.8048 = $1.61
    assert t.instance_type == "g6.xlarge" and t.cost_per_hour == 1.61
    assert t.reason.endswith("; next (unpriced, not compared on cost): 2 x TP 1 on 2 x existing-l4x1, unpriced")


def test_a_stated_node_price_prints_dollars():
    t = _shipped("dev", pricePerNodeHour=1.5)["llama-8b"]
    assert cost_lines(t)[0].startswith("  cost: $1.50/h at min 1 replica(s) (1 node(s)), $3.00/h at max 2 (2 node(s)); "
                                       "$1.50/node-hour existing.gpuNodes.pricePerNodeHour; ")
    assert "1 replica(s) on 1 node(s), $1.50/h" in summary(t)
