"""The EKS control plane (KMS envelope encryption, control-plane logs, access entries, an endpoint the
deployer can reach, upgrade policy, deletion protection) and the EKS add-ons, pinned per Kubernetes
minor in components/upstream/versions.py."""
from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s
import yaml

from ...config.schema import AwsSettings
from .iam import (CLUSTER_POLICIES, EBS_CSI_POLICY, EFS_CSI_POLICY, POD_IDENTITY_PRINCIPAL, secrets_key_policy,
                  service_role)
from .network import NetworkFacts

if TYPE_CHECKING:  # the component's own arguments (components/wiring.py builds them)
    from .args import AwsClusterArgs

LOG_TYPES = ("api", "audit", "authenticator", "controllerManager", "scheduler")
LOG_RETENTION_DAYS = 90
ADMIN_POLICY = "AmazonEKSClusterAdminPolicy"
VIEW_POLICY = "AmazonEKSViewPolicy"
# AmazonEKSViewPolicy reads no Secrets, but `pulumi preview` reads them: Helm keeps each release's state
# in Secrets of its namespace, and Secret resources are diffed against the live ones. The viewer entries
# carry this Kubernetes group, which PREVIEW_RULES bind cluster-wide (read-only, Secrets only).
PREVIEW_GROUP = "vllm-platform-preview"
PREVIEW_RULES = [{"api_groups": [""], "resources": ["secrets"], "verbs": ["get", "list", "watch"]}]
API_PORT = 443
# EKS makes whoever creates the cluster its admin, through an access entry of its own that Pulumi does not
# manage (access_config.bootstrap_cluster_creator_admin_permissions; ForceNew, so it stays on for clusters
# already deployed). A second access entry for that principal fails with 409 ResourceInUseException, so the
# stack creates none for it. Who the creator was must not depend on who runs a later `pulumi up` (a human
# creates, CI deploys): the creating run records it in this cluster tag, and later runs read it back.
CREATOR_TAG = "vllm-platform/cluster-creator"
# Add-ons the nodes need before they can run pods; the others wait for the system nodes
# (an add-on whose pods cannot schedule stays DEGRADED and its creation times out).
NODE_ADDONS = ("vpc-cni", "kube-proxy", "eks-pod-identity-agent")
WORKLOAD_ADDONS = ("coredns",)
EFS_CSI_ADDON = "aws-efs-csi-driver"
EFS_CSI_CONTROLLER_SA = "efs-csi-controller-sa"
EBS_CSI_ADDON = "aws-ebs-csi-driver"
EBS_CSI_CONTROLLER_SA = "ebs-csi-controller-sa"
NODE_MONITORING_ADDON = "eks-node-monitoring-agent"
# The VPC CNI ships with its network policy agent off: NetworkPolicies would be accepted and ignored.
# Key from the vpc-cni add-on's configuration schema (`aws eks describe-addon-configuration --addon-name
# vpc-cni`; docs.aws.amazon.com/eks/latest/userguide/cni-network-policy-configure.html).
VPC_CNI_CONFIGURATION = {"enableNetworkPolicy": "true"}


def endpoint_reachability(settings: AwsSettings) -> list[str]:
    """What keeps `pulumi up` from ever reaching the Kubernetes API, as `field: problem` lines.

    The public endpoint admits endpointPublicAccessCidrs. The private one sits behind the cluster security
    group, which admits only itself: a deployer reaches it only through a 443 rule for its CIDR or security
    group. A VPC the stack creates has no runner, peering or VPN on the first run, so that run must come in
    over the public endpoint (docs/clusters.md, "First `pulumi up`")."""
    public = settings.endpoint_public_access_cidrs
    private = settings.deployer_cidrs or settings.deployer_security_group_ids
    if not settings.vpc_id and not settings.bootstrapped and not public:
        return ["aws.endpointPublicAccessCidrs: empty while the stack creates its VPC, so the first `pulumi up` "
                "cannot reach the Kubernetes API (nothing is inside a VPC that does not exist yet); list the "
                "deployer's egress CIDR (e.g. 203.0.113.7/32) for the first run, then go private with "
                "aws.deployerSecurityGroupIds / aws.deployerCidrs and aws.bootstrapped: true"]
    if not public and not private:
        return ["aws.deployerCidrs / aws.deployerSecurityGroupIds: both empty and aws.endpointPublicAccessCidrs "
                "is empty: the private endpoint admits nothing but the cluster itself; list the CIDR or security "
                "group `pulumi up` runs from, or the CIDRs of a public endpoint"]
    return []


