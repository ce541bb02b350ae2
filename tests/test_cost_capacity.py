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
    # 8B BF16 on one L4: 16 GB of weights at 0.75 x 300 GB/s = 71.4 ms a step, plus each user's KV (151 MB at 1,152
    # tokens) at 0.9 x 300 GB/s = 0.56 ms: 4 users keep the estimated TPOT (76.5 ms) 30 % under the 100 ms SLA
    # (99.4 ms; 5 users: 77.8 x 1.3 = 101.1 ms); 4 x 256 tokens per (0.32 s TTFT + 255 x 76.5 ms) = 51.7 tokens/s
    assert (t.concurrency_per_replica, t.knee_output_tokens_per_s) == (4, 51.7)
    assert t.output_tokens_per_s_per_replica == 51.7
    assert t.cost_per_million_output_tokens == 4.2983  # $0.80/h / (51.7 tok/s x 3600 s) x 1e6
    assert "$4.30 per million output tokens (52 tokens/s per replica at 4 concurrent)" in cost_lines(t)[0]


def test_a_different_knee_changes_the_price_per_token_and_the_fleet_load_together():
    t = replace(_small(), knee_output_tokens_per_s=400.0)
    assert t.cost_per_million_output_tokens == 0.5556  # $0.80 / (400 x 3600) x 1e6
    assert t.fleet_load["max"]["output_tokens_per_s"] == 1200.0  # 3 replicas x 400
