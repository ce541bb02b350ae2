"""Policy pack, sizing and cloud rules: the vLLM parallel layout against the instance-type facts,
control-plane exposure, IMDSv2, encryption, GKE private nodes / Workload Identity, GPU taints."""
from __future__ import annotations

import pytest

from tests.support.policies import DEPLOYMENT, RAYSERVICE, deployment, ray_service, vllm_container, violations

EKS = "aws:eks/cluster:Cluster"
GKE = "gcp:container/cluster:Cluster"
NODEGROUP = "aws:eks/nodeGroup:NodeGroup"
NODEPOOL = "gcp:container/nodePool:NodePool"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
NODECLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
KARPENTER_POOL = "kubernetes:karpenter.sh/v1:NodePool"
EFS = "aws:efs/fileSystem:FileSystem"
STORAGECLASS = "kubernetes:storage.k8s.io/v1:StorageClass"


def bare(messages: list[str]) -> list[str]:
    return [m.split("; fix:")[0] for m in messages]


def vllm_args(tp: int, pp: int = 1, util: str | None = "0.90") -> list[str]:
    args = ["m", "--tensor-parallel-size", str(tp), "--pipeline-parallel-size", str(pp)]
    return args + (["--gpu-memory-utilization", util] if util else [])


def test_tp_within_node_uses_the_catalog_for_the_pinned_instance_type():
    ok = deployment(vllm_container(args=vllm_args(8)), pool="gpu-p5-48xlarge")
    assert violations("tp-within-node", DEPLOYMENT, ok) == []
    too_wide = deployment(vllm_container(args=vllm_args(16)), pool="gpu-p5-48xlarge")
    assert bare(violations("tp-within-node", DEPLOYMENT, too_wide)) == [
        "container vllm: tensor-parallel-size 16 > 8 GPUs per node (p5.48xlarge has 8 GPUs per node)"]
    # The well-known instance-type label works too (`-tp` is vLLM's short form of the flag).
    by_label = deployment(vllm_container(args=["m", "-tp", "8"]), pool="x",
                          nodeSelector={"node.kubernetes.io/instance-type": "g6e.12xlarge"})
    assert bare(violations("tp-within-node", DEPLOYMENT, by_label)) == [
        "container vllm: tensor-parallel-size 8 > 4 GPUs per node (g6e.12xlarge has 4 GPUs per node)"]


def test_tp_within_node_falls_back_to_the_pods_gpus_on_an_existing_cluster():
    pod = deployment(vllm_container(args=vllm_args(8)), pool="gpu")  # no catalog instance type behind "gpu"
    assert bare(violations("tp-within-node", DEPLOYMENT, pod)) == [
        "container vllm: tensor-parallel-size 8 > 4 GPUs per node (its largest GPU pod (template) holds 4 GPUs)"]


def test_tp_within_node_reads_ray_serve_engine_kwargs():
    wide = ray_service(engine_kwargs="{tensor_parallel_size: 16, pipeline_parallel_size: 1}")
    assert bare(violations("tp-within-node", RAYSERVICE, wide)) == [
        "serveConfigV2 applications[0].args.llm_configs[0].engine_kwargs: tensor-parallel-size 16 > 8 GPUs per "
        "node (p5.48xlarge has 8 GPUs per node)"]
    assert violations("tp-within-node", RAYSERVICE, ray_service()) == []


def test_pp_needs_fast_fabric():
    assert violations("pp-needs-fast-fabric", RAYSERVICE, ray_service()) == []  # p5 + EFA devices requested
    # g6.48xlarge's 100 Gbps EFA is no fast fabric: PP over it is NCCL over sockets, which the planner plans
    # only when the SLA holds (docs/capacity.md); the pack does not refuse it
    slow = ray_service(pool="gpu-g6-48xlarge")
    assert violations("pp-needs-fast-fabric", RAYSERVICE, slow) == []
    no_efa = ray_service(worker={"name": "ray-worker", "image": "rayproject/ray-llm:2.58.0-py312-cu130",
                                 "resources": {"limits": {"nvidia.com/gpu": "8"}}})
    [m] = violations("pp-needs-fast-fabric", RAYSERVICE, no_efa)
    assert "but the GPU pods attach no fabric (no EFA/RDMA device, no extra network)" in m


def test_pp_inside_one_pod_needs_no_fabric():
    one_node = deployment(vllm_container(args=vllm_args(4, pp=2),
                                         resources={"limits": {"nvidia.com/gpu": "8"}}), pool="gpu-g6e-48xlarge")
    assert violations("pp-needs-fast-fabric", DEPLOYMENT, one_node) == []


