"""Serving's plan checks (config/problems.py): where a model may scale to zero, and room for a RayService's
second cluster (serving.rayUpgradeStrategy NewCluster); each as `field: problem` lines."""
from __future__ import annotations

from ..config.problems import PlanContext, plan_check
from ..kube.k8s import CACHE_MOUNT
from .runtime_lora import RESOLVER_ROOT
from ..gateway.wake import WAKE_HOLD_S
from .cold_start import COLD_START_FLOOR_S
from .shape import on_ray, ray_topologies, workload
from .upgrades import no_room, upgrade_problems


@plan_check("serving.scale_to_zero")
def scale_to_zero_problems(ctx: PlanContext) -> list[str]:
    """Where replicas.min 0 cannot hold, one `field: problem` line per model (all at once): production keeps a
    replica warm; the model must be a single-node Deployment KEDA scales; the gateway must run, because
    the request that wakes the model waits in its endpoint picker's flow-control queue, the metric KEDA reads; and
    the stack must accept the wake contract (replicas.firstRequest: retry) wherever a cold start outlasts what the
    gateway holds a request, which every cold start does (cold_start.COLD_START_FLOOR_S; docs/scale-to-zero.md)."""
    problems = []
    for i, dep in enumerate(ctx.models):
        if dep.replicas.min != 0:
            continue
        field = f"models[{i}].replicas.min"
        if ctx.production:
            problems.append(f"{field}: 0 (scale to zero) is for dev and staging; production keeps at least one "
                            f"replica of {dep.name} warm (its first request would wait a whole cold start); set "
                            f"min >= 1")
            continue
        t = ctx.topologies.get(dep.name)
        if t is not None and t.multi_node:
            why = ("which KEDA cannot scale and whose Ray head stays up" if on_ray(t, ctx.serving) else
                   "whose cold start is a whole group of GPU nodes started together")
            problems.append(f"{field}: 0 (scale to zero) needs a single-node replica scaled by KEDA; {dep.name} is "
                            f"planned as a multi-node {workload(t, ctx.serving)} ({t.nodes_per_replica} x "
                            f"{t.instance_type} per replica), {why}; set min >= 1")
        elif not ctx.gateway.enabled:
            problems.append(f"{field}: 0 (scale to zero) needs the gateway (gateway.enabled is false): the first "
                            f"request waits in the endpoint picker's flow-control queue, whose size wakes "
                            f"{dep.name}; set gateway.enabled: true, or min >= 1")
        elif dep.replicas.first_request is None and COLD_START_FLOOR_S > WAKE_HOLD_S:
            problems.append(f"{field}: 0 (scale to zero) answers the first request after an idle spell with 503 + "
                            f"Retry-After: {dep.name} takes at least {COLD_START_FLOOR_S} s to start from zero (the "
                            f"plan prints its figure) and the gateway holds a request at most {WAKE_HOLD_S} s, so "
                            f"clients must retry while it wakes; set replicas.firstRequest: retry to accept that "
                            f"contract (docs/scale-to-zero.md), or min >= 1")
    return problems


@plan_check("serving.ray_upgrades")
def _ray_upgrades(ctx: PlanContext) -> list[str]:
    blocked = no_room(ctx.cloud, ctx.aws.capacity_type if ctx.aws else None,
                      ctx.gcp.reservation if ctx.gcp else None)
    return upgrade_problems(ctx.serving.ray_upgrade_strategy, ray_topologies(ctx.serving, dict(ctx.topologies)),
                            blocked)


@plan_check("serving.runtime_lora_cache")
def runtime_lora_cache_problems(ctx: PlanContext) -> list[str]:
    """engine.lora.runtimeUpdates needs one resolver directory every replica reads (serving/runtime_lora.py): a
    node-local cache (modelCache.kind nvme, each GPU node's own disk) cannot be one, so an adapter published there
    reaches the pods of one node while the endpoint picker sends its requests to any pod (404 elsewhere)."""
    if ctx.model_cache.kind != "nvme":
        return []
    return [f"models[{i}].engine.lora.runtimeUpdates: modelCache.kind nvme is each GPU node's own disk, so the LoRA "
            f"resolver directory ({RESOLVER_ROOT}/{dep.name}) would differ from node to node and a replica on another "
            f"node (a scale-up, a restart, a drain) answers 404 for an adapter published on the first; use "
            f"modelCache.kind rwx, whose one volume every replica mounts at {CACHE_MOUNT} (docs/lora.md)"
            for i, dep in enumerate(ctx.models) if dep.engine.lora and dep.engine.lora.runtime_updates]


@plan_check("serving.wide_ep")
def wide_ep_problems(ctx: PlanContext) -> list[str]:
    """parallelism.mode wide-ep across nodes runs as a LeaderWorkerSet (lws.py: vLLM's DP ranks with
    --data-parallel-address / --headless); Ray Serve LLM (serving.multiNode rayservice) is not rendered for it."""
    problems = []
    for i, dep in enumerate(ctx.models):
        t = ctx.topologies.get(dep.name)
        if t is None or not t.wide_ep or not t.multi_node or not on_ray(t, ctx.serving):
            continue
        problems.append(f"models[{i}].parallelism.mode: wide-ep across {t.nodes_per_replica} nodes runs as a "
                        f"LeaderWorkerSet; serving.multiNode is rayservice, which is not rendered for wide-EP "
                        f"(docs/wide-ep.md); set serving.multiNode: lws")
    return problems
