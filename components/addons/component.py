"""ClusterAddons: the operators and node software the fleet needs, installed in an order that lets the first
`pulumi up` on an empty cluster succeed. Thin: values and manifests come from the pure modules beside it;
what it reads is ClusterFacts and the `addons` config block, never a cloud's config.

Ordering (explicit depends_on): namespace -> Helm release; kube-prometheus-stack (the ServiceMonitor CRD)
-> the releases that ship ServiceMonitors (GPU Operator, KubeRay); Network Operator (the NicClusterPolicy
CRD) -> NicClusterPolicy. Serving waits on AddonsFacts.ready. helm.v3.Release runs the charts' hook Jobs
(the GPU Operator upgrades its CRDs in one) and waits for the release's workloads, so a custom resource that
depends on it finds its CRD and a running controller.
"""
from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from ..cluster.charts import ChartMirror, chart_source
from ..cluster.facts import AddonsFacts, ClusterFacts
from ..config.load import ConfigError
from ..config.schema import Addons, FabricAddon
from ..passwords import GeneratedPassword
from ..upstream import crds
from ..upstream.versions import CHARTS
from . import aws_lb_controller, fabrics, gke_nccl, gpu_operator, keda, kuberay, lws, prometheus
from .placement import gpu_tolerations

# Enough for the GPU Operator's CRD-upgrade hook and Prometheus' volume to be provisioned (seconds).
RELEASE_TIMEOUT_S = 900
# Operands with host access (driver, toolkit, node-exporter, RDMA plugin) need the privileged Pod Security level.
PRIVILEGED_NAMESPACE = {"pod-security.kubernetes.io/enforce": "privileged"}
LABELS = {"app.kubernetes.io/part-of": "vllm-platform", "app.kubernetes.io/managed-by": "pulumi"}


def release_args(chart_key: str, namespace: str, values: dict, charts: ChartMirror | None = None) -> dict:
    """Arguments of the helm.v3.Release for one pinned chart (components/upstream/versions.py CHARTS), from its own repository
    or the stack's chart mirror (components/cluster/charts.py)."""
    chart = CHARTS[chart_key]
    return {
        "name": chart.chart,  # a fixed release name: Service names (Prometheus URL) derive from it
        **chart_source(chart, charts),
        "namespace": namespace,
        "create_namespace": False,  # made below, with its labels, before the release
        "values": values,
        "timeout": RELEASE_TIMEOUT_S,
        "atomic": True,  # a release that does not come up is rolled back, not left half-installed
        # its crds/ are applied by Pulumi before it (ClusterAddons._crds): Helm would install them once and never
        # upgrade them
        **({"skip_crds": True} if chart_key in crds.CHART_CRDS else {}),
    }


