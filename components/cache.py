"""The model cache: weights downloaded once, read by every serving pod, and images pulled ahead.

Two kinds (stack key modelCache.kind):
- rwx: one ReadWriteMany PersistentVolumeClaim on the cluster's shared file system (EFS, Filestore,
  NFS). A one-shot prefetch Job per model repository fills it; serving pods wait in an init container
  until the Job has written its ready marker, so they start with HF_HUB_OFFLINE=1 and never download.
- nvme: the local NVMe disk every GPU node of the pool mounts (ClusterFacts.gpu_pools[].nvme_path).
  Each node has its own copy, so no single Job can fill it: the serving pod's init container runs the
  same idempotent prefetch against its node's disk (a no-op once the marker is there).

Downloads are `hf download` into the Hugging Face cache layout (HF_HOME), which resumes partial
files and skips complete ones, so a Job retried after a failure picks up where it stopped.
"""
from __future__ import annotations

import contextlib
import math
import re
import shlex
from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

from .cluster.facts import ClusterFacts, GpuPool
from .cluster.pools import model_cache_gib
from .config import ConfigError
from .config.schema import StackConfig
from .planner import Topology
from .serving.pods import CONTAINER_SECURITY, POD_SECURITY, gpu_placement, hf_token_env
from .versions import PAUSE_IMAGE, PREFETCH_IMAGE

