"""The `addons` block and the existing-cluster GPU node description (issue 4): values, errors, GpuPools."""
from __future__ import annotations

import pytest

from components.cluster.existing import existing_pools
from components.cluster.facts import Taint
from components.config import ConfigError, parse
from components.planning import plan_stack

NODES = {"accelerator": "h100", "gpusPerNode": 8, "vcpu": 192, "ramGib": 2048}


def config(addons: dict | None = None, nodes: dict | None = None, cloud: str = "existing") -> dict:
    raw = {"cloud": cloud, "models": [{"name": "llama-8b", "model": "llama-3.1-8b", "maxModelLen": 8192}]}
    if cloud == "existing":
        raw["existing"] = {"gpuNodes": {**NODES, **(nodes or {})}, "blockStorageClass": "fast-block"}
        raw["modelCache"] = {"storageClass": "nfs-client"}
    else:
        raw["aws"] = {"region": "us-east-1"}
    if addons is not None:
        raw["addons"] = addons
    return raw


def errors(raw: dict) -> list[str]:
    with pytest.raises(ConfigError) as e:
        parse(raw, {"hfToken"})
    return e.value.errors


@pytest.mark.parametrize("addons, nodes, cloud, message", [
    ({"prometheus": {"enabled": False}}, None, "existing",
     "addons.prometheus.url: missing: with enabled: false, give the URL of the cluster's Prometheus"),
    ({"prometheus": {"url": "http://p.monitoring.svc:9090"}}, None, "existing",
     "addons.prometheus.url: only for an existing Prometheus (enabled: false); remove it"),
    ({"prometheus": {"monitorLabels": {"a": "b"}}}, None, "existing",
     "addons.prometheus.monitorLabels: only for an existing Prometheus (enabled: false); remove it"),
    ({"prometheus": {"retention": "two weeks"}}, None, "existing", "addons.prometheus.retention: String should match"),
    ({"gpuOperator": {"installDriver": True}}, None, "aws",
     "addons.gpuOperator.installDriver: only for cloud existing; on aws the node image carries the driver"),
    ({"fabric": {"rdmaInterfaces": ["ibp24s0"]}}, None, "existing",
     "addons.fabric.rdmaInterfaces: only for an existing cluster with fabric infiniband or roce"),
    ({}, {"fabric": "infiniband", "rdmaResource": "nvidia.com/hca"}, "existing",
     "existing.gpuNodes.rdmaResource: nvidia.com/hca cannot be advertised by the Network Operator"),
    ({"grafana": {"enabled": False}}, None, "existing",
     "addons.grafana: unknown key; allowed: gpuOperator, kuberay, lws, keda, prometheus, fabric"),
    ({}, {"taints": [{"key": "dedicated", "effect": "NoRun"}]}, "existing",
     "existing.gpuNodes.taints[0].effect: Input should be 'NoSchedule', 'PreferNoSchedule' or 'NoExecute'"),
])
def test_bad_addons_config_names_the_field(addons, nodes, cloud, message):
    assert any(e.startswith(message) for e in errors(config(addons, nodes, cloud))), errors(config(addons, nodes,
                                                                                                   cloud))


def test_an_existing_prometheus_and_a_clusters_own_network_operator():
    cfg = parse(config({"prometheus": {"enabled": False, "url": "http://prometheus-operated.obs.svc:9090",
                                       "monitorLabels": {"prometheus": "platform"}},
                        "fabric": {"enabled": False}},
                       {"fabric": "roce", "rdmaResource": "nvidia.com/roce_hca"}), {"hfToken"})
    assert cfg.addons.prometheus.url == "http://prometheus-operated.obs.svc:9090"
    assert cfg.addons.prometheus.monitor_labels == {"prometheus": "platform"}
    assert cfg.existing.gpu_nodes.rdma_resource == "nvidia.com/roce_hca"


def test_existing_gpu_nodes_are_picked_by_the_users_labels_and_carry_their_taints_and_rdma_resource():
    cfg = parse(config(None, {"fabric": "infiniband", "nodeSelector": {"gpu-class": "h100-ib"},
                              "taints": [{"key": "dedicated", "value": "llm", "effect": "NoExecute"}],
                              "rdmaResource": "rdma/ib_hca"}), {"hfToken"})
    (pool,) = existing_pools(cfg, plan_stack(cfg)).values()
    assert pool.node_selector == {"gpu-class": "h100-ib"}
    assert pool.taints == (Taint("dedicated", "llm", "NoExecute"),)
    assert pool.fabric == "infiniband" and pool.fabric_resources == {"rdma/ib_hca": 1}


def test_existing_gpu_node_defaults():
    cfg = parse(config(), {"hfToken"})
    (pool,) = existing_pools(cfg, plan_stack(cfg)).values()
    assert pool.node_selector == {"nvidia.com/gpu.present": "true"}  # GPU Feature Discovery's label
    assert pool.taints == (Taint("nvidia.com/gpu", "present", "NoSchedule"),)
    assert pool.fabric is None and pool.fabric_resources == {}
