"""The idle-GPU line labels its figures (review of issue 14, item C)."""
from __future__ import annotations

from components.config import parse
from components.costs.notes import cost_lines
from components.planning import plan_stack

# TP 1 pinned to a 4-L4 node: 3 of 4 GPUs idle at min 1 replica, 2 of 4 at max 2 replicas (one node); an L4 holds
# 12 users at its p90 knee under the dense 10 % margin, so the plan itself is the 1 replica (the min)
IDLE = {"name": "idle", "model": "llama-3.1-8b", "instanceTypes": ["g6.12xlarge"], "maxModelLen": 8192,
        "tensorParallelSize": 1, "sla": {"concurrency": 4}, "replicas": {"min": 1, "max": 2}}


def test_idle_line_names_min_and_max_replicas():
    t = plan_stack(parse({"cloud": "aws", "environment": "dev", "models": [IDLE],
                          "aws": {"region": "us-east-1", "endpointPublicAccessCidrs": ["203.0.113.7/32"]}},
                         {"hfToken"}))["idle"]
    assert cost_lines(t)[1].startswith(
        "  idle paid GPUs: 3 of 4 at 1 replica(s) (idle at min replicas: 3, at max: 2); ")