def endpoint_access(settings: AwsSettings) -> dict:
    """Private endpoint always; the public one only for the CIDRs the stack lists (off by default)."""
    cidrs = list(settings.endpoint_public_access_cidrs)
    access = {"endpoint_private_access": True, "endpoint_public_access": bool(cidrs)}
    if cidrs:
        access["public_access_cidrs"] = cidrs
    return access


def deployer_rules(settings: AwsSettings) -> dict[str, dict]:
    """Inbound 443 on the cluster security group for each deployer CIDR and security group, by a name
    derived from the source (reordering the lists replaces nothing)."""
    rules = {}
    for cidr in settings.deployer_cidrs:
        rules[re.sub(r"[./]", "-", cidr)] = {"cidr_ipv4": cidr, "description": f"Kubernetes API from deployer {cidr}"}
    for group in settings.deployer_security_group_ids:
        rules[group] = {"referenced_security_group_id": group, "description": f"Kubernetes API from deployer {group}"}
    return rules


def deletion_protection(cfg: AwsClusterArgs) -> bool:
    """aws.deletionProtection (default: on in prod). One flag for both guards: EKS's own deletion protection on
    the cluster, and Pulumi's `protect` on the cluster, the system node groups and the EFS cache
    (protected_opts). Switched off, one `pulumi up` lifts both (the engine unprotects in state, the provider
    updates the cluster), and `pulumi destroy` then runs in one go (docs/clusters.md "Tearing down")."""
    return cfg.aws.deletion_protection if cfg.aws.deletion_protection is not None else cfg.environment == "prod"


def protected_opts(opts: pulumi.ResourceOptions, protect: bool) -> pulumi.ResourceOptions:
    """`protect` for what a production teardown must not lose half-way. The engine refuses to delete a protected
    resource when it comes to it, and `pulumi destroy` previews first: with the cluster protected the preview
    fails and nothing is deleted (pulumi/pulumi pkg/resource/deploy/step.go DeleteStep.Apply, checked at
    v3.259.0-14-g1b59498; pulumi.com/docs/iac/concepts/resources/options/protect). Without it EKS's deletion
    protection failed the destroy at the cluster, after the node groups, the cache and every Kubernetes object
    were gone. No `retainOnDelete` anywhere: nothing here holds data that must outlive the stack (the cache
    is re-downloadable weights), and a resource kept silently past `destroy` is a bill nobody sees (an EFS
    file system of cached weights is billed per GB-month)."""
    return pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(protect=protect))


def access_policy_arn(partition: str, policy: str) -> str:
    return f"arn:{partition}:eks::aws:cluster-access-policy/{policy}"


def token_identity(provider: dict[str, Any]) -> tuple[Any, Any, list[str]]:
    """(profile, role ARN, problems): the identity `aws eks get-token` must use, from the stack's `aws:profile`
    and `aws:assumeRoles`, the settings the explicit provider runs with (components/providers.py); the
    cluster creator, which alone has admin at first, is that provider's identity. Values may be secrets."""
    profile, roles = provider.get("profile"), provider.get("assumeRoles")
    if roles is None or isinstance(roles, pulumi.Output):
        return profile, (roles.apply(lambda rs: _role_arn(rs)) if roles is not None else None), []
    if not isinstance(roles, list) or len(roles) > 1:
        return profile, None, ["aws:assumeRoles: the kubeconfig's `aws eks get-token --role-arn` assumes one role; "
                               "name one role here, or chain roles in an AWS CLI profile (role_arn, source_profile) "
                               "and set aws:profile"]
    return profile, _role_arn(roles), []


