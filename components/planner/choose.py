"""plan_topology: the cheapest feasible topology the search found, or why none fits (explain)."""
from __future__ import annotations

from dataclasses import replace

from . import wide_ep
from .explain import explain_refusal
from .request import PlanRequest
from .search import _Fit, _topology
from .search import evaluate as search_evaluate
from .topology import NoFeasibleTopology, Topology


def evaluate(req: PlanRequest):
    """(fits, refusals) of the request: wide-EP shapes (DP x EP, planner/wide_ep.py) where
    models[].parallelism.mode is wide-ep, else TP x PP (search.py)."""
    return wide_ep.evaluate(req) if req.wide_ep is not None else search_evaluate(req)


def plan_topology(req: PlanRequest) -> Topology:
    """The cheapest feasible topology, or NoFeasibleTopology naming why the closest candidates fail."""
    if req.precision not in req.model.precisions:
        raise NoFeasibleTopology(
            f"{req.model.name} is served at {' or '.join(req.model.precisions)}, not {req.precision}", [])
    fits, refusals = evaluate(req)
    if not fits and req.wide_ep is not None:
        raise NoFeasibleTopology(wide_ep.explain(req, refusals), refusals)
    if not fits:
        raise NoFeasibleTopology(explain_refusal(req, refusals), refusals)
    fits.sort(key=wide_ep.rank_key if req.wide_ep is not None else _Fit.rank)
    best = fits[0]
    alt = next((f for f in fits[1:] if (f.inst.name, f.tp, f.pp, f.dp) != (best.inst.name, best.tp, best.pp, best.dp)),
               None)
    t = _topology(req, best, alt, refusals)
    if req.wide_ep is not None:  # DP x EP, the all2all backend and why, what the estimate covers
        t = replace(t, engine_notes=(*wide_ep.plan_lines(best, req), *t.engine_notes))
    return t
