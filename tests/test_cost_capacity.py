"""The $ per million output tokens and the fleet load read one throughput: the capacity model's knee."""
from __future__ import annotations

from dataclasses import replace

from components.config import parse
from components.cost import cost_lines
from components.planning import plan_stack

SMALL = {"name": "small", "model": "llama-3.1-8b", "instanceTypes": ["g6.xlarge"], "maxModelLen": 8192,
         "sla": {"concurrency": 4}, "replicas": {"min": 1, "max": 3}}


def _small():
    return plan_stack(parse({"cloud": "aws", "environment": "dev", "models": [SMALL],
                             "aws": {"region": "us-east-1", "endpointPublicAccessCidrs": ["203.0.113.7/32"]}},
                            {"hfToken"}))["small"]


def test_per_million_tokens_uses_the_knee_throughput():
    t = _small()
    # 8B BF16 on one L4: 16 GB of weights at 0.85 x 300 GB/s = 63 ms a step, plus each user's KV (151 MB at 1,152
    # tokens) at 0.15 x 300 GB/s = 3.4 ms: 4 users keep the estimated TPOT (80.4 ms) 20 % under the 100 ms SLA
    # (96.5 ms; 5 users: 84.8 x 1.2 = 101.8 ms); 4 x 256 tokens per (0.39 s TTFT + 255 x 80.4 ms) = 49.0 tokens/s
    assert (t.concurrency_per_replica, t.knee_output_tokens_per_s) == (4, 49.0)
    assert t.output_tokens_per_s_per_replica == 49.0
    assert t.cost_per_million_output_tokens == 4.5351  # $0.80/h / (49.0 tok/s x 3600 s) x 1e6
    assert "$4.54 per million output tokens (49 tokens/s per replica at 4 concurrent)" in cost_lines(t)[0]


def test_a_different_knee_changes_the_price_per_token_and_the_fleet_load_together():
    t = replace(_small(), knee_output_tokens_per_s=400.0)
    assert t.cost_per_million_output_tokens == 0.5556  # $0.80 / (400 x 3600) x 1e6
    assert t.fleet_load["max"]["output_tokens_per_s"] == 1200.0  # 3 replicas x 400
