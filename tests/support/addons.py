"""Cluster facts per kind of cluster for the add-on tests, and the Helm release dependency monitor."""
from __future__ import annotations

from components.cluster.facts import (COREDNS, EKS_FABRIC_SOFTWARE, EKS_GPU_STACK, GKE_FABRIC_SOFTWARE, GKE_GPU_STACK,
                                      KUBE_DNS, SELF_MANAGED_FABRIC_SOFTWARE, SELF_MANAGED_GPU_STACK, ClusterFacts,
                                      GpuPool, Taint)
from components.offline.mocks import RecordingMonitor

SYSTEM = {"vllm-platform/node-role": "system"}

GPU_TAINT = Taint("nvidia.com/gpu", "present", "NoSchedule")


def pool(name: str, fabric: str | None = None, taints=(GPU_TAINT,), resources=None, selector=None) -> GpuPool:
    return GpuPool(name=name, instance_type=name, accelerator="h100", gpus_per_node=8,
                   node_selector=selector or {"vllm-platform/gpu-pool": name}, taints=tuple(taints),
                   fabric=fabric, fabric_resources=dict(resources or {}))


# What each cluster component says about its kind of cluster (components/cluster/aws, gcp/component.py, existing.py).
KIND_FACTS = {
    "aws": dict(gpu_stack=EKS_GPU_STACK, fabric_software=EKS_FABRIC_SOFTWARE, managed_control_plane=True,
                cluster_dns=COREDNS, block_storage_class="gp3-encrypted", network_policy_enforced=True),
    "gcp": dict(gpu_stack=GKE_GPU_STACK, fabric_software=GKE_FABRIC_SOFTWARE, managed_control_plane=True,
                cluster_dns=KUBE_DNS, block_storage_class="standard-rwo", network_policy_enforced=True),
    "existing": dict(gpu_stack=SELF_MANAGED_GPU_STACK, fabric_software=SELF_MANAGED_FABRIC_SOFTWARE,
                     managed_control_plane=False, cluster_dns=COREDNS, block_storage_class="fast-block"),
}


def facts(cloud: str, pools: list[GpuPool] | None = None, driver_preinstalled: bool = True, provider=None,
          system: dict | None = None, **overrides) -> ClusterFacts:
    pools = KINDS[cloud]() if pools is None else pools
    return ClusterFacts(cloud=cloud, name="test", provider=provider, gpu_pools={p.instance_type: p for p in pools},
                        system_node_selector=SYSTEM if system is None else system, rwx_storage_class=None,
                        cache_read_gbps=1.0, driver_preinstalled=driver_preinstalled,
                        **{**KIND_FACTS[cloud], **overrides})


def aws_pools():
    return [pool("gpu-p5-48xlarge", "efa", resources={"vpc.amazonaws.com/efa": 32}), pool("gpu-g6-xlarge")]


def gcp_pools():
    return [pool("gpu-a3-highgpu-8g", "gpudirect-tcpx"), pool("gpu-a3-megagpu-8g", "gpudirect-tcpxo"),
            pool("gpu-a3-ultragpu-8g", "rdma"), pool("gpu-g2-standard-8")]

IB_TAINT = Taint("dedicated", "llm", "NoExecute")  # an on-prem admin's own taint


def existing_pools(fabric="infiniband"):
    return [pool("gpu", fabric, taints=(GPU_TAINT, IB_TAINT), resources={"rdma/rdma_shared_device_a": 1},
                 selector={"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"})]

KINDS = {"aws": aws_pools, "gcp": gcp_pools, "existing": existing_pools}

RELEASE = "kubernetes:helm.sh/v3:Release"


class DependencyMonitor(RecordingMonitor):
    """Also records each resource's dependencies (resource names), which the plain recorder leaves out."""

    def __init__(self, mocks):
        super().__init__(mocks)
        self.deps: dict[str, set[str]] = {}

    def RegisterResource(self, request):
        resp = super().RegisterResource(request)
        self.deps[request.name] = {urn.split("::")[-1] for urn in request.dependencies}
        return resp