def _role_arn(roles) -> str | None:
    return (roles[0] or {}).get("roleArn") if roles else None


def cluster_creator(live: Any, invoke: pulumi.InvokeOptions) -> str | None:
    """The IAM principal EKS made (or will make) this cluster's admin: on the run that creates the cluster, the
    identity running `pulumi up` (an assumed role resolves to its role ARN, as EKS records it); afterwards the
    cluster's CREATOR_TAG. None: a cluster created before the tag existed (nothing is skipped, as before).
    `live`: the cluster as it is now (versions_check.existing_cluster), None before it exists."""
    if live is None:
        caller = aws.get_caller_identity(opts=invoke).arn
        return aws.iam.get_session_context(arn=caller, opts=invoke).issuer_arn
    return (live.tags or {}).get(CREATOR_TAG)


def principal(arn: str | None) -> tuple[str, ...] | None:
    """An IAM principal without its path: the session issuer ARN carries the role's path
    (arn:aws:iam::111122223333:role/teams/platform-admin) where a stack file may name it without."""
    if not arn:
        return None
    head, _, resource = arn.partition(":iam::")
    account, _, rest = resource.partition(":")
    kind, _, name = rest.partition("/")
    return (head, account, kind, name.rsplit("/", 1)[-1]) if resource else (arn,)


def access_entries(settings: AwsSettings, creator: str | None) -> list[tuple[str, str, int, str]]:
    """(role, access policy, index, principal) of each access entry to create: aws.adminRoleArns, then
    aws.viewerRoleArns, without the cluster creator, which has EKS's admin entry already. The index is the
    principal's place in its list, so that skipping the creator renames no other entry."""
    return [(role, policy, i, arn)
            for role, policy, arns in (("admin", ADMIN_POLICY, settings.admin_role_arns),
                                       ("viewer", VIEW_POLICY, settings.viewer_role_arns))
            for i, arn in enumerate(arns) if creator is None or principal(arn) != principal(creator)]


def kubeconfig_yaml(cluster: str, endpoint: str, ca_data: str, region: str, profile: str | None = None,
                    role_arn: str | None = None) -> str:
    """A kubeconfig that gets short-lived tokens from the AWS CLI (no long-lived credential in state), as the
    identity the AWS provider uses (`--profile`, `--role-arn`): another identity gets 401 from the API."""
    args = ["eks", "get-token", "--cluster-name", cluster, "--region", region, "--output", "json"]
    if role_arn:
        args += ["--role-arn", role_arn]
    if profile:
        args += ["--profile", profile]
    env = [{"name": "AWS_PROFILE", "value": profile}] if profile else None
    return yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": cluster, "preferences": {},
        "clusters": [{"name": cluster, "cluster": {"server": endpoint, "certificate-authority-data": ca_data}}],
        "contexts": [{"name": cluster, "context": {"cluster": cluster, "user": cluster}}],
        "users": [{"name": cluster, "user": {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1", "command": "aws",
            "args": args, **({"env": env} if env else {}), "interactiveMode": "Never"}}}],
    }, sort_keys=False)


