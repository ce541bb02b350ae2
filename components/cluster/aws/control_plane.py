"""The EKS control plane (KMS envelope encryption, control-plane logs, access entries, a private
endpoint) and the EKS add-ons, pinned per Kubernetes minor in components/versions.py."""
from __future__ import annotations

import pulumi
import pulumi_aws as aws
import yaml

from ...config.schema import AwsSettings, StackConfig
from .iam import CLUSTER_POLICIES, EFS_CSI_POLICY, POD_IDENTITY_PRINCIPAL, secrets_key_policy, service_role
from .network import NetworkFacts

LOG_TYPES = ("api", "audit", "authenticator", "controllerManager", "scheduler")
LOG_RETENTION_DAYS = 90
ADMIN_POLICY = "AmazonEKSClusterAdminPolicy"
# Add-ons the nodes need before they can run pods; the others wait for the system nodes
# (an add-on whose pods cannot schedule stays DEGRADED and its creation times out).
NODE_ADDONS = ("vpc-cni", "kube-proxy", "eks-pod-identity-agent")
WORKLOAD_ADDONS = ("coredns",)
EFS_CSI_ADDON = "aws-efs-csi-driver"
EFS_CSI_CONTROLLER_SA = "efs-csi-controller-sa"


def endpoint_access(settings: AwsSettings) -> dict:
    """Private endpoint always; the public one only for the CIDRs the stack lists (off by default)."""
    cidrs = list(settings.endpoint_public_access_cidrs)
    access = {"endpoint_private_access": True, "endpoint_public_access": bool(cidrs)}
    if cidrs:
        access["public_access_cidrs"] = cidrs
    return access


def access_policy_arn(partition: str, policy: str) -> str:
    return f"arn:{partition}:eks::aws:cluster-access-policy/{policy}"


def kubeconfig_yaml(cluster: str, endpoint: str, ca_data: str, region: str) -> str:
    """A kubeconfig that gets short-lived tokens from the AWS CLI (no long-lived credential in state)."""
    return yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": cluster, "preferences": {},
        "clusters": [{"name": cluster, "cluster": {"server": endpoint, "certificate-authority-data": ca_data}}],
        "contexts": [{"name": cluster, "context": {"cluster": cluster, "user": cluster}}],
        "users": [{"name": cluster, "user": {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1", "command": "aws",
            "args": ["eks", "get-token", "--cluster-name", cluster, "--region", region, "--output", "json"],
            "interactiveMode": "Never"}}}],
    }, sort_keys=False)


