"""GPU node pools from the plan: one pool per planned instance type. Pure and cloud-neutral, so that
the AWS, GCP and existing paths size and label their pools the same way.

The conventions every cloud's node pools share are stated here once: the system pool's label, the GPU taint
and how the cloud APIs spell its effect, root disk sizes, where the node-local model cache lives on the
node's NVMe, and that a pool whose replicas fit one node gets no fabric."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ..catalog import INSTANCE_TYPES, InstanceType
from ..planner import Topology
from .facts import GPU_TAINT_KEY, POOL_LABEL, GpuPool, Taint

ACCELERATOR_LABEL = "vllm-platform/accelerator"
GPU_TAINT = Taint(GPU_TAINT_KEY, "present", "NoSchedule")
# Taint effects as the EKS NodeGroup and GKE NodePool APIs spell them.
CLOUD_TAINT_EFFECTS = {"NoSchedule": "NO_SCHEDULE", "NoExecute": "NO_EXECUTE", "PreferNoSchedule": "PREFER_NO_SCHEDULE"}
# The untainted pool for operators, Prometheus and the Ray heads (ClusterFacts.system_node_selector).
SYSTEM_POOL = "system"
SYSTEM_LABEL = "vllm-platform/node-role"
SYSTEM_SELECTOR = {SYSTEM_LABEL: SYSTEM_POOL}
# Root / boot disk per node (GiB). GPU nodes: the OS, the vLLM / Ray images (10-20 GB each, two versions during
# a rollout) and logs, also on a node whose local NVMe is missing or failed to assemble; system nodes: operators.
GPU_ROOT_DISK_GIB = 200
SYSTEM_ROOT_DISK_GIB = 100
# The node-local model cache's directory under the mount where the cloud assembles the node's NVMe disks.
NVME_CACHE_DIR = "vllm-model-cache"


def nvme_cache_path(nvme_mount: str) -> str:
    """Where the node-local model cache lives on a node whose NVMe disks are mounted at `nvme_mount`."""
    return f"{nvme_mount.rstrip('/')}/{NVME_CACHE_DIR}"


def cloud_taints(taints) -> list[dict]:
    """Taints as the EKS NodeGroup / GKE NodePool APIs take them."""
    return [{"key": t.key, "value": t.value, "effect": CLOUD_TAINT_EFFECTS[t.effect]} for t in taints]


@dataclass(frozen=True)
class PoolSpec:
    name: str  # DNS-safe, e.g. "gpu-p5-48xlarge"
    instance: InstanceType
    min_nodes: int  # nodes for every model's min_replicas
    desired_nodes: int  # nodes for the planned replicas
    max_nodes: int  # nodes for every model's max_replicas
    multi_node: bool  # some replica spans nodes: placement group / compact placement, one zone, fabric
    models: tuple[str, ...]

    @property
    def labels(self) -> dict[str, str]:
        return {POOL_LABEL: self.name, ACCELERATOR_LABEL: self.instance.accelerator}

    @property
    def taints(self) -> tuple[Taint, ...]:
        return (GPU_TAINT,)

    @property
    def fabric(self) -> str | None:
        """The instance type's GPU fabric where a replica spans nodes; a pool whose replicas each fit one node
        needs none (NVLink carries tensor parallelism inside a node), so it gets no EFA devices, GPU NIC
        networks, placement group or fabric add-on, whatever the instance type could carry."""
        return self.instance.fabric if self.multi_node else None

    def gpu_pool(self, fabric_resources: dict[str, int] | None = None, nvme_path: str | None = None,
                 pod_annotations: dict[str, str] | None = None, reserved: bool = False) -> GpuPool:
        return GpuPool(name=self.name, instance_type=self.instance.name, accelerator=self.instance.accelerator,
                       gpus_per_node=self.instance.gpus, node_selector={POOL_LABEL: self.name},
                       taints=self.taints, fabric=self.fabric,
                       fabric_resources=dict(fabric_resources or {}), nvme_path=nvme_path,
                       pod_annotations=dict(pod_annotations or {}), reserved=reserved)


# The model cache holds every distinct checkpoint once, with room for a second revision's download.
CACHE_HEADROOM = 1.5


def model_cache_gib(size_gib: int | None, topologies: dict[str, Topology]) -> int:
    """Size of the model cache: modelCache.sizeGib, else the weights it holds x 1.5 in 10 GiB steps.
    One function for the volume a cloud provisions and the claim that binds to it."""
    if size_gib:
        return size_gib
    weights = {t.model_repo: t.weights_gib for t in topologies.values()}
    return max(10, math.ceil(sum(weights.values()) * CACHE_HEADROOM / 10) * 10)


def pool_name(instance_type: str) -> str:
    return "gpu-" + re.sub(r"[^a-z0-9]+", "-", instance_type.lower()).strip("-")


def gpu_pool_specs(topologies: dict[str, Topology], surge: dict[str, int] | None = None) -> list[PoolSpec]:
    """Group the planned deployments by cloud instance type (the cloud clusters build the pools; an
    existing cluster's nodes are described by config instead); node counts add up across models
    (replicas of different models never share a node: each pod asks for its whole share). surge: model ->
    nodes its upgrades add beside its max fleet (a RayService's second cluster, serving/upgrades.pool_surge),
    added to the pool's max only."""
    surge = surge or {}
    by_type: dict[str, list[Topology]] = {}
    for t in topologies.values():
        by_type.setdefault(t.instance_type, []).append(t)
    specs = []
    for itype, ts in sorted(by_type.items()):
        specs.append(PoolSpec(
            name=pool_name(itype), instance=INSTANCE_TYPES[itype],
            min_nodes=sum(t.min_nodes for t in ts),
            desired_nodes=sum(t.nodes for t in ts),
            max_nodes=sum(t.max_nodes + surge.get(t.served_model_name, 0) for t in ts),
            multi_node=any(t.nodes_per_replica > 1 for t in ts),
            models=tuple(t.served_model_name for t in ts)))
    return specs