class EksControlPlane(pulumi.ComponentResource):
    """The cluster itself. Its name is the stack's cluster.name, so that tags, log groups and the
    autoscaler's discovery tags are known before anything is created."""

    def __init__(self, name: str, cfg: AwsClusterArgs, network: NetworkFacts, partition: str,
                 opts: pulumi.ResourceOptions | None = None, profile: Any = None, role_arn: Any = None, *,
                 live: Any):  # the cluster as it is now (versions_check.existing_cluster), None before it exists
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
        self.creator = cluster_creator(live, pulumi.InvokeOptions(parent=self))
        self.cluster = aws.eks.Cluster(
            f"{name}-cluster", name=cluster_name, version=cfg.cluster.kubernetes_version, role_arn=self.role.arn,
            vpc_config={"subnet_ids": network.private_subnet_ids, **endpoint_access(settings)},
            # API mode: access entries instead of the aws-auth ConfigMap. The identity that creates the
            # cluster keeps admin so that the stack can install what runs on the cluster.
            access_config={"authentication_mode": "API", "bootstrap_cluster_creator_admin_permissions": True},
            **({"tags": {CREATOR_TAG: self.creator}} if self.creator else {}),
            encryption_config={"provider": {"key_arn": self.secrets_key.arn}, "resources": ["secrets"]},
            enabled_cluster_log_types=list(LOG_TYPES),
            # Explicit: left unset, EKS enrols the cluster in extended support (and its price) at the end of
            # standard support instead of upgrading it.
            upgrade_policy={"support_type": settings.support_type},
            deletion_protection=deletion_protection(cfg),
            opts=protected_opts(pulumi.ResourceOptions(parent=self, depends_on=[*attachments, key_access,
                                                                              self.log_group]),
                                deletion_protection(cfg)))
        listed = [*settings.admin_role_arns, *settings.viewer_role_arns]
        if self.creator and principal(self.creator) in {principal(a) for a in listed}:
            pulumi.log.info(f"aws.adminRoleArns / aws.viewerRoleArns: no access entry for {self.creator}: it "
                            f"created the cluster, and EKS gave it cluster admin through an entry of its own",
                            resource=self)
        # Kubernetes objects depend on these (components/cluster/aws/component.py): `pulumi destroy` run by a
        # listed role keeps its access until the last object (the gateway's NLB Service among them) is gone.
        self.access: list[aws.eks.AccessPolicyAssociation] = []
        for role, policy, i, arn in access_entries(settings, self.creator):
            groups = {"kubernetes_groups": [PREVIEW_GROUP]} if role == "viewer" else {}
            entry = aws.eks.AccessEntry(f"{name}-{role}-{i}", cluster_name=self.cluster.name, principal_arn=arn,
                                        type="STANDARD", opts=child, **groups)
            self.access.append(aws.eks.AccessPolicyAssociation(
                f"{name}-{role}-{i}", cluster_name=self.cluster.name, principal_arn=arn,
                policy_arn=access_policy_arn(partition, policy), access_scope={"type": "cluster"},
                opts=pulumi.ResourceOptions(parent=self, depends_on=[entry])))
        # The private endpoint's ENIs carry the cluster security group, which EKS creates admitting only itself.
        self.security_group_id = self.cluster.vpc_config.apply(lambda v: v.cluster_security_group_id)
        self.deployer_rules = [
            aws.vpc.SecurityGroupIngressRule(f"{name}-deployer-{key}", security_group_id=self.security_group_id,
                                             ip_protocol="tcp", from_port=API_PORT, to_port=API_PORT, opts=child,
                                             **rule)
            for key, rule in deployer_rules(settings).items()]
        ca_data = self.cluster.certificate_authority.apply(lambda ca: ca.data)
        self.kubeconfig = pulumi.Output.secret(
            pulumi.Output.all(self.cluster.name, self.cluster.endpoint, ca_data, profile, role_arn).apply(
                lambda a: kubeconfig_yaml(a[0], a[1], a[2], settings.region, a[3], a[4])))
        self.register_outputs({"clusterName": self.cluster.name, "endpoint": self.cluster.endpoint,
                               "kubeconfig": self.kubeconfig, "clusterCreator": self.creator})