MOUNT = "/models"
HF_HOME = f"{MOUNT}/hf"
READY_DIR = f"{MOUNT}/.ready"
VOLUME = "model-cache"
CLAIM = "model-cache"
# Llama repositories also ship the original consolidated checkpoint (as large as the safetensors);
# vLLM reads only the safetensors.
EXCLUDE = ("original/*",)
# Sustained Hub download of one prefetch (about 1.6 Gbit/s); only used to size how long a first
# `pulumi up` waits for the serving pods, never to cut a download short.
HUB_DOWNLOAD_GBPS = 0.2
PREFETCH_RESOURCES = {"requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"cpu": "4", "memory": "8Gi"}}
WAIT_RESOURCES = {"cpu": "10m", "memory": "64Mi"}


def guaranteed(amounts: dict[str, str]) -> dict:
    """requests = limits. Kubernetes gives a pod the Guaranteed QoS class only when every container,
    init containers included, has equal CPU and memory requests and limits; a serving pod that is not
    Guaranteed gets no exclusive CPUs from the static CPU manager (nor NUMA alignment with its GPUs)
    and is evicted before Guaranteed pods under node memory pressure."""
    return {"requests": dict(amounts), "limits": dict(amounts)}


class CacheError(ConfigError):
    """The stack asks for a cache the cluster cannot give (one line naming the stack key)."""

    def __init__(self, message: str):
        super().__init__([message])


@contextlib.contextmanager
def as_run_error():
    """Inside the Pulumi program a ConfigError becomes a RunError: `pulumi up` and the offline plan
    print its message, not a traceback."""
    try:
        yield
    except ConfigError as err:
        raise pulumi.RunError(str(err)) from err


def slug(repo: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", repo.lower()).strip("-")


def ready_marker(repo: str) -> str:
    return f"{READY_DIR}/{slug(repo)}"


def download_seconds(weights_gib: float) -> int:
    return int(math.ceil(weights_gib * 1024**3 / (HUB_DOWNLOAD_GBPS * 1e9)))


def cache_env() -> list[dict]:
    """Serving pods read the cache the prefetch filled and never reach the Hub."""
    return [{"name": "HF_HOME", "value": HF_HOME}, {"name": "HF_HUB_OFFLINE", "value": "1"}]


def prefetch_script(repo: str) -> str:
    excludes = " ".join(f"--exclude {shlex.quote(p)}" for p in EXCLUDE)
    marker = ready_marker(repo)
    # world-readable and -writable: Ray images run as uid 1000, the vLLM image as root, and the Hub
    # client writes lock and ref files next to the weights even when offline
    return "\n".join([
        "set -eu",
        f'if [ -f {marker} ]; then echo "{repo} is cached"; exit 0; fi',
        f"hf download {shlex.quote(repo)} {excludes} --max-workers 8",
        f"chmod -R a+rwX {HF_HOME}",
        f"mkdir -p {READY_DIR} && touch {marker}",
    ])


def prefetch_container(repo: str, image: str = PREFETCH_IMAGE, resources: dict | None = None) -> dict:
    """`image` needs huggingface_hub's `hf` CLI: the vLLM and Ray Serve LLM images both carry it.
    `resources`: the Job's by default; a serving pod's init container passes Guaranteed ones."""
    return {
        "name": "prefetch", "image": image, "command": ["/bin/sh", "-c", prefetch_script(repo)],
        "env": [hf_token_env(), {"name": "HF_HOME", "value": HF_HOME}],
        "volumeMounts": [{"name": VOLUME, "mountPath": MOUNT}],
        # root (without capabilities) so that it can fill a hostPath the kubelet created root-owned, also
        # from the Ray image whose default user is uid 1000; the script then opens the cache to all
        "resources": resources or PREFETCH_RESOURCES, "securityContext": {**CONTAINER_SECURITY, "runAsUser": 0},
    }


def wait_container(repo: str, image: str = PREFETCH_IMAGE) -> dict:
    marker = ready_marker(repo)
    script = f'until [ -f {marker} ]; do echo "waiting for the prefetch Job to cache {repo}"; sleep 15; done'
    return {
        "name": "wait-for-cache", "image": image, "command": ["/bin/sh", "-c", script],
        "volumeMounts": [{"name": VOLUME, "mountPath": MOUNT, "readOnly": True}],
        "resources": guaranteed(WAIT_RESOURCES),  # it runs in the serving pod (see guaranteed())
        "securityContext": CONTAINER_SECURITY,
    }


@dataclass(frozen=True)
class CacheFacts:
    """What a serving pod needs to read the cache."""
    kind: str  # "rwx" | "nvme"
    read_gbps: float  # sustained read throughput per node (start-up budgets)
    claim: str | None = None
    nvme_paths: dict[str, str] = field(default_factory=dict)  # instance type -> host path

    def volume(self, instance_type: str) -> dict:
        if self.kind == "rwx":
            return {"name": VOLUME, "persistentVolumeClaim": {"claimName": self.claim}}
        return {"name": VOLUME, "hostPath": {"path": self.nvme_paths[instance_type], "type": "DirectoryOrCreate"}}

    def init_container(self, repo: str, image: str = PREFETCH_IMAGE) -> dict:
        """Runs in the serving pod's own image (already on the node) before the server starts."""
        if self.kind == "rwx":
            return wait_container(repo, image)
        return prefetch_container(repo, image, guaranteed(PREFETCH_RESOURCES["limits"]))

    @property
    def mount(self) -> dict:
        return {"name": VOLUME, "mountPath": MOUNT}


def cache_size_gib(cfg: StackConfig, topologies: dict[str, Topology]) -> int:
    """The claim asks for exactly what the cloud's volume was sized to (pools.model_cache_gib)."""
    return model_cache_gib(cfg.model_cache.size_gib, topologies)


def cache_facts(cfg: StackConfig, topologies: dict[str, Topology], facts: ClusterFacts) -> CacheFacts:
    mc = cfg.model_cache
    read = mc.read_gbps or facts.cache_read_gbps
    if mc.kind == "rwx":
        if not facts.rwx_storage_class:
            raise CacheError(f"modelCache.kind: rwx needs a ReadWriteMany StorageClass and cluster "
                             f"{facts.name} provides none; set modelCache.storageClass or use kind nvme")
        return CacheFacts("rwx", read, claim=CLAIM)
    paths = {}
    for t in topologies.values():
        pool = facts.pool_for(t.instance_type)
        if not pool.nvme_path:
            raise CacheError(f"modelCache.kind: nvme needs local NVMe on the GPU nodes, and {t.instance_type} "
                             f"(model {t.served_model_name}) has none mounted; use kind rwx")
        paths[t.instance_type] = f"{pool.nvme_path.rstrip('/')}/{VOLUME}"
    return CacheFacts("nvme", read, nvme_paths=paths)


def pvc_spec(storage_class: str, size_gib: int) -> dict:
    return {"accessModes": ["ReadWriteMany"], "storageClassName": storage_class,
            "resources": {"requests": {"storage": f"{size_gib}Gi"}}}


def prefetch_job_spec(repo: str, system_node_selector: dict[str, str], labels: dict[str, str]) -> dict:
    """Runs on a system node: a prefetch must not hold CPU a GPU node's serving pod is sized for."""
    pod = {
        "restartPolicy": "Never", "enableServiceLinks": False, "automountServiceAccountToken": False,
        "securityContext": POD_SECURITY,
        "containers": [prefetch_container(repo)],
        "volumes": [{"name": VOLUME, "persistentVolumeClaim": {"claimName": CLAIM}}],
    }
    if system_node_selector:
        pod["nodeSelector"] = dict(system_node_selector)
    # retries resume: finished files are skipped and partial ones continue from the shared volume
    return {"backoffLimit": 6, "template": {"metadata": {"labels": labels}, "spec": pod}}


def prepull_spec(pool: GpuPool, images: list[str], labels: dict[str, str]) -> dict:
    """A DaemonSet on the pool whose init containers pull the serving images (and exit at once), so
    that a node the autoscaler adds has them before the first serving pod lands."""
    inits = [{"name": f"pull-{i}", "image": image, "command": ["/bin/sh", "-c", "exit 0"],
              "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"memory": "64Mi"}},
              "securityContext": CONTAINER_SECURITY} for i, image in enumerate(images)]
    pod = {
        "initContainers": inits, "securityContext": POD_SECURITY, "enableServiceLinks": False,
        "automountServiceAccountToken": False,
        "containers": [{"name": "pause", "image": PAUSE_IMAGE,
                        "resources": {"requests": {"cpu": "1m", "memory": "8Mi"}, "limits": {"memory": "16Mi"}},
                        "securityContext": CONTAINER_SECURITY}],
        "terminationGracePeriodSeconds": 1,
        **gpu_placement(pool),
    }
    return {"selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels}, "spec": pod}}


class ModelCache(pulumi.ComponentResource):
    """The cache volume, its prefetch Jobs and the image pre-pull DaemonSets for a stack."""

    def __init__(self, name: str, cfg: StackConfig, topologies: dict[str, Topology], facts: ClusterFacts,
                 images: dict[str, list[str]], labels: dict[str, str], depends_on: list | None = None,
                 opts: pulumi.ResourceOptions | None = None):
        """images: instance type -> the serving images its pods run (to pre-pull)."""
        super().__init__("vllm-platform:cache:ModelCache", name, None, opts)
        ns = cfg.namespace
        with as_run_error():
            self.facts = cache_facts(cfg, topologies, facts)
        child = pulumi.ResourceOptions(parent=self, provider=facts.provider, depends_on=list(depends_on or []))
        base = {**labels, "app.kubernetes.io/name": "model-cache"}
        self.jobs: list[k8s.batch.v1.Job] = []
        if self.facts.kind == "rwx":
            size = cache_size_gib(cfg, topologies)
            self.claim = k8s.core.v1.PersistentVolumeClaim(
                f"{name}-pvc", metadata={"name": CLAIM, "namespace": ns, "labels": base},
                spec=pvc_spec(facts.rwx_storage_class, size), opts=child)
            job_opts = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[self.claim]))
            repos = {}
            for t in topologies.values():
                repos.setdefault(t.model_repo, t.served_model_name)
            for repo, model in repos.items():
                job_labels = {**base, "app.kubernetes.io/component": "prefetch", "vllm-platform/model": model}
                self.jobs.append(k8s.batch.v1.Job(
                    f"{name}-prefetch-{model}",
                    # Serving pods wait for the ready marker themselves, so `pulumi up` does not block
                    # for the hours a 405B download can take.
                    metadata={"name": f"prefetch-{model}", "namespace": ns, "labels": job_labels,
                              "annotations": {"pulumi.com/skipAwait": "true"}},
                    spec=prefetch_job_spec(repo, facts.system_node_selector, job_labels), opts=job_opts))
        self.prepull = []
        by_pool: dict[str, tuple[GpuPool, list[str]]] = {}
        for itype, imgs in sorted(images.items()):
            pool = facts.pool_for(itype)
            entry = by_pool.setdefault(pool.name, (pool, []))
            entry[1].extend(i for i in imgs if i not in entry[1])
        for pool_name, (pool, imgs) in sorted(by_pool.items()):
            ds_labels = {**base, "app.kubernetes.io/component": "image-prepull", "vllm-platform/gpu-pool": pool_name}
            self.prepull.append(k8s.apps.v1.DaemonSet(
                f"{name}-prepull-{pool_name}",
                metadata={"name": f"image-prepull-{pool_name}", "namespace": ns, "labels": ds_labels,
                          "annotations": {"pulumi.com/skipAwait": "true"}},
                spec=prepull_spec(pool, imgs, ds_labels), opts=child))
        self.register_outputs({"kind": self.facts.kind})
