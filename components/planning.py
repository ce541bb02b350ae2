"""config -> plan: turn each model deployment of a StackConfig into a Topology. Pure (no Pulumi)."""
from __future__ import annotations

import hashlib
from dataclasses import replace

from .cache.sources import WeightsSource
from .catalog import InstanceType, instance_types, offered
from .catalog.prices import RESERVED_CAPACITY_TYPES, negotiated, node_price, not_offered
from .config.planning import Planning, measures
from .config.schema import GpuNodes, ModelDeployment, StackConfig
from .planner import NoFeasibleTopology, PlanRequest, Sla, Topology, plan_topology
from .planner.disagg import plan_disaggregation
from .planner.engine_args import EngineOptions, LoraSlots, Speculation
from .planner.request import WideEp

# In production a node's loss must not take every replica of a model with it.
PRODUCTION_SPREAD_NODES = 2
EXISTING_FABRIC = {"none": None, "infiniband": "infiniband", "roce": "rdma"}
# kvCacheDtype -> the KV cache dtypes the planner may choose ("any": deprecated spelling of allow-fp8)
KV_CACHE_DTYPES = {"allow-fp8": ("auto", "fp8"), "any": ("auto", "fp8")}


def existing_instance_type(nodes: GpuNodes) -> InstanceType:
    """The GPU nodes of an existing cluster, seen as one instance type."""
    return InstanceType(
        cloud="existing", name=f"existing-{nodes.accelerator}x{nodes.gpus_per_node}",
        accelerator=nodes.accelerator, gpus=nodes.gpus_per_node, vcpu=nodes.vcpu, ram_gib=nodes.ram_gib,
        nvme_gb=0, network_gbps=nodes.network_gbps if nodes.fabric != "none" else 0,
        fabric=EXISTING_FABRIC[nodes.fabric], price_hour=nodes.price_per_node_hour,
        source="stack file (existing.gpuNodes)", price_basis="existing.gpuNodes.pricePerNodeHour")


def buying(cfg: StackConfig) -> tuple[str, str] | None:
    """(region, capacity type) the stack's GPU nodes are paid at; None for an existing cluster."""
    if cfg.cloud == "aws":
        return cfg.aws.region, cfg.aws.capacity_type
    if cfg.cloud == "gcp":
        return cfg.gcp.region, "spot" if cfg.gcp.spot else "reservation" if cfg.gcp.reservation else "onDemand"
    return None


def priced_pool(cfg: StackConfig) -> tuple[InstanceType, ...]:
    """The instance types a stack's cloud offers (an existing cluster's GPU nodes as one), at the price
    its region and capacity type really pay, negotiated rates (`pricing`) included: the planner ranks
    shapes on these, so a negotiated rate can change the shape it picks."""
    if cfg.cloud == "existing":
        return (existing_instance_type(cfg.existing.gpu_nodes),)
    p, (region, capacity) = cfg.pricing, buying(cfg)
    # What the capacity type cannot buy (GCP A3 Ultra / A4 on demand) is no candidate, unless a model pins it:
    # then the cluster refuses it with the fix (components/cluster/gcp/node_pools.py capacity_errors). Nor is a
    # type the regional price source does not list in the region (prices.not_offered); pinned, its price says so.
    pinned = {name for dep in cfg.models for name in dep.instance_types or ()}
    sold = [i for i in instance_types(cfg.cloud)
            if (offered(i, capacity) and not not_offered(i, region)) or i.name in pinned]
    prices = {i.name: negotiated(node_price(i, region, capacity), p.instance_types.get(i.name), p.discount_percent)
              for i in sold}
    return tuple(replace(i, price_hour=prices[i.name].hour, price_basis=prices[i.name].label) for i in sold)


def candidates(pool: tuple[InstanceType, ...], dep: ModelDeployment) -> tuple[InstanceType, ...]:
    """The instance types of `pool` a deployment may use (its accelerator and instanceTypes)."""
    if dep.accelerator:
        pool = tuple(i for i in pool if i.accelerator == dep.accelerator)
    if dep.instance_types:
        pool = tuple(i for i in pool if i.name in dep.instance_types)
    return tuple(pool)


