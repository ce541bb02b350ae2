"""The cluster's plan check (config/problems.py): the configured cloud's pure checks of its arguments, what its
component would refuse, as `field: problem` lines. The cloud's module is imported inside the check, so that
importing this one (wiring does, to register it) loads no provider SDK."""
from __future__ import annotations

from ..config.problems import PlanContext, plan_check
from .existing import ExistingClusterArgs


def cluster_problems(args) -> list[str]:
    """The cloud's pure checks of AwsClusterArgs / GcpClusterArgs (none for an existing cluster)."""
    if isinstance(args, ExistingClusterArgs):
        return []
    from .gcp.component import GcpClusterArgs
    if isinstance(args, GcpClusterArgs):
        from .gcp.component import check
        return check(args)
    from .aws.component import check
    from .aws.control_plane import token_identity
    return check(args, list(args.pools)) + token_identity(args.provider_config)[2]


@plan_check("cluster")
def _cluster(ctx: PlanContext) -> list[str]:
    return cluster_problems(ctx.cluster)
