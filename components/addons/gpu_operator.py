"""NVIDIA GPU Operator: which parts of the GPU stack it owns on each kind of cluster, and its values. Pure.

Values keys: NVIDIA/gpu-operator deployments/gpu-operator/values.yaml (driver.enabled, toolkit.enabled,
devicePlugin.enabled, dcgmExporter.serviceMonitor, daemonsets.tolerations, operator.nodeSelector,
node-feature-discovery.*, hostPaths.driverInstallDir, cdi.*, driver.rdma.*).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..cluster.facts import ClusterFacts
from ..config.schema import GpuOperatorAddon

RELEASE = "gpu-operator"
NAMESPACE = "gpu-operator"
DCGM_SCRAPE_INTERVAL = "15s"
# Fabrics whose NICs the GPUs should reach by GPUDirect RDMA (nvidia-peermem) when the operator builds the driver.
RDMA_FABRICS = ("infiniband", "rdma")


@dataclass(frozen=True)
class GpuStack:
    """What the node image already carries on one kind of cluster; the operator installs the rest."""
    toolkit: bool  # the operator installs the NVIDIA Container Toolkit
    device_plugin: bool  # the operator's device plugin advertises nvidia.com/gpu
    driver_install_dir: str | None = None  # where a pre-installed driver lives, when not the host root
    toolkit_install_dir: str | None = None
    cdi: bool = False  # inject devices through CDI (the runtime config path GKE needs)
    toolkit_env: tuple[tuple[str, str], ...] = ()
    priority_quota: bool = False  # system-node-critical pods outside kube-system need a ResourceQuota
    source: str = ""


GPU_STACKS: dict[str, GpuStack] = {
    # EKS AL2023 NVIDIA AMI: driver and container toolkit on the image, no device plugin.
    "aws": GpuStack(toolkit=False, device_plugin=True,
                    source="docs.aws.amazon.com/eks/latest/userguide/ml-eks-k8s-device-plugin.html; NVIDIA GPU "
                           "Operator docs, Amazon EKS (driver.enabled=false, toolkit.enabled=false)"),
    # GKE with the GKE-managed driver (gpu_driver_installation_config): GKE's device plugin is the one
    # advertiser of nvidia.com/gpu (two plugins registering it break kubelet's accounting); the operator
    # adds the toolkit (its operands run under the nvidia runtime class) and DCGM.
    "gcp": GpuStack(toolkit=True, device_plugin=False, driver_install_dir="/home/kubernetes/bin/nvidia",
                    toolkit_install_dir="/home/kubernetes/bin/nvidia", cdi=True,
                    toolkit_env=(("RUNTIME_CONFIG_SOURCE", "file"),), priority_quota=True,
                    source="docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/google-gke.html (install "
                           "dirs, CDI, RUNTIME_CONFIG_SOURCE=file on GKE 1.33+, the ResourceQuota); "
                           "docs.nvidia.com/aicr GKE GPU setup, gke-default profile (devicePlugin.enabled=false)"),
    # A cluster we attach to: the operator owns toolkit and device plugin; the driver per
    # ClusterFacts.driver_preinstalled or addons.gpuOperator.installDriver.
    "existing": GpuStack(toolkit=True, device_plugin=True, source="NVIDIA GPU Operator getting-started defaults"),
}


def installs_driver(facts: ClusterFacts, settings: GpuOperatorAddon) -> bool:
    return (not facts.driver_preinstalled) if settings.install_driver is None else settings.install_driver


def gpu_operator_values(facts: ClusterFacts, settings: GpuOperatorAddon, monitor_labels: dict[str, str],
                        gpu_tolerations: list[dict]) -> dict:
    stack = GPU_STACKS[facts.cloud]
    system = facts.system_node_selector
    driver: dict = {"enabled": installs_driver(facts, settings)}
    if driver["enabled"] and any(p.fabric in RDMA_FABRICS for p in facts.gpu_pools.values()):
        # GPUDirect RDMA over the HCAs' host (MOFED / inbox) drivers; the Network Operator deploys none.
        driver["rdma"] = {"enabled": True, "useHostMofed": True}
    toolkit: dict = {"enabled": stack.toolkit}
    if stack.toolkit_install_dir:
        toolkit["installDir"] = stack.toolkit_install_dir
    if stack.toolkit_env:
        toolkit["env"] = [{"name": k, "value": v} for k, v in stack.toolkit_env]
    values = {
        "operator": {"nodeSelector": system},
        "node-feature-discovery": {"master": {"nodeSelector": system}, "gc": {"nodeSelector": system},
                                   "worker": {"tolerations": gpu_tolerations}},
        "daemonsets": {"tolerations": gpu_tolerations},
        "driver": driver,
        "toolkit": toolkit,
        "devicePlugin": {"enabled": stack.device_plugin},
        "dcgmExporter": {"enabled": True, "serviceMonitor": {
            "enabled": True, "interval": DCGM_SCRAPE_INTERVAL, "honorLabels": True,
            "additionalLabels": dict(monitor_labels)}},
    }
    if stack.driver_install_dir:
        values["hostPaths"] = {"driverInstallDir": stack.driver_install_dir}
    if stack.cdi:
        # Chart v26.7.0 has cdi.enabled and cdi.nriPluginEnabled only: `cdi.default` was made a no-op and
        # removed upstream (NVIDIA/gpu-operator e63a99034), CDI being the runtime's default mode.
        values["cdi"] = {"enabled": True}
    return values


def priority_quota(namespace: str = NAMESPACE) -> dict:
    """GKE admits system-node-critical pods outside kube-system only under a quota naming those classes."""
    return {
        "metadata": {"name": "gpu-operator-quota", "namespace": namespace},
        "spec": {"hard": {"pods": "100"}, "scopeSelector": {"matchExpressions": [{
            "operator": "In", "scopeName": "PriorityClass",
            "values": ["system-node-critical", "system-cluster-critical"]}]}},
    }
