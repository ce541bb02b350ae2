"""Attach to a cluster someone already runs (on-prem, a lab, another team's EKS/GKE)."""
from __future__ import annotations

from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

from ..config.schema import ClusterSettings, ExistingSettings
from ..config.schema import ModelCache as ModelCacheSettings
from ..planner import Topology
from .facts import (COREDNS, SELF_MANAGED_FABRIC_SOFTWARE, SELF_MANAGED_GPU_STACK, ClusterFacts, GpuPool,
                    Taint)

# NFS over a 25-100 GbE front-end network sustains roughly this much per reader (GB/s).
DEFAULT_NFS_READ_GBPS = 0.5
GFD_PRESENT_LABEL = "nvidia.com/gpu.present"  # set by GPU Feature Discovery on every GPU node
NETWORK_POLICY_WARNING = (
    "existing.networkPolicyEnforced is false: serving's NetworkPolicy (which namespaces may call the model "
    "endpoints) may not be enforced by this cluster's CNI, so any pod in the cluster can reach them. Check the "
    "CNI (Calico, Cilium, ... enforce it; flannel does not) and set existing.networkPolicyEnforced: true; "
    "production stacks refuse to plan without it.")


@dataclass(frozen=True)
class ExistingClusterArgs:
    """What ExistingCluster reads: the stack's cluster name, its `existing` block (GPU nodes, context,
    block StorageClass, NetworkPolicy), its `modelCache` settings (the RWX StorageClass and read speed),
    the plan and the kubeconfig secret. Built by components/wiring.py from a StackConfig."""
    existing: ExistingSettings
    cluster: ClusterSettings = field(default_factory=ClusterSettings)
    model_cache: ModelCacheSettings = field(default_factory=ModelCacheSettings)
    topologies: dict[str, Topology] = field(default_factory=dict)
    kubeconfig: object | None = None  # pulumi.Output[str], a secret; None: the ambient kubeconfig


def existing_pools(args: ExistingClusterArgs, topologies: dict[str, Topology]) -> dict[str, GpuPool]:
    """The user's GPU nodes as one pool: picked by the labels they give (GPU Feature Discovery's
    nvidia.com/gpu.present by default), with the taints they carry; on InfiniBand / RoCE every pod
    asks for the RDMA shared device (one per pod: the plugin shares each HCA between pods)."""
    nodes = args.existing.gpu_nodes
    selector = dict(nodes.node_selector) or {GFD_PRESENT_LABEL: "true"}
    fabric_resources = {nodes.rdma_resource: 1} if nodes.fabric in ("infiniband", "roce") else {}
    taints = tuple(Taint(t.key, t.value, t.effect) for t in nodes.taints)
    pools = {}
    for t in topologies.values():
        pools[t.instance_type] = GpuPool(
            name="gpu", instance_type=t.instance_type, accelerator=nodes.accelerator,
            gpus_per_node=nodes.gpus_per_node, node_selector=selector, taints=taints,
            fabric=t.fabric, fabric_resources=fabric_resources)
    return pools


class ExistingCluster(pulumi.ComponentResource):
    """A Kubernetes provider for a cluster we do not create, and the facts about its GPU nodes."""

    facts: ClusterFacts

    def __init__(self, name: str, args: ExistingClusterArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("vllm-platform:cluster:ExistingCluster", name, None, opts)
        ex, kubeconfig = args.existing, args.kubeconfig
        # No kubeconfig secret: the ambient one (KUBECONFIG / ~/.kube/config), optionally a context of it.
        self.provider = k8s.Provider(
            f"{name}-k8s", kubeconfig=kubeconfig, context=ex.context,
            opts=pulumi.ResourceOptions(parent=self))
        self.facts = ClusterFacts(
            cloud="existing", name=args.cluster.name, provider=self.provider,
            gpu_pools=existing_pools(args, args.topologies), system_node_selector={},
            rwx_storage_class=args.model_cache.storage_class,
            cache_read_gbps=args.model_cache.read_gbps or DEFAULT_NFS_READ_GBPS,
            driver_preinstalled=True, kubeconfig=kubeconfig,
            block_storage_class=ex.block_storage_class,
            network_policy_enforced=ex.network_policy_enforced,
            gpu_stack=SELF_MANAGED_GPU_STACK, fabric_software=dict(SELF_MANAGED_FABRIC_SOFTWARE),
            managed_control_plane=False, cluster_dns=COREDNS)
        if not self.facts.network_policy_enforced:
            # Production refuses this at config time (existing.networkPolicyEnforced); elsewhere say it loudly.
            pulumi.log.warn(NETWORK_POLICY_WARNING, resource=self)
        self.register_outputs({})
