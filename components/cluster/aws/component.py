"""EKS for the plan: VPC, control plane, system and GPU node groups, add-ons, EFS model cache and
Cluster Autoscaler, handed over as the same ClusterFacts the GCP and existing-cluster paths return."""
from __future__ import annotations

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from ...config import ConfigError
from ...config.schema import StackConfig
from ...planner import Topology
from ...versions import CLUSTER_AUTOSCALER_TAGS, EKS_ADDON_VERSIONS
from ..facts import ClusterFacts
from ..pools import PoolSpec, gpu_pool_specs
from .autoscaling import ClusterAutoscaler
from .efs import EFS_CLIENT_READ_GBPS, STORAGE_CLASS, EfsModelCache
from .eks import EFS_CSI_ADDON, EksAddons, EksControlPlane
from .network import AwsNetwork
from .nodegroups import SYSTEM_LABELS, AwsNodeGroups, reserved

# Model cache on the nodes' NVMe RAID0: the first start downloads from the Hub, later ones read the
# local array. A conservative figure for one instance-store SSD; set modelCache.readGbps to what you measure.
NVME_READ_GBPS = 2.0


def check(cfg: StackConfig, specs: list[PoolSpec]) -> list[str]:
    """What the plan and the AWS settings disagree on, as `field: problem` lines."""
    problems = []
    minor = cfg.cluster.kubernetes_version
    if minor not in EKS_ADDON_VERSIONS or minor not in CLUSTER_AUTOSCALER_TAGS:
        problems.append(f"cluster.kubernetesVersion: {minor} has no pinned EKS add-on versions; "
                        f"allowed: {', '.join(sorted(EKS_ADDON_VERSIONS))} (components/versions.py)")
    if reserved(cfg.aws):
        for spec in specs:
            if spec.instance.name not in cfg.aws.capacity_reservations:
                problems.append(f"aws.capacityReservations: no reservation for planned instance type "
                                f"{spec.instance.name} ({', '.join(spec.models)}); add `{spec.instance.name}: cr-...`")
    return problems


def uses_efs(cfg: StackConfig) -> bool:
    """EFS unless the cache is node-local or the stack names a StorageClass of its own."""
    return cfg.model_cache.kind == "rwx" and not cfg.model_cache.storage_class


def cache_facts(cfg: StackConfig) -> tuple[str | None, float]:
    if cfg.model_cache.kind == "nvme":
        return None, cfg.model_cache.read_gbps or NVME_READ_GBPS
    return (STORAGE_CLASS if uses_efs(cfg) else cfg.model_cache.storage_class,
            cfg.model_cache.read_gbps or EFS_CLIENT_READ_GBPS)


class AwsGpuCluster(pulumi.ComponentResource):
    facts: ClusterFacts

    def __init__(self, name: str, cfg: StackConfig, topologies: dict[str, Topology],
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__("vllm-platform:cluster:AwsGpuCluster", name, None, opts)
        specs = gpu_pool_specs(topologies)
        problems = check(cfg, specs)
        if problems:
            err = ConfigError(problems)
            raise pulumi.RunError(str(err)) from err
        settings, cluster_name, minor = cfg.aws, cfg.cluster.name, cfg.cluster.kubernetes_version
        child = pulumi.ResourceOptions(parent=self)
        invoke = pulumi.InvokeOptions(parent=self)
        partition = aws.get_partition(opts=invoke).partition
        account = aws.get_caller_identity(opts=invoke).account_id

        network = AwsNetwork(f"{name}-network", settings, cluster_name, opts=child).facts
        control = EksControlPlane(f"{name}-eks", cfg, network, partition, opts=child)
        self.cluster, self.kubeconfig = control.cluster, control.kubeconfig
        self.provider = k8s.Provider(f"{name}-k8s", kubeconfig=self.kubeconfig, opts=child)
        nodes = AwsNodeGroups(f"{name}-nodes", settings, cluster_name, specs, self.cluster, network, partition,
                              opts=child)
        addons = EksAddons(f"{name}-addons", self.cluster, EKS_ADDON_VERSIONS[minor], partition, nodes.system,
                           efs_csi=uses_efs(cfg), opts=child).addons
        # Operators and serving objects need the system nodes and add-ons, not the GPU groups: pods that ask
        # for GPUs wait as Pending while a GPU group (or its capacity) is still coming.
        ready = [nodes.system, *addons.values()]
        if uses_efs(cfg):
            cache = EfsModelCache(f"{name}-cache", cluster_name, network, nodes.node_security_group, self.provider,
                                  addons[EFS_CSI_ADDON], opts=child)
            ready.append(cache.storage_class)
        ClusterAutoscaler(f"{name}-autoscaler", self.cluster, cluster_name, settings.region, minor, partition,
                          account, self.provider, [nodes.system, addons["eks-pod-identity-agent"]], opts=child)
        storage_class, read_gbps = cache_facts(cfg)
        self.facts = ClusterFacts(
            cloud="aws", name=cluster_name, provider=self.provider, gpu_pools=nodes.pools,
            system_node_selector=dict(SYSTEM_LABELS), rwx_storage_class=storage_class, cache_read_gbps=read_gbps,
            driver_preinstalled=True, kubeconfig=self.kubeconfig, depends_on=ready)
        self.register_outputs({"clusterName": self.cluster.name, "endpoint": self.cluster.endpoint,
                               "kubeconfig": self.kubeconfig})
