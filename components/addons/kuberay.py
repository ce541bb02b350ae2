"""KubeRay operator (RayService for multi-node replicas). Pure values.

Values keys: ray-project/kuberay helm-chart/kuberay-operator/values.yaml and templates/.
"""
from __future__ import annotations

RELEASE = "kuberay-operator"
NAMESPACE = "kuberay"


def kuberay_values(system_selector: dict[str, str], monitor_labels: dict[str, str]) -> dict:
    # The labels put on the chart's ServiceMonitor (what Prometheus selects it by) were read from
    # metrics.serviceMonitor.selector up to 1.6 and from metrics.serviceMonitor.additionalLabels since
    # ray-project/kuberay#4979 (in 1.7); the chart has no values schema, so setting both keeps the
    # monitor selected whichever template renders it.
    labels = dict(monitor_labels)
    return {
        "nodeSelector": system_selector,
        "metrics": {"enabled": True, "serviceMonitor": {"enabled": True, "additionalLabels": labels,
                                                        "selector": dict(labels)}},
    }
