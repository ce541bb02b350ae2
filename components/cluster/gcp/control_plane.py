"""The GKE Standard control plane: the APIs a fresh project needs, the node identity, the cluster and the
kubeconfig `pulumi up` reaches it with. `cluster_args`, `cost_labels` and `kubeconfig_yaml` are pure.

How the deployer reaches the API on the first run (GcpSettings checks the combination at config time):
  dns = cloud.google.com/kubernetes-engine/docs/concepts/network-isolation (DNS-based endpoint: a
        cluster-unique *.gke.goog name in front of the control plane, reachable from anywhere that
        reaches Google APIs, every request authorised by IAM `container.clusters.connect` before it
        reaches Kubernetes RBAC; served with a publicly trusted certificate, so the kubeconfig carries
        no cluster CA; `gcloud container clusters get-credentials --dns-endpoint` writes the same)
  ip  = the IP endpoint: public and limited to master authorized networks, or private (internal IP,
        reached from inside the VPC, peered networks or VPN / Interconnect ranges listed as authorized)
gcp.kubeconfigEndpoint (default ip, what earlier releases used) picks one of them, once: GKE reports the
private address as the IP endpoint once privateEndpoint is on, so a stack that may go private picks dns.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

import pulumi
import pulumi_gcp as gcp
import yaml

from ...upstream.versions import GKE_RELEASE_CHANNEL
from .args import deletion_protection
from .network import PrimaryNetwork

if TYPE_CHECKING:  # the component's own arguments (components/wiring.py builds them)
    from .args import GcpClusterArgs

# APIs a fresh project needs before the cluster and the Filestore instance can be created, and the one the
# GPU quota check reads (quotas.py; the check itself runs before these resources: a fresh project turns
# them on by hand first, node_pools.check_capacity).
# cloudresourcemanager: gcp.projects.IAMMember reads and writes the project's IAM policy through it
# (projects.getIamPolicy / setIamPolicy), which a project created without it refuses (403 SERVICE_DISABLED).
QUOTAS_API = "cloudquotas.googleapis.com"
SERVICES = ("compute.googleapis.com", "container.googleapis.com", "file.googleapis.com", "iam.googleapis.com",
            "cloudresourcemanager.googleapis.com", QUOTAS_API)
# Least privilege for nodes instead of the Compute Engine default service account (Editor):
# cloud.google.com/kubernetes-engine/docs/how-to/service-accounts#default-gke-service-agent
NODE_ROLES = ("roles/container.defaultNodeServiceAccount", "roles/artifactregistry.reader")
CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"  # IAM, not scopes, limits access
# Node upgrades drain GPU nodes: keep them to weekend nights (UTC), 16 h a week (GKE needs >= 48 h / 32 days).
MAINTENANCE_WINDOW = {"start_time": "2025-01-04T02:00:00Z", "end_time": "2025-01-04T10:00:00Z",
                      "recurrence": "FREQ=WEEKLY;BYDAY=SA,SU"}
# Maintenance exclusions are operational calls (a launch, a freeze) made with `gcloud container clusters
# update --add-maintenance-exclusion-*`; `pulumi up` must not remove them again.
# nodeConfig describes only the default pool that GKE creates with the cluster and remove_default_node_pool
# deletes at once. It is ForceNew, and GKE reports a remaining pool's config in its place
# (hashicorp/terraform-provider-google#12070), so a diff there would replace the cluster; clusters deployed
# without it keep theirs.
IGNORED_CLUSTER_CHANGES = ["maintenancePolicy.maintenanceExclusions", "nodeConfig"]

AUTH_PLUGIN = "gke-gcloud-auth-plugin"
INSTALL_HINT = ("Install gke-gcloud-auth-plugin for use with kubectl by following "
                "https://cloud.google.com/kubernetes-engine/docs/how-to/cluster-access-for-kubectl#install_plugin")


def workload_pool(project: str) -> str:
    return f"{project}.svc.id.goog"


def label_value(value: str) -> str:
    """A GCP label value: lowercase letters, digits, `_` and `-`, at most 63 characters."""
    return re.sub(r"[^a-z0-9_-]", "-", value.lower())[:63]


def cost_labels(stack: str, environment: str, models: tuple[str, ...] | list[str]) -> dict[str, str]:
    """Cost-allocation labels for billing export: which stack, environment and model a VM or disk is for."""
    return {"stack": label_value(stack), "environment": label_value(environment),
            "model": label_value("_".join(sorted(models)))}


def private_ip_endpoint(cfg: GcpClusterArgs) -> bool:
    """No authorized CIDRs means no public IP endpoint at all; the DNS endpoint (if on) still answers."""
    return cfg.gcp.private_endpoint or not cfg.gcp.master_authorized_networks


def kubeconfig_via_dns(cfg: GcpClusterArgs) -> bool:
    """Which endpoint Pulumi's kubeconfig names: gcp.kubeconfigEndpoint alone, never derived from the
    endpoint settings. The Kubernetes provider takes a different `server` for a different cluster and replaces
    every object it manages, so going private later must not switch it (GcpSettings refuses an endpoint the
    first run cannot reach)."""
    return cfg.gcp.kubeconfig_endpoint == "dns"


def default_pool_node_config(service_account) -> dict:
    """The default pool's nodes run as the stack's node service account: left unset, GKE gives them the Compute
    Engine default service account, which hardened organisations disable or strip of its roles, and the cluster's
    creation fails. The scope is the node pools' (IAM, not scopes, limits access), so that the config GKE reports
    for the cluster afterwards (a remaining pool's) matches."""
    return {"service_account": service_account, "oauth_scopes": [CLOUD_PLATFORM_SCOPE]}


def cluster_args(cfg: GcpClusterArgs, net: PrimaryNetwork, labels: dict[str, str], node_service_account=None) -> dict:
    """Arguments of gcp.container.Cluster (pulumi_gcp 10.x names); node_service_account: the default pool's."""
    g = cfg.gcp
    default_pool = {"node_config": default_pool_node_config(node_service_account)} if node_service_account else {}
    return dict(
        name=cfg.cluster.name,
        # Regional control plane (three replicas, upgrades without API downtime); nodes in one zone,
        # where the GPU fabric, compact placement and the Filestore instance are.
        location=g.region,
        node_locations=[g.zone],
        network=net.network,
        subnetwork=net.subnetwork,
        networking_mode="VPC_NATIVE",
        ip_allocation_policy={"cluster_secondary_range_name": net.pods_range,
                              "services_secondary_range_name": net.services_range},
        # Node pools are managed separately (node_pools.py).
        remove_default_node_pool=True,
        initial_node_count=1,
        **default_pool,
        release_channel={"channel": g.release_channel or GKE_RELEASE_CHANNEL},
        min_master_version=cfg.cluster.kubernetes_version,
        private_cluster_config={"enable_private_nodes": True, "enable_private_endpoint": private_ip_endpoint(cfg),
                                "master_global_access_config": {"enabled": True}},
        # gcp_public_cidrs_access_enabled would admit every Google Cloud public address (any customer's VM,
        # Cloud Build), not a way in for one deployer.
        master_authorized_networks_config={
            "cidr_blocks": [{"cidr_block": c, "display_name": f"authorized-{i}"}
                            for i, c in enumerate(g.master_authorized_networks)],
            "gcp_public_cidrs_access_enabled": False},
        # The DNS endpoint exists on every cluster; allow_external_traffic lets IAM-authorised callers use it
        # from outside the VPC (the first `pulumi up` of a private cluster in a new VPC).
        control_plane_endpoints_config={"dns_endpoint_config": {"allow_external_traffic": g.dns_endpoint}},
        workload_identity_config={"workload_pool": workload_pool(g.project)},
        # Dataplane V2 (eBPF) enforces NetworkPolicy itself; multi-networking needs it.
        datapath_provider="ADVANCED_DATAPATH",
        # Always on, not only when a GPUDirect / RDMA pool exists: turning it on later replaces the cluster.
        enable_multi_networking=True,
        enable_shielded_nodes=True,
        addons_config={"gcp_filestore_csi_driver_config": {"enabled": True},
                       "gcs_fuse_csi_driver_config": {"enabled": True},
                       # Installs the standard-rwo StorageClass (pd-balanced) block claims name.
                       "gce_persistent_disk_csi_driver_config": {"enabled": True}},
        maintenance_policy={"recurring_window": MAINTENANCE_WINDOW},
        resource_labels=labels,
        # GKE cost allocation: billing export broken down by namespace and Kubernetes label.
        cost_management_config={"enabled": True},
        # `pulumi destroy` must not take a production cluster down by accident; Pulumi's `protect` follows the
        # same flag (protected_options), so the engine refuses before it deletes anything, not GKE at the end.
        deletion_protection=deletion_protection(cfg),
    )


def enforces_network_policy(args: dict) -> bool:
    """Dataplane V2 enforces NetworkPolicy; the legacy datapath only with the Calico add-on, which we never enable."""
    return args.get("datapath_provider") == "ADVANCED_DATAPATH"


def enable_services(name: str, opts: pulumi.ResourceOptions) -> dict[str, gcp.projects.Service]:
    return {s: gcp.projects.Service(f"{name}-api-{s.split('.')[0]}", service=s, disable_on_destroy=False, opts=opts)
            for s in SERVICES}


def node_account_id(cluster_name: str) -> str:
    """6-30 characters, [a-z][-a-z0-9]*[a-z0-9]."""
    return f"{cluster_name[:24].rstrip('-')}-nodes"


def node_identity(name: str, cfg: GcpClusterArgs, opts: pulumi.ResourceOptions) -> tuple[gcp.serviceaccount.Account, list]:
    sa = gcp.serviceaccount.Account(f"{name}-nodes", account_id=node_account_id(cfg.cluster.name),
                                    display_name=f"GKE nodes of {cfg.cluster.name} (vllm-platform)", opts=opts)
    grants = [gcp.projects.IAMMember(f"{name}-nodes-{role.split('/')[1].replace('.', '-')}",
                                     project=cfg.gcp.project, role=role, member=sa.member, opts=opts)
              for role in NODE_ROLES]
    return sa, grants


# --- kubeconfig -----------------------------------------------------------------------------------

def context_name(project: str, location: str, cluster: str) -> str:
    return f"gke_{project}_{location}_{cluster}"  # what `gcloud container clusters get-credentials` names it


def kubeconfig_yaml(context: str, endpoint: str, ca_certificate_b64: str | None) -> str:
    """Authenticates with gke-gcloud-auth-plugin (no static token: the caller's gcloud identity, short-lived).
    No CA for the DNS endpoint: its certificate is publicly trusted, the cluster CA does not sign it."""
    cluster = {"server": f"https://{endpoint}"}
    if ca_certificate_b64:
        cluster["certificate-authority-data"] = ca_certificate_b64
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": context, "cluster": cluster}],
        "contexts": [{"name": context, "context": {"cluster": context, "user": context}}],
        "current-context": context,
        "users": [{"name": context, "user": {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": AUTH_PLUGIN,
            "installHint": INSTALL_HINT,
            "provideClusterInfo": True,
            "interactiveMode": "Never",
        }}}],
    }
    return yaml.safe_dump(doc, sort_keys=False)


