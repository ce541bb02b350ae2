"""The planner's plan checks (config/problems.py): what production refuses of a plan (P/D without an RDMA fabric,
an estimated knee below the calibration's margin), as `field: problem` lines."""
from __future__ import annotations

from ..config.problems import PlanContext, plan_check
from .disagg import production_problems as disagg_production_problems
from .measured import production_problems as margin_production_problems


@plan_check("planner.disagg_production")
def _disagg_production(ctx: PlanContext) -> list[str]:
    return disagg_production_problems(ctx.production, dict(ctx.topologies))


@plan_check("planner.margin_production")
def _margin_production(ctx: PlanContext) -> list[str]:
    return margin_production_problems(ctx.production, dict(ctx.topologies))
