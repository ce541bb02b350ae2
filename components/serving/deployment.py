"""A replica that fits one node: a Deployment running `vllm serve` with exactly the planner's arguments,
hardened (non-root, read-only root file system), started within its budget and drained on the way out."""
from __future__ import annotations

import math

from ..cache.component import CacheFacts, download_seconds
from ..cluster.facts import GpuPool
from ..planner import Topology
from .fabric import VLLM_COMMAND, capabilities, single_node_env, vllm_image, vllm_image_env
from ..kube.k8s import (container_security, http_port, offline_cache_env, pod_security, probes, scratch_env,
                  scratch_mounts, scratch_volumes)
from ..kube.pods import SHM_MOUNT, gpu_placement, gpu_resources, pod_metadata, selector, shm_volume, spread
from ..kube.probes import IMAGE_PULL_S, engine_ready_env
from .runtime_lora import lora_init_containers, runtime_lora_env

ROLE = "server"
# Drain: the preStop sleep lets the endpoint removal reach every kube-proxy / gateway before SIGTERM
# (new requests stop arriving); vLLM (>= 0.18, `--shutdown-timeout`) then rejects new requests and
# finishes the in-flight ones for up to that long (its default, 0, aborts them on SIGTERM).
PRESTOP_S = 15
# The longest request a drain waits for: a completion this long at the SLA's time per output token.
LONGEST_OUTPUT_TOKENS = 4096
MIN_DRAIN_S, MAX_DRAIN_S = 30, 600
GRACE_MARGIN_S = 15  # after the drain, before the kubelet's SIGKILL


def drain_s(t: Topology) -> int:
    return max(MIN_DRAIN_S, min(MAX_DRAIN_S, math.ceil(LONGEST_OUTPUT_TOKENS * t.sla_tpot_ms / 1000)))


def grace_s(t: Topology) -> int:
    return PRESTOP_S + drain_s(t) + GRACE_MARGIN_S


def vllm_args(t: Topology, cache: CacheFacts) -> list[str]:
    """The planner's arguments, then what the cache decides (loader, revision) and the drain."""
    return [*t.vllm_args, *cache.engine_args(t), "--shutdown-timeout", str(drain_s(t))]


TEMPLATE_VOLUME = "chat-template"


def _template(t: Topology):
    o = t.engine.options if t.engine is not None else None
    return o if o is not None and o.chat_template_path else None


def template_volumes(t: Topology) -> list[dict]:
    """models[].engine.chatTemplate: its ConfigMap, read-only, where --chat-template points."""
    o = _template(t)
    return [{"name": TEMPLATE_VOLUME, "configMap": {"name": o.chat_template_config_map}}] if o else []


CHAT_TEMPLATE_ANNOTATION = "vllm-platform/chat-template-sha256"


def template_metadata(t: Topology, meta: dict) -> dict:
    """An inline chat template's hash on the pod template: vLLM reads the file once at start, so editing the
    template (its ConfigMap) must roll the pods; a template from the team's own ConfigMap is theirs to roll."""
    o = _template(t)
    if o is None or not o.chat_template_sha256:
        return meta
    return {**meta, "annotations": {**meta.get("annotations", {}), CHAT_TEMPLATE_ANNOTATION: o.chat_template_sha256}}


def template_mounts(t: Topology) -> list[dict]:
    o = _template(t)
    if not o:
        return []
    return [{"name": TEMPLATE_VOLUME, "mountPath": o.chat_template_path.rsplit("/", 1)[0], "readOnly": True}]


def vllm_container(t: Topology, cache: CacheFacts, budget_s: int) -> dict:
    return {
        "name": "vllm",
        "image": vllm_image(t),  # the fabric's where P/D moves the KV cache over it (fabric.py VLLM_IMAGES)
        "imagePullPolicy": "IfNotPresent",  # pinned: the node's copy is the right one
        # `vllm serve` as PID 1 on every image (fabric.py VLLM_COMMAND): args are the model, then the flags
        "command": VLLM_COMMAND,
        "args": vllm_args(t, cache),
        "ports": [http_port()],
        # no HF_TOKEN: the pod reads the cache offline; only the prefetch talks to the Hub
        "env": [*offline_cache_env(), engine_ready_env(budget_s), *scratch_env(), *single_node_env(t),
                {"name": "VLLM_NO_USAGE_STATS", "value": "1"}, {"name": "DO_NOT_TRACK", "value": "1"},
                *vllm_image_env(t), *runtime_lora_env(t)],
        "resources": gpu_resources(t.gpus_per_replica, t.pod_cpu, t.pod_memory_gib),
        "volumeMounts": [SHM_MOUNT, cache.mount, *scratch_mounts(), *template_mounts(t)],
        "securityContext": container_security(capabilities(t)),
        "lifecycle": {"preStop": {"exec": {"command": ["/bin/sh", "-c", f"sleep {PRESTOP_S}"]}}},
        **probes(budget_s),
    }


