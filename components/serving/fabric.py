"""What a pod of a multi-node replica needs for its GPU fabric: the image, the device resources and
the NCCL / libfabric environment. A data table per fabric, no branching on instance types."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..cluster.facts import GpuPool
from ..config import ConfigError
from ..planner import Topology
from ..versions import RAY_LLM_EFA_IMAGE, RAY_LLM_IMAGE

EFA_RESOURCE = "vpc.amazonaws.com/efa"  # aws-efa-k8s-device-plugin


@dataclass(frozen=True)
class Fabric:
    image: str  # a Ray Serve LLM image whose NCCL can use this fabric
    env: dict[str, str] = field(default_factory=dict)
    source: str = ""


# NCCL_DEBUG=WARN: INFO (the seeds' setting) logs every ring and channel on every rank in production.
FABRICS: dict[str | None, Fabric] = {
    # libfabric's EFA provider through the aws-ofi-nccl plugin, which the AWS Ray Serve LLM image
    # carries (EFA installer 1.49). The interface for NCCL's bootstrap is detected: the image's
    # /etc/nccl.conf excludes the wrong ones, and EKS pods do not always call theirs eth0.
    "efa": Fabric(RAY_LLM_EFA_IMAGE, {"FI_PROVIDER": "efa", "FI_EFA_FORK_SAFE": "1", "NCCL_DEBUG": "WARN"},
                  "aws/deep-learning-containers docker/ray_llm/Dockerfile.cuda; aws-ofi-nccl docs"),
    # NCCL's built-in IB verbs transport; the RDMA device comes from the Network Operator's shared
    # device plugin. eth0 (the pod network) only carries NCCL's and Gloo's bootstrap.
    "infiniband": Fabric(RAY_LLM_IMAGE, {"NCCL_IB_DISABLE": "0", "NCCL_IB_HCA": "mlx5",
                                         "NCCL_SOCKET_IFNAME": "eth0", "GLOO_SOCKET_IFNAME": "eth0",
                                         "NCCL_DEBUG": "WARN"},
                         "NCCL environment variables (docs.nvidia.com/deeplearning/nccl)"),
    # RoCE v2: the same verbs transport; GID index 3 is RoCE v2 over IPv4 on ConnectX NICs.
    "rdma": Fabric(RAY_LLM_IMAGE, {"NCCL_IB_DISABLE": "0", "NCCL_IB_HCA": "mlx5", "NCCL_IB_GID_INDEX": "3",
                                   "NCCL_SOCKET_IFNAME": "eth0", "GLOO_SOCKET_IFNAME": "eth0",
                                   "NCCL_DEBUG": "WARN"},
                   "NCCL environment variables; NVIDIA RoCE configuration guide"),
}
# A3 High / A3 Mega (GPUDirect-TCPX / TCPXO): the zero-copy path needs a receive-datapath-manager
# sidecar in every GPU pod that runs privileged (TCPX) or with NET_ADMIN (TCPXO); this stack runs
# neither. A replica spans nodes only by pipeline parallelism, whose traffic is one step's activations
# per stage hand-off (batch x hidden x 2 bytes, a few MB), so NCCL's socket transport striped over the
# pod's GPU NICs (multi-networking: eth1..ethN, see GpuPool.pod_annotations) carries it well within a
# decode step. Tensor parallelism never leaves a node in our plans.
_SOCKETS = {"NCCL_SOCKET_IFNAME": "eth", "GLOO_SOCKET_IFNAME": "eth0", "NCCL_NSOCKS_PERTHREAD": "4",
            "NCCL_SOCKET_NTHREADS": "4", "NCCL_DEBUG": "WARN"}
FABRICS["gpudirect-tcpx"] = Fabric(RAY_LLM_IMAGE, _SOCKETS, "NCCL environment variables (socket transport)")
FABRICS["gpudirect-tcpxo"] = Fabric(RAY_LLM_IMAGE, _SOCKETS, "NCCL environment variables (socket transport)")


class FabricError(ConfigError):
    def __init__(self, message: str):
        super().__init__([message])


def fabric_for(t: Topology) -> Fabric:
    if t.fabric not in FABRICS:
        raise FabricError(f"models ({t.served_model_name}): no NCCL setup for fabric {t.fabric!r}; "
                          f"known: {', '.join(k for k in FABRICS if k)}")
    return FABRICS[t.fabric]


def ray_image(t: Topology, override: str | None = None) -> str:
    return override or fabric_for(t).image


def fabric_resources(t: Topology, pool: GpuPool) -> dict[str, int]:
    """Device resources one node's pod asks for: what the cluster advertises for the pool, and on EFA
    every interface of the instance type (NCCL stripes over all of them)."""
    out = dict(pool.fabric_resources)
    if t.fabric == "efa" and EFA_RESOURCE not in out and t.efa_interfaces:
        out[EFA_RESOURCE] = t.efa_interfaces
    return out


def fabric_env(t: Topology) -> list[dict]:
    return [{"name": k, "value": v} for k, v in sorted(fabric_for(t).env.items())]
