"""ClusterAddons under Pulumi mocks (issue 4): what gets installed per cluster kind, in which order, and what
switching an add-on off removes and rewires."""
from __future__ import annotations

import functools

import pulumi_kubernetes as k8s
import pytest
import yaml
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from components.addons import ClusterAddons
from components.config.schema import Addons
from components.offline import runner
from components.upstream.versions import CHARTS
from tests.support.addons import KINDS, RELEASE, DependencyMonitor, facts
from tests.support.plans import by_type, one, plan_config

NAMESPACE = "kubernetes:core/v1:Namespace"
CUSTOM_KINDS = ("mellanox.com/", "monitoring.coreos.com/", "keda.sh/", "ray.io/")

GIB_DIGEST = "sha256:" + "cd" * 32  # a test fixture (a real stack sets the digest gcloud prints)


class Run:
    def __init__(self, monitor: DependencyMonitor, addons):
        self.resources, self.deps, self.addons = monitor.recorded, monitor.deps, addons

    def releases(self) -> dict[str, object]:
        return {r.inputs["name"]: r for r in by_type(self.resources, RELEASE)}

    def named(self, name: str):
        (found,) = [r for r in self.resources if r.name == name]
        return found


def run_addons(cloud: str, addons: dict | None = None, **fact_args) -> Run:
    """Build ClusterAddons for hand-made ClusterFacts of `cloud` under fresh mocks."""
    monitor = runner.fresh_mocks({}, [], "test", monitor_cls=DependencyMonitor)
    built = {}

    def program():
        provider = k8s.Provider("k8s")
        cluster = facts(cloud, KINDS[cloud](), provider=provider, **fact_args)
        settings = {"fabric": {"gibInstallerDigest": GIB_DIGEST}} if cloud == "gcp" else {}
        for key, value in (addons or {}).items():
            settings[key] = {**settings.get(key, {}), **value}
        built["facts"] = ClusterAddons("vllm-addons", cluster, Addons.model_validate(settings)).facts

    _sync_await(run_pulumi_func(program))
    return Run(monitor, built["facts"])


@functools.lru_cache(maxsize=None)
def default_run(cloud: str) -> Run:
    return run_addons(cloud)


BASE = {"gpu-operator", "kuberay-operator", "lws", "keda", "kube-prometheus-stack"}
EXPECTED = {"aws": BASE | {"aws-efa-k8s-device-plugin"}, "gcp": BASE, "existing": BASE | {"network-operator"}}


@pytest.mark.parametrize("cloud", sorted(KINDS))
def test_each_cluster_kind_installs_its_pinned_charts(cloud):
    releases = default_run(cloud).releases()
    assert set(releases) == EXPECTED[cloud]
    for name, r in releases.items():
        chart = CHARTS[name]
        if name == "lws":  # an OCI chart: named by its full reference, no --repo
            assert (r.inputs["chart"], r.inputs["version"]) == ("oci://registry.k8s.io/lws/charts/lws", "0.10.0")
            assert "repositoryOpts" not in r.inputs
            continue
        assert (r.inputs["chart"], r.inputs["repositoryOpts"]["repo"], r.inputs["version"]) == \
            (chart.chart, chart.repo, chart.version)
    assert releases["gpu-operator"].inputs["version"] == "v26.7.0"
    assert releases["kube-prometheus-stack"].inputs["repositoryOpts"]["repo"] == \
        "https://prometheus-community.github.io/helm-charts"


@pytest.mark.parametrize("cloud, driver, toolkit", [("aws", False, False), ("gcp", False, True),
                                                    ("existing", False, True)])
def test_the_release_carries_the_driver_and_toolkit_switches(cloud, driver, toolkit):
    values = default_run(cloud).releases()["gpu-operator"].inputs["values"]
    assert (values["driver"]["enabled"], values["toolkit"]["enabled"]) == (driver, toolkit)
    assert values["dcgmExporter"]["serviceMonitor"]["additionalLabels"] == {"release": "kube-prometheus-stack"}