class EksControlPlane(pulumi.ComponentResource):
    """The cluster itself. Its name is the stack's cluster.name, so that tags, log groups and the
    autoscaler's discovery tags are known before anything is created."""

    def __init__(self, name: str, cfg: StackConfig, network: NetworkFacts, partition: str,
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__("vllm-platform:aws:EksControlPlane", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        settings, cluster_name = cfg.aws, cfg.cluster.name
        self.secrets_key = aws.kms.Key(
            f"{name}-secrets", description=f"EKS {cluster_name}: envelope encryption of Kubernetes Secrets",
            enable_key_rotation=True, deletion_window_in_days=30, opts=child)
        aws.kms.Alias(f"{name}-secrets", name=f"alias/eks/{cluster_name}", target_key_id=self.secrets_key.key_id,
                      opts=child)
        # EKS writes to this group by name; creating it first sets a retention instead of "never expire".
        self.log_group = aws.cloudwatch.LogGroup(f"{name}-logs", name=f"/aws/eks/{cluster_name}/cluster",
                                                 retention_in_days=LOG_RETENTION_DAYS, opts=child)
        self.role, attachments = service_role(f"{name}-role", "eks.amazonaws.com", partition, CLUSTER_POLICIES,
                                              self, f"EKS control plane of {cluster_name}")
        key_access = aws.iam.RolePolicy(f"{name}-role-secrets-key", role=self.role.id,
                                        policy=self.secrets_key.arn.apply(secrets_key_policy), opts=child)
        self.cluster = aws.eks.Cluster(
            f"{name}-cluster", name=cluster_name, version=cfg.cluster.kubernetes_version, role_arn=self.role.arn,
            vpc_config={"subnet_ids": network.private_subnet_ids, **endpoint_access(settings)},
            # API mode: access entries instead of the aws-auth ConfigMap. The identity running
            # `pulumi up` keeps admin so that the stack can install what runs on the cluster.
            access_config={"authentication_mode": "API", "bootstrap_cluster_creator_admin_permissions": True},
            encryption_config={"provider": {"key_arn": self.secrets_key.arn}, "resources": ["secrets"]},
            enabled_cluster_log_types=list(LOG_TYPES),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[*attachments, key_access, self.log_group]))
        for i, arn in enumerate(settings.admin_role_arns):
            entry = aws.eks.AccessEntry(f"{name}-admin-{i}", cluster_name=self.cluster.name, principal_arn=arn,
                                        type="STANDARD", opts=child)
            aws.eks.AccessPolicyAssociation(
                f"{name}-admin-{i}", cluster_name=self.cluster.name, principal_arn=arn,
                policy_arn=access_policy_arn(partition, ADMIN_POLICY), access_scope={"type": "cluster"},
                opts=pulumi.ResourceOptions(parent=self, depends_on=[entry]))
        ca_data = self.cluster.certificate_authority.apply(lambda ca: ca.data)
        self.kubeconfig = pulumi.Output.secret(pulumi.Output.all(self.cluster.name, self.cluster.endpoint, ca_data).apply(
            lambda a: kubeconfig_yaml(a[0], a[1], a[2], settings.region)))
        self.register_outputs({"clusterName": self.cluster.name, "endpoint": self.cluster.endpoint,
                               "kubeconfig": self.kubeconfig})


class EksAddons(pulumi.ComponentResource):
    """EKS-managed add-ons at pinned versions; the EFS CSI driver's controller gets its own
    Pod Identity role (AmazonEFSCSIDriverPolicy) instead of the node role."""

    def __init__(self, name: str, cluster: aws.eks.Cluster, versions: dict[str, str], partition: str,
                 system_nodes: pulumi.Resource, efs_csi: bool, opts: pulumi.ResourceOptions | None = None):
        super().__init__("vllm-platform:aws:EksAddons", name, None, opts)
        self.addons: dict[str, aws.eks.Addon] = {}
        for addon in NODE_ADDONS:
            self.addons[addon] = self._addon(name, cluster, addon, versions[addon], [])
        for addon in WORKLOAD_ADDONS:
            self.addons[addon] = self._addon(name, cluster, addon, versions[addon], [system_nodes])
        if efs_csi:
            role, attachments = service_role(f"{name}-efs-csi", POD_IDENTITY_PRINCIPAL, partition, (EFS_CSI_POLICY,),
                                             self, "EFS CSI driver controller (Pod Identity)")
            self.addons[EFS_CSI_ADDON] = self._addon(
                name, cluster, EFS_CSI_ADDON, versions[EFS_CSI_ADDON],
                [system_nodes, self.addons["eks-pod-identity-agent"], *attachments],
                pod_identity_associations=[{"role_arn": role.arn, "service_account": EFS_CSI_CONTROLLER_SA}])
        self.register_outputs({a: addon.addon_version for a, addon in self.addons.items()})

    def _addon(self, name: str, cluster: aws.eks.Cluster, addon: str, version: str, depends_on: list,
               **kwargs) -> aws.eks.Addon:
        # OVERWRITE: EKS installed self-managed vpc-cni / kube-proxy / coredns at creation; the managed
        # add-on takes them over instead of failing on the fields they already set.
        return aws.eks.Addon(f"{name}-{addon}", cluster_name=cluster.name, addon_name=addon, addon_version=version,
                             resolve_conflicts_on_create="OVERWRITE", resolve_conflicts_on_update="OVERWRITE",
                             opts=pulumi.ResourceOptions(parent=self, depends_on=depends_on), **kwargs)