def test_pp_on_gke_multi_networking_counts_as_attached():
    svc = ray_service(pool="gpu-a3-megagpu-8g", worker={
        "name": "ray-worker", "image": "rayproject/ray-llm:2.58.0-py312-cu130",
        "resources": {"limits": {"nvidia.com/gpu": "8"}}})
    assert len(violations("pp-needs-fast-fabric", RAYSERVICE, svc)) == 1
    template = svc["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]["template"]
    template["metadata"]["annotations"] = {"networking.gke.io/interfaces": "[...]"}
    assert violations("pp-needs-fast-fabric", RAYSERVICE, svc) == []


@pytest.mark.parametrize("util, expected", [
    ("0.90", None), ("0.80", None), ("0.95", None), (None, None),  # unset: vLLM's default 0.92
    ("0.97", "gpu-memory-utilization 0.97 is outside 0.80-0.95 (leaves no headroom for CUDA graphs and NCCL)"),
    ("0.70", "gpu-memory-utilization 0.7 is outside 0.80-0.95 (wastes KV-cache memory)"),
])
def test_gpu_memory_utilization_range(util, expected):
    got = violations("gpu-memory-utilization-range", DEPLOYMENT, deployment(vllm_container(args=vllm_args(4, util=util))))
    assert bare(got) == ([f"container vllm: {expected}"] if expected else [])


def test_gpu_memory_utilization_in_ray_engine_kwargs():
    svc = ray_service(engine_kwargs='{"tensor_parallel_size": 8, "gpu_memory_utilization": 0.99}')
    [m] = violations("gpu-memory-utilization-range", RAYSERVICE, svc)
    assert "engine_kwargs: gpu-memory-utilization 0.99 is outside 0.80-0.95" in m


@pytest.mark.parametrize("vpc, expected", [
    ({}, "public endpoint on and publicAccessCidrs unset (EKS defaults it to 0.0.0.0/0)"),
    ({"publicAccessCidrs": ["0.0.0.0/0"]}, "public endpoint open to 0.0.0.0/0"),
    ({"endpointPublicAccess": True, "publicAccessCidrs": ["10.0.0.0/8", "::/0"]}, "public endpoint open to ::/0"),
    ({"publicAccessCidrs": ["203.0.113.0/24"]}, None),
    ({"endpointPublicAccess": False, "endpointPrivateAccess": True}, None),
])
def test_eks_endpoint_not_open(vpc, expected):
    got = violations("cluster-endpoint-restricted", EKS, {"vpcConfig": {"subnetIds": ["subnet-1"], **vpc}})
    assert bare(got) == ([expected] if expected else [])


@pytest.mark.parametrize("cluster, expected", [
    ({}, "public endpoint with no masterAuthorizedNetworksConfig accepts any address"),
    ({"masterAuthorizedNetworksConfig": {"cidrBlocks": [{"cidrBlock": "0.0.0.0/0"}]}},
     "master authorized networks include 0.0.0.0/0"),
    ({"masterAuthorizedNetworksConfig": {"cidrBlocks": [{"cidrBlock": "203.0.113.0/24"}]}}, None),
    ({"masterAuthorizedNetworksConfig": {"cidrBlocks": [{"cidrBlock": "203.0.113.0/24"}],
                                         "gcpPublicCidrsAccessEnabled": True}},
     "masterAuthorizedNetworksConfig.gcpPublicCidrsAccessEnabled admits every Google Cloud public IP"),
    ({"privateClusterConfig": {"enablePrivateNodes": True, "enablePrivateEndpoint": True}}, None),
    ({"controlPlaneEndpointsConfig": {"ipEndpointsConfig": {"enabled": False}}}, None),
])
def test_gke_control_plane_not_open(cluster, expected):
    assert bare(violations("cluster-endpoint-restricted", GKE, cluster)) == ([expected] if expected else [])


def test_imdsv2_required():
    assert bare(violations("imdsv2-required", LAUNCH_TEMPLATE, {})) == [
        "metadataOptions.httpTokens unset (EC2 defaults it to optional: IMDSv1 on)"]
    assert bare(violations("imdsv2-required", LAUNCH_TEMPLATE, {"metadataOptions": {"httpTokens": "optional"}})) == [
        "metadataOptions.httpTokens is 'optional'"]
    assert violations("imdsv2-required", LAUNCH_TEMPLATE,
                      {"metadataOptions": {"httpTokens": "required", "httpPutResponseHopLimit": 1}}) == []
    assert violations("imdsv2-required", NODECLASS, {"spec": {"amiSelectorTerms": [{"alias": "al2023@latest"}]}}) == []
    assert bare(violations("imdsv2-required", NODECLASS, {"spec": {"metadataOptions": {"httpTokens": "optional"}}})) \
        == ["spec.metadataOptions.httpTokens is 'optional'"]


def test_storage_encrypted():
    assert bare(violations("storage-encrypted", EFS, {"performanceMode": "generalPurpose"})) == [
        "encrypted is not true"]
    assert violations("storage-encrypted", EFS, {"encrypted": True}) == []
    mappings = [{"deviceName": "/dev/xvda", "ebs": {"volumeSize": 200, "encrypted": "false"}}]
    assert bare(violations("storage-encrypted", LAUNCH_TEMPLATE, {"blockDeviceMappings": mappings,
                                                                  "metadataOptions": {"httpTokens": "required"}})) \
        == ["blockDeviceMappings[0] (/dev/xvda): ebs.encrypted is not true"]
    mappings[0]["ebs"]["encrypted"] = "true"
    assert violations("storage-encrypted", LAUNCH_TEMPLATE, {"blockDeviceMappings": mappings}) == []
    ebs_sc = {"provisioner": "ebs.csi.aws.com", "parameters": {"type": "gp3"}}
    assert bare(violations("storage-encrypted", STORAGECLASS, ebs_sc)) == [
        "EBS CSI StorageClass without parameters.encrypted 'true'"]
    assert violations("storage-encrypted", STORAGECLASS, {"provisioner": "filestore.csi.storage.gke.io"}) == []


def test_gke_private_nodes():
    assert bare(violations("gke-private-nodes", GKE, {"workloadIdentityConfig": {"workloadPool": "p.svc.id.goog"}})) \
        == ["privateClusterConfig.enablePrivateNodes is not true (nodes get public IPs)"]
    assert violations("gke-private-nodes", GKE, {"privateClusterConfig": {"enablePrivateNodes": True}}) == []
    assert bare(violations("gke-private-nodes", NODEPOOL, {"networkConfig": {"enablePrivateNodes": False}})) == [
        "networkConfig.enablePrivateNodes is false (this pool's nodes get public IPs)"]
    assert violations("gke-private-nodes", NODEPOOL, {"nodeConfig": {"machineType": "e2-standard-8"}}) == []


def test_gke_workload_identity():
    assert bare(violations("gke-workload-identity", GKE, {})) == [
        "workloadIdentityConfig.workloadPool is unset (Workload Identity off)"]
    assert violations("gke-workload-identity", GKE, {"workloadIdentityConfig": {"workloadPool": "p.svc.id.goog"}}) == []
    exposed = {"nodeConfig": {"workloadMetadataConfig": {"mode": "GCE_METADATA"}}}
    assert bare(violations("gke-workload-identity", NODEPOOL, exposed)) == [
        "nodeConfig.workloadMetadataConfig.mode is 'GCE_METADATA': pods can read the node's service account"]
    assert violations("gke-workload-identity", NODEPOOL,
                      {"nodeConfig": {"workloadMetadataConfig": {"mode": "GKE_METADATA"}}}) == []


GPU_TAINT_EKS = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}]


