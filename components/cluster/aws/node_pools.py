"""Managed node groups: a small on-demand system group per zone, and one GPU group per planned instance type.

A GPU group whose replicas span nodes gets the instance type's full EFA device count, a cluster
placement group (ours, or the one aws.placementGroup names), one zone's subnet and a security group
open to itself (EFA traffic does not cross zones and is dropped by security groups that do not admit
it). Every GPU node assembles its local NVMe instance store as one RAID0 array (nodeadm `localStorage`)
that holds kubelet, containerd and the node-local model cache. Every instance and volume carries the
cost-allocation tags stack, environment and pool (from the launch template); the models a pool serves
change more often than its nodes should, so that tag lives on the node group and on its Auto Scaling
group, which puts it on each instance it launches (not on volumes): changing a pool's models re-tags the
group and rolls no node.
"""
from __future__ import annotations

import base64
import dataclasses
import re

import pulumi
import pulumi_aws as aws
import yaml

from ...config.schema import AwsSettings
from ..facts import GpuPool
from ..pools import (CLOUD_TAINT_EFFECTS, GPU_ROOT_DISK_GIB, SYSTEM_ROOT_DISK_GIB, SYSTEM_SELECTOR, PoolSpec,
                     nvme_cache_path)
from .capacity import CAPACITY_TYPES, PoolPlacement, reserved, schedule_actions, uses_efa
from .iam import NODE_POLICIES, service_role
from .network import NetworkFacts

GPU_AMI_TYPE = "AL2023_x86_64_NVIDIA"  # EKS-optimised AL2023 with the NVIDIA driver, toolkit and EFA host software
SYSTEM_AMI_TYPE = "AL2023_x86_64_STANDARD"
# nodeadm's local-storage defaults (awslabs/amazon-eks-ami nodeadm/api/v1alpha1/nodeconfig_types.go and
# templates/shared/runtime/bin/setup-local-disks): the RAID0 array is mounted at <mountPath>/0.
NVME_MOUNT_PATH = "/mnt/k8s-disks"
NVME_CACHE_PATH = nvme_cache_path(f"{NVME_MOUNT_PATH}/0")
ROOT_DEVICE = "/dev/xvda"  # AL2023 AMIs' root device
# containerd moves onto the NVMe array where the instance has one; the root volume keeps the AMI's
# cached images and must still hold the vLLM / Ray images (10-20 GB each, two versions during a
# rollout) on a node whose instance store is missing or failed to assemble.
GPU_ROOT_GIB = GPU_ROOT_DISK_GIB
SYSTEM_ROOT_GIB = SYSTEM_ROOT_DISK_GIB
# Cluster Autoscaler's GPU label on AWS: it marks a node as a GPU node before the device plugin
# reports nvidia.com/gpu, so that a scale-up is not repeated while the driver comes up.
AWS_GPU_LABEL = "k8s.amazonaws.com/accelerator"
SYSTEM_LABELS = SYSTEM_SELECTOR
# The EBS CSI driver's volumes carry one topology term with its own zone key beside topology.kubernetes.io/zone
# (both must match); Cluster Autoscaler's template node for a group at 0 (its AWS provider: the ASG's generic labels
# plus the managed node group's labels from DescribeNodegroup) has only the latter, so without this label CA never
# scales a zone group up from 0 for Prometheus's volume in that zone (kubernetes/autoscaler#3845;
# its AWS balancing comparator ignores this label, so the zone groups stay "similar"). The CSI node
# plugin sets the same label, with the same value, once the node runs.
EBS_ZONE_LABEL = "topology.ebs.csi.aws.com/zone"
CA_RESOURCE_TAG = "k8s.io/cluster-autoscaler/node-template/resources/"
EFA_RESOURCE = "vpc.amazonaws.com/efa"
TAINT_EFFECTS = CLOUD_TAINT_EFFECTS


