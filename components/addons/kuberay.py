"""KubeRay operator (RayService for multi-node replicas). Pure values.

Values keys: ray-project/kuberay helm-chart/kuberay-operator/values.yaml and templates/.
"""
from __future__ import annotations

RELEASE = "kuberay-operator"
NAMESPACE = "kuberay"


def kuberay_values(system_selector: dict[str, str], monitor_labels: dict[str, str]) -> dict:
    # Chart 1.7.0 (the pinned one) puts metrics.serviceMonitor.additionalLabels on its ServiceMonitor
    # (templates/servicemonitor.yaml); the older `selector` key is read by no template there, and Helm
    # ignores unknown keys, so it is not set.
    labels = dict(monitor_labels)
    return {
        "nodeSelector": system_selector,
        "metrics": {"enabled": True, "serviceMonitor": {"enabled": True, "additionalLabels": labels}},
    }
