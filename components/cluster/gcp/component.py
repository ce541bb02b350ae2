"""GcpGpuCluster: GKE Standard with GPU node pools from the plan; hands back the same ClusterFacts as
the AWS and existing-cluster paths. The GCP provider comes in through opts (providers.py)."""
from __future__ import annotations

import dataclasses

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from ...config.load import ConfigError
from ...config.schema import StackConfig
from ...planner import Topology
from ..facts import GKE_FABRIC_SOFTWARE, GKE_GPU_STACK, KUBE_DNS, ClusterFacts, GpuPool
from ..pools import PoolSpec, gpu_pool_specs, model_cache_gib
from . import filestore
from .gke import cluster_args, enable_services, node_identity
from .gpudirect import additional_node_networks, fabric_vpcs, machine_family, network_objects, pod_annotations
from .kubeconfig import context_name, kubeconfig_yaml
from .network import fabric_networks, primary_network
from .nodepools import (NVME_CACHE_PATH, SYSTEM_SELECTOR, bundled_local_ssds, capacity_errors,
                        gpu_node_pool_args, local_ssd_read_gbps, system_node_pool_args)


def check(cfg: StackConfig, topologies: dict[str, Topology]) -> list[str]:
    """Every reason GKE / Filestore would refuse this stack, as `field: problem` lines."""
    errors = capacity_errors(cfg, gpu_pool_specs(topologies))
    if cfg.model_cache.kind == "rwx":
        try:
            filestore.capacity_gib(cfg.gcp.filestore_tier, model_cache_gib(cfg.model_cache.size_gib, topologies))
        except ValueError as e:
            errors.append(str(e))
    return errors


def gpu_pools(cfg: StackConfig, specs: list[PoolSpec]) -> dict[str, GpuPool]:
    """What serving sees of each GPU node pool (by machine type)."""
    pools = {}
    for spec in specs:
        nvme = NVME_CACHE_PATH if bundled_local_ssds(spec) else None
        if spec.multi_node:
            # GKE plugs the GPU NICs into pods that name them; no extended resource to request.
            pools[spec.instance.name] = spec.gpu_pool(
                nvme_path=nvme, pod_annotations=pod_annotations(machine_family(spec.instance)))
        else:
            # No GPU NICs attached: the pool has no fabric, whatever the machine type could carry.
            pools[spec.instance.name] = dataclasses.replace(spec.gpu_pool(nvme_path=nvme), fabric=None)
    return pools


class GcpGpuCluster(pulumi.ComponentResource):
    facts: ClusterFacts

    def __init__(self, name: str, cfg: StackConfig, topologies: dict[str, Topology],
                 opts: pulumi.ResourceOptions | None = None):
        errors = check(cfg, topologies)
        if errors:
            err = ConfigError(errors)
            raise pulumi.RunError(str(err)) from err
        super().__init__("vllm-platform:cluster:GcpGpuCluster", name, None, opts)
        g, prefix = cfg.gcp, cfg.cluster.name
        specs = gpu_pool_specs(topologies)
        child = pulumi.ResourceOptions(parent=self)

        apis = enable_services(name, child)
        after_apis = pulumi.ResourceOptions(parent=self, depends_on=apis)
        net = primary_network(name, prefix, g, after_apis)
        # GPU NIC networks only where a replica spans nodes: within a node, NVLink carries TP traffic.
        vpcs = fabric_vpcs(prefix, g.zone, [machine_family(s.instance) for s in specs if s.multi_node])
        fabric = fabric_networks(name, prefix, g.project, g.region, vpcs, after_apis)
        account, grants = node_identity(name, cfg, after_apis)

        self.cluster = gcp.container.Cluster(
            f"{name}-gke", **cluster_args(cfg, net),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[*apis, *net.resources]))

        # The autoscaler owns the node count after creation; a changed initial count must not replace a pool.
        pool_opts = pulumi.ResourceOptions(parent=self, depends_on=[*grants, *fabric],
                                           ignore_changes=["initialNodeCount"])
        self.system_pool = gcp.container.NodePool(
            f"{name}-system", **system_node_pool_args(cfg, self.cluster.id, account.email), opts=pool_opts)
        self.node_pools: dict[str, gcp.container.NodePool] = {}
        for spec in specs:
            extra = additional_node_networks(machine_family(spec.instance), vpcs) if spec.multi_node else []
            self.node_pools[spec.instance.name] = gcp.container.NodePool(
                f"{name}-{spec.name}", **gpu_node_pool_args(spec, cfg, self.cluster.id, account.email, extra),
                opts=pool_opts)

        context = context_name(g.project, g.region, cfg.cluster.name)
        self.kubeconfig = pulumi.Output.secret(
            pulumi.Output.all(self.cluster.endpoint, self.cluster.master_auth.cluster_ca_certificate)
            .apply(lambda a: kubeconfig_yaml(context, a[0], a[1])))
        self.provider = k8s.Provider(f"{name}-k8s", kubeconfig=self.kubeconfig, opts=child)
        k8s_opts = pulumi.ResourceOptions(parent=self, provider=self.provider)

        self.network_objects = [
            k8s.apiextensions.CustomResource(f"{name}-{o['kind'].lower()}-{o['metadata']['name']}",
                                             api_version=o["apiVersion"], kind=o["kind"],
                                             metadata=o["metadata"], spec=o["spec"], opts=k8s_opts)
            for o in network_objects(vpcs)]

        self.cache = None
        cache_resources: list[pulumi.Resource] = []
        if cfg.model_cache.kind == "rwx":
            tier = g.filestore_tier
            gib = filestore.capacity_gib(tier, model_cache_gib(cfg.model_cache.size_gib, topologies))
            self.cache = filestore.FilestoreCache(
                name, prefix, tier, gib, g.region, g.zone, net.network, cfg.production,
                pulumi.ResourceOptions(parent=self, depends_on=[*apis, *net.resources]), k8s_opts)
            cache_resources = [self.cache.storage_class, self.cache.volume]
            read = filestore.read_gbps(tier, gib)
        else:
            read = min(local_ssd_read_gbps(bundled_local_ssds(s)) for s in specs)

        self.facts = ClusterFacts(
            cloud="gcp", name=cfg.cluster.name, provider=self.provider,
            gpu_pools=gpu_pools(cfg, specs), system_node_selector=dict(SYSTEM_SELECTOR),
            rwx_storage_class=filestore.STORAGE_CLASS if self.cache else None,
            cache_read_gbps=cfg.model_cache.read_gbps or read,
            driver_preinstalled=True,  # gpu_driver_installation_config: GKE installs the NVIDIA driver
            kubeconfig=self.kubeconfig,
            depends_on=[self.system_pool, *self.node_pools.values(), *self.network_objects, *cache_resources],
            gpu_stack=GKE_GPU_STACK, fabric_software=dict(GKE_FABRIC_SOFTWARE), managed_control_plane=True,
            cluster_dns=KUBE_DNS)
        self.register_outputs({"clusterName": self.cluster.name, "endpoint": self.cluster.endpoint,
                               "kubeconfig": self.kubeconfig})