@pytest.mark.parametrize("cloud", sorted(KINDS))
def test_every_release_waits_for_its_namespace_and_monitors_wait_for_prometheus(cloud):
    run = default_run(cloud)
    for name, r in run.releases().items():
        ns = r.inputs["namespace"]
        if ns != "kube-system":
            assert f"vllm-addons-ns-{ns}" in run.deps[r.name], name
            assert one(run.resources, NAMESPACE, f"vllm-addons-ns-{ns}").inputs["metadata"]["name"] == ns
    # the GPU Operator and KubeRay ship ServiceMonitors: the CRD comes with kube-prometheus-stack
    for name in ("gpu-operator", "kuberay-operator"):
        assert "vllm-addons-kube-prometheus-stack" in run.deps[f"vllm-addons-{name}"]
    # the Network Operator chart ships a NodeFeatureRule: its CRD comes with the GPU Operator's NFD
    if "network-operator" in run.releases():
        assert "vllm-addons-gpu-operator" in run.deps["vllm-addons-network-operator"]


@pytest.mark.parametrize("cloud", sorted(KINDS))
def test_every_custom_resource_depends_on_its_operator(cloud):
    run = default_run(cloud)
    operator = {"mellanox.com/": "vllm-addons-network-operator"}
    customs = [r for r in run.resources if r.custom and r.type.startswith("kubernetes:")
               and any(k in r.type for k in CUSTOM_KINDS)]
    assert len(customs) == (1 if cloud == "existing" else 0)
    for r in customs:
        (needed,) = [v for k, v in operator.items() if k in r.type]
        assert needed in run.deps[r.name], r.name