def _dns_endpoint(config) -> str:
    dns = config["dns_endpoint_config"] if isinstance(config, dict) else config.dns_endpoint_config
    return dns["endpoint"] if isinstance(dns, dict) else dns.endpoint


class GkeControlPlane:
    """The cluster (a child of the calling component, so its URN is unchanged) and the kubeconfig Pulumi's
    Kubernetes provider uses (kubeconfig_via_dns): the DNS endpoint, or the IP endpoint with the cluster CA."""

    def __init__(self, name: str, cfg: GcpClusterArgs, net: PrimaryNetwork, labels: dict[str, str],
                 opts: pulumi.ResourceOptions, node_service_account=None,
                 min_master_version: pulumi.Input[str] | None = None):
        g = cfg.gcp
        self.labels = labels
        self.args = cluster_args(cfg, net, labels, node_service_account)
        # min_master_version: the minor once GKE confirmed it (versions_check.checked_version), so the cluster
        # waits for the answer
        version = {"min_master_version": min_master_version} if min_master_version is not None else {}
        self.cluster = gcp.container.Cluster(
            f"{name}-gke", **{**self.args, **version},
            opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(ignore_changes=IGNORED_CLUSTER_CHANGES,
                                                                           protect=deletion_protection(cfg))))
        context = context_name(g.project, g.region, cfg.cluster.name)
        if kubeconfig_via_dns(cfg):
            server = self.cluster.control_plane_endpoints_config.apply(_dns_endpoint)
            config = server.apply(lambda host: kubeconfig_yaml(context, host, None))
        else:
            config = pulumi.Output.all(self.cluster.endpoint, self.cluster.master_auth.cluster_ca_certificate).apply(
                lambda a: kubeconfig_yaml(context, a[0], a[1]))
        self.kubeconfig = pulumi.Output.secret(config)
        self.network_policy_enforced = enforces_network_policy(self.args)
