"""GPU machine families on GKE and the extra networks their GPU NICs need (GPUDirect-TCPX(O), RDMA).

Pure: the family table and the network plan are data; `FabricNetworks` turns the plan into VPCs,
subnets, firewall rules and the GKE multi-networking objects (Network + GKENetworkParamSet).

Sources:
  t = cloud.google.com/kubernetes-engine/docs/how-to/gpu-bandwidth-gpudirect-tcpx (A3 High: 4 GPU
      NICs, A3 Mega: 8, each in its own VPC with MTU 8244; GKENetworkParamSet deviceMode NetDevice;
      pod annotation networking.gke.io/interfaces; gVNIC on the node pool)
  r = cloud.google.com/kubernetes-engine/docs/how-to/gpu-bandwidth-gpudirect-rdma and
      cloud.google.com/vpc/docs/rdma-network-profiles (A3 Ultra, A4: 8 CX-7 NICs in one VPC with
      the ZONE-vpc-roce network profile, one subnet per NIC, deviceMode RDMA; plus a second gVNIC in
      its own VPC; MTU 8896; RoCE VPCs take no firewall rules)
  p = docs/sizing.md (compact placement on GKE documented for A100, L4 and H100;
      H200/B200 capacity comes through reservations)
  d = cloud.google.com/compute/docs/accelerator-optimized-machines (A3 Ultra and A4 boot from
      Hyperdisk only; that they are not offered on demand is catalog/data/not_on_demand.csv)
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from ...catalog import InstanceType

PER_NIC_VPC = "per-nic-vpc"  # TCPX(O): every GPU NIC in a VPC of its own
ROCE_VPC = "roce-vpc"  # RDMA: all GPU NICs in one RoCE VPC, a subnet each

GPUDIRECT_MTU = 8244  # t
RDMA_MTU = 8896  # r


@dataclass(frozen=True)
class MachineFamily:
    family: str  # machine type without its size suffix, e.g. "a3-highgpu"
    fabric: str | None  # as in the catalog (catalog/data/instance_types.csv fabric)
    gpu_nics: int  # NICs for GPU-to-GPU traffic, each an additional node network
    layout: str | None  # PER_NIC_VPC | ROCE_VPC | None
    device_mode: str | None  # GKENetworkParamSet deviceMode of the GPU NICs
    extra_gvnics: int  # further gVNIC networks besides the primary (A3 Ultra / A4: 1)
    mtu: int
    compact_placement: bool  # GKE COMPACT placement policy offered
    boot_disk_type: str
    source: str


MACHINE_FAMILIES: dict[str, MachineFamily] = {
    f.family: f
    for f in [
        MachineFamily("g2-standard", None, 0, None, None, 0, 1460, True, "pd-balanced", "p"),
        MachineFamily("a2-highgpu", None, 0, None, None, 0, 1460, True, "pd-balanced", "p"),
        MachineFamily("a2-ultragpu", None, 0, None, None, 0, 1460, True, "pd-balanced", "p"),
        MachineFamily("a3-highgpu", "gpudirect-tcpx", 4, PER_NIC_VPC, "NetDevice", 0, GPUDIRECT_MTU, True,
                      "pd-balanced", "t, p"),
        MachineFamily("a3-megagpu", "gpudirect-tcpxo", 8, PER_NIC_VPC, "NetDevice", 0, GPUDIRECT_MTU, True,
                      "pd-balanced", "t, p"),
        MachineFamily("a3-ultragpu", "rdma", 8, ROCE_VPC, "RDMA", 1, RDMA_MTU, False,
                      "hyperdisk-balanced", "r, p, d"),
        MachineFamily("a4-highgpu", "rdma", 8, ROCE_VPC, "RDMA", 1, RDMA_MTU, False,
                      "hyperdisk-balanced", "r, p, d"),
    ]
}


def machine_family(instance: InstanceType) -> MachineFamily:
    family = instance.name.rsplit("-", 1)[0]
    if family not in MACHINE_FAMILIES:
        raise KeyError(f"{instance.name}: no GKE machine family entry for {family!r} "
                       f"(components/cluster/gcp/gpudirect.py MACHINE_FAMILIES)")
    return MACHINE_FAMILIES[family]


# --- the network plan ---------------------------------------------------------------------------

@dataclass(frozen=True)
class FabricSubnet:
    subnet: str  # GCE subnet name
    cidr: str
    k8s_network: str  # name of the Network / GKENetworkParamSet objects (cluster-scoped)
    device_mode: str


@dataclass(frozen=True)
class FabricVpc:
    vpc: str  # GCE network name
    mtu: int
    network_profile: str | None  # RoCE VPCs: "ZONE-vpc-roce"
    firewall: bool  # allow the subnets' own traffic (RoCE VPCs take no firewall rules)
    subnets: tuple[FabricSubnet, ...]


# Ranges of the extra networks, apart from each other and from the primary VPC (10.0.0.0/8) so
# that no two networks of one cluster overlap (GKE multi-networking requires it).
def _gpunic_cidr(i: int) -> str:
    return f"192.168.{i}.0/24"  # i = 1..8, as in t


RDMA_GVNIC_CIDR = "192.168.32.0/24"


def _rdma_cidr(i: int) -> str:
    return f"192.168.{33 + i}.0/24"  # i = 0..7


def fabric_vpcs(prefix: str, zone: str, families: list[MachineFamily]) -> list[FabricVpc]:
    """The extra VPCs a cluster needs for the multi-node GPU pools of these families. Pools of one
    layout share them (an A3 High pool uses the first 4 of an A3 Mega pool's 8 GPU NIC VPCs)."""
    vpcs: list[FabricVpc] = []
    per_nic = max((f.gpu_nics for f in families if f.layout == PER_NIC_VPC), default=0)
    for i in range(1, per_nic + 1):
        name = f"{prefix}-gpunic-{i}"
        vpcs.append(FabricVpc(name, GPUDIRECT_MTU, None, True,
                              (FabricSubnet(f"{name}-sub", _gpunic_cidr(i), f"vpc{i}", "NetDevice"),)))
    roce = [f for f in families if f.layout == ROCE_VPC]
    if roce:
        gvnic = f"{prefix}-gvnic-1"
        vpcs.append(FabricVpc(gvnic, RDMA_MTU, None, True,
                              (FabricSubnet(f"{gvnic}-sub", RDMA_GVNIC_CIDR, "gvnic-1", "NetDevice"),)))
        nics = max(f.gpu_nics for f in roce)
        vpcs.append(FabricVpc(f"{prefix}-rdma", RDMA_MTU, f"{zone}-vpc-roce", False, tuple(
            FabricSubnet(f"{prefix}-rdma-sub-{i}", _rdma_cidr(i), f"rdma-{i}", "RDMA") for i in range(nics))))
    return vpcs


def pool_interfaces(family: MachineFamily) -> list[str]:
    """The k8s networks of a pool's extra NICs, in the order they become eth1, eth2, ..."""
    if family.layout == PER_NIC_VPC:
        return [f"vpc{i}" for i in range(1, family.gpu_nics + 1)]
    if family.layout == ROCE_VPC:
        return [f"gvnic-{i}" for i in range(1, family.extra_gvnics + 1)] + \
               [f"rdma-{i}" for i in range(family.gpu_nics)]
    return []


def additional_node_networks(family: MachineFamily, vpcs: list[FabricVpc]) -> list[dict]:
    """node_pool.network_config.additional_node_network_configs, in interface order."""
    by_k8s = {s.k8s_network: (v.vpc, s.subnet) for v in vpcs for s in v.subnets}
    return [{"network": by_k8s[n][0], "subnetwork": by_k8s[n][1]} for n in pool_interfaces(family)]


def pod_annotations(family: MachineFamily) -> dict[str, str]:
    """What a pod on the pool carries so that GKE plugs the GPU NICs into it (t, r)."""
    names = pool_interfaces(family)
    if not names:
        return {}
    interfaces = [{"interfaceName": "eth0", "network": "default"}] + [
        {"interfaceName": f"eth{i}", "network": n} for i, n in enumerate(names, start=1)]
    return {"networking.gke.io/default-interface": "eth0",
            "networking.gke.io/interfaces": json.dumps(interfaces)}


def network_objects(vpcs: list[FabricVpc]) -> list[dict]:
    """GKENetworkParamSet + Network per extra subnet (networking.gke.io/v1, cluster-scoped)."""
    objs = []
    for v in vpcs:
        for s in v.subnets:
            objs.append({"apiVersion": "networking.gke.io/v1", "kind": "GKENetworkParamSet",
                         "metadata": {"name": s.k8s_network},
                         "spec": {"vpc": v.vpc, "vpcSubnet": s.subnet, "deviceMode": s.device_mode}})
            objs.append({"apiVersion": "networking.gke.io/v1", "kind": "Network",
                         "metadata": {"name": s.k8s_network},
                         "spec": {"type": "Device", "parametersRef": {
                             "group": "networking.gke.io", "kind": "GKENetworkParamSet",
                             "name": s.k8s_network}}})
    return objs