def efa_network_interfaces(count: int, node_groups: list, efa_group) -> list[dict]:
    """`count` EFA devices, one per network card (EC2 User Guide, "Maximize network bandwidth on
    instances with multiple network cards"): the primary ENA interface on card 0 carries IP traffic
    (pods, the API server); EFA-only interfaces (RDMA, no IP address to take from the subnet) take
    card 0 device 1 and device 0 of every other card. Every interface carries the EFA group."""
    primary = {"network_card_index": 0, "device_index": 0, "interface_type": "interface",
               "security_groups": [*node_groups, efa_group]}
    efa = [{"network_card_index": card, "device_index": 1 if card == 0 else 0, "interface_type": "efa-only",
            "security_groups": [efa_group]} for card in range(count)]
    return [{**nic, "delete_on_termination": "true"} for nic in [primary, *efa]]


def nodeadm_user_data() -> str:
    """MIME multi-part user data with a nodeadm NodeConfig; EKS merges in the cluster details."""
    node_config = {"apiVersion": "node.eks.aws/v1alpha1", "kind": "NodeConfig",
                   "spec": {"instance": {"localStorage": {"strategy": "RAID0", "mountPath": NVME_MOUNT_PATH}}}}
    return ("MIME-Version: 1.0\n"
            'Content-Type: multipart/mixed; boundary="BOUNDARY"\n\n'
            "--BOUNDARY\n"
            "Content-Type: application/node.eks.aws\n\n"
            f"---\n{yaml.safe_dump(node_config, sort_keys=False)}\n"
            "--BOUNDARY--\n")


def gpu_labels(spec: PoolSpec) -> dict[str, str]:
    return {**spec.labels, AWS_GPU_LABEL: spec.instance.accelerator}


def gpu_taints(spec: PoolSpec) -> list[dict]:
    return [{"key": t.key, "value": t.value, "effect": TAINT_EFFECTS[t.effect]} for t in spec.taints]


def capacity(spec: PoolSpec, settings: AwsSettings) -> tuple[str, dict]:
    """(node group capacityType, launch-template purchase options) for one pool.
    A reservation / Capacity Block is targeted by id; the stack config guarantees ids exist."""
    kind = settings.capacity_type
    lt: dict = {}
    if kind in ("reservation", "capacityBlock"):
        lt["capacity_reservation_specification"] = {
            "capacity_reservation_target": {"capacity_reservation_id": settings.capacity_reservations[spec.instance.name]}}
    if kind == "capacityBlock":
        lt["instance_market_options"] = {"market_type": "capacity-block"}
    return CAPACITY_TYPES[kind], lt


def placement_group(spec: PoolSpec, settings: AwsSettings) -> str | None:
    """"existing": the group aws.placementGroup names (an ODCR created in a placement group is only used by
    instances launched there); "new": a cluster placement group of our own for EFA pools on on-demand or
    spot capacity. Capacity Blocks run co-located in an EC2 UltraCluster and need none."""
    if settings.placement_group and (uses_efa(spec) or settings.capacity_type == "reservation"):
        return "existing"
    if uses_efa(spec) and not reserved(settings):
        return "new"
    return None


MODELS_TAG = "vllm-platform/models"


def cost_tags(base: dict[str, str], spec: PoolSpec, models: str) -> dict[str, str]:
    """Cost-allocation tags of a GPU pool's node group. The catalog model ids (not the served names) go in.
    The launch template takes all but MODELS_TAG (template_tags): a new template version rolls every node."""
    return {**base, "vllm-platform/pool": spec.name, MODELS_TAG: models}


def template_tags(tags: dict[str, str]) -> dict[str, str]:
    """The tags a launch template may carry: none that follows the pool's models."""
    return {k: v for k, v in tags.items() if k != MODELS_TAG}


