"""What a platform team reads off a stack: `pulumi stack output` after `pulumi up`.

Platform sets these attributes (and the component package returns them to other languages);
__main__.py exports them under the same names, camelCase. Facts about Grafana come from the
kube-prometheus-stack release this project installs (components/addons/prometheus.py).
"""
from __future__ import annotations

from typing import Any

import pulumi

from .addons import prometheus
from .config.schema import PrometheusAddon

# The Grafana sub-chart's Service: `<release>-grafana` (grafana chart templates/_helpers.tpl fullname, the
# release name containing no "grafana"), port 80 (grafana values.yaml service.port) onto the pod's 3000.
GRAFANA_SERVICE = f"{prometheus.RELEASE}-grafana"
GRAFANA_PORT = 80
GRAFANA_LOCAL_PORT = 3000


def grafana(prometheus_addon: PrometheusAddon) -> dict[str, str] | None:
    """Where Grafana answers and where its admin login is; None when this stack installs no Grafana
    (the stack's `addons.prometheus`)."""
    if not prometheus_addon.enabled:
        return None
    ns = prometheus.NAMESPACE
    return {
        "url": f"http://{GRAFANA_SERVICE}.{ns}.svc.cluster.local:{GRAFANA_PORT}",
        "portForward": f"kubectl -n {ns} port-forward svc/{GRAFANA_SERVICE} {GRAFANA_LOCAL_PORT}:{GRAFANA_PORT}"
                       f"  # then http://localhost:{GRAFANA_LOCAL_PORT}",
        "adminSecret": f"{ns}/{prometheus.GRAFANA_ADMIN_SECRET}",
        "adminLogin": f"kubectl -n {ns} get secret {prometheus.GRAFANA_ADMIN_SECRET} "
                      "-o jsonpath='{.data.admin-password}' | base64 -d",
    }


def _first_oidc_issuer(identities: Any) -> str | None:
    for identity in identities or []:
        oidcs = identity.get("oidcs") if isinstance(identity, dict) else getattr(identity, "oidcs", None)
        for oidc in oidcs or []:
            return oidc.get("issuer") if isinstance(oidc, dict) else getattr(oidc, "issuer", None)
    return None


def _workload_pool(config: Any) -> str | None:
    if config is None:
        return None
    return config.get("workload_pool") if isinstance(config, dict) else getattr(config, "workload_pool", None)


def cluster_outputs(cluster: pulumi.ComponentResource) -> dict[str, Any]:
    """Name, API endpoint and identity federation of the cluster component (AwsGpuCluster: the EKS OIDC
    issuer for IAM roles for service accounts; GcpGpuCluster: the GKE workload identity pool)."""
    facts = cluster.facts
    out: dict[str, Any] = {"cluster_name": facts.name, "api_endpoint": None, "oidc_issuer": None,
                           "workload_identity_pool": None}
    resource = getattr(cluster, "cluster", None)  # the eks.Cluster / container.Cluster it made
    if resource is None:
        return out
    out["cluster_name"] = resource.name
    if facts.cloud == "aws":
        out["api_endpoint"] = resource.endpoint
        out["oidc_issuer"] = resource.identities.apply(_first_oidc_issuer)
    elif facts.cloud == "gcp":
        out["api_endpoint"] = resource.endpoint.apply(lambda ip: f"https://{ip}" if ip else None)
        out["workload_identity_pool"] = resource.workload_identity_config.apply(_workload_pool)
    return out
