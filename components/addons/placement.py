"""Where add-on pods run, from ClusterFacts alone: operators on the system (CPU) nodes, GPU DaemonSets on
the GPU pools with their taints tolerated. Pure."""
from __future__ import annotations

from collections.abc import Iterable

from ..cluster.facts import GPU_TAINT_KEY, GpuPool

# Whatever value a pool's GPU taint carries (GKE sets nvidia.com/gpu=present, other clusters =true),
# GPU DaemonSets must still land on the node.
ANY_GPU_TAINT = {"key": GPU_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}


def gpu_tolerations(pools: Iterable[GpuPool]) -> list[dict]:
    """The GPU taint whatever its value, plus every other taint of the given pools, without repeats."""
    out = [ANY_GPU_TAINT]
    for pool in pools:
        for t in pool.tolerations():
            covered = t["key"] == GPU_TAINT_KEY and t["effect"] == ANY_GPU_TAINT["effect"]
            if not covered and t not in out:
                out.append(t)
    return out


def pool_affinity(pools: Iterable[GpuPool]) -> dict:
    """A required node affinity that matches the nodes of any of these pools (one term per selector)."""
    terms = []
    for pool in pools:
        term = {"matchExpressions": [{"key": k, "operator": "In", "values": [v]}
                                     for k, v in sorted(pool.node_selector.items())]}
        if term not in terms:
            terms.append(term)
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}
