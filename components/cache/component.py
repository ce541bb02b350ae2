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
import shlex
from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

from ..cluster.facts import ClusterFacts, GpuPool
from .sources import EXCLUDE, WeightsSource, apply_source, extras_by_repo, sources_problem
from ..cluster.pools import model_cache_gib
from ..cluster.source_access import service_accounts
from ..config import ConfigError
from ..config.schema import ModelCache as ModelCacheSettings
from ..planner import Topology
from ..kube.k8s import (CACHE_MOUNT, CACHE_VOLUME, COMPILE_CACHE, HF_HOME, READY_DIR, cache_mount,
                          container_security, home_env, offline_cache_env, pod_security, ready_marker,
                          root_container_security, scratch_mounts, scratch_volumes, slug)
from ..kube.pods import gpu_placement, hf_token_env
from ..kube.probes import IMAGE_PULL_S, LOADERS
from ..upstream.versions import PAUSE_IMAGE, PREFETCH_IMAGE

# The layout is defined once in the k8s layer ((kube/k8s.py)); these names stay for their importers.
MOUNT = CACHE_MOUNT
VOLUME = CACHE_VOLUME
CLAIM = "model-cache"
__all__ = ["MOUNT", "HF_HOME", "READY_DIR", "COMPILE_CACHE", "VOLUME", "CLAIM", "ready_marker", "slug"]
# Sustained Hub download of one prefetch (about 1.6 Gbit/s); only used to size how long a first
# `pulumi up` waits for the serving pods, never to cut a download short.
HUB_DOWNLOAD_GBPS = 0.2
PREFETCH_RESOURCES = {"requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"cpu": "4", "memory": "8Gi"}}
WAIT_RESOURCES = {"cpu": "10m", "memory": "64Mi"}
PROGRESS_EVERY_S = 60
# The prefetch Job's deadline (activeDeadlineSeconds, all retries together): the download term of the first
# deploy (download_seconds, at HUB_DOWNLOAD_GBPS) x 3 plus 30 min, so a slow Hub day still finishes and a
# download that hangs (a stalled connection, a gated repository that stops answering) fails as
# DeadlineExceeded instead of leaving the serving pods waiting for ever. Retries resume (hf download skips
# finished files), so a few of them are cheap; past PREFETCH_BACKOFF_LIMIT failures the error is not transient.
PREFETCH_DEADLINE_FACTOR = 3
PREFETCH_DEADLINE_MARGIN_S = 1800
PREFETCH_BACKOFF_LIMIT = 4
WARM_READERS = 8  # parallel readers that pull the shards into the page cache on a node-local cache
# How long Pulumi waits for a pre-pull DaemonSet: its updateStrategy (maxUnavailable 100%) lets every node pull
# at once, so the wait is one node's pull of each image (its init containers pull them one after another,
# IMAGE_PULL_S each), doubled because the whole pool pulls from one registry at the same time, plus a margin;
# a create also waits for the pool's new nodes (ClusterFacts.gpu_node_ready_s). Not the node count.
PREPULL_CONCURRENCY_FACTOR = 2
PREPULL_MARGIN_S = 300
WARM_MEMORY_SHARE = 0.8  # warm only weights that fit this share of the pod's memory (else the kernel drops them)


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


def download_seconds(weights_gib: float) -> int:
    return int(math.ceil(weights_gib * 1024**3 / (HUB_DOWNLOAD_GBPS * 1e9)))


def cache_env() -> list[dict]:
    """Serving pods read the cache the prefetch filled and never reach the Hub."""
    return offline_cache_env()


def repo_dir(repo: str) -> str:
    """Where huggingface_hub keeps a repository under HF_HOME."""
    return f"{HF_HOME}/hub/models--{repo.replace('/', '--')}"


def prefetch_script(repo: str, revision: str | None = None, expected_gib: float | None = None) -> str:
    excludes = " ".join(f"--exclude {shlex.quote(p)}" for p in EXCLUDE)
    marker = ready_marker(repo, revision)
    rev = f" --revision {shlex.quote(revision)}" if revision else ""
    of = f" of ~{int(expected_gib * 1024)} MiB" if expected_gib else ""
    # world-readable and -writable: serving pods run as uid 1000, and the Hub client writes lock and
    # ref files next to the weights even when offline; the compile cache is written by every replica
    return "\n".join([
        "set -eu",
        f'if [ -f {marker} ]; then echo "{repo} is cached"; exit 0; fi',
        # progress for `kubectl logs -f`: the Hub client's own bars do not reach a pod log line by line
        f"(while sleep {PROGRESS_EVERY_S} </dev/null >/dev/null 2>&1; do echo \"progress: $(du -sm {repo_dir(repo)} 2>/dev/null | cut -f1)"
        f" MiB{of} of {repo}\"; done) &",
        # the reporter must end with the script, failed or not, or the container (and the Job) never exits
        "PROGRESS=$!; trap 'kill $PROGRESS 2>/dev/null || true' EXIT",
        f"hf download {shlex.quote(repo)}{rev} {excludes} --max-workers 8",
        f"mkdir -p {COMPILE_CACHE} && chmod -R a+rwX {HF_HOME} {CACHE_MOUNT}/compile-cache",
        f'mkdir -p {READY_DIR} && touch {marker} && echo "{repo} cached: {marker}"',
    ])


def warm_script(repo: str, revision: str | None = None) -> str:
    """Reads the snapshot's shards with parallel readers, so that vLLM's one-shard-at-a-time mmap load
    then hits the page cache instead of the disk."""
    snap = f"{repo_dir(repo)}/snapshots/{revision or '*'}"
    return (f"find -L {snap} -name '*.safetensors' -print0 | "
            f"xargs -0 -r -P {WARM_READERS} -I{{}} dd if={{}} of=/dev/null bs=16M status=none")


def prefetch_container(repo: str, image: str = PREFETCH_IMAGE, resources: dict | None = None,
                       revision: str | None = None, expected_gib: float | None = None, warm: bool = False) -> dict:
    """`image` needs huggingface_hub's `hf` CLI: the vLLM and Ray Serve LLM images both carry it.
    `resources`: the Job's by default; a serving pod's init container passes Guaranteed ones."""
    script = prefetch_script(repo, revision, expected_gib)
    if warm:
        # a subshell: the cached case's early `exit 0` must not skip the warm-up
        script = f"set -eu\n(\n{script}\n)\n{warm_script(repo, revision)}"
    return {
        "name": "prefetch", "image": image, "command": ["/bin/sh", "-c", script],
        # HF_HOME on the cache volume holds the Hub cache, hf_xet's chunk cache and the token path; the root file
        # system is read-only, so HOME and /tmp are the pod's scratch volumes (k8s.scratch_volumes: the Job adds
        # them, and the serving pods whose init container this is already have them)
        "env": [hf_token_env(), {"name": "HF_HOME", "value": HF_HOME}, *home_env()],
        "volumeMounts": [cache_mount(), *scratch_mounts()],
        # root (without capabilities) so that it can fill a hostPath the kubelet created root-owned, also
        # from the Ray image whose default user is uid 1000; the script then opens the cache to all
        "resources": resources or PREFETCH_RESOURCES, "securityContext": root_container_security(),
    }


def wait_container(repo: str, image: str = PREFETCH_IMAGE, revision: str | None = None,
                   extras: tuple[str, ...] = ()) -> dict:
    """Waits for the model's marker and each Hub adapter's / draft's own (written once the Job downloaded it)."""
    markers = [ready_marker(repo, revision), *(ready_marker(r) for r in extras)]
    until = " && ".join(f"[ -f {m} ]" for m in markers)
    script = (f'until {until}; do echo "waiting for {" + ".join([repo, *extras])} in the model cache '
              f'({" ".join(markers)}); the prefetch Job logs its progress"; sleep 15; done')
    return {
        "name": "wait-for-cache", "image": image, "command": ["/bin/sh", "-c", script],
        "volumeMounts": [cache_mount(read_only=True)],
        "resources": guaranteed(WAIT_RESOURCES),  # it runs in the serving pod (see guaranteed())
        "securityContext": container_security(),
    }


@dataclass(frozen=True)
class CacheFacts:
    """What a serving pod needs to read the cache."""
    kind: str  # "rwx" | "nvme"
    read_gbps: float  # sustained read throughput per node (the storage's figure)
    claim: str | None = None
    nvme_paths: dict[str, str] = field(default_factory=dict)  # instance type -> host path
    loader: str = "auto"  # modelCache.loader
    revisions: dict[str, str] = field(default_factory=dict)  # repo -> pinned commit (models[].revision)
    extras: dict[str, tuple[str, ...]] = field(default_factory=dict)  # repo -> Hub adapters / drafts (hub_extras)

    def volume(self, instance_type: str) -> dict:
        if self.kind == "rwx":
            return {"name": VOLUME, "persistentVolumeClaim": {"claimName": self.claim}}
        return {"name": VOLUME, "hostPath": {"path": self.nvme_paths[instance_type], "type": "DirectoryOrCreate"}}

    def revision(self, repo: str) -> str | None:
        return self.revisions.get(repo)

    def init_container(self, repo: str, image: str = PREFETCH_IMAGE, pod_resources: dict | None = None,
                       expected_gib: float | None = None, warm: bool = False) -> dict:
        """Runs in the serving pod's own image (already on the node) before the server starts. On NVMe it
        fills the node's copy and, with `warm`, reads it into the page cache; it then takes the serving
        container's CPU and memory (`pod_resources`): the page cache it fills is charged to its memory
        limit, and an init container's resources do not add to the pod's."""
        rev = self.revision(repo)
        if self.kind == "rwx":
            return wait_container(repo, image, rev, self.extras.get(repo, ()))
        res = pod_resources or guaranteed(PREFETCH_RESOURCES["limits"])
        return prefetch_container(repo, image, res, rev, expected_gib, warm)

    def warms(self, t: Topology) -> bool:
        """Node-local cache: read the shards into the page cache first when they fit the pod's memory (less the
        pinned host KV tier, which the kernel cannot reclaim: planner/host_tier.py)."""
        return self.kind == "nvme" and t.weights_gib <= WARM_MEMORY_SHARE * (t.pod_memory_gib - t.kv_offload_gib)

    def loader_for(self, multi_node: bool) -> str:
        """auto: the Run:ai streamer where it pays (a shared file system, the vLLM image that carries it);
        eager shards on a shared file system under Ray Serve LLM (its image has no streamer); vLLM's default
        on local NVMe, whose page cache the init container warms."""
        if self.loader != "auto":
            return self.loader
        if self.kind == "nvme":
            return "safetensors"
        return "eager" if multi_node else "runai-streamer"

    def engine_args(self, t: Topology) -> list[str]:
        """`vllm serve` flags the cache decides: the loader and the pinned revision."""
        out = list(LOADERS[self.loader_for(t.multi_node)].flags)
        rev = self.revision(t.model_repo)
        if rev:
            out += ["--revision", rev, "--tokenizer-revision", rev]
        return out

    def budget(self, t: Topology):
        """The start-up budget of one of t's pods on this cache (probes.StartupBudget)."""
        from ..kube.probes import budget
        return budget(t, self.read_gbps, self.kind, self.loader_for(t.multi_node))

    @property
    def mount(self) -> dict:
        return cache_mount()


@dataclass(frozen=True)
class ModelCacheArgs:
    """What a ModelCache reads besides the plan and the cluster's facts: the stack's namespace, its
    `modelCache` settings, the revisions it pins, by repository (pinned_revisions), and the weights sources
    other than the Hub, by deployment name (models[].source); both checked once by components/wiring.py
    before any resource exists."""
    namespace: str = "vllm"
    model_cache: ModelCacheSettings = field(default_factory=ModelCacheSettings)
    revisions: dict[str, str] = field(default_factory=dict)
    sources: dict[str, WeightsSource] = field(default_factory=dict)


def cache_size_gib(args: ModelCacheArgs, topologies: dict[str, Topology]) -> int:
    """The claim asks for exactly what the cloud's volume was sized to (pools.model_cache_gib)."""
    return model_cache_gib(args.model_cache.size_gib, topologies)


def check_loader(loader: str, topologies: dict[str, Topology]) -> None:
    multi = sorted(t.served_model_name for t in topologies.values() if t.multi_node)
    if loader == "runai-streamer" and multi:
        raise CacheError(f"modelCache.loader: runai-streamer needs the runai-model-streamer package, which the "
                         f"vLLM image carries but the Ray Serve LLM image of multi-node model(s) {', '.join(multi)} "
                         f"does not; use auto or eager")


def nvme_missing(t: Topology) -> str:
    return (f"modelCache.kind: nvme needs local NVMe on the GPU nodes, and {t.instance_type} "
            f"(model {t.served_model_name}) has none mounted; use kind rwx")


def cache_facts(args: ModelCacheArgs, topologies: dict[str, Topology], facts: ClusterFacts) -> CacheFacts:
    mc = args.model_cache
    read = mc.read_gbps or facts.cache_read_gbps
    if mc.kind != "rwx" and args.sources:
        raise CacheError(sources_problem(sorted(args.sources), mc.kind))
    check_loader(mc.loader, topologies)
    pins = {"loader": mc.loader, "revisions": dict(args.revisions), "extras": extras_by_repo(topologies)}
    if mc.kind == "rwx":
        if not facts.rwx_storage_class:
            raise CacheError(f"modelCache.kind: rwx needs a ReadWriteMany StorageClass and cluster "
                             f"{facts.name} provides none; set modelCache.storageClass or use kind nvme")
        return CacheFacts("rwx", read, claim=CLAIM, **pins)
    paths = {}
    for t in topologies.values():
        pool = facts.pool_for(t.instance_type)
        if not pool.nvme_path:
            raise CacheError(nvme_missing(t))
        paths[t.instance_type] = f"{pool.nvme_path.rstrip('/')}/{VOLUME}"
    return CacheFacts("nvme", read, nvme_paths=paths, **pins)


def pvc_spec(storage_class: str, size_gib: int) -> dict:
    return {"accessModes": ["ReadWriteMany"], "storageClassName": storage_class,
            "resources": {"requests": {"storage": f"{size_gib}Gi"}}}


def prefetch_job_spec(repo: str, system_node_selector: dict[str, str], labels: dict[str, str],
                      revision: str | None = None, expected_gib: float | None = None) -> dict:
    """Runs on a system node: a prefetch must not hold CPU a GPU node's serving pod is sized for."""
    pod = {
        "restartPolicy": "Never", "enableServiceLinks": False, "automountServiceAccountToken": False,
        "securityContext": pod_security(root=True),
        "containers": [prefetch_container(repo, revision=revision, expected_gib=expected_gib)],
        "volumes": [{"name": VOLUME, "persistentVolumeClaim": {"claimName": CLAIM}}, *scratch_volumes()],
    }
    if system_node_selector:
        pod["nodeSelector"] = dict(system_node_selector)
    # retries resume: finished files are skipped and partial ones continue from the shared volume
    deadline = {"activeDeadlineSeconds": prefetch_deadline_s(expected_gib)} if expected_gib else {}
    return {"backoffLimit": PREFETCH_BACKOFF_LIMIT, **deadline, "template": {"metadata": {"labels": labels}, "spec": pod}}


def prefetch_deadline_s(weights_gib: float) -> int:  # see PREFETCH_DEADLINE_FACTOR
    return download_seconds(weights_gib) * PREFETCH_DEADLINE_FACTOR + PREFETCH_DEADLINE_MARGIN_S


def prepull_spec(pool: GpuPool, images: list[str], labels: dict[str, str]) -> dict:
    """A DaemonSet on the pool whose init containers pull the serving images (and exit at once), so
    that a node the autoscaler adds has them before the first serving pod lands."""
    inits = [{"name": f"pull-{i}", "image": image, "command": ["/bin/sh", "-c", "exit 0"],
              "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"cpu": "100m", "memory": "64Mi"}},
              "securityContext": container_security()} for i, image in enumerate(images)]
    pod = {
        "initContainers": inits, "securityContext": pod_security(), "enableServiceLinks": False,
        "automountServiceAccountToken": False,
        "containers": [{"name": "pause", "image": PAUSE_IMAGE,
                        "resources": {"requests": {"cpu": "1m", "memory": "8Mi"}, "limits": {"cpu": "10m", "memory": "16Mi"}},
                        "securityContext": container_security()}],
        "terminationGracePeriodSeconds": 1,
        **gpu_placement(pool),
    }
    # A cache warmer serves nothing: an image bump replaces every node's pod at once instead of one node at a
    # time (the default maxUnavailable 1 rolls a 6-node pool for 6 pulls, past any sane Pulumi wait).
    return {"selector": {"matchLabels": labels},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "100%"}},
            "template": {"metadata": {"labels": labels}, "spec": pod}}