CHAT_TEMPLATE_DIR = "/etc/vllm-platform/chat-template"
INLINE_TEMPLATE_KEY = "template.jinja"


def chat_template_config_map(model: str) -> str:
    """The ConfigMap the platform makes for an inline models[].engine.chatTemplate."""
    return f"{model}-chat-template"


def weights_source(dep: ModelDeployment) -> WeightsSource:
    s = dep.source
    return WeightsSource(s.kind, s.uri, s.claim_name, s.path or "", s.service_account, s.region)


def engine_options(dep: ModelDeployment) -> EngineOptions:
    """models[].engine and extraArgs as the planner's typed options (the chat template as the pod's path)."""
    e = dep.engine
    tpl = cm = None
    inline = e.chat_template.inline if e.chat_template else None
    if e.chat_template:
        tpl = f"{CHAT_TEMPLATE_DIR}/{e.chat_template.key or INLINE_TEMPLATE_KEY}"
        cm = e.chat_template.config_map or chat_template_config_map(dep.name)
    sp = e.speculative and Speculation(
        e.speculative.method, e.speculative.num_speculative_tokens, e.speculative.model,
        **{k: v for k, v in e.speculative.config_json().items() if k.startswith("prompt_lookup")},
        draft_params_b=e.speculative.draft_params_b)
    lora = e.lora and LoraSlots(e.lora.max_loras, e.lora.max_lora_rank, e.lora.max_cpu_loras,
                                tuple((a.name, a.repo or a.path) for a in e.lora.adapters),
                                runtime_updates=e.lora.runtime_updates)
    return EngineOptions(
        tool_call_parser=e.tool_call_parser, reasoning_parser=e.reasoning_parser, chat_template_path=tpl,
        chat_template_config_map=cm, chat_template_sha256=inline and hashlib.sha256(inline.encode()).hexdigest(),
        prefix_caching=e.prefix_caching, quantization=e.quantization,
        max_num_seqs=e.max_num_seqs, max_num_batched_tokens=e.max_num_batched_tokens, speculative=sp or None,
        lora=lora or None, kv_offload_gib=e.kv_offload_gib, extra=tuple(dep.extra_args.items()))


def deployment_request(dep: ModelDeployment, pool: tuple[InstanceType, ...], production: bool = False,
                       planning: Planning | None = None, multi_node: str = "lws") -> PlanRequest:
    """The planner's request for one validated model deployment: what a stack file's `models` entry and
    `python -m components topology` (components/cli/topology.py) both plan, engine options included; `planning`:
    the stack's latency margin and its measurements of this deployment's model; `multi_node`: serving.multiNode."""
    s, planning = dep.sla, planning or Planning()
    return PlanRequest(
        model=dep.spec, precision=dep.effective_precision, candidates=candidates(pool, dep),
        max_model_len=dep.effective_max_model_len,
        sla=Sla(ttft_ms=s.ttft_ms, tpot_ms=s.tpot_ms, concurrency=s.users, requests_per_second=s.requests_per_second,
                prompt_tokens=s.prompt_tokens, output_tokens=s.output_tokens,
                latency_percentile=s.latency_percentile),
        min_replicas=dep.replicas.min, max_replicas=dep.replicas.max,
        gpu_memory_utilization=dep.gpu_memory_utilization,
        kv_cache_dtypes=KV_CACHE_DTYPES.get(dep.kv_cache_dtype, (dep.kv_cache_dtype,)),
        tensor_parallel_size=dep.tensor_parallel_size, served_model_name=dep.name,
        spread_nodes=PRODUCTION_SPREAD_NODES if production else 1,
        engine=engine_options(dep), model_source=weights_source(dep).local_dir if dep.source.kind != "hf" else None,
        market=pool, latency_margin=planning.latency_margin, estimator=planning.estimator,
        measurements=tuple(m for m in planning.shapes if measures(m, dep)), multi_node=multi_node,
        wide_ep=WideEp(dep.parallelism.all2all_backend, dep.parallelism.eplb_redundant_experts)
        if dep.parallelism.mode == "wide-ep" else None,
    )


def plan_request(cfg: StackConfig, dep: ModelDeployment) -> PlanRequest:
    return deployment_request(dep, priced_pool(cfg), cfg.production, cfg.planning, cfg.serving.multi_node)


