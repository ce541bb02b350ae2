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
            # a P/D model's decode instances read the KV cache from prefill instances on other nodes: its pool
            # gets the fabric (EFA devices, GPU NICs, placement) a multi-node replica would (planner/disagg.py)
            multi_node=any(t.nodes_per_replica > 1 or t.disaggregated for t in ts),
            models=tuple(t.served_model_name for t in ts)))
    return specs


# --- GPU quotas -----------------------------------------------------------------------------------
# A new AWS account or GCP project has no GPU quota at all. Pools start at zero nodes (the autoscalers
# add them as pods ask), so a missing quota would not fail `pulumi up`: the run would finish and every
# model would stay Pending behind a scale-up the cloud refuses. Each cloud asks its quota API before the
# first resource and refuses, with the request to file, where a quota is below what the pools need at
# their max node counts (the most the autoscalers may ask for). The quota codes, their units and how
# much of each a node draws are cloud facts, in components/cluster/aws/quotas.py and gcp/quotas.py.


@dataclass(frozen=True)
class Quota:
    """One cloud quota, as the cloud's quota API names it."""
    code: str  # AWS quota code (L-417A185B) / GCP quota id (GPUS-PER-GPU-FAMILY-per-project-region)
    name: str  # as the quota console shows it
    unit: str  # "vCPUs" / "GPUs"
    dimensions: tuple[tuple[str, str], ...] = ()  # GCP: e.g. (("gpu_family", "NVIDIA_H100"),)


@dataclass(frozen=True)
class QuotaNeed:
    """What the plan draws on one quota: `need` units at every pool's max node count. `alternatives`: quotas
    the cloud uses instead when this one is unset (GCP Spot falls back to the standard GPU quota)."""
    quota: Quota
    need: int
    pools: tuple[str, ...]
    alternatives: tuple[Quota, ...] = ()


def quota_needs(specs: list[PoolSpec], draws) -> list[QuotaNeed]:
    """Add up, per quota, what the pools draw at their max node counts. `draws(spec)` gives the cloud's
    (quota, units per node, alternatives) for one pool; pools drawing on the same quota add up."""
    totals: dict[Quota, tuple[int, tuple[str, ...], tuple[Quota, ...]]] = {}
    for spec in specs:
        for quota, per_node, alternatives in draws(spec):
            need, pools, _ = totals.get(quota, (0, (), ()))
            totals[quota] = (need + per_node * spec.max_nodes, (*pools, spec.name), tuple(alternatives))
    return [QuotaNeed(q, need, pools, alts) for q, (need, pools, alts) in totals.items() if need > 0]


# The offline plan (components/offline) has no account behind its quota reads. A quota its stubs list answers that
# value (tests list 0 to show a new account's refusal); any other read answers a placeholder so that the plan goes on.
# A placeholder is no figure of the account's: such a need is not compared (or printed as the quota), the plan says the
# quota was not checked and what the pools need of it (OFFLINE_NOT_CHECKED). OFFLINE_PLACEHOLDER: per cloud, whether
# only a placeholder answered a quota; the offline stubs install it, and a real run has none, so there every quota is
# read, compared and printed as the cloud answered it.
OFFLINE_PLACEHOLDER: dict = {}  # cloud -> (Quota -> bool)
OFFLINE_NOT_CHECKED: list[tuple[str, str]] = []  # (cloud, what the pools need of a quota no account answered)
NOT_CHECKED_OFFLINE = {"aws": "quota: not checked offline (a real `pulumi preview` reads the account's Service Quotas)",
                       "gcp": "quota: not checked offline (a real `pulumi preview` reads the project's Cloud Quotas "
                              "and Compute Engine quotas)"}


def checked_needs(cloud: str, needs: list[QuotaNeed], where) -> list[QuotaNeed]:
    """The needs to compare with the quotas read: every one in a real run; in the offline plan those a listed quota
    answers (OFFLINE_PLACEHOLDER), the others recorded in OFFLINE_NOT_CHECKED. `where(quota)`: where the quota is
    (AWS: the region; GCP: the region and project, or the project)."""
    placeholder = OFFLINE_PLACEHOLDER.get(cloud)
    if placeholder is None:
        return needs
    kept = []
    for need in needs:
        if all(placeholder(q) for q in (need.quota, *need.alternatives)):
            q = need.quota
            line = (f"{q.code} ({q.name}{''.join(f', {k}={v}' for k, v in q.dimensions)}) in {where(q)}: the node "
                    f"pools ({', '.join(need.pools)}) need {need.need} {q.unit} at their max node counts")
            if (cloud, line) not in OFFLINE_NOT_CHECKED:
                OFFLINE_NOT_CHECKED.append((cloud, line))
        else:
            kept.append(need)
    return kept


def quota_shortfall(need: QuotaNeed, values: dict[Quota, float | None]) -> float | None:
    """None when a quota of `need` (or an alternative) allows the need, else the quota's own value.
    A value below zero is unlimited; None (unset, unreadable) counts as zero."""
    for quota in (need.quota, *need.alternatives):
        value = values.get(quota)
        if value is not None and (value < 0 or value >= need.need):
            return None
    return values.get(need.quota) or 0


def api_error(e: Exception) -> str:
    """The API's own words out of `invoke of T failed: invocation of T returned an error: ...`."""
    return str(e).splitlines()[0].rsplit("returned an error: ", 1)[-1]


def quota_problem(field: str, where: str, need: QuotaNeed, value: float, request: str) -> str:
    """The refusal: which quota, its value, what the plan needs of it, and the exact request to file."""
    q = need.quota
    return (f"{field}: quota {q.code} ({q.name}{''.join(f', {k}={v}' for k, v in q.dimensions)}) in {where} is "
            f"{value:g} {q.unit}; the GPU pools ({', '.join(need.pools)}) need {need.need} {q.unit} at their max "
            f"node counts. Request {need.need}: {request}; or lower the models' replicas.max")
