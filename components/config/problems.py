"""The one validation stage after the schema: every rule that needs the plan, collected in one place.

The schema (config/load.parse) reports every field problem at once; what it cannot judge needs the plan (the
topology of each model) or a component's own arguments. Each concern registers its checks here beside the code
they judge, and wiring.validated_plan runs them all once (`collect`), raising one ConfigError with every line.

A check takes a PlanContext and returns `field: problem` lines (the field path first, as the schema's errors do).
collect() runs the checks in ORDER, not in import order, so the report's order is fixed and documented:

    cluster                    the cloud's pure checks of its arguments (cluster/checks.py)
    cache.nvme                 modelCache.kind nvme on instance types without local NVMe (cache/checks.py)
    cache.sources              models[].source against modelCache.kind (cache/checks.py)
    cache.cross_cloud          a bucket of the other cloud (cache/checks.py)
    cache.loader               modelCache.loader against the plan (cache/checks.py)
    cache.revisions            models[].revision: two pins of one repository (cache/checks.py)
    serving.scale_to_zero      replicas.min 0 where it cannot hold (serving/checks.py)
    serving.ray_upgrades       serving.rayUpgradeStrategy NewCluster without room (serving/checks.py)
    serving.runtime_lora_cache engine.lora.runtimeUpdates on a node-local cache (serving/checks.py)
    gateway.production_tls     production TLS of the gateway (config/gateway.py)
    gateway.quota_lora         token quotas beside LoRA adapters (config/token_quotas.py)
    planner.disagg_production  a production P/D fleet (planner/checks.py)
    planner.margin_production  a production model's measured margin (planner/checks.py)

This module imports nothing of the project (tests/test_layers.py): a concern imports it, never the reverse. The
modules that register are imported once by the assembly (components/wiring.py, PLAN_CHECK_MODULES).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

ORDER = ("cluster", "cache.nvme", "cache.sources", "cache.cross_cloud", "cache.loader", "cache.revisions",
         "serving.scale_to_zero", "serving.ray_upgrades", "serving.runtime_lora_cache", "serving.wide_ep",
         "gateway.production_tls", "gateway.quota_lora",
         "planner.disagg_production", "planner.margin_production")


@dataclass(frozen=True)
class PlanContext:
    """What the checks read, built once by wiring.plan_context(cfg, topologies, provider_config): the schema's
    blocks of the validated stack (never the StackConfig itself: no component reads it), the plan and the cloud's
    cluster arguments."""
    cloud: str
    environment: str
    production: bool
    models: tuple            # the schema's ModelDeployment, in stack order (field paths models[i])
    model_cache: Any
    serving: Any
    gateway: Any
    aws: Any
    gcp: Any
    topologies: Mapping[str, Any]  # deployment name -> planner Topology
    cluster: Any             # wiring.cluster_args(...): AwsClusterArgs, GcpClusterArgs or ExistingClusterArgs


Check = Callable[[PlanContext], "list[str]"]
_checks: dict[str, Check] = {}


def plan_check(name: str) -> Callable[[Check], Check]:
    """Register the decorated function as the check `name` (one of ORDER, registered once)."""
    if name not in ORDER:
        raise ValueError(f"plan check {name!r} is not in problems.ORDER {ORDER}")

    def register(check: Check) -> Check:
        known = _checks.get(name)
        if known is not None and (known.__module__, known.__qualname__) != (check.__module__, check.__qualname__):
            raise ValueError(f"plan check {name!r} registered twice: {known.__module__}.{known.__qualname__} "
                             f"and {check.__module__}.{check.__qualname__}")
        _checks[name] = check
        return check
    return register


def registered() -> tuple[tuple[str, Check], ...]:
    """(name, check) of every registered check, in ORDER."""
    return tuple((name, _checks[name]) for name in ORDER if name in _checks)


def collect(ctx: PlanContext) -> list[str]:
    """Every problem of every check, in ORDER; a RuntimeError when a check of ORDER was never registered (its
    module was not imported: it would pass silently)."""
    missing = [name for name in ORDER if name not in _checks]
    if missing:
        raise RuntimeError(f"plan checks never registered: {', '.join(missing)} (wiring.PLAN_CHECK_MODULES)")
    problems: list[str] = []
    for name in ORDER:
        problems += _checks[name](ctx)
    return problems
