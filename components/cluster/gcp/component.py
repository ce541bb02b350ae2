"""GcpGpuCluster: GKE Standard with GPU node pools from the plan; hands back the same ClusterFacts as
the AWS and existing-cluster paths. The GCP provider comes in through opts (providers.py).

Files as on AWS: control_plane.py (APIs, node identity, cluster, kubeconfig), network.py (VPCs),
node_pools.py (system + GPU pools, zone and reservation checks), storage.py (Filestore cache, block
StorageClass), gpudirect.py (GPU NIC networks per machine family). Every resource is a direct child of
this component, so the URNs are those of the single-file layout they came from.
"""
from __future__ import annotations

import dataclasses

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from ...config.load import ConfigError
from ..facts import GKE_FABRIC_SOFTWARE, GKE_GPU_STACK, GKE_PLATFORM_CRD_GROUPS, KUBE_DNS, NEW_GPU_NODE_READY_S, ClusterFacts, GpuPool
from ..pools import PoolSpec
from . import storage
from .args import GcpClusterArgs  # noqa: F401  (re-exported: wiring and tests import it here)
from .control_plane import GkeControlPlane, cost_labels, enable_services, node_identity
from .gpudirect import additional_node_networks, fabric_vpcs, machine_family, network_objects, pod_annotations
from .source_access import gcs_readers
from .versions_check import checked_version
from .network import control_plane_firewall, fabric_networks, primary_network
from .node_pools import (NVME_CACHE_PATH, SYSTEM_SELECTOR, bundled_local_ssds, capacity_errors, check_capacity,
                         gpu_node_pool_args, local_ssd_read_gbps, pool_options, system_node_pool_args)


def check(args: GcpClusterArgs) -> list[str]:
    """Every reason GKE / Filestore would refuse this stack, as `field: problem` lines (pure: no GCP call)."""
    errors = capacity_errors(args, list(args.pools))
    if args.model_cache.kind == "rwx":
        try:
            storage.capacity_gib(args.gcp.filestore_tier, args.cache_gib)
        except ValueError as e:
            errors.append(str(e))
    return errors


def gpu_pools(specs: list[PoolSpec], reserved: bool = False) -> dict[str, GpuPool]:
    """What serving sees of each GPU node pool (by machine type); `reserved`: gcp.reservation is consumed."""
    pools = {}
    for spec in specs:
        nvme = NVME_CACHE_PATH if bundled_local_ssds(spec) else None
        if spec.multi_node:
            # GKE plugs the GPU NICs into pods that name them; no extended resource to request.
            pools[spec.instance.name] = spec.gpu_pool(
                nvme_path=nvme, pod_annotations=pod_annotations(machine_family(spec.instance)), reserved=reserved)
        else:
            # No GPU NICs attached: the pool has no fabric, whatever the machine type could carry.
            pools[spec.instance.name] = dataclasses.replace(spec.gpu_pool(nvme_path=nvme, reserved=reserved),
                                                            fabric=None)
    return pools


