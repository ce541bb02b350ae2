"""kube-prometheus-stack: Prometheus (retention and storage from config), Alertmanager, Grafana with the
dashboard sidecar. Pure values; the release is made in component.py.

Values keys: prometheus-community/helm-charts charts/kube-prometheus-stack/values.yaml.
"""
from __future__ import annotations

import re

from ..cluster.facts import COREDNS, KUBE_DNS, ClusterFacts
from ..config.schema import PrometheusAddon

RELEASE = "kube-prometheus-stack"
NAMESPACE = "monitoring"
PORT = 9090
# The chart labels its own ServiceMonitors and PrometheusRules `release: <release name>`; selecting by the
# same label picks those up together with DCGM's, KubeRay's and serving's (AddonsFacts.monitor_labels).
MONITOR_LABELS = {"release": RELEASE}
# The Grafana sidecar loads every ConfigMap carrying this label, in any namespace (chart default label).
DASHBOARD_LABEL = ("grafana_dashboard", "1")
GRAFANA_ADMIN_SECRET = "grafana-admin"  # made by ClusterAddons from a generated password
# Size-based retention below the volume size: Prometheus crash-loops on a full disk, and the WAL and
# compaction need headroom above the blocks that retention counts.
RETENTION_SIZE_FRACTION = 0.85
EVERY_TAINT = {"operator": "Exists"}
# The chart's CRD upgrade Job (values crds.upgradeJob, chart 88.5.3 as vendored: "mitigates the limitation of helm not
# being able to upgrade CRDs"; a pre-install / pre-upgrade / pre-rollback hook that applies the chart's CRDs
# server-side with forceConflicts, taking them over from Helm's first install). Its busybox image defaults to
# `latest`: pinned here (⚠ Docker Hub's official busybox tag, no digest checked from here); kubectl's tag defaults to
# the cluster's own version (registry.k8s.io/kubectl:vX.Y.Z).
CRD_UPGRADE_BUSYBOX_TAG = "1.37.0"

# Scrape targets a managed control plane hides (etcd, scheduler, controller manager) or keeps unreachable
# (kube-proxy's metrics on localhost on EKS; no kube-proxy under GKE Dataplane V2): left on, each is a
# standing TargetDown alert. Sources: docs.aws.amazon.com/eks/latest/userguide/prometheus.html;
# cloud.google.com/kubernetes-engine/docs/how-to/configure-metrics (control-plane metrics are Google-managed).
HIDDEN_CONTROL_PLANE = ("kubeEtcd", "kubeScheduler", "kubeControllerManager", "kubeProxy")
# The chart's monitor for each cluster DNS server. coreDns selects the k8s-app=kube-dns pods on port 9153
# (CoreDNS: EKS, kubeadm clusters); GKE runs kube-dns, whose metrics are on 10054 (sidecar) and 10055
# (kubedns), so coreDns there is a target that never answers (a standing TargetDown alert).
# Source: kube-prometheus-stack values.yaml (coreDns / kubeDns: "use either this or ..."); GKE docs,
# "Using kube-dns" (kube-dns is GKE Standard's default DNS provider).
DNS_MONITORS = {COREDNS: "coreDns", KUBE_DNS: "kubeDns"}


def url_namespace(url: str | None) -> str | None:
    """The namespace of an in-cluster Service URL (http://<service>.<namespace>.svc[...]:port), else None."""
    m = re.match(r"^https?://[a-z0-9-]+\.([a-z0-9-]+)\.svc(\.|:|/|$)", url or "")
    return m.group(1) if m else None


def prometheus_url() -> str:
    """The in-cluster address of the stack's Prometheus (Service `<fullname>-prometheus`)."""
    return f"http://{RELEASE}-prometheus.{NAMESPACE}.svc:{PORT}"


def storage_class(settings: PrometheusAddon, cluster: ClusterFacts) -> str | None:
    """addons.prometheus.storageClass, else the cluster's block class; never left to a default class the
    cluster may not have (EKS has none: the claim would stay Pending, and Prometheus, KEDA's triggers and
    the SLA alerts with it, while Helm reports success). The config requires existing.blockStorageClass on
    an existing cluster, and each cloud's cluster component names its class; where one does not, the
    whole-plan test (tests/cluster/test_guarantees.py) fails rather than this plan."""
    return settings.storage_class or cluster.block_storage_class


def storage_spec(settings: PrometheusAddon, cluster: ClusterFacts) -> dict:
    """prometheus.prometheusSpec.storageSpec: one ReadWriteOnce claim per Prometheus replica, on a named class."""
    spec: dict = {"accessModes": ["ReadWriteOnce"],
                  "resources": {"requests": {"storage": f"{settings.storage_gib}Gi"}}}
    chosen = storage_class(settings, cluster)
    if chosen:
        spec["storageClassName"] = chosen
    return {"volumeClaimTemplate": {"spec": spec}}


