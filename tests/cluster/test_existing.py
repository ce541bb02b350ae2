"""What an existing cluster must tell the stack before the stack relies on it (existing.blockStorageClass,
existing.networkPolicyEnforced), and the ClusterFacts it then hands to the add-ons."""
from __future__ import annotations

import logging

import pytest

from components.cluster.existing import NETWORK_POLICY_WARNING
from components.config import ConfigError, parse
from tests.support.plans import one, plan_config
from tests.support.consistency import unsecret

NODES = {"accelerator": "h100", "gpusPerNode": 8, "vcpu": 192, "ramGib": 2048}
RELEASE = "kubernetes:helm.sh/v3:Release"


def config(environment: str = "staging", addons: dict | None = None, **existing) -> dict:
    return {"cloud": "existing", "environment": environment, "namespace": "llm",
            "existing": {"gpuNodes": NODES, **existing}, "modelCache": {"storageClass": "nfs-client"},
            "addons": addons or {},
            "models": [{"name": "llama-8b", "model": "llama-3.1-8b", "maxModelLen": 8192}]}


def errors(raw: dict) -> list[str]:
    with pytest.raises(ConfigError) as e:
        parse(raw, {"hfToken"})
    return e.value.errors


def prometheus_claim(resources) -> dict:
    release = one([r for r in resources if r.type == RELEASE and r.inputs["name"] == "kube-prometheus-stack"], RELEASE)
    return unsecret(release.inputs)["values"]["prometheus"]["prometheusSpec"]["storageSpec"]["volumeClaimTemplate"]


def test_prometheus_on_an_existing_cluster_needs_a_block_class_named():
    assert errors(config()) == [
        "existing.blockStorageClass: missing: Prometheus' volume claim must name a ReadWriteOnce StorageClass the "
        "cluster has (kubectl get storageclass), or set addons.prometheus.storageClass"]
    parse(config(addons={"prometheus": {"storageClass": "ceph-rbd"}}), {"hfToken"})
    parse(config(addons={"prometheus": {"enabled": False, "url": "http://prometheus.obs.svc:9090"}}), {"hfToken"})
    [e] = errors(config(blockStorageClass="Fast_Block"))
    assert e.startswith("existing.blockStorageClass: String should match pattern")


def test_the_prometheus_claim_names_the_existing_clusters_class_or_the_override():
    resources, _ = plan_config(config(blockStorageClass="longhorn"))
    assert prometheus_claim(resources)["spec"]["storageClassName"] == "longhorn"
    resources, _ = plan_config(config(blockStorageClass="longhorn", addons={"prometheus": {"storageClass": "nvme-lvm"}}))
    assert prometheus_claim(resources)["spec"]["storageClassName"] == "nvme-lvm"


def test_production_refuses_a_cni_not_known_to_enforce_network_policy():
    assert errors(config("prod", blockStorageClass="longhorn")) == [
        "existing.networkPolicyEnforced: is false, and production serving isolates tenants with a NetworkPolicy: "
        "check that the cluster's CNI enforces NetworkPolicy (Calico, Cilium, ...), then set it to true"]
    cfg = parse(config("prod", blockStorageClass="longhorn", networkPolicyEnforced=True), {"hfToken"})
    assert cfg.existing.network_policy_enforced is True


def test_outside_production_an_unenforced_network_policy_is_a_loud_warning(caplog):
    with caplog.at_level(logging.WARNING):
        plan_config(config("dev", blockStorageClass="longhorn"))
    assert NETWORK_POLICY_WARNING in caplog.text
    assert "any pod in the cluster can reach them" in NETWORK_POLICY_WARNING
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        plan_config(config("dev", blockStorageClass="longhorn", networkPolicyEnforced=True))
    assert "networkPolicyEnforced" not in caplog.text


def test_existing_cluster_add_ons_follow_its_facts_not_a_cloud():
    """Self-managed GPU stack (the operator installs toolkit and device plugin), CoreDNS scraped, the
    control plane scraped too (it is not hidden as on EKS / GKE), the Network Operator for InfiniBand."""
    resources, _ = plan_config(config(blockStorageClass="longhorn", gpuNodes={**NODES, "fabric": "infiniband"}))
    values = {r.inputs["name"]: unsecret(r.inputs)["values"] for r in resources if r.type == RELEASE}
    gpu = values["gpu-operator"]
    assert (gpu["toolkit"]["enabled"], gpu["devicePlugin"]["enabled"]) == (True, True)
    assert "cdi" not in gpu and "hostPaths" not in gpu
    kps = values["kube-prometheus-stack"]
    assert kps["coreDns"] == {"enabled": True} and kps["kubeDns"] == {"enabled": False}
    assert "kubeEtcd" not in kps and "kubeScheduler" not in kps
    assert "network-operator" in values
    assert not [r for r in resources if r.type == "kubernetes:core/v1:ResourceQuota"]
