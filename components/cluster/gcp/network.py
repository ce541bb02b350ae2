"""The VPCs: the cluster's primary network (new, or an existing one from config) and the extra
GPU NIC networks of gpudirect.py."""
from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp

from ...config.schema import GcpSettings
from .gpudirect import FabricVpc

# A new VPC's ranges (VPC-native cluster): nodes, then pods and services as secondary ranges.
# 10.0.0.0/20 holds 4,092 nodes; a /14 of pods gives 1,024 nodes x 110 pods.
NODES_CIDR = "10.0.0.0/20"
PODS_RANGE, PODS_CIDR = "pods", "10.16.0.0/14"
SERVICES_RANGE, SERVICES_CIDR = "services", "10.20.0.0/20"
# Ports the control plane calls on pods, beyond the 443 / 10250 GKE opens itself on private clusters: KEDA's
# external metrics API server (keda chart metricsServer port 6443) and the admission webhooks (keda
# webhooks port 9443, kuberay-operator webhook 9443). Without them the HPA's external metrics fail.
# (cloud.google.com/kubernetes-engine/docs/how-to/private-clusters#add_firewall_rules)
CONTROL_PLANE_PORTS = ("6443", "9443")


def control_plane_source(private_cluster_config) -> list[str]:
    """The control plane's address as a source range: a cluster without masterIpv4CidrBlock (GKE >= 1.29)
    reaches nodes through Private Service Connect from its private endpoint."""
    c = private_cluster_config
    block = c.get("master_ipv4_cidr_block") if isinstance(c, dict) else getattr(c, "master_ipv4_cidr_block", None)
    endpoint = c.get("private_endpoint") if isinstance(c, dict) else getattr(c, "private_endpoint", None)
    return [block] if block else [f"{endpoint}/32"]


@dataclass(frozen=True)
class PrimaryNetwork:
    network: pulumi.Input[str]  # VPC name
    subnetwork: pulumi.Input[str]  # subnet name
    pods_range: str
    services_range: str
    resources: tuple = ()  # what the cluster must wait for (subnet, NAT)


def primary_network(name: str, prefix: str, gcp_cfg: GcpSettings, opts: pulumi.ResourceOptions) -> PrimaryNetwork:
    if gcp_cfg.network:
        return PrimaryNetwork(gcp_cfg.network, gcp_cfg.subnetwork, gcp_cfg.pods_range, gcp_cfg.services_range)
    net = gcp.compute.Network(f"{name}-net", name=f"{prefix}-net", auto_create_subnetworks=False,
                              routing_mode="REGIONAL", description="vllm-platform: GKE nodes, pods, Filestore",
                              opts=opts)
    subnet = gcp.compute.Subnetwork(
        f"{name}-nodes", name=f"{prefix}-nodes", network=net.name, region=gcp_cfg.region,
        ip_cidr_range=NODES_CIDR,
        # Private nodes reach Google APIs (Artifact Registry, GCS, Filestore API) without NAT.
        private_ip_google_access=True,
        secondary_ip_ranges=[{"range_name": PODS_RANGE, "ip_cidr_range": PODS_CIDR},
                             {"range_name": SERVICES_RANGE, "ip_cidr_range": SERVICES_CIDR}],
        opts=opts)
    # Private nodes have no external IPs: Cloud NAT lets them pull the vLLM image from Docker Hub
    # and weights from Hugging Face.
    router = gcp.compute.Router(f"{name}-router", name=f"{prefix}-router", network=net.name,
                                region=gcp_cfg.region, opts=opts)
    nat = gcp.compute.RouterNat(
        f"{name}-nat", name=f"{prefix}-nat", router=router.name, region=gcp_cfg.region,
        nat_ip_allocate_option="AUTO_ONLY", source_subnetwork_ip_ranges_to_nat="ALL_SUBNETWORKS_ALL_IP_RANGES",
        log_config={"enable": True, "filter": "ERRORS_ONLY"}, opts=opts)
    return PrimaryNetwork(net.name, subnet.name, PODS_RANGE, SERVICES_RANGE, (subnet, nat))


def fabric_networks(name: str, prefix: str, project: str, region: str, vpcs: list[FabricVpc],
                    opts: pulumi.ResourceOptions) -> list[pulumi.Resource]:
    """Create the extra VPCs, their subnets and (except RoCE VPCs) an allow-internal rule each."""
    created: list[pulumi.Resource] = []

    def child(gce_name: str) -> str:  # "vllm-gpunic-1" -> "<component>-gpunic-1"
        return f"{name}-{gce_name.removeprefix(prefix + '-')}"

    for v in vpcs:
        profile = f"projects/{project}/global/networkProfiles/{v.network_profile}" if v.network_profile else None
        net = gcp.compute.Network(child(v.vpc), name=v.vpc, auto_create_subnetworks=False, mtu=v.mtu,
                                  network_profile=profile, description="vllm-platform: GPU NIC network",
                                  opts=opts)
        created.append(net)
        for s in v.subnets:
            created.append(gcp.compute.Subnetwork(child(s.subnet), name=s.subnet, network=net.name,
                                                  region=region, ip_cidr_range=s.cidr, opts=opts))
        if v.firewall:
            created.append(gcp.compute.Firewall(
                child(v.vpc) + "-internal", name=f"{v.vpc}-internal", network=net.name, direction="INGRESS",
                allows=[{"protocol": "tcp", "ports": ["0-65535"]}, {"protocol": "udp", "ports": ["0-65535"]},
                        {"protocol": "icmp"}],
                source_ranges=[s.cidr for s in v.subnets], opts=opts))
    return created


def control_plane_firewall(name: str, prefix: str, gcp_cfg: GcpSettings, net: PrimaryNetwork, cluster,
                           node_account: pulumi.Input[str], opts: pulumi.ResourceOptions):
    """Let the control plane reach the webhook / metrics ports on the nodes, in a VPC the stack creates.
    An existing `network` is its owner's: docs/clusters.md says which rule to add there."""
    if gcp_cfg.network:
        return None
    return gcp.compute.Firewall(
        f"{name}-control-plane-webhooks", name=f"{prefix}-control-plane-webhooks", network=net.network,
        direction="INGRESS", description="vllm-platform: GKE control plane to KEDA metrics API and webhooks",
        allows=[{"protocol": "tcp", "ports": list(CONTROL_PLANE_PORTS)}],
        source_ranges=cluster.private_cluster_config.apply(control_plane_source),
        target_service_accounts=[node_account], opts=opts)
