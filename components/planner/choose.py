"""plan_topology: the cheapest feasible topology the search found, or why none fits (explain)."""
from __future__ import annotations

from .explain import explain_refusal
from .request import PlanRequest
from .search import _Fit, _topology, evaluate
from .topology import NoFeasibleTopology, Topology


def plan_topology(req: PlanRequest) -> Topology:
    """The cheapest feasible topology, or NoFeasibleTopology naming why the closest candidates fail."""
    if req.precision not in req.model.precisions:
        raise NoFeasibleTopology(
            f"{req.model.name} is served at {' or '.join(req.model.precisions)}, not {req.precision}", [])
    fits, refusals = evaluate(req)
    if not fits:
        raise NoFeasibleTopology(explain_refusal(req, refusals), refusals)
    fits.sort(key=_Fit.rank)
    best = fits[0]
    alt = next((f for f in fits[1:] if (f.inst.name, f.tp, f.pp) != (best.inst.name, best.tp, best.pp)), None)
    return _topology(req, best, alt, refusals)
