"""Add-on values per cluster kind (issue 4): the pure functions the ClusterAddons component hands to Helm."""
from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from components.addons import fabrics, gke_nccl, gpu_operator, keda, kuberay, prometheus
from components.addons.placement import gpu_tolerations
from components.cluster.facts import (COREDNS, EKS_GPU_STACK, GKE_GPU_STACK, SELF_MANAGED_GPU_STACK, ClusterFacts,
                                      Taint)
from components.config.schema import Addons, GpuOperatorAddon, PrometheusAddon
from components.upstream import versions
from tests.support.addons import GPU_TAINT, IB_TAINT, KINDS, SYSTEM, aws_pools, existing_pools, facts, gcp_pools, pool

CRDS = Path(__file__).resolve().parents[2] / "schemas" / "crds"

GIB_DIGEST = "sha256:" + "ab" * 32


# --- cluster facts as each cluster component hands them over -------------------------------------------


def tolerates(tolerations: list[dict], taint: Taint) -> bool:
    """Kubernetes' rule: a toleration matches a taint by key (or empty key with Exists), value, effect."""
    for t in tolerations:
        if t.get("effect") not in (None, "", taint.effect):
            continue
        if t.get("operator", "Equal") == "Exists":
            if not t.get("key") or t["key"] == taint.key:
                return True
        elif t.get("key") == taint.key and t.get("value", "") == taint.value:
            return True
    return False


def all_taints(f: ClusterFacts) -> set[Taint]:
    return {t for p in f.gpu_pools.values() for t in p.taints}


# --- GPU Operator --------------------------------------------------------------------------------------

@pytest.mark.parametrize("cloud, driver, toolkit, device_plugin", [
    ("aws", False, False, True),  # EKS NVIDIA AMI: driver + toolkit on the image
    ("gcp", False, True, False),  # GKE-managed driver and device plugin
    ("existing", False, True, True),  # driver preinstalled (the default facts of an existing cluster)
])
def test_gpu_operator_owns_what_the_node_image_lacks(cloud, driver, toolkit, device_plugin):
    v = gpu_operator.gpu_operator_values(facts(cloud, KINDS[cloud]()), GpuOperatorAddon(), {"release": "x"}, [])
    assert v["driver"]["enabled"] is driver
    assert v["toolkit"]["enabled"] is toolkit
    assert v["devicePlugin"]["enabled"] is device_plugin


def test_gpu_operator_values_follow_the_facts_not_the_cloud_name():
    """A cluster that calls itself "existing" but is, say, another team's GKE gets GKE's GPU stack when its
    facts say so: the add-ons never look at ClusterFacts.cloud."""
    v = gpu_operator.gpu_operator_values(facts("existing", gpu_stack=GKE_GPU_STACK), GpuOperatorAddon(), {}, [])
    assert (v["toolkit"]["enabled"], v["devicePlugin"]["enabled"], v["cdi"]) == (True, False, {"enabled": True})
    p = prometheus.prometheus_values(PrometheusAddon(), facts("gcp", managed_control_plane=False,
                                                              cluster_dns=COREDNS))
    assert "kubeEtcd" not in p and p["coreDns"] == {"enabled": True} and p["kubeDns"] == {"enabled": False}


def test_gpu_operator_on_gke_uses_the_gke_driver_paths_cdi_and_a_priority_quota():
    v = gpu_operator.gpu_operator_values(facts("gcp", gcp_pools()), GpuOperatorAddon(), {}, [])
    assert v["hostPaths"] == {"driverInstallDir": "/home/kubernetes/bin/nvidia"}
    assert v["toolkit"]["installDir"] == "/home/kubernetes/bin/nvidia"
    assert {"name": "RUNTIME_CONFIG_SOURCE", "value": "file"} in v["toolkit"]["env"]
    assert v["cdi"] == {"enabled": True}
    assert GKE_GPU_STACK.critical_pods_need_quota and not EKS_GPU_STACK.critical_pods_need_quota
    assert not SELF_MANAGED_GPU_STACK.critical_pods_need_quota
    quota = gpu_operator.priority_quota()
    assert quota["metadata"]["namespace"] == gpu_operator.NAMESPACE
    assert quota["spec"]["scopeSelector"]["matchExpressions"][0]["values"] == [
        "system-node-critical", "system-cluster-critical"]


