"""What each GPU fabric needs in the cluster besides the node pools the cluster component built. Pure.

  AWS EFA              the EFA device plugin (vpc.amazonaws.com/efa); the EKS AL2023 accelerated AMIs carry
                       the host side (docs.aws.amazon.com/eks/latest/userguide/device-management-efa.html)
  GKE A3 High / Mega   nothing: serving runs NCCL's socket transport over the GPU NICs GKE multi-networking
                       plugs into the pod; the GPUDirect-TCPX(O) NCCL plugins are not installed, so NCCL
                       cannot pick them up (their installers would also run privileged on every GPU node)
  GKE A3 Ultra / A4    GPUDirect-RDMA NCCL plugin (gIB) installer (gke_nccl.py)
  InfiniBand / RoCE    NVIDIA Network Operator + NicClusterPolicy: the RDMA shared device plugin and the
  (existing clusters)  secondary-network CNIs (Multus, CNI plugins, IPoIB on InfiniBand)

Values keys: aws/eks-charts stable/aws-efa-k8s-device-plugin/values.yaml; Mellanox/network-operator
deployment/network-operator/values.yaml. NicClusterPolicy schema: schemas/crds/network-operator.
"""
from __future__ import annotations

import json
from collections.abc import Iterable

from ..cluster import facts as cluster_facts
from ..cluster.facts import ClusterFacts, GpuPool
from ..upstream.versions import NETWORK_OPERATOR_COMPONENTS_TAG, NETWORK_OPERATOR_REGISTRY
from .placement import pool_affinity

# The node software a fabric needs on this kind of cluster comes from ClusterFacts.fabric_software.
EFA = cluster_facts.EFA_DEVICE_PLUGIN
GKE_RDMA = cluster_facts.GKE_GIB_INSTALLER
NETWORK_OPERATOR = cluster_facts.NETWORK_OPERATOR

EFA_RELEASE = "aws-efa-k8s-device-plugin"
EFA_NAMESPACE = "kube-system"  # where the EKS docs install it
NETWORK_OPERATOR_RELEASE = "network-operator"
NETWORK_OPERATOR_NAMESPACE = "nvidia-network-operator"
# The operator reconciles only the policy of this name (Mellanox/network-operator example/crs).
NIC_CLUSTER_POLICY_NAME = "nic-cluster-policy"
MELLANOX_VENDOR_ID = "15b3"
RDMA_HCA_MAX = 63  # pods sharing one HCA (the upstream example's value)


def fabric_pools(facts: ClusterFacts) -> dict[str, list[GpuPool]]:
    """The GPU pools of each fabric add-on this cluster needs, in a stable order (fabrics that need no node
    software, such as GKE A3 High / Mega under NCCL sockets, have none)."""
    out: dict[str, list[GpuPool]] = {}
    for pool in sorted(facts.gpu_pools.values(), key=lambda p: p.name):
        if pool.fabric is None:
            continue
        if pool.fabric not in facts.fabric_software:
            raise ValueError(f"GPU pool {pool.name}: fabric {pool.fabric!r} is not one {facts.cloud} cluster "
                             f"{facts.name} supports (ClusterFacts.fabric_software: "
                             f"{', '.join(sorted(facts.fabric_software))})")
        addon = facts.fabric_software[pool.fabric]
        if addon is not None:
            out.setdefault(addon, []).append(pool)
    return out


def rdma_resource(pools: Iterable[GpuPool]) -> str | None:
    """The RDMA extended resource the Network Operator pools advertise (the cluster component names it)."""
    names = sorted({r for p in pools for r in p.fabric_resources if r.startswith("rdma/")})
    if len(names) > 1:
        raise ValueError(f"GPU pools advertise different RDMA resources {names}; the NicClusterPolicy has one")
    return names[0] if names else None


def efa_values(gpu_tolerations: list[dict]) -> dict:
    """The chart's own node affinity (supportedInstanceLabels) already limits it to EFA instance types."""
    return {"tolerations": gpu_tolerations}


def network_operator_values(system_selector: dict[str, str]) -> dict:
    return {
        # One Node Feature Discovery per cluster: the GPU Operator's (ours, or the cluster's own) already
        # labels the NICs (pci-15b3) the Network Operator schedules by; a second one fights over the labels.
        "nfd": {"enabled": False},
        "sriovNetworkOperator": {"enabled": False},
        "operator": {"nodeSelector": system_selector},
    }


def _component(image: str) -> dict:
    return {"image": image, "repository": NETWORK_OPERATOR_REGISTRY, "version": NETWORK_OPERATOR_COMPONENTS_TAG}


def rdma_device_plugin_config(resource: str, interfaces: Iterable[str] = (), infiniband: bool = False) -> dict:
    """k8s-rdma-shared-dev-plugin configList: advertise `resource` on the selected HCAs. The plugin's
    resource prefix is rdma/ (the stack config only allows such names while it installs the plugin).

    On an InfiniBand fabric only the IB ports: GPU nodes also carry ConnectX NICs in Ethernet mode
    (storage, in-band management), and NCCL_IB_HCA=mlx5 would stripe over those too (selectors are ANDed;
    linkTypes as in the Network Operator's own shared-IB example)."""
    name = resource.split("/", 1)[1]
    interfaces = list(interfaces)
    if interfaces:
        selectors: dict = {"ifNames": interfaces}
    else:
        selectors = {"vendors": [MELLANOX_VENDOR_ID]}
        if infiniband:
            selectors["linkTypes"] = ["infiniband"]
    return {"configList": [{"resourceName": name, "rdmaHcaMax": RDMA_HCA_MAX, "selectors": selectors}]}


def nic_cluster_policy(pools: list[GpuPool], resource: str | None, gpu_tolerations: list[dict],
                       interfaces: Iterable[str] = ()) -> dict:
    """The NicClusterPolicy (mellanox.com/v1alpha1, cluster-scoped) for the InfiniBand / RoCE pools."""
    if not resource:
        raise ValueError(f"GPU pools {', '.join(p.name for p in pools)} have an RDMA fabric but no rdma/ "
                         f"resource in fabric_resources for serving to request")
    infiniband = all(p.fabric == "infiniband" for p in pools)
    secondary = {"multus": _component("multus-cni"), "cniPlugins": _component("plugins")}
    if any(p.fabric == "infiniband" for p in pools):
        secondary["ipoib"] = _component("ipoib-cni")  # IPoIB child links for pods on an IB fabric
    plugin = {**_component("k8s-rdma-shared-dev-plugin"),
              "config": json.dumps(rdma_device_plugin_config(resource, interfaces, infiniband))}
    return {
        "apiVersion": "mellanox.com/v1alpha1",
        "kind": "NicClusterPolicy",
        "metadata": {"name": NIC_CLUSTER_POLICY_NAME},
        "spec": {
            **pool_affinity(pools),  # the device plugin and CNIs on the fabric's GPU nodes only
            "tolerations": gpu_tolerations,
            "rdmaSharedDevicePlugin": plugin,
            "secondaryNetwork": secondary,
        },
    }
