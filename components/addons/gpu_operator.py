"""NVIDIA GPU Operator: the parts of the GPU stack the cluster kind does not provide (ClusterFacts.gpu_stack),
and its values. Pure.

Values keys: NVIDIA/gpu-operator deployments/gpu-operator/values.yaml (driver.enabled, toolkit.enabled,
devicePlugin.enabled, dcgmExporter.serviceMonitor, daemonsets.tolerations, operator.nodeSelector,
node-feature-discovery.*, hostPaths.driverInstallDir, cdi.*, driver.rdma.*).
"""
from __future__ import annotations

from ..cluster.facts import ClusterFacts
from ..config.schema import GpuOperatorAddon

RELEASE = "gpu-operator"
NAMESPACE = "gpu-operator"
DCGM_SCRAPE_INTERVAL = "15s"
# Fabrics whose NICs the GPUs should reach by GPUDirect RDMA (nvidia-peermem) when the operator builds the driver.
RDMA_FABRICS = ("infiniband", "rdma")


def installs_driver(facts: ClusterFacts, settings: GpuOperatorAddon) -> bool:
    return (not facts.driver_preinstalled) if settings.install_driver is None else settings.install_driver


def gpu_operator_values(facts: ClusterFacts, settings: GpuOperatorAddon, monitor_labels: dict[str, str],
                        gpu_tolerations: list[dict]) -> dict:
    stack = facts.gpu_stack
    system = facts.system_node_selector
    driver: dict = {"enabled": installs_driver(facts, settings)}
    if driver["enabled"] and any(p.fabric in RDMA_FABRICS for p in facts.gpu_pools.values()):
        # GPUDirect RDMA over the HCAs' host (MOFED / inbox) drivers; the Network Operator deploys none.
        driver["rdma"] = {"enabled": True, "useHostMofed": True}
    toolkit: dict = {"enabled": not stack.container_toolkit}
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
        "devicePlugin": {"enabled": not stack.managed_device_plugin},
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
