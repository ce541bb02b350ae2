"""Precise prefix-cache routing (gateway.prefixRouting / models[].prefixRouting: precise; docs/prefix-routing.md):
where it can work, and the plan's line saying how each model is routed.

precise: the model's endpoint picker keeps an index of the KV-cache blocks each vLLM pod really holds, from the
events vLLM publishes (planner/engine_args.py KvEvents), and tokenizes each request through the model pods' own
render endpoint (gateway/values.py precise_plugins). That needs an endpoint picker in front of the pods (a
Deployment or a LeaderWorkerSet's leaders, never Ray Serve LLM's own router), vLLM's prefix cache on (its block pool
emits the events: vllm/v1/core/block_pool.py in vLLM 0.31.0), and the aggregated profile (the P/D decider reads
the approximate producer's match info; see PD_REFUSAL).
"""
from __future__ import annotations

from ..config.gateway import prefix_routing
from ..config.problems import PlanContext, plan_check
from .shape import on_ray

APPROXIMATE, PRECISE = "approximate", "precise"
# The flags precise sets beside --kv-events-config (which config/engine.py OWNED_FLAGS already refuses in extraArgs).
SCALE_OUT_FLAGS = ("--enable-scale-out", "--no-enable-scale-out")
# llm-d-router v0.10.0 pkg/epp/framework/plugins/scheduling/profilehandler/disagg/prefix_based_pd_decider.go reads
# attrprefix.PrefixCacheMatchInfoDataKey without a producer name (the approximate producer's key), while the precise
# producer writes its match info under its own name (dataproducer/preciseprefixcache/producer.go:
# PrefixCacheMatchInfoDataKey.WithNonEmptyProducerName(name)): a P/D picker would decide on the approximate index
# whatever the scorer reads.
PD_REFUSAL = ("served as prefill and decode instances (serving.disaggregation), whose picker decides with the "
              "approximate prefix index (llm-d-router v0.10.0 prefix_based_pd_decider.go reads the approximate "
              "producer's match info); precise P/D routing is not built")


def precise_problems(ctx: PlanContext) -> list[str]:
    """One `field: problem` line per model set to precise where it cannot work (all at once)."""
    problems = []
    for i, dep in enumerate(ctx.models):
        if prefix_routing(ctx.gateway, dep) != PRECISE:
            continue
        field = f"models[{i}].prefixRouting" if dep.prefix_routing else "gateway.prefixRouting"
        fix = (f"set models[{i}].prefixRouting: approximate" if not dep.prefix_routing else
               f"remove models[{i}].prefixRouting")
        t = ctx.topologies.get(dep.name)
        if not ctx.gateway.enabled:
            problems.append(f"{field}: precise needs the gateway (gateway.enabled is false): the endpoint picker is "
                            f"what reads {dep.name}'s KV-cache events and routes on them; enable the gateway or "
                            f"{fix}")
        elif dep.engine.prefix_caching is False:
            problems.append(f"{field}: precise for {dep.name}, whose prefix cache is off (models[{i}].engine."
                            f"prefixCaching: false): vLLM then caches no prefix and publishes no block events, so "
                            f"there is nothing to route on; remove engine.prefixCaching or {fix}")
        elif t is not None and on_ray(t, ctx.serving):
            problems.append(f"{field}: precise for {dep.name}, planned as a multi-node RayService "
                            f"(serving.multiNode: rayservice, {t.nodes_per_replica} x {t.instance_type} per "
                            f"replica): the gateway calls Ray Serve LLM's own router (PrefixCacheAffinityRouter), "
                            f"there is no endpoint picker for its events to reach; use serving.multiNode: lws (the "
                            f"leaders then sit behind a picker) or {fix}")
        elif t is not None and t.disaggregated:
            problems.append(f"{field}: precise for {dep.name}, {PD_REFUSAL}; {fix} (or serving.disaggregation: off)")
        elif t is not None and t.wide_ep:
            problems.append(f"{field}: precise for {dep.name}, planned as wide-EP (models[{i}].parallelism.mode: "
                            f"wide-ep, DP {t.data_parallel_size}): vLLM publishes each DP rank's KV events on its own "
                            f"port (the endpoint + its rank, vllm/distributed/kv_events.py), the ranks past the "
                            f"first node on worker pods, and the picker dials one port of the pool's pod, so it would "
                            f"index about 1/{t.data_parallel_size} of the cache; {fix}")
        bad = [f for f in SCALE_OUT_FLAGS if f in dep.extra_args]
        if bad:
            problems.append(f"models[{i}].extraArgs: {', '.join(bad)}: set by the platform with prefixRouting "
                            f"precise (the render endpoint the endpoint picker tokenizes with); remove it")
    return problems


@plan_check("gateway.prefix_routing")
def _precise(ctx: PlanContext) -> list[str]:
    return precise_problems(ctx)