@pytest.mark.parametrize("resource_type, props, tainted", [
    (NODEGROUP, {"instanceTypes": ["p5.48xlarge"]}, False),
    (NODEGROUP, {"instanceTypes": ["p5.48xlarge"], "taints": GPU_TAINT_EKS}, True),
    (NODEGROUP, {"amiType": "AL2023_x86_64_NVIDIA", "taints": [{"key": "dedicated", "effect": "NO_SCHEDULE"}]},
     False),
    (NODEPOOL, {"nodeConfig": {"machineType": "a3-megagpu-8g"}}, False),
    (NODEPOOL, {"nodeConfig": {"machineType": "a3-megagpu-8g", "taints": GPU_TAINT_EKS}}, True),
    (NODEPOOL, {"nodeConfig": {"machineType": "n2-standard-8",
                               "guestAccelerators": [{"type": "nvidia-l4", "count": 1}]}}, False),
    (KARPENTER_POOL, {"spec": {"template": {"spec": {"requirements": [
        {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Gt", "values": ["0"]}]}}}}, False),
    (KARPENTER_POOL, {"spec": {"template": {"spec": {
        "requirements": [{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["p5e.48xlarge"]}],
        "taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]}}}}, True),
])
def test_gpu_nodes_tainted(resource_type, props, tainted):
    got = bare(violations("gpu-nodes-tainted", resource_type, props))
    assert got == ([] if tainted else ["GPU node pool without a nvidia.com/gpu NoSchedule/NoExecute taint"])


@pytest.mark.parametrize("resource_type, props", [
    (NODEGROUP, {"instanceTypes": ["m7i.2xlarge"], "amiType": "AL2023_x86_64_STANDARD"}),
    (NODEPOOL, {"nodeConfig": {"machineType": "e2-standard-8"}}),
])
def test_cpu_node_pools_need_no_gpu_taint(resource_type, props):
    assert violations("gpu-nodes-tainted", resource_type, props) == []