def test_existing_cluster_driver_follows_the_nodes_unless_overridden():
    bare = facts("existing", existing_pools(), driver_preinstalled=False)
    assert gpu_operator.gpu_operator_values(bare, GpuOperatorAddon(), {}, [])["driver"]["enabled"] is True
    preinstalled = facts("existing", existing_pools(), driver_preinstalled=True)
    forced = gpu_operator.gpu_operator_values(preinstalled, GpuOperatorAddon(install_driver=True), {}, [])
    # the operator builds the driver on an InfiniBand cluster: GPUDirect RDMA over the host's HCA drivers
    assert forced["driver"] == {"enabled": True, "rdma": {"enabled": True, "useHostMofed": True}}
    kept = gpu_operator.gpu_operator_values(bare, GpuOperatorAddon(install_driver=False), {}, [])
    assert kept["driver"] == {"enabled": False}


def test_dcgm_exporter_is_scraped_by_the_stacks_prometheus():
    f = facts("aws", aws_pools())
    v = gpu_operator.gpu_operator_values(f, GpuOperatorAddon(), prometheus.MONITOR_LABELS, [])
    sm = v["dcgmExporter"]["serviceMonitor"]
    assert v["dcgmExporter"]["enabled"] and sm["enabled"]
    selector = prometheus.prometheus_values(PrometheusAddon(), f)["prometheus"]["prometheusSpec"][
        "serviceMonitorSelector"]["matchLabels"]
    assert selector.items() <= sm["additionalLabels"].items()


# --- kube-prometheus-stack ------------------------------------------------------------------------------

def test_prometheus_retention_storage_and_size_cap_from_config():
    settings = PrometheusAddon(retention="30d", storage_gib=200, storage_class="io2-metrics")
    spec = prometheus.prometheus_values(settings, facts("aws"))["prometheus"]["prometheusSpec"]
    assert spec["retention"] == "30d"
    assert spec["retentionSize"] == "170GB"  # 85 % of the volume
    pvc = spec["storageSpec"]["volumeClaimTemplate"]["spec"]
    assert pvc == {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "200Gi"}},
                   "storageClassName": "io2-metrics"}


@pytest.mark.parametrize("cloud, storage_class", [("aws", "gp3-encrypted"), ("gcp", "standard-rwo"),
                                                  ("existing", "fast-block")])
def test_prometheus_claims_the_clusters_block_class_never_a_default(cloud, storage_class):
    """kube-prometheus-stack 92 reads prometheus.prometheusSpec.storageSpec.volumeClaimTemplate.spec (the
    operator's StorageSpec); EKS has no default class, so a claim without a class would stay Pending."""
    v = prometheus.prometheus_values(PrometheusAddon(), facts(cloud))
    claim = v["prometheus"]["prometheusSpec"]["storageSpec"]["volumeClaimTemplate"]["spec"]
    assert claim["storageClassName"] == storage_class
    # Alertmanager and Grafana keep no volume: nothing else for a class to bind
    assert v["alertmanager"]["alertmanagerSpec"].get("storage") is None
    assert not v["grafana"].get("persistence", {}).get("enabled")