class GcpGpuCluster(pulumi.ComponentResource):
    facts: ClusterFacts

    def __init__(self, name: str, args: GcpClusterArgs, opts: pulumi.ResourceOptions | None = None):
        errors = check(args)  # components/wiring.py ran it before any resource; a direct caller may not have
        if errors:
            err = ConfigError(errors)
            raise pulumi.RunError(str(err)) from err
        super().__init__("vllm-platform:cluster:GcpGpuCluster", name, None, opts)
        g, prefix = args.gcp, args.cluster.name
        specs = list(args.pools)
        stack = pulumi.get_stack()
        child = pulumi.ResourceOptions(parent=self)
        # Zone, reservation and quotas, asked of GCE and Cloud Quotas before the first resource (the APIs the
        # stack turns on below included): a refusal leaves nothing created (node_pools.check_capacity).
        check_capacity(args, specs, self)

        apis = enable_services(name, child)
        after_apis = pulumi.ResourceOptions(parent=self, depends_on=list(apis.values()))
        net = primary_network(name, prefix, g, after_apis)
        # GPU NIC networks only where a replica spans nodes: within a node, NVLink carries TP traffic.
        vpcs = fabric_vpcs(prefix, g.zone, [machine_family(s.instance) for s in specs if s.multi_node])
        fabric = fabric_networks(name, prefix, g.project, g.region, vpcs, after_apis)
        account, grants = node_identity(name, args, after_apis)

        every_model = [m for s in specs for m in s.models]
        # The default pool (created with the cluster, deleted at once) runs as the node account, with its roles.
        control = GkeControlPlane(
            name, args, net, cost_labels(stack, args.environment, every_model),
            pulumi.ResourceOptions(parent=self, depends_on=[*apis.values(), *net.resources, *grants]),
            node_service_account=account.email,
            min_master_version=checked_version(args, apis["container.googleapis.com"], self))
        self.cluster, self.kubeconfig = control.cluster, control.kubeconfig
        self.control_plane_firewall = control_plane_firewall(name, prefix, g, net, self.cluster, account.email,
                                                             child)

        # Fixed pool names: replaced by delete-then-create, the autoscaler owns the node count (pool_options).
        # Not `protect`ed, unlike the cluster and the cache (gcp.deletionProtection): GKE has no deletion flag
        # for a pool, a removed model or a new instance type deletes or replaces its pool in an ordinary `up`,
        # and a `pulumi destroy` of a protected stack is refused for the cluster before anything is deleted.
        self.system_pool = gcp.container.NodePool(
            f"{name}-system", **system_node_pool_args(args, self.cluster.id, account.email, control.labels),
            opts=pool_options(pulumi.ResourceOptions(parent=self, depends_on=grants)))
        # GPU pools go into gcp.zone, which check_capacity confirmed offers their machine type (and holds the
        # reservation); a live answer never moves them.
        zone = g.zone
        gpu_opts = pool_options(pulumi.ResourceOptions(parent=self, depends_on=[*grants, *fabric]))
        self.node_pools: dict[str, gcp.container.NodePool] = {}
        for spec in specs:
            extra = additional_node_networks(machine_family(spec.instance), vpcs) if spec.multi_node else []
            pool_args = gpu_node_pool_args(spec, args, self.cluster.id, account.email, extra,
                                           cost_labels(stack, args.environment, spec.models))
            self.node_pools[spec.instance.name] = gcp.container.NodePool(
                f"{name}-{spec.name}", **{**pool_args, "node_locations": [zone]}, opts=gpu_opts)

        self.provider = k8s.Provider(f"{name}-k8s", kubeconfig=self.kubeconfig, opts=child)
        k8s_opts = pulumi.ResourceOptions(parent=self, provider=self.provider)
        # The Network objects name the GPU NIC VPCs and subnets: those come first.
        self.network_objects = [
            k8s.apiextensions.CustomResource(f"{name}-{o['kind'].lower()}-{o['metadata']['name']}",
                                             api_version=o["apiVersion"], kind=o["kind"],
                                             metadata=o["metadata"], spec=o["spec"],
                                             opts=pulumi.ResourceOptions.merge(
                                                 k8s_opts, pulumi.ResourceOptions(depends_on=fabric)))
            for o in network_objects(vpcs)]

        self.cache = None
        cache_resources: list[pulumi.Resource] = []
        if args.model_cache.kind == "rwx":
            tier = g.filestore_tier
            gib = storage.capacity_gib(tier, args.cache_gib)
            self.cache = storage.FilestoreCache(
                name, prefix, tier, gib, g.region, g.zone, net.network, args.deletion_protection,
                pulumi.ResourceOptions(parent=self, depends_on=[*apis.values(), *net.resources]), k8s_opts,
                labels=control.labels)
            cache_resources = [self.cache.storage_class, self.cache.volume]
            read = storage.read_gbps(tier, gib)
        else:
            read = min(local_ssd_read_gbps(bundled_local_ssds(s)) for s in specs)

        weights_access = gcs_readers(name, g.project, args.bucket_readers, self, [self.cluster])
        self.facts = ClusterFacts(
            cloud="gcp", name=args.cluster.name, provider=self.provider,
            gpu_pools=gpu_pools(specs, bool(g.reservation)), system_node_selector=dict(SYSTEM_SELECTOR),
            rwx_storage_class=storage.STORAGE_CLASS if self.cache else None,
            cache_read_gbps=args.model_cache.read_gbps or read,
            driver_preinstalled=True,  # gpu_driver_installation_config: GKE installs the NVIDIA driver
            kubeconfig=self.kubeconfig,
            block_storage_class=storage.BLOCK_STORAGE_CLASS,
            network_policy_enforced=control.network_policy_enforced,
            # Operators and serving objects need the control plane (through the provider), the system pool and
            # the storage and networks they name, not the GPU pools: GPU pools are created empty, and one whose
            # scale-up waits for capacity (a stockout, a reservation not yet active) leaves serving pods Pending.
            depends_on=[self.system_pool, *self.network_objects, *cache_resources],
            gpu_stack=GKE_GPU_STACK, fabric_software=dict(GKE_FABRIC_SOFTWARE), managed_control_plane=True,
            cluster_dns=KUBE_DNS, gpu_node_ready_s=NEW_GPU_NODE_READY_S,
            weights_access=weights_access, platform_crd_groups=GKE_PLATFORM_CRD_GROUPS)
        self.register_outputs({"clusterName": self.cluster.name, "endpoint": self.cluster.endpoint,
                               "kubeconfig": self.kubeconfig})