def test_gke_gets_only_the_gib_installer_and_the_operator_quota():
    """A3 High / Mega serve over NCCL sockets: no TCPX(O) plugin installer, no NRI device injector; the A3
    Ultra pool gets Google's gIB installer, on its pool only."""
    run = default_run("gcp")
    daemonsets = {r.inputs["metadata"]["name"]: r for r in by_type(run.resources, "kubernetes:apps/v1:DaemonSet")}
    assert set(daemonsets) == {"nccl-rdma-installer"}
    terms = daemonsets["nccl-rdma-installer"].inputs["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert [t["matchExpressions"][0]["values"] for t in terms] == [["gpu-a3-ultragpu-8g"]]
    quota = one(run.resources, "kubernetes:core/v1:ResourceQuota")
    assert quota.inputs["metadata"]["namespace"] == "gpu-operator"
    assert quota.name in run.deps["vllm-addons-gpu-operator"]
    assert sorted(_name(r) for r in run.addons.depends("network")) == sorted(
        f"vllm-addons-{n}" for n in daemonsets)


def test_aws_efa_plugin_goes_to_kube_system_without_a_namespace_of_ours():
    run = default_run("aws")
    efa = run.releases()["aws-efa-k8s-device-plugin"]
    assert efa.inputs["namespace"] == "kube-system"
    assert "kube-system" not in {r.inputs["metadata"]["name"] for r in by_type(run.resources, NAMESPACE)}
    assert not by_type(run.resources, "kubernetes:core/v1:ResourceQuota")


@pytest.mark.parametrize("cloud", sorted(KINDS))
def test_addons_facts_hand_serving_what_its_resources_wait_for(cloud):
    run = default_run(cloud)
    f = run.addons
    assert f.prometheus_url == "http://kube-prometheus-stack-prometheus.monitoring.svc:9090"
    assert f.monitor_labels == {"release": "kube-prometheus-stack"}
    assert f.dashboard_label == ("grafana_dashboard", "1")
    releases = run.releases()
    for capability, release in (("keda", "keda"), ("kuberay", "kuberay-operator"),
                                ("monitoring", "kube-prometheus-stack"), ("gpu", "gpu-operator")):
        (resource,) = f.depends(capability)
        assert _name(resource) == releases[release].name
    assert f.rdma_resource == ("rdma/rdma_shared_device_a" if cloud == "existing" else None)
    if cloud == "existing":
        assert [_name(r) for r in f.depends("network")] == ["vllm-addons-nic-cluster-policy"]


def _name(resource) -> str:
    return _sync_await(resource.urn.future()).split("::")[-1]


# --- switching add-ons off -------------------------------------------------------------------------------

EXISTING_PROM = {"enabled": False, "url": "http://prometheus-operated.observability.svc:9090",
                 "monitorLabels": {"prometheus": "platform"}}


def test_without_our_prometheus_the_stack_uses_the_clusters():
    run = run_addons("existing", {"prometheus": EXISTING_PROM})
    assert "kube-prometheus-stack" not in run.releases()
    assert "monitoring" not in {r.inputs["metadata"]["name"] for r in by_type(run.resources, NAMESPACE)}
    assert run.addons.prometheus_url == EXISTING_PROM["url"]
    assert run.addons.monitor_labels == {"prometheus": "platform"}
    assert run.addons.depends("monitoring") == []
    releases = run.releases()
    dcgm = releases["gpu-operator"].inputs["values"]["dcgmExporter"]["serviceMonitor"]
    assert dcgm["additionalLabels"] == {"prometheus": "platform"}
    assert releases["kuberay-operator"].inputs["values"]["metrics"]["serviceMonitor"]["additionalLabels"] == \
        {"prometheus": "platform"}
    for name in ("gpu-operator", "kuberay-operator"):
        assert not any("prometheus" in d for d in run.deps[f"vllm-addons-{name}"])


@pytest.mark.parametrize("addon, release, namespace", [
    ("gpuOperator", "gpu-operator", "gpu-operator"), ("kuberay", "kuberay-operator", "kuberay"),
    ("keda", "keda", "keda"), ("fabric", "network-operator", "nvidia-network-operator"), ("lws", "lws", "lws-system")])
def test_switching_an_addon_off_removes_it_and_leaves_the_rest(addon, release, namespace):
    run = run_addons("existing", {addon: {"enabled": False}})
    releases = run.releases()
    assert release not in releases
    assert set(releases) == EXPECTED["existing"] - {release}
    assert namespace not in {r.inputs["metadata"]["name"] for r in by_type(run.resources, NAMESPACE)}
    capability = {"gpuOperator": "gpu", "kuberay": "kuberay", "keda": "keda", "fabric": "network", "lws": "lws"}[addon]
    assert run.addons.depends(capability) == []
    if addon == "fabric":
        # the cluster's own Network Operator advertises the resource the GPU nodes are described with
        assert not [r for r in run.resources if "NicClusterPolicy" in r.type]
        assert run.addons.rdma_resource == "rdma/rdma_shared_device_a"


def test_gpu_operator_off_on_gke_drops_its_quota_too():
    run = run_addons("gcp", {"gpuOperator": {"enabled": False}})
    assert not by_type(run.resources, "kubernetes:core/v1:ResourceQuota")


# --- the whole program: KEDA's Prometheus address ----------------------------------------------------------

DEV = yaml.safe_load(runner.stack_file("dev").read_text())["config"]


@pytest.mark.parametrize("prom, url", [
    (None, "http://kube-prometheus-stack-prometheus.monitoring.svc:9090"),
    (EXISTING_PROM, EXISTING_PROM["url"]),
])
def test_keda_scales_on_the_prometheus_the_stack_uses(prom, url):
    values = {k.split(":", 1)[1]: v for k, v in DEV.items()}
    if prom:
        values["addons"] = {"prometheus": prom}
    resources, _ = plan_config(values)
    (scaler,) = by_type(resources, "kubernetes:keda.sh/v1alpha1:ScaledObject")
    triggers = scaler.inputs["spec"]["triggers"]
    assert triggers and {t["metadata"]["serverAddress"] for t in triggers} == {url}
    releases = {r.inputs["name"] for r in by_type(resources, RELEASE)}
    assert ("kube-prometheus-stack" in releases) is (prom is None)