def test_prometheus_selects_monitors_and_rules_of_every_namespace_by_the_release_label():
    v = prometheus.prometheus_values(PrometheusAddon(), facts("gcp"))
    spec = v["prometheus"]["prometheusSpec"]
    for kind in ("serviceMonitor", "podMonitor", "rule"):
        assert spec[f"{kind}Selector"] == {"matchLabels": {"release": "kube-prometheus-stack"}}
        assert spec[f"{kind}NamespaceSelector"] == {}
    # the chart labels its own monitors and rules release=<release name>: the release name is the label value
    assert v["fullnameOverride"] == prometheus.RELEASE == prometheus.MONITOR_LABELS["release"]
    assert prometheus.prometheus_url() == "http://kube-prometheus-stack-prometheus.monitoring.svc:9090"


def test_grafana_dashboard_sidecar_and_alertmanager():
    v = prometheus.prometheus_values(PrometheusAddon(), facts("existing"))
    assert v["grafana"]["sidecar"]["dashboards"] == {"enabled": True, "label": "grafana_dashboard",
                                                      "labelValue": "1", "searchNamespace": "ALL"}
    assert prometheus.DASHBOARD_LABEL == ("grafana_dashboard", "1")
    assert v["alertmanager"]["enabled"] is True


@pytest.mark.parametrize("cloud, hidden", [("aws", True), ("gcp", True), ("existing", False)])
def test_managed_control_planes_are_not_scraped(cloud, hidden):
    v = prometheus.prometheus_values(PrometheusAddon(), facts(cloud))
    for component in ("kubeEtcd", "kubeScheduler", "kubeControllerManager"):
        assert (v.get(component) == {"enabled": False}) is hidden


@pytest.mark.parametrize("cloud, dns, other", [("aws", "coreDns", "kubeDns"), ("gcp", "kubeDns", "coreDns"),
                                               ("existing", "coreDns", "kubeDns")])
def test_the_clusters_own_dns_is_scraped(cloud, dns, other):
    # GKE runs kube-dns (metrics on 10054/10055): the chart's coreDns monitor (port 9153) would never answer
    v = prometheus.prometheus_values(PrometheusAddon(), facts(cloud))
    assert v[dns] == {"enabled": True} and v[other] == {"enabled": False}


# --- KubeRay ---------------------------------------------------------------------------------------------

def test_kuberay_operator_monitor_carries_the_prometheus_labels():
    """Chart 1.7.0's templates/servicemonitor.yaml labels the monitor from metrics.serviceMonitor.additionalLabels."""
    v = kuberay.kuberay_values(SYSTEM, prometheus.MONITOR_LABELS)
    assert v["metrics"]["enabled"] and v["metrics"]["serviceMonitor"]["enabled"]
    assert v["metrics"]["serviceMonitor"]["additionalLabels"] == {"release": "kube-prometheus-stack"}
    assert "selector" not in v["metrics"]["serviceMonitor"]  # read by no template of chart 1.7.0


# --- placement: operators on system nodes, GPU DaemonSets tolerate the GPU taints -----------------------

@pytest.mark.parametrize("cloud", sorted(KINDS))
def test_operators_run_on_the_system_nodes(cloud):
    f = facts(cloud, KINDS[cloud]())
    g = gpu_operator.gpu_operator_values(f, GpuOperatorAddon(), {}, [])
    assert g["operator"]["nodeSelector"] == SYSTEM
    assert g["node-feature-discovery"]["master"]["nodeSelector"] == SYSTEM
    p = prometheus.prometheus_values(PrometheusAddon(), facts(cloud))
    assert p["prometheus"]["prometheusSpec"]["nodeSelector"] == SYSTEM
    assert p["alertmanager"]["alertmanagerSpec"]["nodeSelector"] == SYSTEM
    for component in ("grafana", "prometheusOperator", "kube-state-metrics"):
        assert p[component]["nodeSelector"] == SYSTEM
    assert kuberay.kuberay_values(SYSTEM, {})["nodeSelector"] == SYSTEM
    assert keda.keda_values(SYSTEM) == {"nodeSelector": SYSTEM}
    assert fabrics.network_operator_values(SYSTEM)["operator"]["nodeSelector"] == SYSTEM