def prometheus_values(settings: PrometheusAddon, cluster: ClusterFacts) -> dict:
    system_selector = cluster.system_node_selector
    selector = {"matchLabels": dict(MONITOR_LABELS)}
    every_namespace: dict = {}  # serving's monitors live in the serving namespace, DCGM's in gpu-operator
    values = {
        # Fixed names: the Prometheus Service name (and so KEDA's address) must not depend on the release name.
        "fullnameOverride": RELEASE,
        # a chart bump upgrades the Prometheus Operator's CRDs (Helm never upgrades crds/): the chart's own Job
        "crds": {"upgradeJob": {"enabled": True, "forceConflicts": True, "nodeSelector": system_selector,
                                "image": {"busybox": {"tag": CRD_UPGRADE_BUSYBOX_TAG}}}},
        "prometheus": {"prometheusSpec": {
            "retention": settings.retention,
            "retentionSize": f"{int(settings.storage_gib * RETENTION_SIZE_FRACTION)}GB",
            "storageSpec": storage_spec(settings, cluster),
            "serviceMonitorSelector": selector,
            "serviceMonitorNamespaceSelector": every_namespace,
            "podMonitorSelector": selector,
            "podMonitorNamespaceSelector": every_namespace,
            "ruleSelector": selector,
            "ruleNamespaceSelector": every_namespace,
            "nodeSelector": system_selector,
        }},
        "alertmanager": {"enabled": True, "alertmanagerSpec": {"nodeSelector": system_selector}},
        "grafana": {
            "enabled": True,
            "admin": {"existingSecret": GRAFANA_ADMIN_SECRET, "userKey": "admin-user", "passwordKey": "admin-password"},
            "nodeSelector": system_selector,
            "sidecar": {"dashboards": {"enabled": True, "label": DASHBOARD_LABEL[0], "labelValue": DASHBOARD_LABEL[1],
                                       "searchNamespace": "ALL"}},
        },
        "prometheusOperator": {"nodeSelector": system_selector,
                               "admissionWebhooks": {"patch": {"nodeSelector": system_selector}}},
        "kube-state-metrics": {"nodeSelector": system_selector},
        # node-exporter is the one DaemonSet here: it belongs on every node, the tainted GPU nodes included.
        "prometheus-node-exporter": {"tolerations": [EVERY_TAINT]},
    }
    if cluster.managed_control_plane:
        for component in HIDDEN_CONTROL_PLANE:
            values[component] = {"enabled": False}
    dns = DNS_MONITORS[cluster.cluster_dns]
    for component in DNS_MONITORS.values():
        values[component] = {"enabled": component == dns}
    return values


# A Prometheus cannot alert on its own death, nor an Alertmanager on its own: the chart's always-firing Watchdog alert
# (kube-prometheus-stack's general.rules, "meant to ensure that the entire alerting pipeline is functional") goes to a
# dead man's switch outside the cluster, which pages when the pings stop. Routed on its own, re-sent every minute:
# the switch's grace period (set there) is then the detection time. Chart values alertmanager.config (88.5.3
# values.yaml: route.receiver 'null', a Watchdog route to 'null'); the lists given here replace the chart's (Helm
# merges maps, not lists), its inhibit_rules and global stay.
HEARTBEAT_RECEIVER = "heartbeat"
HEARTBEAT_REPEAT = "1m"
NO_HEARTBEAT = ("addons.prometheus: no alertmanagerHeartbeatUrl: when Prometheus or Alertmanager stops (a drain, a "
                "full disk), every alert goes silent and KEDA holds its fallback replicas, and nothing tells you; set "
                "a dead man's switch URL (healthchecks.io, an Opsgenie / PagerDuty heartbeat) with `pulumi config set "
                "--secret alertmanagerHeartbeatUrl https://...` (docs/addons.md)")


def heartbeat_config(url) -> dict:
    """alertmanager.config's route and receivers: Watchdog to the webhook `url` every minute, the rest as the chart
    routes them (to 'null' until you add receivers)."""
    return {"route": {"receiver": "null", "routes": [
                {"receiver": HEARTBEAT_RECEIVER, "matchers": ['alertname = "Watchdog"'], "group_wait": "0s",
                 "group_interval": HEARTBEAT_REPEAT, "repeat_interval": HEARTBEAT_REPEAT}]},
            "receivers": [{"name": "null"},
                          {"name": HEARTBEAT_RECEIVER, "webhook_configs": [{"url": url, "send_resolved": False}]}]}


def with_heartbeat(values: dict, url) -> dict:
    """The release values with the Watchdog routed to `url` (a secret Output: the values become secret); unchanged
    without one."""
    if url is None:
        return values
    return {**values, "alertmanager": {**values["alertmanager"], "config": heartbeat_config(url)}}
