"""Turn a pile of refusals into a message a person can act on."""
from __future__ import annotations

from dataclasses import replace

from ..catalog import ACCELERATORS, instance_types
from . import memory as mem
from .request import PlanRequest
from .topology import Refusal

# Checks in the order the planner applies them: a refusal further down got closer to fitting.
ORDER = ["tp-gpus-per-node", "tp-heads", "tp-kv-heads", "tp-fp8-block", "fabric", "pp-layers", "memory",
         "cuda-graph", "kv-cache", "tpot", "ttft", "max-replicas", "host-tier-nodes", "host-memory"]


def _rank(r: Refusal, order: dict | None = None) -> tuple[int, int, int]:
    """How close a refusal came: further through the checks; among shapes refused for replicas.max the one whose
    plan ranks first once replicas.max is no bound (`order`: _unbounded_plans, the cheapest first: the plan the advice
    "raise replicas.max to N" names), without `order` the one needing the fewest replicas; then the largest shape."""
    if r.constraint == "max-replicas" and order is not None:
        near = -order.get(_shape_key(r), UNBOUNDED)
    else:
        near = -(r.replicas or UNBOUNDED)
    return ORDER.index(r.constraint), near, r.tp * r.pp


def _shape_key(r: Refusal) -> tuple:
    return r.instance_type, r.tp, r.pp, r.kv_cache_dtype


def _closest(refusals: list[Refusal], order: dict | None = None) -> list[Refusal]:
    """Per accelerator, the refusal that got closest (_rank)."""
    best: dict[str, Refusal] = {}
    for r in refusals:
        cur = best.get(r.accelerator)
        if cur is None or _rank(r, order) > _rank(cur, order):
            best[r.accelerator] = r
    return list(best.values())


# What the headline names as the binding constraint (the refusal that got furthest), in the stack file's words
# where a field sets it (a models[] entry's sla.tpotMs, replicas.max; the CLI shows its options instead).
CAUSES = {"tpot": "TPOT", "ttft": "TTFT", "max-replicas": "replicas.max", "memory": "memory",
          "kv-cache": "memory (KV cache)", "cuda-graph": "memory (CUDA graphs)", "host-memory": "host memory",
          "host-tier-nodes": "engine.kvOffloadGiB (single-node replicas only)",
          "fabric": "the network between nodes", "pp-layers": "pipeline parallelism",
          "tp-gpus-per-node": "tensor parallelism", "tp-heads": "tensor parallelism",
          "tp-kv-heads": "tensor parallelism", "tp-fp8-block": "tensor parallelism (FP8 blocks)"}
UNBOUNDED = 10**9


def _feasible(req: PlanRequest) -> bool:
    from .search import evaluate
    return bool(evaluate(req)[0])


def binding(refusals: list[Refusal], order: dict | None = None) -> Refusal:
    """The refusal that got closest (_rank: furthest through the checks): what stops the plan."""
    return max(_closest(refusals, order), key=lambda r: _rank(r, order))


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
    b, plans, order = binding(refusals), [], None
    if b.constraint == "max-replicas":  # the shapes refused for replicas.max, ranked by their plans without that bound
        plans = _unbounded_plans(req)
        order = {(f.inst.name, f.tp, f.pp, f.kv_dtype): i for i, f in enumerate(plans)}
        b = binding(refusals, order)
    lines = [f"{m.name} {req.precision}: bound by {CAUSES[b.constraint]}: {b.detail} (closest shape: "
             f"{b.instance_type} TP{b.tp}xPP{b.pp}) → {_suggest(req, b, plans)}",
             "  " + head + "; " + "; ".join(parts)]
    for r in sorted(_closest(refusals, order), key=lambda r: ACCELERATORS[r.accelerator].visible_gib):
        lines.append(f"  closest on {r.accelerator}: {r}")
    return "\n".join(lines)


def _unbounded_plans(req: PlanRequest) -> list:
    """Every shape's plan with replicas.max no bound, in the order the planner ranks them (_Fit.rank: the cheapest
    first): the options a refusal for replicas.max leaves."""
    from .search import _Fit, evaluate
    return sorted(evaluate(replace(req, max_replicas=UNBOUNDED))[0], key=_Fit.rank)


