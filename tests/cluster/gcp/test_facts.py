"""What GcpGpuCluster hands to add-ons and serving: the same ClusterFacts shape as the AWS and
existing-cluster paths, with GKE's values in it (pods land on the GPU nodes the pools create)."""
from __future__ import annotations

import functools
import importlib.util
import json

import pytest

from components.cluster.facts import POOL_LABEL
from tests.support.plans import by_type, manifests
from tests.support.gcp import POOL, cluster_plan, plan

AWS = {"cloud": "aws", "aws": {"region": "us-east-1", "endpointPublicAccessCidrs": ["203.0.113.0/28"]},
       "models": [{"name": "llama-8b", "model": "llama-3.1-8b", "instanceTypes": ["g6.2xlarge"], "maxModelLen": 8192}]}
EXISTING = {"cloud": "existing", "modelCache": {"storageClass": "nfs-client"},
            "existing": {"gpuNodes": {"accelerator": "l4", "gpusPerNode": 1, "vcpu": 16, "ramGib": 64},
                         "blockStorageClass": "fast-block"},
            "models": [{"name": "llama-8b", "model": "llama-3.1-8b", "maxModelLen": 8192}]}


@functools.lru_cache(maxsize=None)
def other(cloud: str) -> dict:
    if cloud == "aws":
        if importlib.util.find_spec("components.cluster.aws") is None:
            pytest.skip("the AWS cluster component is not in this checkout")
        return cluster_plan(AWS)[1]
    return cluster_plan(EXISTING, secrets={"kubeconfig": "apiVersion: v1\nkind: Config\n"})[1]


def node_pools(case: str) -> dict[str, dict]:
    return {p.inputs["nodeConfig"]["machineType"]: p.inputs for p in by_type(plan(case)[0], POOL)}


@pytest.mark.parametrize("cloud", ["aws", "existing"])
@pytest.mark.parametrize("case", ["a3-high", "g2"])
def test_facts_have_the_same_shape_as_on_other_clouds(case, cloud):
    gcp, theirs = plan(case)[1], other(cloud)
    assert gcp["shape"].keys() == theirs["shape"].keys()
    for field, kind in gcp["shape"].items():  # optional fields (block_storage_class) may be None on one side
        assert kind == theirs["shape"][field] or "NoneType" in (kind, theirs["shape"][field]), field
    assert gcp["shape"]["provider"] == "ProviderResource" and gcp["shape"]["kubeconfig"] == "Output"
    (ours,) = gcp["pool_shape"].values()
    (their,) = theirs["pool_shape"].values()
    assert ours.keys() == their.keys()
    for field, kind in ours.items():  # optional fields may be None on one side
        assert kind == their[field] or "NoneType" in (kind, their[field]), field


@pytest.mark.parametrize("case", ["a3-high", "a3-ultra", "g2"])
def test_a_pool_per_planned_machine_type_whose_pods_land_on_its_nodes(case):
    exports = plan(case)[1]
    (t,) = exports["topology"].values()
    pools = exports["pools"]
    assert list(pools) == [t["instance_type"]]  # serving looks pools up by the planned instance type
    pool = pools[t["instance_type"]]
    node = node_pools(case)[t["instance_type"]]["nodeConfig"]
    assert pool["node_selector"].items() <= node["labels"].items()
    assert pool["node_selector"] == {POOL_LABEL: pool["name"]}
    assert pool["gpus_per_node"] == node["guestAccelerators"][0]["count"] == t["gpus_per_node"]
    effects = {"NO_SCHEDULE": "NoSchedule"}
    assert [{"key": x["key"], "operator": "Equal", "value": x["value"], "effect": effects[x["effect"]]}
            for x in node["taints"]] == pool["tolerations"]
    assert pool["fabric"] == (t["fabric"] if t["multi_node"] else None)
    assert pool["fabric_resources"] == {}


def test_multi_node_pods_name_the_gpu_nics_the_pool_attaches():
    for case, machine, first in (("a3-high", "a3-highgpu-8g", "vpc1"), ("a3-ultra", "a3-ultragpu-8g", "gvnic-1")):
        pool = plan(case)[1]["pools"][machine]
        interfaces = json.loads(pool["pod_annotations"]["networking.gke.io/interfaces"])
        objs = manifests(plan(case)[0])
        extra = [i["network"] for i in interfaces[1:]]
        assert extra[0] == first
        attached = node_pools(case)[machine]["networkConfig"]["additionalNodeNetworkConfigs"]
        assert len(extra) == len(attached) == {"a3-high": 4, "a3-ultra": 9}[case]
        for n in extra:  # every annotated network exists as a Network object
            assert f"network_cluster_{n}.yaml" in objs
    assert next(iter(plan("g2")[1]["pools"].values()))["pod_annotations"] == {}


def test_cache_facts_match_the_filestore_and_local_ssd():
    facts = plan("a3-high")[1]["facts"]
    assert facts["rwx_storage_class"] == "filestore-model-cache"
    assert facts["cache_read_gbps"] == 1.26  # BASIC_SSD: 1,200 MiB/s
    assert facts["driver_preinstalled"] is True and facts["cloud"] == "gcp"
    pool = plan("a3-high")[1]["pools"]["a3-highgpu-8g"]
    assert pool["nvme_path"] == "/mnt/stateful_partition/kube-ephemeral-ssd/vllm-model-cache"
    assert plan("g2")[1]["pools"]["g2-standard-8"]["nvme_path"] is None


def test_system_selector_matches_the_system_pool():
    facts = plan("g2")[1]["facts"]
    (system,) = [p for p in by_type(plan("g2")[0], POOL) if p.inputs["name"] == "system"]
    assert facts["system_node_selector"].items() <= system.inputs["nodeConfig"]["labels"].items()


def test_serving_waits_for_the_system_pool_network_objects_and_the_cache_volume_not_the_gpu_pools():
    # system pool + 4 x (Network, GKENetworkParamSet) + StorageClass + PersistentVolume; no GPU pool
    assert len(plan("a3-high")[1]["depends_on"]) == 1 + 8 + 2
    assert len(plan("g2")[1]["depends_on"]) == 1 + 2
    names = [u.rsplit("::", 1)[1] for u in plan("a3-high")[1]["depends_on_urns"]]
    assert "vllm-cluster-system" in names and "vllm-cluster-gpu-a3-highgpu-8g" not in names


def test_gke_facts_name_the_block_storage_class_and_dataplane_v2_enforcement():
    facts = plan("g2")[1]["facts"]
    assert facts["block_storage_class"] == "standard-rwo"
    assert facts["network_policy_enforced"] is True
