"""config -> plan: turn each model deployment of a StackConfig into a Topology. Pure (no Pulumi)."""
from __future__ import annotations

from .catalog import InstanceType, instance_types
from .config.schema import GpuNodes, ModelDeployment, StackConfig
from .planner import PlanRequest, Sla, Topology, plan_topology

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


def plan_request(cfg: StackConfig, dep: ModelDeployment) -> PlanRequest:
    s = dep.sla
    return PlanRequest(
        model=dep.spec, precision=dep.effective_precision, candidates=candidates(cfg, dep),
        max_model_len=dep.effective_max_model_len,
        sla=Sla(ttft_ms=s.ttft_ms, tpot_ms=s.tpot_ms, concurrency=s.users, requests_per_second=s.requests_per_second,
                prompt_tokens=s.prompt_tokens, output_tokens=s.output_tokens),
        min_replicas=dep.replicas.min, max_replicas=dep.replicas.max,
        gpu_memory_utilization=dep.gpu_memory_utilization,
        kv_cache_dtypes=("auto", "fp8") if dep.kv_cache_dtype == "any" else (dep.kv_cache_dtype,),
        tensor_parallel_size=dep.tensor_parallel_size, served_model_name=dep.name,
        spread_nodes=PRODUCTION_SPREAD_NODES if cfg.production else 1,
    )


def plan_stack(cfg: StackConfig) -> dict[str, Topology]:
    """One Topology per deployment name; raises NoFeasibleTopology (with the deployment named)."""
    from .planner import NoFeasibleTopology

    out = {}
    for i, dep in enumerate(cfg.models):
        try:
            out[dep.name] = plan_topology(plan_request(cfg, dep))
        except NoFeasibleTopology as e:
            raise NoFeasibleTopology(f"models[{i}] ({dep.name}): {e.message}", e.refusals) from None
    return out