@pytest.mark.parametrize("cloud", sorted(KINDS))
def test_gpu_daemonsets_tolerate_every_gpu_pool_taint(cloud):
    f = facts(cloud, KINDS[cloud]())
    tol = gpu_tolerations(f.gpu_pools.values())
    g = gpu_operator.gpu_operator_values(f, GpuOperatorAddon(), {}, tol)
    node_exporter = prometheus.prometheus_values(PrometheusAddon(), facts(cloud))["prometheus-node-exporter"]
    for taint in all_taints(f) | {Taint("nvidia.com/gpu", "true", "NoSchedule")}:
        assert tolerates(g["daemonsets"]["tolerations"], taint), taint
        assert tolerates(g["node-feature-discovery"]["worker"]["tolerations"], taint), taint
        assert tolerates(node_exporter["tolerations"], taint), taint
    assert not tolerates(tol, Taint("node.kubernetes.io/unschedulable", "", "NoSchedule"))


# --- fabrics --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("cloud, expected", [
    ("aws", {fabrics.EFA: ["gpu-p5-48xlarge"]}),
    # A3 High / Mega: NCCL sockets over the GPU NICs, no TCPX(O) plugin for NCCL to pick up; A3 Ultra: gIB
    ("gcp", {fabrics.GKE_RDMA: ["gpu-a3-ultragpu-8g"]}),
    ("existing", {fabrics.NETWORK_OPERATOR: ["gpu"]}),
])
def test_each_fabric_gets_its_addon(cloud, expected):
    got = fabrics.fabric_pools(facts(cloud, KINDS[cloud]()))
    assert {k: [p.name for p in v] for k, v in got.items()} == expected


def test_a_fabric_without_an_addon_is_refused_by_name():
    with pytest.raises(ValueError, match="gpu-x: fabric 'efa' is not one gcp cluster test supports"):
        fabrics.fabric_pools(facts("gcp", [pool("gpu-x", "efa")]))


def test_rdma_resource_comes_from_the_pools():
    assert fabrics.rdma_resource(existing_pools()) == "rdma/rdma_shared_device_a"
    assert fabrics.rdma_resource(aws_pools()) is None


def test_efa_device_plugin_tolerates_the_gpu_taint():
    v = fabrics.efa_values(gpu_tolerations(aws_pools()))
    assert tolerates(v["tolerations"], GPU_TAINT)


def _nic_policy_schema() -> dict:
    crd = yaml.safe_load((CRDS / "network-operator" / "mellanox.com_nicclusterpolicies.yaml").read_text())
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1alpha1"]
    return version["schema"]["openAPIV3Schema"]


@pytest.mark.parametrize("fabric, ipoib", [("infiniband", True), ("rdma", False)])
def test_nic_cluster_policy_is_valid_against_its_crd(fabric, ipoib):
    pools = existing_pools(fabric)
    policy = fabrics.nic_cluster_policy(pools, "rdma/rdma_shared_device_a", gpu_tolerations(pools))
    jsonschema.validate(policy, _nic_policy_schema())
    spec = policy["spec"]
    assert policy["metadata"] == {"name": "nic-cluster-policy"}
    config = json.loads(spec["rdmaSharedDevicePlugin"]["config"])
    # on InfiniBand only the IB ports: not the nodes' Ethernet-mode ConnectX NICs, which NCCL would also use
    selectors = {"vendors": ["15b3"], **({"linkTypes": ["infiniband"]} if fabric == "infiniband" else {})}
    assert config == {"configList": [{"resourceName": "rdma_shared_device_a", "rdmaHcaMax": 63,
                                      "selectors": selectors}]}
    assert ("ipoib" in spec["secondaryNetwork"]) is ipoib
    assert {"multus", "cniPlugins"} <= set(spec["secondaryNetwork"])
    for component in [spec["rdmaSharedDevicePlugin"], *spec["secondaryNetwork"].values()]:
        assert component["version"] == versions.NETWORK_OPERATOR_COMPONENTS_TAG
    # on the fabric's GPU nodes only, whatever they are tainted with
    terms = spec["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In",
                                            "values": ["NVIDIA-H100-80GB-HBM3"]}]}]
    assert tolerates(spec["tolerations"], IB_TAINT) and tolerates(spec["tolerations"], GPU_TAINT)