def preview_secret_reader(name: str, provider: k8s.Provider, depends_on: list, parent: pulumi.Resource) -> None:
    """Read access to Secrets for the viewer entries' group (aws.viewerRoleArns), so that they can preview."""
    opts = pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=depends_on)
    role = k8s.rbac.v1.ClusterRole(name, metadata={"name": PREVIEW_GROUP}, rules=PREVIEW_RULES, opts=opts)
    k8s.rbac.v1.ClusterRoleBinding(
        name, metadata={"name": PREVIEW_GROUP},
        role_ref={"api_group": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role.metadata.name},
        subjects=[{"api_group": "rbac.authorization.k8s.io", "kind": "Group", "name": PREVIEW_GROUP}], opts=opts)


class EksAddons(pulumi.ComponentResource):
    """EKS-managed add-ons at pinned versions. The CSI drivers' controllers get their own Pod Identity
    roles (AmazonEBSCSIDriverPolicy, AmazonEFSCSIDriverPolicy) instead of the node role."""

    def __init__(self, name: str, cluster: aws.eks.Cluster, versions: dict[str, str], partition: str,
                 system_nodes: list[pulumi.Resource], efs_csi: bool, node_monitoring: bool,
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__("vllm-platform:aws:EksAddons", name, None, opts)
        self.addons: dict[str, aws.eks.Addon] = {}
        for addon in NODE_ADDONS:
            extra = {"configuration_values": json.dumps(VPC_CNI_CONFIGURATION)} if addon == "vpc-cni" else {}
            self.addons[addon] = self._addon(name, cluster, addon, versions[addon], [], **extra)
        for addon in WORKLOAD_ADDONS:
            self.addons[addon] = self._addon(name, cluster, addon, versions[addon], list(system_nodes))
        # Every claim without a class of its own (Prometheus) binds through the default gp3 class on it.
        self._csi(name, cluster, versions, partition, system_nodes, EBS_CSI_ADDON, "ebs-csi", EBS_CSI_POLICY,
                  EBS_CSI_CONTROLLER_SA, "EBS")
        if efs_csi:
            self._csi(name, cluster, versions, partition, system_nodes, EFS_CSI_ADDON, "efs-csi", EFS_CSI_POLICY,
                      EFS_CSI_CONTROLLER_SA, "EFS")
        if node_monitoring:
            # Node auto repair acts on node conditions; without this agent a GPU XID error or a failed DCGM
            # check never becomes one, and a broken GPU node stays Ready.
            self.addons[NODE_MONITORING_ADDON] = self._addon(name, cluster, NODE_MONITORING_ADDON,
                                                             versions[NODE_MONITORING_ADDON], list(system_nodes))
        self.register_outputs({a: addon.addon_version for a, addon in self.addons.items()})

    def _csi(self, name, cluster, versions, partition, system_nodes, addon, short, policy, service_account, kind):
        role, attachments = service_role(f"{name}-{short}", POD_IDENTITY_PRINCIPAL, partition, (policy,), self,
                                         f"{kind} CSI driver controller (Pod Identity)")
        self.addons[addon] = self._addon(
            name, cluster, addon, versions[addon], [*system_nodes, self.addons["eks-pod-identity-agent"], *attachments],
            pod_identity_associations=[{"role_arn": role.arn, "service_account": service_account}])

    def _addon(self, name: str, cluster: aws.eks.Cluster, addon: str, version: str, depends_on: list,
               **kwargs) -> aws.eks.Addon:
        # OVERWRITE: EKS installed self-managed vpc-cni / kube-proxy / coredns at creation; the managed
        # add-on takes them over instead of failing on the fields they already set.
        return aws.eks.Addon(f"{name}-{addon}", cluster_name=cluster.name, addon_name=addon, addon_version=version,
                             resolve_conflicts_on_create="OVERWRITE", resolve_conflicts_on_update="OVERWRITE",
                             opts=pulumi.ResourceOptions(parent=self, depends_on=depends_on), **kwargs)
