"""One GPU node's pod of a replica that spans nodes: what a KubeRay worker and a LeaderWorkerSet's leader and
workers share. The whole node's GPUs and its fabric devices (fabric.py), the model cache (its gate and the
read-only mount), writable scratch under a read-only root, the NCCL environment, host libraries of the
fabric's NCCL plugin, and the GPU pool's placement. The shape (rayservice.py, lws.py) adds its container's
name, command, ports and probes. Pure (no Pulumi).
"""
from __future__ import annotations

from ..cache.component import CacheFacts, cache_env
from ..cluster.facts import GpuPool
from ..planner import Topology
from .fabric import capabilities, fabric_env, fabric_resources, host_volumes
from ..kube.k8s import container_security, pod_security, scratch_env, scratch_mounts, scratch_volumes
from ..kube.pods import SHM_MOUNT, gpu_placement, gpu_resources, shm_volume
from ..kube.probes import engine_ready_env


def node_env(t: Topology, cache: CacheFacts) -> list[dict]:
    """The cache read offline (no HF_TOKEN), the engine's start-up budget (VLLM_ENGINE_READY_TIMEOUT_S, the
    same as the cache's budget for this model), writable scratch, no usage reports, then the fabric's NCCL
    environment."""
    return [*cache_env(), engine_ready_env(cache.budget(t).total_s), *scratch_env(),
            {"name": "VLLM_NO_USAGE_STATS", "value": "1"}, *fabric_env(t)]


def node_pod(t: Topology, pool: GpuPool, cache: CacheFacts, image: str, container: dict, grace_s: int,
             env: list[dict] = (), mounts: list[dict] = (), volumes: list[dict] = (), init: list[dict] = ()) -> dict:
    """The pod spec. container: the shape's fields of its one container (name first, then e.g. args, ports,
    probes); env / mounts / volumes / init (init containers after the cache's): what the shape adds after the
    shared ones."""
    gpus = t.gpus_per_replica // t.nodes_per_replica
    caps = capabilities(t)  # IPC_LOCK on RDMA fabrics: that pod runs as uid 0 (fabric.py)
    host_vols, host_mounts = host_volumes(t)
    resources = gpu_resources(gpus, t.pod_cpu, t.pod_memory_gib, fabric_resources(t, pool))
    cpu_memory = {k: {r: v for r, v in resources[k].items() if r in ("cpu", "memory")} for k in ("requests", "limits")}
    name, rest = container["name"], {k: v for k, v in container.items() if k not in ("name", "ports")}
    main = {"name": name, "image": image, "env": [*node_env(t, cache), *env]}
    if "ports" in container:
        main["ports"] = container["ports"]
    main.update({"resources": resources,
                 "volumeMounts": [SHM_MOUNT, cache.mount, *scratch_mounts(), *host_mounts, *mounts],
                 "securityContext": container_security(caps), **rest})
    return {
        # no Kubernetes API calls from the engines
        "enableServiceLinks": False, "automountServiceAccountToken": False,
        "securityContext": pod_security(root=bool(caps) or cache.kind == "nvme"),
        "terminationGracePeriodSeconds": grace_s,
        "initContainers": [cache.init_container(t.model_repo, image, pod_resources=cpu_memory,
                                                expected_gib=t.weights_gib, warm=cache.warms(t)), *init],
        "containers": [main],
        "volumes": [shm_volume(t.shm_gib), cache.volume(t.instance_type), *scratch_volumes(), *host_vols, *volumes],
        **gpu_placement(pool),
    }
