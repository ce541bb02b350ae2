"""What a serving pod needs for its GPU fabric at run time: the image, the device resources, the NCCL /
libfabric environment, the Linux capabilities and the host libraries. A data table per fabric family,
no branching on instance types.

Families: a pool's fabric as the cluster names it, made unambiguous by the cloud ("rdma" is GPUDirect
RDMA with Google's gIB NCCL plugin on GKE, RoCE on a cluster of your own):
  efa, gpudirect-tcpx, gpudirect-tcpxo, gke-rdma, infiniband, roce, none.

Capabilities. RDMA verbs (InfiniBand, RoCE, GKE's RDMA NICs, and EFA, whose libfabric provider
registers memory through the same kernel path) pin the buffers they register; the kernel refuses a
registration beyond RLIMIT_MEMLOCK unless the process holds CAP_IPC_LOCK (ib_umem_get). Kubernetes has
no ulimit field, and a container inherits the runtime's limit (containerd's systemd unit: often
LimitMEMLOCK=infinity, but that is the node image's choice, not ours), so the workers hold IPC_LOCK
(drop ALL, add IPC_LOCK) instead of relying on it; with it the memlock limit no longer applies, so no
`ulimit -l` is needed in the command. A capability is only effective for uid 0 (k8s.container_security).
TCPX / TCPXO pools carry pipeline-parallel traffic over NCCL's socket transport here: no registration,
no capability.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..catalog.instances import CLOUD_FAMILY, fabric_family  # noqa: F401  (CLOUD_FAMILY re-exported)
from ..cluster.facts import GpuPool
from ..config import ConfigError
from ..planner import Topology
from ..upstream.versions import RAY_LLM_EFA_IMAGE, RAY_LLM_IMAGE, VLLM_EFA_IMAGE, VLLM_IMAGE

EFA_RESOURCE = "vpc.amazonaws.com/efa"  # aws-efa-k8s-device-plugin
IPC_LOCK = "IPC_LOCK"


@dataclass(frozen=True)
class Fabric:
    image: str  # a Ray Serve LLM image whose NCCL can use this fabric
    env: dict[str, str] = field(default_factory=dict)
    capabilities: tuple[str, ...] = ()  # added to drop: [ALL] on the multi-node workers
    # (volume name, host path, mount path): host libraries the fabric's NCCL plugin lives in
    host_mounts: tuple[tuple[str, str, str], ...] = ()
    # on a single-node replica of this pool (no NCCL traffic leaves the node)
    single_node_env: dict[str, str] = field(default_factory=dict)
    source: str = ""


# NCCL_DEBUG=WARN: INFO (the seeds' setting) logs every ring and channel on every rank in production.
_WARN = {"NCCL_DEBUG": "WARN"}
# GKE mounts the node's /home/kubernetes/bin/nvidia into every GPU container at /usr/local/nvidia, and
# the GPUDirect installers (addons/gke_nccl.py) copy their NCCL net plugin into its lib64: a process
# whose NCCL finds it there would load it. A single-node replica (and the socket transport below) names
# NCCL's built-in socket transport, so the plugin (which needs the TCPX(O) receive-data-path daemon, or
# RDMA devices this pod did not ask for) is never picked up.
_GKE_SOCKET = {"NCCL_NET": "Socket"}
# A3 High / A3 Mega (GPUDirect-TCPX / TCPXO): the zero-copy path needs a receive-datapath-manager
# sidecar in every GPU pod that runs privileged (TCPX) or with NET_ADMIN (TCPXO); this stack runs
# neither. A replica spans nodes only by pipeline parallelism, whose traffic is one step's activations
# per stage hand-off (batch x hidden x 2 bytes, a few MB), so NCCL's socket transport striped over the
# pod's GPU NICs (multi-networking: eth1..ethN, see GpuPool.pod_annotations) carries it well within a
# decode step. Tensor parallelism never leaves a node in our plans.
_SOCKETS = {**_GKE_SOCKET, "NCCL_SOCKET_IFNAME": "eth", "GLOO_SOCKET_IFNAME": "eth0",
            "NCCL_NSOCKS_PERTHREAD": "4", "NCCL_SOCKET_NTHREADS": "4", **_WARN}
# A3 Ultra / A4 (GPUDirect RDMA over RoCE with Google's gIB NCCL plugin): the environment
# /usr/local/gib/scripts/set_nccl_env.sh sets (GoogleCloudPlatform/container-engine-accelerators
# gpudirect-rdma/ nccl-test.yaml sources it; gIB plugin v1.1.x, the installer addons/gke_nccl.py pins),
# written out because KubeRay starts the worker with its own `ray start` command. The plugin and its
# tuner configuration come from the host (/home/kubernetes/bin/gib, filled by the installer).
GIB_HOST = "/home/kubernetes/bin/gib"
GIB_MOUNT = "/usr/local/gib"
_GIB = {"NCCL_NET": "gIB", "LD_LIBRARY_PATH": f"{GIB_MOUNT}/lib64:/usr/local/nvidia/lib64",
        "NCCL_CROSS_NIC": "0", "NCCL_NET_GDR_LEVEL": "PIX", "NCCL_P2P_NET_CHUNKSIZE": "131072",
        "NCCL_P2P_PCI_CHUNKSIZE": "131072", "NCCL_P2P_NVL_CHUNKSIZE": "524288", "NCCL_NVLS_CHUNKSIZE": "524288",
        "NCCL_IB_GID_INDEX": "3", "NCCL_IB_ADAPTIVE_ROUTING": "1", "NCCL_IB_QPS_PER_CONNECTION": "4",
        "NCCL_IB_TC": "52", "NCCL_IB_FIFO_TC": "84", **_WARN}
# The tuner configuration differs per machine family (/usr/local/gib/configs/tuner_config_<family>.txtpb).
GIB_TUNER = {"h200": "a3u", "b200": "a4"}

FABRICS: dict[str, Fabric] = {
    "none": Fabric(RAY_LLM_IMAGE, dict(_WARN), source="no fabric: NCCL sockets over the pod network"),
    # libfabric's EFA provider through the aws-ofi-nccl plugin, which the AWS Ray Serve LLM image
    # carries (EFA installer 1.49). The interface for NCCL's bootstrap is detected: the image's
    # /etc/nccl.conf excludes the wrong ones, and EKS pods do not always call theirs eth0.
    # FI_EFA_USE_HUGE_PAGE=0: the EFA provider allocates its internal buffers from huge pages by default
    # (libfabric fi_efa(7)); the GPU nodes reserve none and the pods request no hugepages-2Mi, so that
    # allocation (and fork() in a pinned process) fails. AWS's EKS EFA examples either request hugepages-2Mi
    # or set it to 0; the buffers are host-side bounce buffers, GPU memory goes through GPUDirect RDMA.
    "efa": Fabric(RAY_LLM_EFA_IMAGE, {"FI_PROVIDER": "efa", "FI_EFA_FORK_SAFE": "1", "FI_EFA_USE_HUGE_PAGE": "0",
                                      **_WARN}, (IPC_LOCK,),
                  source="aws/deep-learning-containers docker/ray_llm/Dockerfile.cuda; aws-ofi-nccl docs; "
                         "ofiwg/libfabric man/fi_efa.7.md (FI_EFA_USE_HUGE_PAGE); aws-samples/"
                         "awsome-distributed-training EFA cheatsheet (FI_EFA_USE_HUGE_PAGE=0)"),
    # NCCL's built-in IB verbs transport; the RDMA device comes from the Network Operator's shared
    # device plugin. eth0 (the pod network) only carries NCCL's and Gloo's bootstrap.
    "infiniband": Fabric(RAY_LLM_IMAGE, {"NCCL_IB_DISABLE": "0", "NCCL_IB_HCA": "mlx5",
                                         "NCCL_SOCKET_IFNAME": "eth0", "GLOO_SOCKET_IFNAME": "eth0", **_WARN},
                         (IPC_LOCK,), source="NCCL environment variables (docs.nvidia.com/deeplearning/nccl)"),
    # RoCE v2: the same verbs transport; GID index 3 is RoCE v2 over IPv4 on ConnectX NICs.
    "roce": Fabric(RAY_LLM_IMAGE, {"NCCL_IB_DISABLE": "0", "NCCL_IB_HCA": "mlx5", "NCCL_IB_GID_INDEX": "3",
                                   "NCCL_SOCKET_IFNAME": "eth0", "GLOO_SOCKET_IFNAME": "eth0", **_WARN},
                   (IPC_LOCK,), source="NCCL environment variables; NVIDIA RoCE configuration guide"),
    "gpudirect-tcpx": Fabric(RAY_LLM_IMAGE, _SOCKETS, single_node_env=_GKE_SOCKET,
                             source="NCCL environment variables (socket transport)"),
    "gpudirect-tcpxo": Fabric(RAY_LLM_IMAGE, _SOCKETS, single_node_env=_GKE_SOCKET,
                              source="NCCL environment variables (socket transport)"),
    "gke-rdma": Fabric(RAY_LLM_IMAGE, _GIB, (IPC_LOCK,), (("gib", GIB_HOST, GIB_MOUNT),), single_node_env=_GKE_SOCKET,
                       source="container-engine-accelerators gpudirect-rdma (set_nccl_env.sh, nccl-test.yaml)"),
}
# (cloud, pool fabric) -> family: components/catalog/instances.py CLOUD_FAMILY (the planner keys on it too)
family = fabric_family


class FabricError(ConfigError):
    def __init__(self, message: str):
        super().__init__([message])


def fabric_for(t: Topology) -> Fabric:
    fam = family(t.cloud, t.fabric)
    if fam not in FABRICS:
        raise FabricError(f"models ({t.served_model_name}): no NCCL setup for fabric {t.fabric!r}; "
                          f"known: {', '.join(k for k in FABRICS if k != 'none')}")
    return FABRICS[fam]


def ray_image(t: Topology, override: str | None = None) -> str:
    return override or fabric_for(t).image


@dataclass(frozen=True)
class VllmImage:
    """The vLLM image a fabric family's cross-node traffic needs (LWS multi-node NCCL, P/D's NIXL)."""
    image: str
    carries: str  # what it carries for the fabric, for the plan's line
    env: dict[str, str] = field(default_factory=dict)  # what the image itself reads
    source: str = ""


# The upstream image (pinned by digest; every flag was checked against its vLLM) everywhere its NCCL and NIXL reach the
# fabric themselves: NCCL's IB verbs (InfiniBand, RoCE), the gIB plugin from the host (GKE RDMA, fabric.py host
# mounts), sockets (TCPX/TCPXO pools, no fabric), NIXL's UCX (finds verbs devices itself, TCP where there are none).
# EFA needs libfabric's efa provider and aws-ofi-nccl inside the image (vllm-project/vllm#55635, open): without them
# NCCL falls back to sockets with the EFA devices allocated and idle, and NIXL's LIBFABRIC plugin finds no provider.
# Every vLLM container names its command instead of relying on the image's entrypoint: vllm/vllm-openai's is
# `vllm serve` (exec form, vLLM is PID 1 and gets SIGTERM), but the EFA image's (aws/deep-learning-containers
# scripts/docker/vllm/dockerd_entrypoint.sh) runs `vllm serve "$@"` from bash without exec: bash stays PID 1,
# ignores SIGTERM, and every pod would run out its grace period to SIGKILL, never draining. With the command set,
# both images run vLLM as PID 1 (the DLC image's LD_LIBRARY_PATH comes from its ENV; its telemetry is opted out).
VLLM_COMMAND = ["vllm", "serve"]
UPSTREAM = VllmImage(VLLM_IMAGE, "vLLM's own NCCL and NIXL (UCX)", source="components/upstream/versions.py VLLM_IMAGE")
VLLM_IMAGES: dict[str, VllmImage] = {
    # OPT_OUT_TRACKING: the DLC entrypoint's usage report (scripts/docker/telemetry/bash_telemetry.sh.template skips
    # it when "true"); the EFA provider settings are the family's (FABRICS["efa"], disagg.TRANSPORT_ENV).
    "efa": VllmImage(VLLM_EFA_IMAGE, "the EFA installer's libfabric (efa provider) and aws-ofi-nccl, NIXL's "
                                     "LIBFABRIC plugin", {"OPT_OUT_TRACKING": "true"},
                     source="aws/deep-learning-containers docker/vllm/Dockerfile, scripts/docker/common/install_efa.sh, "
                            "test/efa (components/upstream/versions.py VLLM_EFA_IMAGE)"),
}
EFA_CAPABLE_IMAGES = frozenset({VLLM_IMAGES["efa"].image})


def crosses_fabric(t: Topology) -> bool:
    """Whether the model's engines talk over the GPU fabric: NCCL between a replica's nodes, or NIXL moving the
    KV cache between P/D instances over RDMA. A single-node aggregated replica keeps its traffic on NVLink."""
    return t.multi_node or bool(t.disaggregated and t.disaggregation.transport == "rdma")


def vllm_image_for(t: Topology) -> VllmImage:
    """The image the model's vLLM pods run: the fabric family's where its traffic crosses the fabric, else upstream."""
    if not crosses_fabric(t):
        return UPSTREAM
    return VLLM_IMAGES.get(family(t.cloud, t.fabric), UPSTREAM)


def vllm_image(t: Topology) -> str:
    image = vllm_image_for(t).image
    check_image(t, image)
    return image


def check_image(t: Topology, image: str) -> None:
    """Refuses an image that cannot carry the model's traffic: EFA (P/D over NIXL's LIBFABRIC backend, NCCL across a
    replica's nodes) without the EFA userspace. The LIBFABRIC backend is planned for EFA pools only
    (planner/disagg.py LIBFABRIC_FABRICS), so P/D with it on a pool without EFA is refused too."""
    d, model = t.disaggregation, t.served_model_name
    libfabric = bool(t.disaggregated and d.backend == "LIBFABRIC")
    efa = family(t.cloud, t.fabric) == "efa"
    if libfabric and not efa:
        raise FabricError(f"serving.disaggregation: {model} is planned P/D over NIXL's LIBFABRIC backend on "
                          f"{t.instance_type}, whose pool has no EFA (fabric {t.fabric!r}): LIBFABRIC is EFA's; pin "
                          f"models[].instanceTypes to an EFA type, or serve it aggregated (serving.disaggregation: off)")
    if efa and crosses_fabric(t) and image not in EFA_CAPABLE_IMAGES:
        what, key = (("P/D over NIXL's LIBFABRIC backend", "serving.disaggregation") if libfabric
                     else ("NCCL across its nodes", "serving.multiNode"))
        raise FabricError(f"{key}: {model} runs {what} on EFA "
                          f"({t.instance_type}), but {image} carries no EFA userspace (libfabric's efa provider, "
                          f"aws-ofi-nccl, NIXL's LIBFABRIC plugin): its traffic would fall back to TCP sockets with "
                          f"the EFA devices idle; run {VLLM_IMAGES['efa'].image} (components/serving/fabric.py "
                          f"VLLM_IMAGES), or serve it on one node aggregated")


def vllm_image_env(t: Topology) -> list[dict]:
    """What the model's image reads beside vLLM (the EFA image's telemetry opt-out)."""
    return _env_list(vllm_image_for(t).env)


def vllm_image_text(t: Topology) -> str:
    """The plan's line: which image the model's vLLM pods run, and why."""
    img = vllm_image_for(t)
    if img is UPSTREAM:
        why = ("its traffic crosses the fabric with " + img.carries if crosses_fabric(t)
               else "one node per replica: no NCCL or NIXL traffic on the fabric")
        return f"image: {img.image} ({why})"
    what = "P/D's KV cache over NIXL LIBFABRIC" if t.disaggregated else "NCCL across the replica's nodes"
    pin = "" if "@sha256:" in img.image else "; ⚠ by tag, no digest verified"
    return f"image: {img.image} ({what} on {t.fabric}: it carries {img.carries}{pin})"


def fabric_resources(t: Topology, pool: GpuPool) -> dict[str, int]:
    """Device resources one node's pod asks for: what the cluster advertises for the pool, and on EFA
    every interface of the instance type (NCCL stripes over all of them)."""
    out = dict(pool.fabric_resources)
    if t.fabric == "efa" and EFA_RESOURCE not in out and t.efa_interfaces:
        out[EFA_RESOURCE] = t.efa_interfaces
    return out


def _env_list(env: dict[str, str]) -> list[dict]:
    return [{"name": k, "value": v} for k, v in sorted(env.items())]


def fabric_env(t: Topology) -> list[dict]:
    """A multi-node worker's NCCL environment."""
    env = dict(fabric_for(t).env)
    if family(t.cloud, t.fabric) == "gke-rdma":
        env["NCCL_TUNER_CONFIG_PATH"] = f"{GIB_MOUNT}/configs/tuner_config_{GIB_TUNER.get(t.accelerator, 'a3u')}.txtpb"
    return _env_list(env)


def single_node_env(t: Topology) -> list[dict]:
    """A single-node replica's NCCL environment on this pool (NVLink inside the node; keep plugins out)."""
    return _env_list(fabric_for(t).single_node_env)


def capabilities(t: Topology) -> tuple[str, ...]:
    """Linux capabilities a pod of t adds to drop ALL: a multi-node worker's fabric needs; a single-node
    replica sends no NCCL traffic off the node and needs none."""
    return fabric_for(t).capabilities if t.multi_node else ()


def host_volumes(t: Topology) -> tuple[list[dict], list[dict]]:
    """(volumes, mounts) of the host libraries a multi-node worker's NCCL plugin needs (read-only)."""
    if not t.multi_node:
        return [], []
    mounts = fabric_for(t).host_mounts
    return ([{"name": n, "hostPath": {"path": host, "type": "Directory"}} for n, host, _ in mounts],
            [{"name": n, "mountPath": path, "readOnly": True} for n, _, path in mounts])