def _replicas_advice(plans: list) -> str | None:
    """`raise replicas.max to N` for the plan the planner would choose with no bound (the cheapest: _Fit.rank), with
    its shape and $/h; where the fewest replicas any shape needs plan another, costlier shape, that one too. Raising
    replicas.max to N plans exactly the shape named: every cheaper shape needs more than N replicas."""
    if not plans:
        return None
    best = plans[0]
    if not best.priced:
        what = "the plan on the fewest GPUs (unpriced)"
    elif any(f.priced and f.cost < best.cost for f in plans):  # a cheaper shape runs PP over Ethernet (_Fit.rank)
        what = "the plan the planner would choose"
    else:
        what = "the cheapest plan"
    text = f"raise replicas.max to {best.replicas} for {what}, {best.shape()}"
    fewest = min(f.replicas for f in plans)
    if fewest < best.replicas:
        at_fewest = next(f for f in plans if f.replicas <= fewest)  # what replicas.max = fewest would plan
        text += f" ({fewest}, the fewest replicas that plan, gives {at_fewest.shape()})"
    return text


def _longest_that_plans(req: PlanRequest) -> int | None:
    """The longest maxModelLen, halving from the request's, that plans (at least one SLA request long)."""
    shortest = max(256, req.sla.prompt_tokens + req.sla.output_tokens)
    length = req.max_model_len // 2
    while length >= shortest:
        if _feasible(replace(req, max_model_len=length)):
            return length
        length //= 2
    return None


def _suggest(req: PlanRequest, bound: Refusal, plans: list | None = None) -> str:
    """Only changes that make this request plan (each one checked), the binding constraint's own first. `plans`:
    _unbounded_plans, where replicas.max binds."""
    m, tips = req.model, []
    sla = req.sla
    if bound.constraint == "tpot" and _feasible(replace(req, sla=replace(sla, tpot_ms=UNBOUNDED))):
        tips.append("raise sla.tpotMs")
    if bound.constraint == "ttft" and _feasible(replace(req, sla=replace(sla, ttft_ms=UNBOUNDED))):
        tips.append("raise sla.ttftMs")
    if bound.constraint == "max-replicas":
        advice = _replicas_advice(plans if plans is not None else _unbounded_plans(req))
        if advice:
            tips.append(advice)
    if bound.constraint == "kv-cache":
        shorter = _longest_that_plans(req)
        if shorter:
            tips.append(f"lower maxModelLen to {shorter:,}")
        if "fp8" not in req.kv_cache_dtypes and _feasible(replace(req, kv_cache_dtypes=("auto", "fp8"))):
            tips.append("kvCacheDtype allow-fp8")
    if bound.constraint in ("host-memory", "host-tier-nodes") and req.engine.kv_offload_gib and \
            _feasible(replace(req, engine=replace(req.engine, kv_offload_gib=None))):
        tips.append("lower engine.kvOffloadGiB to the largest that fits (above)" if bound.constraint == "host-memory"
                    else "drop engine.kvOffloadGiB")
    lo = req.engine.lora
    if bound.constraint == "host-memory" and lo and bound.detail.startswith("engine.lora.maxCpuLoras"):
        if (lo.max_cpu_loras or lo.max_loras) > lo.max_loras and \
                _feasible(replace(req, engine=replace(req.engine, lora=replace(lo, max_cpu_loras=lo.max_loras)))):
            tips.append("lower engine.lora.maxCpuLoras to the largest that fits (above)")
        elif _feasible(replace(req, engine=replace(req.engine, lora=replace(lo, max_loras=1, max_cpu_loras=None)))):
            tips.append("lower engine.lora.maxLoras or engine.lora.maxLoraRank")
    clouds = {i.cloud for i in req.candidates}
    current = {i.accelerator for i in req.candidates}
    other = []
    for cloud in clouds - {"existing"}:
        market = [i for i in req.market if i.cloud == cloud] or instance_types(cloud)
        for acc in sorted({i.accelerator for i in market} - current, key=lambda a: ACCELERATORS[a].visible_gib):
            if acc not in other and _feasible(replace(req, candidates=tuple(i for i in market if i.accelerator == acc))):
                other.append(acc)
    if other:
        tips.append("choose accelerator " + "/".join(other))
    if req.precision == "bf16" and "fp8" in m.precisions and _feasible(replace(req, precision="fp8")):
        tips.append("precision fp8")
    if not tips:
        return "no single change checked here (the SLA, replicas.max, maxModelLen, accelerator, precision) makes it plan"
    return " or ".join(tips)