# Node updates replace GPU nodes in place: MINIMAL terminates up to max_unavailable old nodes before it
# launches their replacements, where the default strategy first surges new nodes into the group. A surge
# needs GPU capacity beyond the group's (a spare p5 in the placement group, a reservation or Capacity Block
# larger than the group), which is usually not there: the update would stall. The price: while a node is
# replaced the pool has one node less, so a replica (or a multi-node replica's group) is down for that time.
GPU_UPDATE_CONFIG = {"max_unavailable": 1, "update_strategy": "MINIMAL"}
# Auto repair replaces one GPU node at a time: a fleet-wide fault (a bad driver roll-out) must not
# terminate every node of a pool at once.
GPU_REPAIR_PARALLELISM = 1


def gpu_pool_facts(spec: PoolSpec, reserved_capacity: bool = False) -> GpuPool:
    """What serving needs to know about a pool: an EFA pool's pods ask for every EFA device of the node;
    `reserved_capacity`: its nodes come from a reservation / Capacity Block."""
    nvme = NVME_CACHE_PATH if spec.instance.nvme_gb > 0 else None
    if uses_efa(spec):
        return spec.gpu_pool(fabric_resources={EFA_RESOURCE: spec.instance.efa_interfaces}, nvme_path=nvme,
                             reserved=reserved_capacity)
    # No EFA attached: the pool has no fabric, whatever the instance type could carry.
    return dataclasses.replace(spec.gpu_pool(nvme_path=nvme, reserved=reserved_capacity), fabric=None)


def _metadata(hop_limit: int) -> dict:
    # IMDSv2 only. GPU nodes allow one hop: pods there (model servers) cannot reach the node role's
    # credentials; controllers on system nodes that read instance metadata get the two hops they need.
    return {"http_endpoint": "enabled", "http_tokens": "required", "http_put_response_hop_limit": hop_limit}


def _root(gib: int) -> list[dict]:
    return [{"device_name": ROOT_DEVICE, "ebs": {"volume_size": gib, "volume_type": "gp3", "encrypted": "true",
                                                 "delete_on_termination": "true"}}]


# Pulumi auto-names a node group `<logical name>-<7 hex>` (the program gives no nodeGroupName).
_AUTO_NAME = re.compile(r"(.+)-[0-9a-f]{7}")


# The one property of a node group's scaling config that Cluster Autoscaler owns once the group exists (GKE: the
# node pools' initialNodeCount, components/cluster/gcp/node_pools.py pool_options).
DESIRED_SIZE = "scalingConfig.desiredSize"


def live_scaling(cluster_name: str, exists: bool, invoke: pulumi.InvokeOptions) -> dict[str, dict[str, int]]:
    """{logical name: live scaling config (min_size, desired_size, max_size)} of the node groups the cluster has
    now; {} before the cluster exists."""
    if not exists:
        return {}
    sizes = {}
    for group in aws.eks.get_node_groups(cluster_name=cluster_name, opts=invoke).names or []:
        if m := _AUTO_NAME.fullmatch(group):
            now = aws.eks.get_node_group(cluster_name=cluster_name, node_group_name=group, opts=invoke).scaling_configs[0]
            sizes[m.group(1)] = {"min_size": now.min_size, "desired_size": now.desired_size, "max_size": now.max_size}
    return sizes


def keep_size(scaling: dict[str, int], live: dict[str, int] | None) -> tuple[dict[str, int], list[str]]:
    """(scaling config to send, ignore_changes) of one node group.

    The desired size is Cluster Autoscaler's once the group exists, so it is ignored (ignore_changes, as GKE's
    node count): a `pulumi up` neither diffs on it nor sends a size read seconds earlier over one the autoscaler
    has since set. Except on the run that changes the group's min or max: the provider then sends the whole
    scaling config, and with the size ignored that would be the stored one (0 for a GPU group: a running Capacity
    Block fleet scaled to zero). That run sends the live size instead, clamped into the new bounds (EKS refuses
    desired outside min..max). A new group is created at its own size."""
    if live is None:
        return dict(scaling), [DESIRED_SIZE]
    if (live["min_size"], live["max_size"]) == (scaling["min_size"], scaling["max_size"]):
        return {**scaling, "desired_size": live["desired_size"]}, [DESIRED_SIZE]
    return {**scaling, "desired_size": min(max(live["desired_size"], scaling["min_size"]), scaling["max_size"])}, []


