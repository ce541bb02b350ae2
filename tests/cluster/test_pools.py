"""Pool conventions both clouds share (components/cluster/pools.py), read back from the node pools each cloud
plans: the system pool's label, the GPU taint, root disks, the NVMe cache path, and no fabric for a pool whose
replicas fit one node."""
from __future__ import annotations

import functools

from components.catalog import INSTANCE_TYPES
from components.cluster.pools import PoolSpec
from tests.support.plans import planned
from tests.support.consistency import unsecret
from tests.support.stacks import plan

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
NODE_POOL = "gcp:container/nodePool:NodePool"
SYSTEM = {"vllm-platform/node-role": "system"}
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}


@functools.lru_cache(maxsize=None)
def inputs(stack: str, type_token: str) -> list[dict]:
    return [unsecret(r.inputs) for r in planned(stack).resources if r.type == type_token]


def spec(itype: str, multi_node: bool) -> PoolSpec:
    return PoolSpec(name="gpu-x", instance=INSTANCE_TYPES[itype], min_nodes=1, desired_nodes=2, max_nodes=4,
                    multi_node=multi_node, models=("m",))


def test_a_pool_whose_replicas_fit_one_node_has_no_fabric():
    for itype, fabric in (("p5.48xlarge", "efa"), ("a3-megagpu-8g", "gpudirect-tcpxo"), ("a4-highgpu-8g", "rdma")):
        assert spec(itype, multi_node=True).gpu_pool().fabric == fabric
        assert spec(itype, multi_node=False).gpu_pool().fabric is None


def is_system(group: dict) -> bool:
    """The system label, beside each EKS zone group's topology.ebs.csi.aws.com/zone."""
    return SYSTEM.items() <= group["labels"].items()


def test_system_pools_carry_the_same_label_and_root_disk_on_both_clouds():
    aws_groups = [g for g in inputs("prod-llama70b-aws", NODE_GROUP) if is_system(g)]  # one per zone
    (gke,) = [p for p in inputs("prod-qwen72b-gcp", NODE_POOL) if p["name"] == "system"]
    assert gke["nodeConfig"]["labels"] == SYSTEM and gke["nodeConfig"]["diskSizeGb"] == 100
    sizes = sorted(m["ebs"]["volumeSize"] for t in inputs("prod-llama70b-aws", LAUNCH_TEMPLATE)
                   for m in t.get("blockDeviceMappings") or [])
    assert sizes == [100, 200], sizes  # the system and the GPU launch template
    assert len(aws_groups) == 3 and sum(g["scalingConfig"]["minSize"] for g in aws_groups) == 2  # aws.systemNodes


def test_gpu_pools_are_tainted_and_sized_alike_on_both_clouds():
    aws_gpu = [g for g in inputs("prod-llama70b-aws", NODE_GROUP) if not is_system(g)]
    gke_gpu = [p for p in inputs("prod-qwen72b-gcp", NODE_POOL) if p["name"] != "system"]
    assert aws_gpu and gke_gpu
    assert all(g["taints"] == [GPU_TAINT] for g in aws_gpu)
    assert all(p["nodeConfig"]["taints"] == [GPU_TAINT] and p["nodeConfig"]["diskSizeGb"] == 200 for p in gke_gpu)


def test_gpu_pools_are_created_empty_on_both_clouds_and_grow_to_the_plans_max():
    """A pool created at its planned size fails the run on a capacity shortage; both clouds create GPU pools with
    no node and leave the count to the autoscaler (prod-llama70b-aws: up to 3 p5 nodes, replicas.max 6 x TP 4, two
    replicas a node; prod-qwen72b-gcp: up to 3 a3-highgpu-8g nodes, replicas.max 3 x TP 8)."""
    (aws_gpu,) = [g for g in inputs("prod-llama70b-aws", NODE_GROUP) if not is_system(g)]
    (gke_gpu,) = [p for p in inputs("prod-qwen72b-gcp", NODE_POOL) if p["name"] != "system"]
    assert aws_gpu["scalingConfig"] == {"minSize": 0, "desiredSize": 0, "maxSize": 3}
    assert (gke_gpu["initialNodeCount"], gke_gpu["autoscaling"]["minNodeCount"],
            gke_gpu["autoscaling"]["maxNodeCount"]) == (0, 0, 3)


def test_the_nvme_model_cache_has_one_directory_name_on_both_clouds():
    paths = set()
    for name in ("prod-llama70b-aws+nvme", "prod-qwen72b-gcp+nvme"):
        p = plan(name)
        paths |= {v["hostPath"]["path"] for t in p.templates if t.requests().get("nvidia.com/gpu")
                  for v in t.spec.get("volumes") or [] if "hostPath" in v}
    roots = {path.split("/vllm-model-cache")[0] for path in paths if "/vllm-model-cache" in path}
    assert len(paths) == 2 and roots == {"/mnt/k8s-disks/0", "/mnt/stateful_partition/kube-ephemeral-ssd"}, paths
