"""The $ per million output tokens and the fleet load read one throughput: the capacity model's knee."""
from __future__ import annotations

from dataclasses import replace

from components.config import parse
from components.costs.notes import cost_lines
from components.planning import plan_stack

SMALL = {"name": "small", "model": "llama-3.1-8b", "instanceTypes": ["g6.xlarge"], "maxModelLen": 8192,
         "sla": {"concurrency": 4}, "replicas": {"min": 1, "max": 3}}


def _small():
    return plan_stack(parse({"cloud": "aws", "environment": "dev", "models": [SMALL],
                             "aws": {"region": "us-east-1", "endpointPublicAccessCidrs": ["203.0.113.7/32"]}},
                            {"hfToken"}))["small"]


def test_per_million_tokens_uses_the_knee_throughput():
    t = _small()
    # 8B BF16 on one L4: 12 users keep the estimated p90 TPOT under the 100 ms SLA with the dense 10 % margin
    # (was 2 users under the one 35 % margin on the mean); 12 x 256 tokens per request time = 136 tokens/s at the
    # knee; the 4 users need 1 replica
    assert (t.concurrency_per_replica, t.knee_output_tokens_per_s) == (12, 136.0)
    assert t.output_tokens_per_s_per_replica == 136.0
    # $0.80/h for 1 replica / (1 x 136 tok/s x 3600 s) x 1e6
    assert t.cost_per_million_output_tokens == 1.634
    assert "$1.63 per million output tokens (136 tokens/s per replica at 12 concurrent)" in cost_lines(t)[0]


def test_a_different_knee_changes_the_price_per_token_and_the_fleet_load_together():
    t = replace(_small(), knee_output_tokens_per_s=400.0)
    assert t.cost_per_million_output_tokens == 0.5556  # $0.80/h for 1 replica / (1 x 400 x 3600) x 1e6
    assert t.fleet_load["max"]["output_tokens_per_s"] == 1200.0  # 3 replicas x 400
