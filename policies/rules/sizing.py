"""Rules on the parallel layout the workloads give vLLM: read from the container args or the Ray
Serve engine_kwargs, checked against the instance-type facts of components/catalog, so that
`pulumi preview` checks the same plan the planner made."""
from __future__ import annotations

from .core import ADVISORY, MANDATORY, rule
from .facts import (CAPACITY_ANNOTATION, GPU_MEMORY_UTILIZATION_RANGE, INSTANCE_TYPES, MIN_FABRIC_GBPS, PRICES_AS_OF,
                    RESERVED_CAPACITY)
from .podspec import LWS, RAY_TYPES, SERVING_TYPES, PodTemplate, engines, has_fabric, instance_types, pod_templates

# GPU_MEMORY_UTILIZATION_RANGE (facts.py, from components/config/bounds.py; the stack schema enforces it too):
# outside it vLLM either wastes KV-cache memory (below) or leaves no headroom for CUDA graphs, NCCL buffers
# and fragmentation, which are not in its memory profile (above).
MULTI_POD_TYPES = RAY_TYPES | {LWS}  # an engine here spans pods, one per node


def _gpu_templates(resource_type: str, props: dict) -> list[PodTemplate]:
    return [t for t in pod_templates(resource_type, props) if t.gpus() > 0]


def gpus_per_node(templates: list[PodTemplate]) -> tuple[int, str] | None:
    """GPUs one node gives a replica, and why we think so: the catalog for the instance types the pods
    are pinned to; otherwise the largest GPU pod (a pod never spans nodes)."""
    types = {i.name: i for t in templates for i in instance_types(t)}
    if types:
        smallest = min(types.values(), key=lambda i: i.gpus)
        return smallest.gpus, f"{smallest.name} has {smallest.gpus} GPUs per node"
    if templates:
        biggest = max(templates, key=lambda t: t.gpus())
        return biggest.gpus(), f"its largest GPU pod ({biggest.where}) holds {biggest.gpus()} GPUs"
    return None


@rule("tp-within-node", MANDATORY, SERVING_TYPES,
      "Tensor parallelism stays inside one node (TP <= GPUs per node of the target instance type): "
      "TP all-reduces every layer and needs NVLink, not the network.",
      "lower tensor-parallel-size to the GPUs per node and span nodes with pipeline-parallel-size")
def tp_within_node(resource_type, props):
    per_node = gpus_per_node(_gpu_templates(resource_type, props))
    if per_node is None:
        return
    gpus, basis = per_node
    for e in engines(resource_type, props):
        tp = e.get("tensor_parallel_size")
        if tp is not None and tp > gpus:
            yield f"{e.where}: tensor-parallel-size {tp:g} > {gpus} GPUs per node ({basis})"


@rule("pp-needs-fast-fabric", MANDATORY, SERVING_TYPES,
      "A replica split across nodes (pipeline-parallel-size > 1) on an instance type with an RDMA-class fabric "
      f"(>= {MIN_FABRIC_GBPS} Gbps EFA / GPUDirect / InfiniBand / RoCE), or on nodes the catalog does not know, "
      "has its pods attached to that fabric. PP over plain Ethernet on a catalog type without one is the "
      "planner's call (only activations cross nodes; it is planned only when the SLA still holds, "
      "docs/capacity.md).",
      "request the fabric in the pods (EFA devices, RDMA resource or GKE multi-network interfaces), or pick a "
      "bigger GPU so that one node holds the replica")
