"""config -> plan: turn each model deployment of a StackConfig into a Topology. Pure (no Pulumi)."""
from __future__ import annotations

from .catalog import InstanceType, instance_types
from .config.schema import GpuNodes, ModelDeployment, StackConfig
from .planner import PlanRequest, Sla, Topology, plan_topology
from .planner.engine_args import EngineOptions, LoraSlots, Speculation
from .cache_sources import WeightsSource

# In production a node's loss must not take every replica of a model with it.
PRODUCTION_SPREAD_NODES = 2
EXISTING_FABRIC = {"none": None, "infiniband": "infiniband", "roce": "rdma"}


def existing_instance_type(nodes: GpuNodes) -> InstanceType:
    """The GPU nodes of an existing cluster, seen as one instance type."""
    return InstanceType(
        cloud="existing", name=f"existing-{nodes.accelerator}x{nodes.gpus_per_node}",
        accelerator=nodes.accelerator, gpus=nodes.gpus_per_node, vcpu=nodes.vcpu, ram_gib=nodes.ram_gib,
        nvme_gb=0, network_gbps=nodes.network_gbps if nodes.fabric != "none" else 0,
        fabric=EXISTING_FABRIC[nodes.fabric], price_hour=nodes.price_per_node_hour,
        source="stack file (existing.gpuNodes)")


def candidates(cfg: StackConfig, dep: ModelDeployment) -> tuple[InstanceType, ...]:
    if cfg.cloud == "existing":
        pool = [existing_instance_type(cfg.existing.gpu_nodes)]
    else:
        pool = instance_types(cfg.cloud)
    if dep.accelerator:
        pool = [i for i in pool if i.accelerator == dep.accelerator]
    if dep.instance_types:
        pool = [i for i in pool if i.name in dep.instance_types]
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
    if e.chat_template:
        tpl = f"{CHAT_TEMPLATE_DIR}/{e.chat_template.key or INLINE_TEMPLATE_KEY}"
        cm = e.chat_template.config_map or chat_template_config_map(dep.name)
    sp = e.speculative and Speculation(
        e.speculative.method, e.speculative.num_speculative_tokens, e.speculative.model,
        **{k: v for k, v in e.speculative.config_json().items() if k.startswith("prompt_lookup")},
        draft_params_b=e.speculative.draft_params_b)
    lora = e.lora and LoraSlots(e.lora.max_loras, e.lora.max_lora_rank, e.lora.max_cpu_loras,
                                tuple((a.name, a.repo or a.path) for a in e.lora.adapters))
    return EngineOptions(
        tool_call_parser=e.tool_call_parser, reasoning_parser=e.reasoning_parser, chat_template_path=tpl, chat_template_config_map=cm,
        prefix_caching=e.prefix_caching, quantization=e.quantization, max_num_seqs=e.max_num_seqs,
        max_num_batched_tokens=e.max_num_batched_tokens, speculative=sp or None, lora=lora or None,
        extra=tuple(dep.extra_args.items()))


def plan_request(cfg: StackConfig, dep: ModelDeployment) -> PlanRequest:
    s = dep.sla
    return PlanRequest(
        model=dep.spec, precision=dep.effective_precision, candidates=candidates(cfg, dep),
        max_model_len=dep.effective_max_model_len,
        sla=Sla(ttft_ms=s.ttft_ms, tpot_ms=s.tpot_ms, concurrency=s.concurrency,
                prompt_tokens=s.prompt_tokens, output_tokens=s.output_tokens),
        min_replicas=dep.replicas.min, max_replicas=dep.replicas.max,
        gpu_memory_utilization=dep.gpu_memory_utilization,
        kv_cache_dtypes={"allow-fp8": ("auto", "fp8"), "any": ("auto", "fp8")}.get(dep.kv_cache_dtype,
                                                                           (dep.kv_cache_dtype,)),
        tensor_parallel_size=dep.tensor_parallel_size, served_model_name=dep.name,
        spread_nodes=PRODUCTION_SPREAD_NODES if cfg.production else 1,
        engine=engine_options(dep), model_source=weights_source(dep).local_dir if dep.source.kind != "hf" else None,
    )


def ray_engine_problem(dep: ModelDeployment, t: Topology) -> str | None:
    """Options a multi-node replica (Ray Serve LLM, engine_kwargs) cannot take in this release."""
    from .config.vllm_registry import NOT_ENGINE_KWARGS
    if not t.multi_node:
        return None
    bad = []
    if dep.engine.chat_template:
        bad.append("engine.chatTemplate (the Ray workers do not mount its ConfigMap)")
    if dep.engine.lora and dep.engine.lora.adapters:
        bad.append("engine.lora.adapters (Serve LLM loads adapters through its own lora_config)")
    bad += [f"extraArgs {f} (not an engine argument Serve LLM accepts)" for f in dep.extra_args
            if f[2:].replace("-", "_") in NOT_ENGINE_KWARGS]
    return ("a multi-node replica (Ray Serve LLM) cannot take " + "; ".join(bad)) if bad else None


def plan_stack(cfg: StackConfig) -> dict[str, Topology]:
    """One Topology per deployment name; raises NoFeasibleTopology (with the deployment named)."""
    from .planner import NoFeasibleTopology

    out = {}
    for i, dep in enumerate(cfg.models):
        try:
            out[dep.name] = plan_topology(plan_request(cfg, dep))
        except NoFeasibleTopology as e:
            raise NoFeasibleTopology(f"models[{i}] ({dep.name}): {e.message}", e.refusals) from None
        problem = ray_engine_problem(dep, out[dep.name])
        if problem:
            raise NoFeasibleTopology(f"models[{i}] ({dep.name}): {problem}", [])
    return out
