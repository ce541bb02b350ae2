"""Honest cost of a planned model (issue 14): the price basis, idle paid GPUs with the planner's cheaper
shape that avoids them, and what pinned instance types cost over the planner's own best. Pure (no Pulumi).

The figures that follow from a Topology alone (cost at min / max replicas, idle GPUs, $ per million
output tokens) are Topology properties; what needs the stack (its unpinned pool) is worked out here,
always by asking the planner, never by a second estimate.
"""
from __future__ import annotations

from dataclasses import replace

from ..catalog import InstanceType
from ..catalog.prices import price_legend
from ..planner import PlanRequest, Topology, evaluate
from ..planner.topology import idle_gpus

MIN_SAVING = 0.01  # $/hour: below this a "cheaper" shape is a rounding difference
UNPRICED = "unpriced (set existing.gpuNodes.pricePerNodeHour)"


def unpriced(t: Topology) -> bool:
    """An existing cluster whose stack file states no node price: its figures are 0, not free."""
    return t.price_per_node_hour <= 0


def hourly(t: Topology, dollars: float) -> str:
    """`$X/h`, or the unpriced note where the stack states no node price."""
    return UNPRICED if unpriced(t) else f"${dollars:,.2f}/h"


def _fits(req: PlanRequest, pool) -> list:
    if not pool:
        return []
    fits, _ = evaluate(replace(req, candidates=tuple(pool)))
    return fits


def cost_notes(topo: Topology, req: PlanRequest, pool: tuple[InstanceType, ...],
               unpinned: tuple[InstanceType, ...] | None = None, reserved: bool = False) -> Topology:
    """`topo` (the plan of `req`) with its price basis, the cheaper shape among `pool` (the stack's priced
    instance types) that leaves no GPU idle, and, for a deployment that pins instance types, what the pin
    costs over the planner's best among `unpinned` (the pool on the deployment's accelerator).

    `reserved` (a reservation or Capacity Block): the stack pays for the nodes the pool may grow to
    (max_nodes) whether used or not."""
    chosen = next(i for i in req.candidates if i.name == topo.instance_type)
    notes = {"price_basis": chosen.price_basis}
    if chosen.cloud == "existing":
        return replace(topo, **notes)
    if reserved:
        # Bought for one instance type (aws.capacityReservations / gcp.reservation): another type would
        # need its own reservation at its own rate, so no shape of another type is offered as cheaper.
        return replace(topo, reserved_nodes=topo.max_nodes, **notes)
    if topo.idle_gpus > 0:
        free = [f for f in _fits(req, pool)
                if idle_gpus(f.nodes, f.inst.gpus, f.replicas, f.gpus_per_replica) == 0
                and f.cost < topo.cost_per_hour - MIN_SAVING]
        notes["idle_alternative"] = min(free, key=lambda f: f.rank()).shape() if free else ""
    if unpinned is not None:
        fits = _fits(req, unpinned)
        if fits:
            best = min(fits, key=lambda f: f.rank())
            if best.cost < topo.cost_per_hour - MIN_SAVING:
                notes["pinned_best"] = best.shape()
                notes["pinned_extra_per_hour"] = round(topo.cost_per_hour - best.cost, 2)
    return replace(topo, **notes)


def cost_lines(t: Topology) -> list[str]:
    """The plan's cost lines of one model."""
    if unpriced(t):
        lines = [f"  cost: {UNPRICED}: {t.min_replicas} replica(s) ({t.min_nodes} node(s)) at min, "
                 f"{t.max_replicas} ({t.max_nodes} node(s)) at max; no price per million output tokens"]
        return lines + idle_lines(t)
    per_m = t.cost_per_million_output_tokens
    tokens = (f"${per_m:,.2f} per million output tokens ({t.output_tokens_per_s_per_replica:,.0f} tokens/s "
              f"per replica at {t.concurrency_per_replica} concurrent)" if per_m is not None else
              "no price per million output tokens (no node price)")
    basis = (f"reserved: billed for {t.reserved_nodes} node(s) whether used or not; " if t.reserved_nodes else "")
    lines = [f"  cost: ${t.cost_min_per_hour:,.2f}/h at min {t.min_replicas} replica(s) ({t.min_nodes} node(s)), "
             f"${t.cost_max_per_hour:,.2f}/h at max {t.max_replicas} ({t.max_nodes} node(s)); {basis}"
             f"${t.price_per_node_hour:,.2f}/node-hour {t.price_basis}; {tokens}"]
    lines += idle_lines(t)
    if t.reserved_nodes:
        lines.append(f"  NOTE: the reservation fixes the instance type ({t.instance_type}): no other type is "
                     f"compared (it would need its own reservation at its own rate)")
    if t.pinned_best:
        lines.append(f"  NOTE: pinned instanceTypes cost ${t.pinned_extra_per_hour:,.2f}/h more than the planner's "
                     f"best unpinned shape: {t.pinned_best}")
    return lines


def legend_lines(t: Topology) -> list[str]:
    """What a mark beside the plan's price means (components/catalog/prices.py PRICE_LEGEND), where one is printed."""
    return [] if unpriced(t) else price_legend(t.price_basis)


def idle_lines(t: Topology) -> list[str]:
    lines = []
    if t.idle_gpus or t.idle_gpus_min or t.idle_gpus_max:
        alt = {None: "", "": "; no cheaper shape avoids them"}.get(
            t.idle_alternative, f"; cheaper without idle GPUs: {t.idle_alternative}")
        paid = t.billed_nodes(t.nodes) * t.gpus_per_node
        lines.append(f"  idle paid GPUs: {t.idle_gpus} of {paid} at {t.replicas} replica(s) "
                     f"(idle at min replicas: {t.idle_gpus_min}, at max: {t.idle_gpus_max}){alt}")
    else:
        lines.append("  idle paid GPUs: none")
    return lines


def total_line(topologies: dict[str, Topology]) -> str:
    """One line for a stack of several models: what the whole fleet costs."""
    ts = list(topologies.values())
    if any(unpriced(t) for t in ts):
        return f"total for {len(ts)} models: {UNPRICED}"
    return (f"total for {len(ts)} models: ${sum(t.cost_min_per_hour for t in ts):,.2f}/h at min replicas, "
            f"${sum(t.cost_billed_per_hour for t in ts):,.2f}/h as planned, "
            f"${sum(t.cost_max_per_hour for t in ts):,.2f}/h at max")
