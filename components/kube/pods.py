"""GPU placement and resources, the HF token reference; labels and security contexts come from the
k8s layer (k8s.py) and are re-exported here for the modules that import them from pods."""
from __future__ import annotations

from ..cluster.facts import CAPACITY_ANNOTATION, GPU_RESOURCE, RESERVED_CAPACITY, GpuPool
from .k8s import (CONTAINER_SECURITY, MODEL_LABEL, POD_SECURITY, ROLE_LABEL, model_labels,  # noqa: F401
                  selector)

HF_SECRET_NAME = "hf-token"  # made by Platform from the hfToken Pulumi secret
HF_SECRET_KEY = "HF_TOKEN"


def hf_token_env() -> dict:
    """HF_TOKEN read from the Kubernetes Secret by reference: the token never sits in a pod spec."""
    return {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": HF_SECRET_NAME, "key": HF_SECRET_KEY}}}


def gpu_placement(pool: GpuPool) -> dict:
    """Tolerations and required node affinity for the pool's GPU nodes (pod spec fields)."""
    terms = [{"key": k, "operator": "In", "values": [v]} for k, v in sorted(pool.node_selector.items())]
    out: dict = {"tolerations": pool.tolerations()}
    if terms:
        out["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": terms}]}}}
    return out


def spread(t, match_labels: dict[str, str]) -> dict:
    """Replicas over at least t.spread_nodes nodes (production): the planner sized the pool for it."""
    if t.spread_nodes <= 1:
        return {}
    return {"topologySpreadConstraints": [{
        "maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": dict(match_labels)}}]}


def pod_metadata(labels: dict[str, str], pool: GpuPool) -> dict:
    """Template metadata; the pool's annotations attach fabric interfaces per pod (GKE multi-networking);
    a reserved pool's pods say so (CAPACITY_ANNOTATION)."""
    meta: dict = {"labels": labels}
    annotations = {**pool.pod_annotations, **({CAPACITY_ANNOTATION: RESERVED_CAPACITY} if pool.reserved else {})}
    if annotations:
        meta["annotations"] = annotations
    return meta


def gpu_resources(gpus: int, cpu: int, memory_gib: int, extra: dict[str, int] | None = None) -> dict:
    """Requests = limits: the pod gets exactly its share (Guaranteed QoS, no GPU over-commit)."""
    amounts = {"cpu": str(cpu), "memory": f"{memory_gib}Gi", GPU_RESOURCE: str(gpus),
               **{k: str(v) for k, v in (extra or {}).items()}}
    return {"requests": dict(amounts), "limits": dict(amounts)}


def shm_volume(size_gib: int) -> dict:
    """/dev/shm as memory: NCCL and the engine's shared-memory queues outgrow the runtime's 64 MiB."""
    return {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": f"{size_gib}Gi"}}


SHM_MOUNT = {"name": "dshm", "mountPath": "/dev/shm"}
