"""Storage classes on EKS: the RWX model cache (an encrypted EFS file system with elastic throughput, a
mount target in every node subnet, NFS admitted from the cluster's nodes only) and the cluster's default
block class (encrypted gp3 EBS through the EBS CSI driver), which every claim without a class binds to."""
from __future__ import annotations

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from .network import NetworkFacts

PART_OF = {"app.kubernetes.io/part-of": "vllm-platform"}
# EKS creates no default StorageClass (and no EBS CSI driver): a claim that names no class stays Pending.
BLOCK_STORAGE_CLASS = "ebs-gp3"
EBS_PROVISIONER = "ebs.csi.aws.com"
DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"


def block_storage_class_spec() -> dict:
    """StorageClass fields (parameters: kubernetes-sigs/aws-ebs-csi-driver docs/parameters.md). EBS volumes
    are zonal: WaitForFirstConsumer creates the volume in the zone the pod was scheduled to."""
    return {"metadata": {"name": BLOCK_STORAGE_CLASS, "labels": dict(PART_OF),
                         "annotations": {DEFAULT_CLASS_ANNOTATION: "true"}},
            "provisioner": EBS_PROVISIONER,
            "parameters": {"type": "gp3", "encrypted": "true", "csi.storage.k8s.io/fstype": "ext4"},
            "reclaim_policy": "Delete", "volume_binding_mode": "WaitForFirstConsumer",
            "allow_volume_expansion": True}


def block_storage_class(name: str, provider: k8s.Provider, csi_driver: pulumi.Resource,
                        parent: pulumi.Resource) -> k8s.storage.v1.StorageClass:
    return k8s.storage.v1.StorageClass(
        name, **block_storage_class_spec(),
        opts=pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=[csi_driver]))


STORAGE_CLASS = "efs-model-cache"
EFS_PROVISIONER = "efs.csi.aws.com"
NFS_PORT = 2049
# Per-client read/write throughput of a Regional EFS file system in Elastic throughput mode:
# 1,500 MiBps = 1.57 GB/s (docs.aws.amazon.com/efs/latest/ug/performance.html, "Performance summary").
# Each GPU node reads the weights through its own client, so this bounds one pod's load time.
EFS_CLIENT_READ_GBPS = 1.5


def storage_class_parameters(file_system_id) -> dict:
    """Dynamic provisioning through EFS access points (aws-efs-csi-driver docs, "Dynamic Provisioning"):
    each claim gets its own directory, owned by the access point's POSIX identity whatever UID a pod runs as."""
    return {"provisioningMode": "efs-ap", "fileSystemId": file_system_id, "directoryPerms": "700",
            "basePath": "/model-cache"}


class EfsModelCache(pulumi.ComponentResource):
    def __init__(self, name: str, cluster_name: str, network: NetworkFacts, node_security_group: aws.ec2.SecurityGroup,
                 provider: k8s.Provider, csi_driver: pulumi.Resource, opts: pulumi.ResourceOptions | None = None,
                 protect: bool = False):
        super().__init__("vllm-platform:aws:EfsModelCache", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.security_group = aws.ec2.SecurityGroup(f"{name}-nfs", vpc_id=network.vpc_id,
                                                    description=f"EFS model cache of {cluster_name}: NFS from its nodes",
                                                    tags={"Name": f"{cluster_name}-model-cache"}, opts=child)
        aws.vpc.SecurityGroupIngressRule(f"{name}-nfs-from-nodes", security_group_id=self.security_group.id,
                                         ip_protocol="tcp", from_port=NFS_PORT, to_port=NFS_PORT,
                                         referenced_security_group_id=node_security_group.id,
                                         description="NFS from the cluster's nodes", opts=child)
        # Elastic throughput: load bursts (every replica pulling 140+ GB at start-up) are paid per
        # byte read, with no provisioned floor to size or credits to run out of.
        # protect: aws.deletionProtection (control_plane.protected_opts); the weights are re-downloadable, so it
        # is not retained past `pulumi destroy`.
        self.file_system = aws.efs.FileSystem(f"{name}-fs", encrypted=True, throughput_mode="elastic",
                                              performance_mode="generalPurpose",
                                              tags={"Name": f"{cluster_name}-model-cache"},
                                              opts=pulumi.ResourceOptions(parent=self, protect=protect))
        self.mount_targets = [
            aws.efs.MountTarget(f"{name}-mount-{i}", file_system_id=self.file_system.id, subnet_id=subnet,
                                security_groups=[self.security_group.id], opts=child)
            for i, subnet in enumerate(network.private_subnet_ids)]
        self.storage_class = k8s.storage.v1.StorageClass(
            f"{name}-class", metadata={"name": STORAGE_CLASS, "labels": dict(PART_OF)},
            provisioner=EFS_PROVISIONER, parameters=storage_class_parameters(self.file_system.id),
            reclaim_policy="Delete", volume_binding_mode="Immediate",
            opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[csi_driver, *self.mount_targets]))
        self.register_outputs({"fileSystemId": self.file_system.id, "storageClass": STORAGE_CLASS})