def test_nic_cluster_policy_selects_the_named_hcas_and_needs_a_resource():
    pools = existing_pools()
    policy = fabrics.nic_cluster_policy(pools, "rdma/ib_a", [], interfaces=["ibp24s0", "ibp41s0"])
    jsonschema.validate(policy, _nic_policy_schema())
    (entry,) = json.loads(policy["spec"]["rdmaSharedDevicePlugin"]["config"])["configList"]
    assert entry["resourceName"] == "ib_a" and entry["selectors"] == {"ifNames": ["ibp24s0", "ibp41s0"]}
    with pytest.raises(ValueError, match="gpu have an RDMA fabric but no rdma/ resource"):
        fabrics.nic_cluster_policy(pools, None, [])


def test_gib_installer_lands_on_its_pools_as_one_privileged_container_on_the_pinned_image():
    pools = gcp_pools()[2:3]
    ds = gke_nccl.rdma_installer(pools, gpu_tolerations(pools), GIB_DIGEST)
    assert ds["metadata"]["name"] == "nccl-rdma-installer" and ds["metadata"]["namespace"] == "kube-system"
    spec = ds["spec"]["template"]["spec"]
    assert ds["spec"]["selector"]["matchLabels"].items() <= ds["spec"]["template"]["metadata"]["labels"].items()
    terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [{"key": "vllm-platform/gpu-pool", "operator": "In",
                                            "values": ["gpu-a3-ultragpu-8g"]}]}]
    assert tolerates(spec["tolerations"], GPU_TAINT)
    containers = spec["initContainers"] + spec["containers"]
    privileged = [c for c in containers if (c.get("securityContext") or {}).get("privileged")]
    assert [(c["name"], c["image"]) for c in privileged] == [
        ("nccl-rdma-installer", "us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib:v1.1.0@" + GIB_DIGEST)]
    assert [c["image"] for c in spec["containers"]] == ["registry.k8s.io/pause:3.10"]
    assert spec["hostNetwork"] is True and "hostIPC" not in spec
    mounted = {m["name"] for c in containers for m in c.get("volumeMounts", [])}
    assert mounted <= {v["name"] for v in spec["volumes"]}


def test_gib_installer_puts_the_plugin_where_gke_mounts_gpu_libraries_and_quiets_martians():
    spec = gke_nccl.rdma_installer(gcp_pools()[2:3], [], GIB_DIGEST)["spec"]["template"]["spec"]
    (installer,) = spec["initContainers"]
    script = installer["args"][0]
    assert "/scripts/container_entry.sh install --install-nccl" in script
    assert "cp -r /var/lib/gib/lib64/. /usr/local/home/kubernetes/bin/nvidia/lib64" in script
    assert {"name": "library-dir-host", "hostPath": {"path": "/home/kubernetes/bin/nvidia/lib64",
                                                     "type": "DirectoryOrCreate"}} in spec["volumes"]
    assert {"name": "gib", "hostPath": {"path": "/home/kubernetes/bin/gib"}} in spec["volumes"]
    for i in range(8):  # every RoCE NIC; a missing one does not fail the install (it comes before set -e)
        assert f"echo 0 > /proc/sys/net/ipv4/conf/gpu{i}rdma0/log_martians || " in script
    assert script.index("gpu7rdma0") < script.index("set -ex")


def test_addons_default_to_all_on():
    a = Addons()
    assert all(getattr(a, k).enabled for k in ("gpu_operator", "kuberay", "keda", "prometheus", "fabric"))