def pp_needs_fast_fabric(resource_type, props):
    templates = _gpu_templates(resource_type, props)
    if not templates:
        return
    for e in engines(resource_type, props):
        pp = e.get("pipeline_parallel_size")
        if pp is None or pp <= 1:
            continue
        tp = e.get("tensor_parallel_size", 1)
        if resource_type not in MULTI_POD_TYPES and max(t.gpus() for t in templates) >= tp * pp:
            continue  # the whole engine sits in one pod, so on one node
        known = [i for t in templates for i in instance_types(t)]
        if known and not any(i.fast_fabric for i in known):
            continue  # PP over Ethernet: NCCL's socket transport is all these nodes have
        if not any(has_fabric(t) for t in templates):
            yield (f"{e.where}: pipeline-parallel-size {pp:g} spans nodes, but the GPU pods attach no fabric "
                   f"(no EFA/RDMA device, no extra network); NCCL would fall back to TCP")


@rule("gpu-memory-utilization-range", MANDATORY, SERVING_TYPES,
      f"vLLM's gpu_memory_utilization is within {GPU_MEMORY_UTILIZATION_RANGE[0]:.2f}-"
      f"{GPU_MEMORY_UTILIZATION_RANGE[1]:.2f}.",
      "set gpuMemoryUtilization in the stack file between 0.80 and 0.95 (0.90 is the planner's default)")
def gpu_memory_utilization_range(resource_type, props):
    low, high = GPU_MEMORY_UTILIZATION_RANGE
    for e in engines(resource_type, props):
        value = e.get("gpu_memory_utilization")
        if value is not None and not low <= value <= high:
            side = "wastes KV-cache memory" if value < low else "leaves no headroom for CUDA graphs and NCCL"
            yield f"{e.where}: gpu-memory-utilization {value:g} is outside {low:.2f}-{high:.2f} ({side})"


MIN_SAVING_PER_HOUR = 0.01  # $/hour per replica: below this two shapes cost the same


def _per_replica(inst, gpus: int, nodes: int) -> float | None:
    """$/hour one replica of `gpus` GPUs per node over `nodes` nodes costs on `inst` (None: it does not fit)."""
    if inst.gpus < gpus or not inst.price_hour:
        return None
    return inst.price_hour * nodes / (inst.gpus // gpus)


@rule("pinned-instance-cost", ADVISORY, SERVING_TYPES,
      "A serving workload pinned to an instance type pays no more per replica than the cheapest catalog "
      "instance type of the same cloud and GPU that holds the same pods (base-region on-demand prices, "
      f"{PRICES_AS_OF}; the plan's note prices the planner's own best shape at the stack's region). Pods "
      f"annotated {CAPACITY_ANNOTATION}: {RESERVED_CAPACITY} are exempt: a reservation or Capacity Block fixes "
      "their instance type.",
      "remove models[].instanceTypes (or add the cheaper type to it) and let the planner choose; "
      "`python -m components plan` prints what the pin costs")
def pinned_instance_cost(resource_type, props):
    templates = _gpu_templates(resource_type, props)
    pp = max([int(e.get("pipeline_parallel_size") or 1) for e in engines(resource_type, props)] or [1])
    for t in templates:
        if t.annotations.get(CAPACITY_ANNOTATION) == RESERVED_CAPACITY:
            continue  # bought for this type: another would need its own reservation at its own rate
        gpus = t.gpus()
        for inst in instance_types(t):
            nodes = pp if resource_type in MULTI_POD_TYPES and pp > 1 else 1
            have = _per_replica(inst, gpus, nodes)
            if have is None:
                continue
            others = [(cost, o) for o in INSTANCE_TYPES.values()
                      if o.cloud == inst.cloud and o.accelerator == inst.accelerator and o.name != inst.name
                      and (nodes == 1 or o.fast_fabric)
                      for cost in [_per_replica(o, gpus, nodes)] if cost is not None]
            if not others:
                continue
            cost, best = min(others, key=lambda c: (c[0], c[1].name))
            if cost < have - MIN_SAVING_PER_HOUR:
                yield (f"{t.where}: a replica of {gpus} GPU(s) per node on {inst.name} costs ${have:,.2f}/h; "
                       f"{best.name} holds it for ${cost:,.2f}/h (${have - cost:,.2f}/h less per replica, "
                       f"on-demand {PRICES_AS_OF})")
