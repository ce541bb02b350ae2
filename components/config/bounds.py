"""Bounds the policy pack enforces (policies/rules) on values a stack file sets, stated once.

The schema refuses a value outside them with its field path, so that a configuration that validates can
never fail the mandatory policy later; `python -m components.policy_facts --write` copies them into
policies/rules/facts.py, which the rules read (tests/policies/test_standalone.py checks the copy; tests/test_contract.py
checks, value by value, that the schema refuses exactly what the rule would).
"""
from __future__ import annotations

# Policy gpu-memory-utilization-range. Outside this band vLLM either wastes KV-cache memory (below) or leaves no
# headroom for CUDA graphs, NCCL buffers and fragmentation, which are not in its memory profile (above).
GPU_MEMORY_UTILIZATION_RANGE = (0.80, 0.95)
# The calibration's planning margin (planner/capacity.py explains how it was fitted; a stack's
# planning.latencyMargin replaces it).
LATENCY_MARGIN = 0.35
# Policy cluster-endpoint-restricted: a Kubernetes API endpoint open to these is open to the whole internet.
OPEN_CIDRS = ("0.0.0.0/0", "::/0")


def gpu_memory_utilization_problem(value: float) -> str | None:
    low, high = GPU_MEMORY_UTILIZATION_RANGE
    if low <= value <= high:
        return None
    side = "wastes KV-cache memory" if value < low else "leaves no headroom for CUDA graphs and NCCL"
    return (f"{value:g} is outside {low:.2f}-{high:.2f} ({side}; policy gpu-memory-utilization-range); "
            f"set it between {low:.2f} and {high:.2f} (0.90 is the default)")


def open_cidrs_problem(cidrs: list[str] | str | None, field_hint: str) -> str | None:
    values = [cidrs] if isinstance(cidrs, str) else list(cidrs or [])
    open_ = [c for c in values if c in OPEN_CIDRS]
    if not open_:
        return None
    return (f"{', '.join(open_)} opens the Kubernetes API to the whole internet (policy cluster-endpoint-restricted); "
            f"{field_hint}")