def system_group_sizes(system_nodes: int, zones: int) -> list[dict[str, int]]:
    """Scaling of each zone's system group. aws.systemNodes stays the cluster's total minimum (what the bill
    counts), spread over the zones, the first zones taking the remainder (2 nodes over 3 zones: 1, 1, 0). Each
    zone may grow one node above its share: room for a pod bound to a volume of that zone (Prometheus) whose node
    is drained, even in a zone whose share is 0 (Cluster Autoscaler scales a managed group up from zero)."""
    shares = [system_nodes // zones + (1 if i < system_nodes % zones else 0) for i in range(zones)]
    return [{"min_size": n, "desired_size": n, "max_size": n + 1} for n in shares]


class AwsNodeGroups(pulumi.ComponentResource):
    """The node role, the system node group and the GPU node groups of the plan."""

    def __init__(self, name: str, settings: AwsSettings, cluster_name: str, specs: list[PoolSpec],
                 placements: dict[str, PoolPlacement], cluster: aws.eks.Cluster, network: NetworkFacts,
                 partition: str, tags: dict[str, str], pool_models: dict[str, str],
                 opts: pulumi.ResourceOptions | None = None, live_sizes: dict[str, dict[str, int]] | None = None,
                 protect: bool = False):
        super().__init__("vllm-platform:aws:NodeGroups", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self._settings, self._cluster, self._network, self._cluster_name = settings, cluster, network, cluster_name
        self._tags = tags
        self.role, attachments = service_role(f"{name}-role", "ec2.amazonaws.com", partition, NODE_POLICIES, self,
                                              f"EKS nodes of {cluster_name}", tag_session=False)
        # Cluster Autoscaler owns the desired size once the group exists: a new group is created empty and
        # an existing one ignores it, or is sent its live size when its bounds change (keep_size), so neither a
        # program value nor a stale stored one ever resizes it. Every group names the cluster's version: without it the provider never
        # moves a group's nodes when kubernetesVersion is raised.
        self._live = live_sizes or {}
        self._protect = protect
        self._group_opts = pulumi.ResourceOptions(parent=self, depends_on=[*attachments, *network.egress])
        # Every node carries it; the model cache's NFS rule admits exactly this group.
        self.node_security_group = aws.ec2.SecurityGroup(
            f"{name}-nodes", vpc_id=network.vpc_id, description=f"EKS nodes of {cluster_name}",
            tags={"Name": f"{cluster_name}-nodes"}, opts=child)
        cluster_sg = cluster.vpc_config.apply(lambda v: v.cluster_security_group_id)
        self._base_groups = [cluster_sg, self.node_security_group.id]
        self.system = self._system(name)
        self.gpu_groups: dict[str, aws.eks.NodeGroup] = {}
        self.pools: dict[str, GpuPool] = {}
        for spec in specs:
            self.gpu_groups[spec.instance.name] = self._gpu(f"{name}-{spec.name}", spec, placements[spec.name],
                                                            cost_tags(tags, spec, pool_models[spec.name]))
            self.pools[spec.instance.name] = gpu_pool_facts(spec, reserved(settings))
        self.register_outputs({"role": self.role.arn, "pools": list(self.pools)})

    def _system(self, name) -> list[aws.eks.NodeGroup]:
        """One system node group per zone (system_group_sizes): Prometheus's volume is a zonal EBS volume, and
        Cluster Autoscaler cannot ask one Auto Scaling group spanning three zones for a node in a given zone.
        With a group per zone, a pod bound to its volume's zone (after a drain, a repair, a node upgrade) makes
        the autoscaler grow that zone's group (EKS user guide, create-managed-node-group.html: "configure
        multiple node groups, each scoped to a single Availability Zone" with --balance-similar-node-groups)."""
        settings, cluster_name = self._settings, self._cluster_name
        tags = {**self._tags, "vllm-platform/pool": "system"}
        lt = aws.ec2.LaunchTemplate(
            f"{name}-system", description=f"{cluster_name} system nodes", update_default_version=True,
            metadata_options=_metadata(2), block_device_mappings=_root(SYSTEM_ROOT_GIB),
            vpc_security_group_ids=self._base_groups,
            tag_specifications=[{"resource_type": kind, "tags": {"Name": f"{cluster_name}-system", **tags}}
                                for kind in ("instance", "volume")],
            opts=pulumi.ResourceOptions(parent=self))
        subnets_by_zone: dict[str, list] = {}
        for zone, subnet in zip(self._network.zones, self._network.private_subnet_ids):
            subnets_by_zone.setdefault(zone, []).append(subnet)
        groups = []
        for i, (zone, scaling) in enumerate(zip(subnets_by_zone, system_group_sizes(settings.system_nodes,
                                                                                   len(subnets_by_zone)))):
            # The first zone's group takes over the single system group of earlier releases (its address), so
            # `pulumi up` replaces it (create first, then delete and drain the old one) rather than deleting it
            # while nothing else runs the operators.
            alias = [pulumi.Alias(name=f"{name}-system")] if i == 0 else []
            groups.append(self._node_group(
                f"{name}-system-{zone}", scaling,
                subnet_ids=subnets_by_zone[zone], ami_type=SYSTEM_AMI_TYPE, capacity_type="ON_DEMAND",
                instance_types=[settings.system_instance_type], labels={**SYSTEM_LABELS, EBS_ZONE_LABEL: zone},
                launch_template={"id": lt.id, "version": lt.latest_version.apply(str)},
                update_config={"max_unavailable": 1}, tags=tags, aliases=alias,
                # aws.deletionProtection (control_plane.protected_opts): the operators, Prometheus and the Ray
                # heads run here. Not the GPU groups: they follow the plan (a model moved to another instance
                # type deletes its old group, which `protect` would refuse on every such `pulumi up`), hold no
                # data, and a `pulumi destroy` stops at its preview on the protected cluster before any delete.
                protect=self._protect, live_fallback=f"{name}-system" if i == 0 else None))
        return groups

    def _node_group(self, name: str, scaling: dict[str, int], aliases: list | None = None, protect: bool = False,
                    live_fallback: str | None = None, **args) -> aws.eks.NodeGroup:
        """A managed node group of the cluster at its version, its desired size left to Cluster Autoscaler.

        live_fallback: the live group an aliased group takes over (the single `-system` group of earlier
        releases); without it the ignored desired size would keep the old group's stored count, possibly over
        the new max, which EKS refuses."""
        live = self._live.get(name)
        if live is None and live_fallback is not None:
            live = self._live.get(live_fallback)
        scaling_config, ignored = keep_size(scaling, live)
        return aws.eks.NodeGroup(
            name, cluster_name=self._cluster.name, node_role_arn=self.role.arn, version=self._cluster.version,
            scaling_config=scaling_config, **args,
            opts=pulumi.ResourceOptions.merge(self._group_opts, pulumi.ResourceOptions(
                ignore_changes=ignored, aliases=aliases or None, protect=protect)))

    def _gpu(self, name, spec: PoolSpec, placement: PoolPlacement, tags: dict[str, str]) -> aws.eks.NodeGroup:
        settings, network, cluster_name = self._settings, self._network, self._cluster_name
        child = pulumi.ResourceOptions(parent=self)
        capacity_type, purchase = capacity(spec, settings)
        lt_args: dict = dict(purchase)
        if uses_efa(spec):
            efa_sg = aws.ec2.SecurityGroup(f"{name}-efa", vpc_id=network.vpc_id,
                                           description=f"EFA between {spec.name} nodes (all traffic within the group)",
                                           tags={"Name": f"{cluster_name}-{spec.name}-efa"}, opts=child)
            aws.vpc.SecurityGroupIngressRule(f"{name}-efa-in", security_group_id=efa_sg.id, ip_protocol="-1",
                                             referenced_security_group_id=efa_sg.id, description="EFA from itself",
                                             opts=child)
            aws.vpc.SecurityGroupEgressRule(f"{name}-efa-out", security_group_id=efa_sg.id, ip_protocol="-1",
                                            referenced_security_group_id=efa_sg.id, description="EFA to itself",
                                            opts=child)
            # Security groups go on each interface: a template may not also set instance-level groups.
            lt_args["network_interfaces"] = efa_network_interfaces(spec.instance.efa_interfaces, self._base_groups,
                                                                   efa_sg.id)
        else:
            lt_args["vpc_security_group_ids"] = self._base_groups
        group_kind = placement_group(spec, settings)
        if group_kind == "new":
            pg = aws.ec2.PlacementGroup(f"{name}-placement", strategy="cluster",
                                        tags={"Name": f"{cluster_name}-{spec.name}"}, opts=child)
            lt_args["placement"] = {"group_name": pg.name}
        elif group_kind == "existing":
            lt_args["placement"] = {"group_name": settings.placement_group}
        node_name = f"{cluster_name}-{spec.name}"
        # The description is part of every template version (the provider writes a new version when it
        # changes, and the node group then replaces its nodes): nothing here may follow a model's name.
        lt = aws.ec2.LaunchTemplate(
            f"{name}-lt", description=f"{node_name}: {spec.instance.name} GPU nodes",
            instance_type=spec.instance.name, update_default_version=True, metadata_options=_metadata(1),
            block_device_mappings=_root(GPU_ROOT_GIB),
            user_data=base64.b64encode(nodeadm_user_data().encode()).decode(),
            tag_specifications=[{"resource_type": kind, "tags": {"Name": node_name, **template_tags(tags)}}
                                for kind in ("instance", "volume")],
            opts=child, **lt_args)
        subnets = [network.private_subnet_ids[i] for i in placement.subnet_indexes]
        group = self._node_group(
            name, placement.scaling, subnet_ids=subnets, ami_type=GPU_AMI_TYPE,
            capacity_type=capacity_type, launch_template={"id": lt.id, "version": lt.latest_version.apply(str)},
            labels=gpu_labels(spec), taints=gpu_taints(spec), update_config=dict(GPU_UPDATE_CONFIG),
            node_repair_config=({"enabled": True, "max_parallel_nodes_repaired_count": GPU_REPAIR_PARALLELISM}
                                if settings.node_auto_repair else {"enabled": False}),
            tags=tags)
        asg = group.resources.apply(lambda rs: rs[0].autoscaling_groups[0].name)
        # EKS does not copy node group tags to the Auto Scaling group; this tag reaches every instance the
        # group launches from now on (running nodes keep the old value until replaced) and rolls nothing.
        aws.autoscaling.Tag(f"{name}-models", autoscaling_group_name=asg,
                            tag={"key": MODELS_TAG, "value": tags[MODELS_TAG], "propagate_at_launch": True},
                            opts=child)
        if uses_efa(spec):
            # Cluster Autoscaler builds a node from the group's template when none is running: tell it
            # the EFA devices a node brings, or pods that ask for them never trigger a scale-up.
            aws.autoscaling.Tag(f"{name}-ca-efa", autoscaling_group_name=asg,
                                tag={"key": CA_RESOURCE_TAG + EFA_RESOURCE, "value": str(spec.instance.efa_interfaces),
                                     "propagate_at_launch": False}, opts=child)
        self.schedules = schedule_actions(name, asg, placement, self)
        return group