class ClusterAddons(pulumi.ComponentResource):
    """GPU Operator, KubeRay, LeaderWorkerSet, KEDA, kube-prometheus-stack and the fabric's node software, each
    switchable."""

    facts: AddonsFacts

    def __init__(self, name: str, cluster: ClusterFacts, settings: Addons,
                 opts: pulumi.ResourceOptions | None = None, charts: ChartMirror | None = None,
                 heartbeat_url: Any = None):
        """charts: where every chart comes from (the stack's `charts` block, components/wiring.py chart_mirror);
        None: each chart's own repository. heartbeat_url: the secret alertmanagerHeartbeatUrl (a dead man's switch
        that pages when Prometheus or Alertmanager stops; components/addons/prometheus.py heartbeat_config)."""
        super().__init__("vllm-platform:addons:ClusterAddons", name, None, opts)
        self._name = name
        self._cluster = cluster
        self._charts = charts
        system = cluster.system_node_selector
        ready: dict[str, list] = {"gpu": [], "monitoring": [], "kuberay": [], "keda": [], "network": [],
                                  "load-balancer": [], "lws": []}

        prom = settings.prometheus
        if prom.enabled:
            monitor_labels, prometheus_url = dict(prometheus.MONITOR_LABELS), prometheus.prometheus_url()
            prometheus_namespace: str | None = prometheus.NAMESPACE
            ns = self._namespace(prometheus.NAMESPACE, privileged=True)
            ready["monitoring"].append(self._chart(
                "kube-prometheus-stack", prometheus.NAMESPACE,
                prometheus.with_heartbeat(prometheus.prometheus_values(prom, cluster), heartbeat_url),
                [ns, self._grafana_admin(ns)]))
            if heartbeat_url is None:  # what `pulumi up` and `plan` print: nobody is told when Prometheus dies
                pulumi.log.warn(prometheus.NO_HEARTBEAT, resource=self)
        else:
            monitor_labels, prometheus_url = dict(prom.monitor_labels or {}), prom.url
            prometheus_namespace = prometheus.url_namespace(prom.url)
        monitors = ready["monitoring"]  # releases that ship ServiceMonitors wait for the CRD

        if settings.gpu_operator.enabled:
            ns = self._namespace(gpu_operator.NAMESPACE, privileged=True)
            before = [ns]
            if cluster.gpu_stack.critical_pods_need_quota:
                before.append(k8s.core.v1.ResourceQuota(
                    f"{name}-gpu-operator-quota", **gpu_operator.priority_quota(),
                    opts=self._opts([ns])))
            values = gpu_operator.gpu_operator_values(cluster, settings.gpu_operator, monitor_labels,
                                                      gpu_tolerations(cluster.gpu_pools.values()))
            ready["gpu"].append(self._chart("gpu-operator", gpu_operator.NAMESPACE, values, before + monitors))

        if settings.kuberay.enabled:
            ready["kuberay"].append(self._release(
                "kuberay-operator", kuberay.NAMESPACE, kuberay.kuberay_values(system, monitor_labels),
                after=monitors))
        if settings.keda.enabled:
            ready["keda"].append(self._release("keda", keda.NAMESPACE, keda.keda_values(system)))
        if settings.lws.enabled:  # issue 25: LeaderWorkerSets (components/serving/lws.py)
            ready["lws"].append(self._release("lws", lws.NAMESPACE, lws.lws_values(system)))

        lbc = cluster.load_balancer_controller
        if lbc is not None:  # EKS: after its Pod Identity association (the namespace exists: kube-system)
            ready["load-balancer"].append(self._chart(
                "aws-load-balancer-controller", lbc.namespace,
                aws_lb_controller.lb_controller_values(lbc, system), list(lbc.depends_on)))

        pools = fabrics.fabric_pools(cluster)
        rdma = fabrics.rdma_resource(pools.get(fabrics.NETWORK_OPERATOR, []))
        if settings.fabric.enabled:
            ready["network"] = self._fabrics(pools, rdma, settings.fabric, nfd=ready["gpu"])

        self.facts = AddonsFacts(prometheus_url=prometheus_url, monitor_labels=monitor_labels,
                                 dashboard_label=prometheus.DASHBOARD_LABEL, ready=ready, rdma_resource=rdma,
                                 prometheus_namespace=prometheus_namespace,
                                 kuberay_namespace=kuberay.NAMESPACE if settings.kuberay.enabled else None)
        self.register_outputs({"prometheusUrl": prometheus_url})

    # --- helpers -----------------------------------------------------------------------------------

    def _opts(self, depends_on: list | None = None) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(parent=self, provider=self._cluster.provider,
                                      depends_on=[*self._cluster.depends_on, *(depends_on or [])])

    def _grafana_admin(self, ns) -> k8s.core.v1.Secret:
        """Grafana's admin login, generated once and kept as a Pulumi secret (never the chart's default)."""
        password = GeneratedPassword(f"{self._name}-grafana-admin", length=32, opts=pulumi.ResourceOptions(parent=self))
        return k8s.core.v1.Secret(
            f"{self._name}-grafana-admin",
            metadata={"name": prometheus.GRAFANA_ADMIN_SECRET, "namespace": prometheus.NAMESPACE, "labels": LABELS},
            string_data={"admin-user": "admin", "admin-password": pulumi.Output.secret(password.result)},
            opts=self._opts([ns]))

    def _namespace(self, namespace: str, privileged: bool = False) -> k8s.core.v1.Namespace:
        labels = {**LABELS, **(PRIVILEGED_NAMESPACE if privileged else {})}
        return k8s.core.v1.Namespace(f"{self._name}-ns-{namespace}", metadata={"name": namespace, "labels": labels},
                                     opts=self._opts())

    def _crds(self, chart_key: str) -> list:
        """The chart's CRDs (components/upstream/crds.py CHART_CRDS), applied server-side before its release: created
        on a fresh cluster, taken over where Helm (an earlier `up`), another stack or the vendor made them, upgraded
        on a chart bump; left on destroy (retainOnDelete: deleting a CRD deletes every object of its kind in the
        cluster). None of an API group the cluster's platform owns (ClusterFacts.platform_crd_groups)."""
        if chart_key not in crds.CHART_CRDS:
            return []
        keep = pulumi.ResourceOptions.merge(self._opts(), pulumi.ResourceOptions(retain_on_delete=True))
        return [k8s.apiextensions.v1.CustomResourceDefinitionPatch(
            f"{self._name}-crd-{doc['metadata']['name']}", **crds.patch_args(doc, LABELS), opts=keep)
            for doc in crds.applied_crds(chart_key, self._cluster.platform_crd_groups)]

    def _chart(self, chart_key: str, namespace: str, values: dict, after: list) -> k8s.helm.v3.Release:
        return k8s.helm.v3.Release(f"{self._name}-{chart_key}",
                                   **release_args(chart_key, namespace, values, self._charts),
                                   opts=self._opts([*after, *self._crds(chart_key)]))

    def _release(self, chart_key: str, namespace: str, values: dict, after: list | None = None,
                 privileged: bool = False) -> k8s.helm.v3.Release:
        ns = self._namespace(namespace, privileged)
        return self._chart(chart_key, namespace, values, [ns, *(after or [])])

    def _fabrics(self, pools: dict, rdma: str | None, fabric: FabricAddon, nfd: list) -> list:
        """The fabric add-ons of the cluster's GPU pools; returns what a pod using the fabric waits for.
        `nfd`: the release that brings Node Feature Discovery (our GPU Operator), when it is ours."""
        ready: list = []
        tolerations = gpu_tolerations(p for ps in pools.values() for p in ps)
        if fabrics.EFA in pools:
            # kube-system exists on every cluster: no namespace of our own.
            ready.append(self._chart("aws-efa-k8s-device-plugin", fabrics.EFA_NAMESPACE,
                                     fabrics.efa_values(tolerations), []))
        if fabrics.GKE_RDMA in pools:
            if not fabric.gib_installer_digest:
                err = ConfigError([f"addons.fabric.gibInstallerDigest: missing; the GPUDirect-RDMA pools need the gIB NCCL "
                                   f"installer, which runs privileged on the GPU nodes and is pinned by digest: run "
                                   f"`gcloud artifacts docker images describe {gke_nccl.GKE_NCCL_RDMA_INSTALLER_IMAGE} "
                                   f"--format='value(image_summary.digest)'` and set the sha256:... it prints"])
                raise pulumi.RunError(str(err)) from err
            ds = gke_nccl.rdma_installer(pools[fabrics.GKE_RDMA], tolerations, fabric.gib_installer_digest)
            ready.append(k8s.apps.v1.DaemonSet(f"{self._name}-{ds['metadata']['name']}", metadata=ds["metadata"],
                                               spec=ds["spec"], opts=self._opts()))
        if fabrics.NETWORK_OPERATOR in pools:
            # The chart's NodeFeatureRule (nfd.deployNodeFeatureRules) needs NFD's CRD, which comes with the
            # GPU Operator's NFD: installed side by side on an empty cluster, the release would fail.
            operator = self._release("network-operator", fabrics.NETWORK_OPERATOR_NAMESPACE,
                                     fabrics.network_operator_values(self._cluster.system_node_selector),
                                     after=nfd, privileged=True)
            policy = fabrics.nic_cluster_policy(pools[fabrics.NETWORK_OPERATOR], rdma, tolerations, fabric.rdma_interfaces)
            ready.append(k8s.apiextensions.CustomResource(
                f"{self._name}-nic-cluster-policy", api_version=policy["apiVersion"], kind=policy["kind"],
                metadata=policy["metadata"], spec=policy["spec"], opts=self._opts([operator])))
        return ready
