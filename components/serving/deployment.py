"""A replica that fits one node: a Deployment running `vllm serve` with exactly the planner's arguments."""
from __future__ import annotations

from ..cache import CacheFacts, cache_env, download_seconds
from ..cluster.facts import GpuPool
from ..planner import Topology
from ..planner.vllm_args import VLLM_PORT
from ..versions import VLLM_IMAGE
from .pods import (CONTAINER_SECURITY, POD_SECURITY, SHM_MOUNT, gpu_placement, gpu_resources, hf_token_env, spread,
                   pod_metadata, selector, shm_volume)
from .probes import probes, topology_budget_s

ROLE = "server"
# vLLM finishes in-flight requests on SIGTERM; long generations need more than the default 30 s.
GRACE_S = 120


def vllm_container(t: Topology, cache: CacheFacts, budget_s: int) -> dict:
    return {
        "name": "vllm",
        "image": VLLM_IMAGE,
        # the image's entrypoint is `vllm serve`: args are the model, then the flags, as planned
        "args": list(t.vllm_args),
        "ports": [{"name": "http", "containerPort": VLLM_PORT, "protocol": "TCP"}],
        "env": [hf_token_env(), *cache_env(),
                {"name": "VLLM_NO_USAGE_STATS", "value": "1"}, {"name": "DO_NOT_TRACK", "value": "1"}],
        "resources": gpu_resources(t.gpus_per_replica, t.pod_cpu, t.pod_memory_gib),
        "volumeMounts": [SHM_MOUNT, cache.mount],
        "securityContext": CONTAINER_SECURITY,
        **probes(budget_s),
    }


def pod_spec(t: Topology, pool: GpuPool, cache: CacheFacts, budget_s: int) -> dict:
    return {
        # Service links would put e.g. VLLM_PORT=tcp://... into the environment for a Service named
        # "vllm", which vLLM reads as its own setting and fails on.
        "enableServiceLinks": False,
        "automountServiceAccountToken": False,
        "securityContext": POD_SECURITY,
        "terminationGracePeriodSeconds": GRACE_S,
        "initContainers": [cache.init_container(t.model_repo)],
        "containers": [vllm_container(t, cache, budget_s)],
        "volumes": [shm_volume(t.shm_gib), cache.volume(t.instance_type)],
        **gpu_placement(pool),
        **spread(t, selector(t.served_model_name, ROLE)),
    }


def first_start_s(t: Topology, cache: CacheFacts) -> int:
    """Longest a fresh pod may take: the cache filling (first deploy) and then the model loading."""
    return download_seconds(t.weights_gib) + topology_budget_s(t, cache.read_gbps)


def deployment_spec(model: str, t: Topology, pool: GpuPool, cache: CacheFacts, labels: dict[str, str]) -> dict:
    budget = topology_budget_s(t, cache.read_gbps)
    return {
        "replicas": t.replicas,
        "selector": {"matchLabels": selector(model, ROLE)},
        # never below the ready replicas: a new pod must pass its startup probe before an old one goes
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}},
        # Kubernetes (and Pulumi's await) would call a rollout failed after the default 600 s
        "progressDeadlineSeconds": first_start_s(t, cache),
        "revisionHistoryLimit": 3,
        "template": {"metadata": pod_metadata(labels, pool), "spec": pod_spec(t, pool, cache, budget)},
    }


def rollout_timeouts(t: Topology, cache: CacheFacts) -> tuple[int, int]:
    """(create, update) seconds Pulumi waits for the Deployment: the first start includes filling
    the cache; an update replaces the replicas one by one (maxSurge 1)."""
    budget = topology_budget_s(t, cache.read_gbps)
    return first_start_s(t, cache) + 300, budget * max(1, t.replicas) + 300