def plan_deployment(cfg: StackConfig, dep: ModelDeployment) -> Topology:
    """One deployment's Topology with its cost findings (components/costs/notes.py); raises NoFeasibleTopology."""
    from .costs.notes import cost_notes

    pool = priced_pool(cfg)
    req = deployment_request(dep, pool, cfg.production, cfg.planning, cfg.serving.multi_node)
    if not req.candidates and cfg.cloud != "existing":
        region = buying(cfg)[0]
        gone = [i.name for i in candidates(tuple(instance_types(cfg.cloud)), dep) if not_offered(i, region)]
        if gone:
            raise NoFeasibleTopology(
                f"no instance type it may use is offered in {region}: {', '.join(gone)} not listed there by the "
                f"price source (components/catalog/data/prices/regional.csv); choose a region that offers them "
                f"({cfg.cloud}.region) or another accelerator", [])
    unpinned = tuple(i for i in pool if not dep.accelerator or i.accelerator == dep.accelerator)
    # serving.disaggregation auto | on: the P/D verdict, and the P/D fleet where it is chosen (planner/disagg.py)
    planned = plan_disaggregation(req, plan_topology(req), cfg.serving.disaggregation, cfg.gateway.enabled)
    return cost_notes(planned, req, pool, unpinned if dep.instance_types else None,
                      reserved=(buying(cfg) or ("", ""))[1] in RESERVED_CAPACITY_TYPES)


def ray_engine_problem(dep: ModelDeployment, t: Topology, multi_node: str = "rayservice") -> str | None:
    """Options a multi-node replica (Ray Serve LLM, engine_kwargs) cannot take in this release; multi_node:
    serving.multiNode (a LeaderWorkerSet runs `vllm serve` with the Deployment's arguments and takes them all)."""
    from .upstream.vllm_registry import NOT_ENGINE_KWARGS
    if not t.multi_node or multi_node != "rayservice":
        return None
    bad = []
    if dep.engine.chat_template:
        bad.append("engine.chatTemplate (the Ray workers do not mount its ConfigMap)")
    if dep.engine.lora and dep.engine.lora.adapters:
        bad.append("engine.lora.adapters (Serve LLM loads adapters through its own lora_config)")
    if dep.engine.lora and dep.engine.lora.runtime_updates:
        bad.append("engine.lora.runtimeUpdates (Serve LLM has no /v1/load_lora_adapter; docs/lora.md)")
    bad += [f"extraArgs {f} (not an engine argument Serve LLM accepts)" for f in dep.extra_args
            if f[2:].replace("-", "_") in NOT_ENGINE_KWARGS]
    return ("a multi-node replica (Ray Serve LLM) cannot take " + "; ".join(bad)) if bad else None


def plan_models(cfg: StackConfig) -> tuple[dict[str, Topology], list[NoFeasibleTopology]]:
    """The Topology of every deployment that has one, and a NoFeasibleTopology (its message naming
    `models[i] (name)`) for every deployment that has none: every refusal, not only the first. A plan whose
    multi-node shape cannot take the deployment's engine options (ray_engine_problem) is a refusal too."""
    out, refused = {}, []
    for i, dep in enumerate(cfg.models):
        try:
            t = plan_deployment(cfg, dep)
        except NoFeasibleTopology as e:
            refused.append(NoFeasibleTopology(f"models[{i}] ({dep.name}): {e.message}", e.refusals))
            continue
        problem = ray_engine_problem(dep, t, cfg.serving.multi_node)
        if problem:
            refused.append(NoFeasibleTopology(f"models[{i}] ({dep.name}): {problem}", []))
        else:
            out[dep.name] = t
    return out, refused


def no_fit(refused: list[NoFeasibleTopology]) -> NoFeasibleTopology:
    """One NoFeasibleTopology for every refused deployment (one line each)."""
    return NoFeasibleTopology("\n  ".join(e.message for e in refused), [r for e in refused for r in e.refusals])


def plan_stack(cfg: StackConfig) -> dict[str, Topology]:
    """One Topology per deployment name; raises NoFeasibleTopology naming every deployment that has none."""
    out, refused = plan_models(cfg)
    if refused:
        raise no_fit(refused)
    return out
