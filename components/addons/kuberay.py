"""KubeRay operator (RayService for multi-node replicas). Pure values.

Values keys: ray-project/kuberay helm-chart/kuberay-operator/values.yaml and templates/.
"""
from __future__ import annotations

RELEASE = "kuberay-operator"
NAMESPACE = "kuberay"


def kuberay_values(system_selector: dict[str, str], monitor_labels: dict[str, str]) -> dict:
    return {
        "nodeSelector": system_selector,
        # The chart's `selector` is the label set put on its ServiceMonitor: what Prometheus selects by.
        "metrics": {"enabled": True, "serviceMonitor": {"enabled": True, "selector": dict(monitor_labels)}},
    }