def prepull_timeouts(images: int, node_ready_s: int) -> tuple[int, int]:
    """(create, update) seconds Pulumi waits for a pre-pull DaemonSet (see PREPULL_CONCURRENCY_FACTOR)."""
    pull = IMAGE_PULL_S * max(1, images) * PREPULL_CONCURRENCY_FACTOR + PREPULL_MARGIN_S
    return node_ready_s + pull, pull


class ModelCache(pulumi.ComponentResource):
    """The cache volume, its prefetch Jobs and the image pre-pull DaemonSets for a stack."""

    def __init__(self, name: str, args: ModelCacheArgs, topologies: dict[str, Topology], facts: ClusterFacts,
                 images: dict[str, list[str]], labels: dict[str, str], depends_on: list | None = None,
                 opts: pulumi.ResourceOptions | None = None):
        """images: instance type -> the serving images its pods run (to pre-pull)."""
        super().__init__("vllm-platform:cache:ModelCache", name, None, opts)
        ns = args.namespace
        with as_run_error():
            self.facts = cache_facts(args, topologies, facts)
        child = pulumi.ResourceOptions(parent=self, provider=facts.provider, depends_on=list(depends_on or []))
        base = {**labels, "app.kubernetes.io/name": "model-cache"}
        self.jobs: list[k8s.batch.v1.Job] = []
        self.service_accounts: list[k8s.core.v1.ServiceAccount] = []
        if self.facts.kind == "rwx":
            size = cache_size_gib(args, topologies)
            self.claim = k8s.core.v1.PersistentVolumeClaim(
                f"{name}-pvc", metadata={"name": CLAIM, "namespace": ns, "labels": base},
                spec=pvc_spec(facts.rwx_storage_class, size), opts=child)
            # models[].source s3 / gcs: Jobs run as these, bound to the cloud identity (facts.weights_access)
            self.service_accounts = [k8s.core.v1.ServiceAccount(
                f"{name}-sa-{account}", metadata={"name": account, "namespace": ns, "labels": base},
                automount_service_account_token=False, opts=child)
                for account in service_accounts(args.sources.values())]
            job_opts = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(
                depends_on=[self.claim, *self.service_accounts,
                            *(facts.weights_access if self.service_accounts else [])]))
            repos: dict[str, Topology] = {}
            for t in topologies.values():
                repos.setdefault(t.model_repo, t)
            for repo, t in repos.items():
                model = t.served_model_name
                job_labels = {**base, "app.kubernetes.io/component": "prefetch", "vllm-platform/model": model}
                self.jobs.append(k8s.batch.v1.Job(
                    f"{name}-prefetch-{model}",
                    # Serving pods wait for the ready marker themselves, so `pulumi up` does not block
                    # for the hours a 405B download can take; the Job logs its progress every minute
                    # (`kubectl -n NAMESPACE logs -f job/prefetch-MODEL`).
                    metadata={"name": f"prefetch-{model}", "namespace": ns, "labels": job_labels,
                              "annotations": {"pulumi.com/skipAwait": "true"}},
                    spec=apply_source(prefetch_job_spec(repo, facts.system_node_selector, job_labels,
                                                        self.facts.revision(repo), t.weights_gib),
                                      args.sources.get(model), self.facts.extras.get(repo, ())), opts=job_opts))
        self.prepull = []
        by_pool: dict[str, tuple[GpuPool, list[str]]] = {}
        for itype, imgs in sorted(images.items()):
            pool = facts.pool_for(itype)
            entry = by_pool.setdefault(pool.name, (pool, []))
            entry[1].extend(i for i in imgs if i not in entry[1])
        for pool_name, (pool, imgs) in sorted(by_pool.items()):
            ds_labels = {**base, "app.kubernetes.io/component": "image-prepull", "vllm-platform/gpu-pool": pool_name}
            # Awaited (no skipAwait): Pulumi waits until every node of the pool has pulled the images, and
            # the serving workloads depend on this DaemonSet, so a new image is on the nodes before a
            # rollout starts (and a first deploy's pods do not pay the pull inside their start-up).
            create_s, update_s = prepull_timeouts(len(imgs), facts.gpu_node_ready_s)
            self.prepull.append(k8s.apps.v1.DaemonSet(
                f"{name}-prepull-{pool_name}",
                metadata={"name": f"image-prepull-{pool_name}", "namespace": ns, "labels": ds_labels},
                spec=prepull_spec(pool, imgs, ds_labels),
                opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(custom_timeouts=pulumi.CustomTimeouts(
                    create=f"{create_s}s", update=f"{update_s}s")))))
        self.register_outputs({"kind": self.facts.kind})
