"""Health probes sized to the model: a start-up budget from weight size and cache read throughput.

The seeds' fixed 120-180 s liveness delay killed a 70B pod while it was still reading 140 GB of
weights. Here a startupProbe holds liveness off for as long as loading can take: reading the
weights from the cache (every replica on a node reads its own copy at the node's share of the
cache's throughput) plus the engine's own start (memory profiling, torch.compile, CUDA graph
capture), with a safety factor. Liveness starts only after start-up succeeded.
"""
from __future__ import annotations

import math

from ..planner import Topology

GIB = 1024**3
ENGINE_START_S = 240  # profiling + torch.compile (cold compile cache) + CUDA graph capture, 70B-class
SAFETY = 1.5
MIN_BUDGET_S = 300
PERIOD_S = 10
HEALTH_PATH = "/health"  # vLLM's OpenAI server: 200 once the engine is up


def load_seconds(weights_gib: float, read_gbps: float, readers_per_node: int = 1) -> float:
    """Seconds to read the weights when `readers_per_node` pods start on one node together."""
    if read_gbps <= 0:
        raise ValueError(f"cache read throughput must be > 0 GB/s (got {read_gbps})")
    return weights_gib * GIB * readers_per_node / (read_gbps * 1e9)


def startup_budget_s(weights_gib: float, read_gbps: float, readers_per_node: int = 1) -> int:
    """How long a pod may take to become healthy, rounded up to whole probe periods."""
    raw = load_seconds(weights_gib, read_gbps, readers_per_node) * SAFETY + ENGINE_START_S
    return max(MIN_BUDGET_S, int(math.ceil(raw / PERIOD_S) * PERIOD_S))


def topology_budget_s(t: Topology, read_gbps: float) -> int:
    return startup_budget_s(t.weights_gib, read_gbps, t.replicas_per_node)


def probes(budget_s: int, port: str = "http") -> dict:
    """startupProbe / readinessProbe / livenessProbe for the vLLM container."""
    get = {"path": HEALTH_PATH, "port": port}
    return {
        "startupProbe": {"httpGet": get, "periodSeconds": PERIOD_S, "timeoutSeconds": 5,
                         "failureThreshold": budget_s // PERIOD_S},
        "readinessProbe": {"httpGet": get, "periodSeconds": 10, "timeoutSeconds": 5, "failureThreshold": 3},
        # a long prefill can stall /health for a few seconds; restart only after ~2 minutes of silence
        "livenessProbe": {"httpGet": get, "periodSeconds": 20, "timeoutSeconds": 10, "failureThreshold": 6},
    }
