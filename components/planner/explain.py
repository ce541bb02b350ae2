"""Turn a pile of refusals into a message a person can act on."""
from __future__ import annotations

from dataclasses import replace

from ..catalog import ACCELERATORS, instance_types
from . import memory as mem
from .request import PlanRequest
from .topology import Refusal

# Checks in the order the planner applies them: a refusal further down got closer to fitting.
ORDER = ["tp-gpus-per-node", "tp-heads", "tp-kv-heads", "tp-fp8-block", "fabric", "pp-layers", "memory",
         "cuda-graph", "kv-cache", "tpot", "ttft", "max-replicas", "host-memory"]


def _closest(refusals: list[Refusal]) -> list[Refusal]:
    """Per accelerator, the refusal that got furthest on the largest shape."""
    best: dict[str, Refusal] = {}
    for r in refusals:
        key = (ORDER.index(r.constraint), r.tp * r.pp)
        cur = best.get(r.accelerator)
        if cur is None or key > (ORDER.index(cur.constraint), cur.tp * cur.pp):
            best[r.accelerator] = r
    return list(best.values())


def _feasible(req: PlanRequest) -> bool:
    from .search import evaluate
    return bool(evaluate(req)[0])


def explain_refusal(req: PlanRequest, refusals: list[Refusal]) -> str:
    m = req.model
    weights = m.weight_bytes(req.precision) / mem.GiB
    head = f"{m.name} {req.precision} needs {weights:,.0f} GiB of weights"
    if not refusals:
        return f"{head}; no instance type to try (check accelerator / instance_types)"
    parts = []
    accs = sorted({i.accelerator for i in req.candidates}, key=lambda a: ACCELERATORS[a].visible_gib)
    for a in accs:
        insts = [i for i in req.candidates if i.accelerator == a]
        biggest = max(insts, key=lambda i: i.gpus)
        budget = ACCELERATORS[a].visible_gib * req.gpu_memory_utilization
        s = f"on {a} the most is {biggest.gpus} x {budget:.1f} GiB per node"
        net = max(i.network_gbps for i in insts)
        if net <= 0:
            s += f" and {a} nodes have no network between them for PP"
        elif not any(i.fast_fabric for i in insts):  # PP over Ethernet is planned when the SLA still holds
            s += (f" and {a} nodes have no fast fabric (EFA/RDMA): PP across them runs over {net:g} Gbps "
                  f"Ethernet, only where the SLA still holds")
        parts.append(s)
    lines = [head + "; " + "; ".join(parts)]
    for r in sorted(_closest(refusals), key=lambda r: ACCELERATORS[r.accelerator].visible_gib):
        lines.append(f"  closest on {r.accelerator}: {r}")
    lines[0] += " → " + _suggest(req)
    return "\n".join(lines)


def _suggest(req: PlanRequest) -> str:
    m, tips = req.model, []
    clouds = {i.cloud for i in req.candidates}
    current = {i.accelerator for i in req.candidates}
    other = []
    for cloud in clouds - {"existing"}:
        for acc in sorted({i.accelerator for i in instance_types(cloud)} - current,
                          key=lambda a: ACCELERATORS[a].visible_gib):
            if acc not in other and _feasible(replace(req, candidates=tuple(instance_types(cloud, acc)))):
                other.append(acc)
    if other:
        tips.append("choose " + "/".join(other))
    if req.precision == "bf16" and "fp8" in m.precisions and _feasible(replace(req, precision="fp8")):
        tips.append("fp8")
    if not tips:
        tips.append("relax the SLA, lower max_model_len or raise max_replicas")
    return " or ".join(tips)
