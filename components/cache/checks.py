"""The model cache's plan checks (config/problems.py): local NVMe, the weights sources, a bucket of the other
cloud, the loader, the pinned revisions; each as `field: problem` lines."""
from __future__ import annotations

from ..catalog import INSTANCE_TYPES
from ..catalog.revisions import resolved_revision
from ..cluster.source_access import cross_cloud_problems
from ..config.problems import PlanContext, plan_check
from .component import CacheError, check_loader, nvme_missing
from .sources import check_sources


def pinned_revisions(models: list, topologies: dict) -> dict[str, str]:
    """models[].revision by the repository the plan loads, else the commit the catalog knows for it
    (catalog/revisions.py); two deployments of one repository must agree."""
    out: dict[str, str] = {}
    for i, dep in enumerate(models):
        t = topologies.get(dep.name)
        if t is None or not dep.revision:
            continue
        if out.setdefault(t.model_repo, dep.revision) != dep.revision:
            raise CacheError(f"models[{i}].revision: {dep.revision} differs from another deployment of "
                             f"{t.model_repo} ({out[t.model_repo]}); the cache holds one snapshot per repository")
    for t in topologies.values():  # a stack's own pin wins over the catalog's
        if t.model_repo not in out and (known := resolved_revision(t.model_repo)):
            out[t.model_repo] = known
    return out


@plan_check("cache.nvme")
def _nvme(ctx: PlanContext) -> list[str]:
    if ctx.model_cache.kind != "nvme" or ctx.cloud == "gcp":  # GCP's check names machine types without local SSDs
        return []
    # an existing cluster's nodes are no catalog type: the stack describes no local NVMe on them
    return [nvme_missing(t) for t in ctx.topologies.values()
            if t.instance_type not in INSTANCE_TYPES or not INSTANCE_TYPES[t.instance_type].nvme_gb]


@plan_check("cache.sources")
def _sources(ctx: PlanContext) -> list[str]:
    problem = check_sources(list(ctx.models), ctx.model_cache.kind)
    return [problem] if problem else []


@plan_check("cache.cross_cloud")
def _cross_cloud(ctx: PlanContext) -> list[str]:
    return cross_cloud_problems(list(ctx.models), ctx.cloud)


@plan_check("cache.loader")
def _loader(ctx: PlanContext) -> list[str]:
    try:
        check_loader(ctx.model_cache.loader, dict(ctx.topologies))
    except CacheError as e:
        return list(e.errors)
    return []


@plan_check("cache.revisions")
def _revisions(ctx: PlanContext) -> list[str]:
    try:
        pinned_revisions(list(ctx.models), dict(ctx.topologies))
    except CacheError as e:
        return list(e.errors)
    return []
