"""The GKE Standard cluster, its node identity and the APIs it needs. `cluster_args` is pure."""
from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from ...config.schema import StackConfig
from ...versions import GKE_RELEASE_CHANNEL
from .network import PrimaryNetwork

# APIs a fresh project needs before the cluster and the Filestore instance can be created.
SERVICES = ("compute.googleapis.com", "container.googleapis.com", "file.googleapis.com", "iam.googleapis.com")
# Least privilege for nodes instead of the Compute Engine default service account (Editor):
# cloud.google.com/kubernetes-engine/docs/how-to/service-accounts#default-gke-service-agent
NODE_ROLES = ("roles/container.defaultNodeServiceAccount", "roles/artifactregistry.reader")
CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"  # IAM, not scopes, limits access
# Node upgrades drain GPU nodes: keep them to weekend nights (UTC), 16 h a week (GKE needs >= 48 h / 32 days).
MAINTENANCE_WINDOW = {"start_time": "2025-01-04T02:00:00Z", "end_time": "2025-01-04T10:00:00Z",
                      "recurrence": "FREQ=WEEKLY;BYDAY=SA,SU"}


def workload_pool(project: str) -> str:
    return f"{project}.svc.id.goog"


def cluster_args(cfg: StackConfig, net: PrimaryNetwork) -> dict:
    """Arguments of gcp.container.Cluster (pulumi_gcp 10.x names)."""
    g = cfg.gcp
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
        # Node pools are managed separately (nodepools.py).
        remove_default_node_pool=True,
        initial_node_count=1,
        release_channel={"channel": g.release_channel or GKE_RELEASE_CHANNEL},
        min_master_version=cfg.cluster.kubernetes_version,
        # No authorized CIDRs means no public endpoint at all (as on AWS): run Pulumi from inside the VPC.
        private_cluster_config={"enable_private_nodes": True,
                                "enable_private_endpoint": g.private_endpoint or not g.master_authorized_networks,
                                "master_global_access_config": {"enabled": True}},
        master_authorized_networks_config={
            "cidr_blocks": [{"cidr_block": c, "display_name": f"authorized-{i}"}
                            for i, c in enumerate(g.master_authorized_networks)],
            "gcp_public_cidrs_access_enabled": False},
        workload_identity_config={"workload_pool": workload_pool(g.project)},
        # Dataplane V2 (eBPF) enforces NetworkPolicy itself; multi-networking needs it.
        datapath_provider="ADVANCED_DATAPATH",
        # Always on, not only when a GPUDirect / RDMA pool exists: turning it on later replaces the cluster.
        enable_multi_networking=True,
        enable_shielded_nodes=True,
        addons_config={"gcp_filestore_csi_driver_config": {"enabled": True},
                       "gcs_fuse_csi_driver_config": {"enabled": True},
                       "gce_persistent_disk_csi_driver_config": {"enabled": True}},
        maintenance_policy={"recurring_window": MAINTENANCE_WINDOW},
        # `pulumi destroy` must not take a production cluster down by accident.
        deletion_protection=cfg.production,
    )


def enable_services(name: str, opts: pulumi.ResourceOptions) -> list[gcp.projects.Service]:
    return [gcp.projects.Service(f"{name}-api-{s.split('.')[0]}", service=s, disable_on_destroy=False, opts=opts)
            for s in SERVICES]


def node_account_id(cluster_name: str) -> str:
    """6-30 characters, [a-z][-a-z0-9]*[a-z0-9]."""
    return f"{cluster_name[:24].rstrip('-')}-nodes"


def node_identity(name: str, cfg: StackConfig, opts: pulumi.ResourceOptions) -> tuple[gcp.serviceaccount.Account, list]:
    sa = gcp.serviceaccount.Account(f"{name}-nodes", account_id=node_account_id(cfg.cluster.name),
                                    display_name=f"GKE nodes of {cfg.cluster.name} (vllm-platform)", opts=opts)
    grants = [gcp.projects.IAMMember(f"{name}-nodes-{role.split('/')[1].replace('.', '-')}",
                                     project=cfg.gcp.project, role=role, member=sa.member, opts=opts)
              for role in NODE_ROLES]
    return sa, grants