def pod_spec(t: Topology, pool: GpuPool, cache: CacheFacts, budget_s: int, match: dict[str, str] | None = None) -> dict:
    main = vllm_container(t, cache, budget_s)
    cpu_memory = {k: {r: v for r, v in main["resources"][k].items() if r in ("cpu", "memory")}
                  for k in ("requests", "limits")}
    init = cache.init_container(t.model_repo, main["image"], pod_resources=cpu_memory, expected_gib=t.weights_gib,
                                warm=cache.warms(t))
    # after the cache: the runtime-LoRA resolver directory, and the `path:` adapters vLLM would exit without
    lora = lora_init_containers(t, main["image"], cache)
    return {
        # Service links would put e.g. VLLM_PORT=tcp://... into the environment for a Service named
        # "vllm", which vLLM reads as its own setting and fails on.
        "enableServiceLinks": False,
        "automountServiceAccountToken": False,
        # a node-local cache is filled by a uid 0 init container (the host path is root's)
        "securityContext": pod_security(root=cache.kind == "nvme"),
        "terminationGracePeriodSeconds": grace_s(t),
        "initContainers": [init, *lora],
        "containers": [main],
        "volumes": [shm_volume(t.shm_gib), cache.volume(t.instance_type), *scratch_volumes(), *template_volumes(t)],
        **gpu_placement(pool),
        **spread(t, {**selector(t.served_model_name, ROLE), **(match or {})}),
    }


def surge_room(t: Topology) -> int:
    """Replicas the pool holds beyond max_replicas at its maximum size (its nodes x replicas per node)."""
    return t.max_nodes * t.replicas_per_node - t.max_replicas


def rollout_strategy(t: Topology) -> dict:
    """maxSurge 1 / maxUnavailable 0 keeps every ready replica through a rollout, but its extra pod
    needs room: at max_replicas on a pool whose maximum fits exactly max_replicas, the surge pod stays
    Pending forever and the rollout (and `pulumi up`) hangs. Such a pool rolls one replica at a time in
    place instead (maxSurge 0 / maxUnavailable 1): one replica's capacity is missing for one start-up
    budget per replica. Where the pool has a free slot at max (e.g. 2 replicas per node, odd max), it surges."""
    if surge_room(t) >= 1:
        return {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
    return {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}


def first_start_s(t: Topology, cache: CacheFacts, node_ready_s: int = 0) -> int:
    """Longest a fresh pod may take on the first `pulumi up`: its GPU node being provisioned
    (ClusterFacts.gpu_node_ready_s: 0 where the nodes exist), the cache filling, the image pull, then the
    start-up. A shared (rwx) cache is filled by the prefetch Job on a system node while the GPU node is still
    coming, so the two overlap (the longer counts); a node-local (nvme) cache is filled by the pod's init
    container on that node, after it is ready, so they add up."""
    fill = download_seconds(t.weights_gib)
    wait = max(fill, node_ready_s) if cache.kind == "rwx" else node_ready_s + fill
    return wait + IMAGE_PULL_S + cache.budget(t).total_s


def deployment_spec(model: str, t: Topology, pool: GpuPool, cache: CacheFacts, labels: dict[str, str],
                    node_ready_s: int = 0, match: dict[str, str] | None = None) -> dict:
    """match: labels that tell this Deployment's pods from the model's others (a P/D role, serving/disagg.py)."""
    budget = cache.budget(t).total_s
    return {
        "replicas": t.replicas,
        "selector": {"matchLabels": {**selector(model, ROLE), **(match or {})}},
        "strategy": rollout_strategy(t),
        # Kubernetes (and Pulumi's await) would call a rollout failed after the default 600 s
        # and it counts while the pod is Pending for its GPU node
        "progressDeadlineSeconds": first_start_s(t, cache, node_ready_s),
        "revisionHistoryLimit": 3,
        "template": {"metadata": template_metadata(t, pod_metadata(labels, pool)),
                     "spec": pod_spec(t, pool, cache, budget, match)},
    }


def rollout_timeouts(t: Topology, cache: CacheFacts, node_ready_s: int = 0) -> tuple[int, int]:
    """(create, update) seconds Pulumi waits for the Deployment: the first start includes a new GPU node
    and filling the cache; an update replaces up to max_replicas one by one (the images are pre-pulled by
    then), its first surge pod may wait for one node the autoscaler adds (the next ones reuse freed nodes)."""
    budget = cache.budget(t).total_s
    return (first_start_s(t, cache, node_ready_s) + 300,
            node_ready_s + (budget + grace_s(t)) * max(1, t.max_replicas) + 300)
