"""The profile Job of one model (planning.profile, docs/measurements.md "Profiling on the cluster"): a batch/v1 Job on
the model's own GPU pool that runs components/profiling/sweep.py inside the pinned vLLM image, shipped with its spec
(components/profiling/plan.py) in a ConfigMap, and writes the rows to the model cache volume (PROFILES_DIR).

The pod is a serving pod's twin where it matters to the measurement: the same image, placement (tolerations and node
affinity of the pool), cache volume at the same path, cache gate (the init container waits for the weights, or fills
a node's NVMe copy), offline Hub environment, /dev/shm, chat template and LoRA preparation, and the cache's engine
arguments (loader, pinned revision) after each shape's planned ones. It asks the GPUs of the largest shape.

Where it differs, for the serving pods' sake and its results':

* priority: the stack's PriorityClass (priority_class_spec: below the serving pods' 0, preemptionPolicy Never), so a
  pending profile pod never takes GPUs from a serving pod: the scheduler preempts it for a serving pod (a rolling
  update's new pod on a pool with no room) and it preempts nothing. Its value is -10, not lower: cluster-autoscaler
  treats a pod below its expendable-pods cutoff (-10 by default) as expendable, adds no node for it and removes
  its node at will, and the pool's one extra node is there for the profile pod.
* the autoscalers' opt-outs (serving/redis.NO_CONSOLIDATION): neither consolidates the node away mid-sweep.
* the engine binds 127.0.0.1 (the bench runs in the same container; sweep.py sets --host).
* a first init container writes the epoch second it ran to the scratch volume (START_FILE), and the main container
  is given the Job's activeDeadlineSeconds (sweep.DEADLINE_ENV): the script bounds itself by what is left of the
  deadline (the cache gate's wait counts), and on SIGTERM it stops the engine and keeps what finished.

profile_job_objects and priority_class_spec are pure; ProfileJob makes the ConfigMap and the Job,
ProfilePriorityClass the PriorityClass (one per stack, made with the Jobs).
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import pulumi
import pulumi_kubernetes as k8s

from ..cache.component import CacheFacts
from ..cluster.facts import GpuPool
from ..kube.k8s import (CACHE_MOUNT, RUN_AS_GROUP, RUN_AS_USER, SCRATCH, SCRATCH_VOLUME, container_security,
                        offline_cache_env, pod_security, root_container_security, scratch_env, scratch_mounts,
                        scratch_volumes)
from ..kube.pods import SHM_MOUNT, gpu_placement, gpu_resources, hf_token_env, shm_volume
from ..planner import Topology
from ..profiling import sweep
from ..profiling.plan import ProfilePlan
from .deployment import template_mounts, template_volumes
from .fabric import single_node_env, vllm_image, vllm_image_env
from .redis import NO_CONSOLIDATION
from .runtime_lora import lora_init_containers

PROFILES_DIR = f"{CACHE_MOUNT}/profiles"  # /models/profiles/<deployment>/rows.json, summary.json, <shape>.json
SCRIPT_DIR = "/etc/vllm-platform/profile"
SCRIPT_KEY, SPEC_KEY = "sweep.py", "spec.json"
# Finished Jobs stay a week. Their pods' logs may not: on EKS / GKE the Job's extra node is removed once idle and
# the pod with it; the rows on the cache volume (PROFILES_DIR) are what lasts (docs/measurements.md).
TTL_AFTER_FINISHED_S = 7 * 24 * 3600
ROLE = "profile"
START_FILE = f"{SCRATCH}/profile-pod-started"  # the epoch second the pod's first init container ran
# Below the serving pods' priority (0: they name no class and no class is the global default), not below
# cluster-autoscaler's expendable-pods cutoff (-10 by default: a pod below it adds no node and holds none).
PRIORITY = -10
PRIORITY_CLASS = "vllm-platform-profile"


def priority_class_name(namespace: str) -> str:
    """Cluster-scoped: one per stack, named for the stack's namespace (two stacks may share a cluster)."""
    return f"{PRIORITY_CLASS}-{namespace}"


def priority_class_spec(namespace: str) -> dict:
    """The PriorityClass the profile pods run at (fields of a scheduling.k8s.io/v1 PriorityClass beside metadata)."""
    return {"value": PRIORITY, "preemptionPolicy": "Never", "globalDefault": False,
            "description": f"vllm-platform planning.profile Jobs of namespace {namespace}: below the serving pods "
                           f"(priority 0), which preempt them (a rolling update on a pool with no room must not "
                           f"wait for a profile), and never preempting anything; not below cluster-autoscaler's "
                           f"expendable cutoff (-10), so the pool's extra node is still added for them"}


def job_name(deployment: str) -> str:
    return f"profile-{deployment}"


def script() -> str:
    """The entrypoint as the ConfigMap ships it: components/profiling/sweep.py, byte for byte."""
    return Path(sweep.__file__).read_text()


def _pod_share(t: Topology, gpus: int) -> tuple[int, int, int]:
    """CPU, memory GiB and /dev/shm GiB for a pod of `gpus` GPUs: the planned pod's share per GPU, within one node's
    (the planned pod's share times the replicas a node holds)."""
    per = gpus / t.gpus_per_replica
    cpu = min(t.pod_cpu * t.replicas_per_node, max(1, math.ceil(t.pod_cpu * per)))
    memory = min(t.pod_memory_gib * t.replicas_per_node, max(8, math.ceil(t.pod_memory_gib * per)))
    return cpu, memory, max(1, min(memory // 4, max(t.shm_gib, 2 + 2 * gpus)))


def profile_job_objects(plan: ProfilePlan, t: Topology, pool: GpuPool, cache: CacheFacts,
                        labels: dict[str, str], namespace: str = "vllm") -> tuple[dict, dict]:
    """(ConfigMap data, Job spec) of one model's profile Job in `namespace`."""
    image = vllm_image(t)
    spec = plan.spec(tuple(cache.engine_args(t)))
    cpu, memory, shm = _pod_share(t, plan.gpus)
    resources = gpu_resources(plan.gpus, cpu, memory)
    cpu_memory = {k: {r: v for r, v in resources[k].items() if r in ("cpu", "memory")} for k in ("requests", "limits")}
    out_dir = spec["out_dir"]
    results_dir = {  # the cache volume's top is root's: make the model's profile directory writable for the Job
        "name": "profile-dir", "image": image, "imagePullPolicy": "IfNotPresent",
        "command": ["/bin/sh", "-c", f"mkdir -p {out_dir} && chmod a+rwx {PROFILES_DIR} {out_dir}"],
        "volumeMounts": [cache.mount], "securityContext": root_container_security(),
        "resources": {"requests": {"cpu": "10m", "memory": "64Mi"}, "limits": {"cpu": "100m", "memory": "64Mi"}},
    }
    clock = {  # first: the script counts the time from here (the cache gate's wait among it) against its deadline
        "name": "profile-clock", "image": image, "imagePullPolicy": "IfNotPresent",
        "command": ["/bin/sh", "-c", f"date +%s > {START_FILE}"],
        "volumeMounts": [{"name": SCRATCH_VOLUME, "mountPath": SCRATCH}],
        "securityContext": {**container_security(), "runAsNonRoot": True, "runAsUser": RUN_AS_USER,
                            "runAsGroup": RUN_AS_GROUP},
        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"cpu": "100m", "memory": "32Mi"}},
    }
    main = {
        "name": "profile", "image": image, "imagePullPolicy": "IfNotPresent",
        "command": ["python3", f"{SCRIPT_DIR}/{SCRIPT_KEY}", f"{SCRIPT_DIR}/{SPEC_KEY}"],
        "env": [*offline_cache_env(), hf_token_env(), *scratch_env(), *single_node_env(t), *vllm_image_env(t),
                {"name": "VLLM_NO_USAGE_STATS", "value": "1"}, {"name": "DO_NOT_TRACK", "value": "1"},
                {"name": "PYTHONUNBUFFERED", "value": "1"},
                {"name": sweep.DEADLINE_ENV, "value": str(int(plan.deadline_s))},
                {"name": sweep.START_ENV, "value": START_FILE}],
        "resources": resources,
        "volumeMounts": [SHM_MOUNT, cache.mount, *scratch_mounts(),
                         {"name": "profile", "mountPath": SCRIPT_DIR, "readOnly": True}, *template_mounts(t)],
        "securityContext": {**container_security(), "runAsNonRoot": True, "runAsUser": RUN_AS_USER,
                            "runAsGroup": RUN_AS_GROUP},
    }
    pod = {
        "restartPolicy": "Never",
        "priorityClassName": priority_class_name(namespace),
        "enableServiceLinks": False,  # a Service named "vllm" would set VLLM_PORT, which vLLM reads as its own
        "automountServiceAccountToken": False,
        "securityContext": pod_security(root=cache.kind == "nvme"),
        "terminationGracePeriodSeconds": int(sweep.STOP_GRACE_S) + 30,
        "initContainers": [clock, cache.init_container(t.model_repo, image, pod_resources=cpu_memory,
                                                expected_gib=t.weights_gib, warm=False),
                           results_dir, *lora_init_containers(t, image, cache)],
        "containers": [main],
        "volumes": [shm_volume(shm), cache.volume(t.instance_type), *scratch_volumes(),
                    {"name": "profile", "configMap": {"name": job_name(plan.deployment)}}, *template_volumes(t)],
        **gpu_placement(pool),
    }
    job = {"backoffLimit": 0, "activeDeadlineSeconds": plan.deadline_s,
           "ttlSecondsAfterFinished": TTL_AFTER_FINISHED_S,
           "template": {"metadata": {"labels": labels, "annotations": dict(NO_CONSOLIDATION)}, "spec": pod}}
    return {SCRIPT_KEY: script(), SPEC_KEY: json.dumps(spec, indent=2) + "\n"}, job


class ProfileJob(pulumi.ComponentResource):
    """One model's profile Job and the ConfigMap it runs (planning.profile)."""

    def __init__(self, name: str, plan: ProfilePlan, t: Topology, namespace: str, pool: GpuPool, cache: CacheFacts,
                 labels: dict[str, str], provider=None, depends_on: list | None = None,
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__("vllm-platform:serving:ProfileJob", name, None, opts)
        child = pulumi.ResourceOptions(parent=self, provider=provider, depends_on=list(depends_on or []))
        job_labels = {**labels, "app.kubernetes.io/component": ROLE, "vllm-platform/model": plan.deployment}
        data, spec = profile_job_objects(plan, t, pool, cache, job_labels, namespace)
        meta = {"name": job_name(plan.deployment), "namespace": namespace, "labels": job_labels}
        self.config_map = k8s.core.v1.ConfigMap(f"{name}-script", metadata=meta, data=data, opts=child)
        # not awaited: the sweep takes up to planning.profile.maxMinutes; `kubectl wait` follows it (the docs).
        # A new spec (other shapes or bounds) is a new Job: a Job's template cannot change in place.
        self.job = k8s.batch.v1.Job(
            name, metadata={**meta, "annotations": {"pulumi.com/skipAwait": "true"}}, spec=spec,
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(
                depends_on=[self.config_map], replace_on_changes=["spec"], delete_before_replace=True)))
        self.register_outputs({})


class ProfilePriorityClass(pulumi.ComponentResource):
    """The stack's PriorityClass of the profile pods (priority_class_spec); made only where some Job is."""

    def __init__(self, name: str, namespace: str, labels: dict[str, str], provider=None,
                 depends_on: list | None = None, opts: pulumi.ResourceOptions | None = None):
        super().__init__("vllm-platform:serving:ProfilePriorityClass", name, None, opts)
        spec = priority_class_spec(namespace)
        self.priority_class = k8s.scheduling.v1.PriorityClass(
            name, metadata={"name": priority_class_name(namespace), "labels": labels},
            value=spec["value"], preemption_policy=spec["preemptionPolicy"], global_default=spec["globalDefault"],
            description=spec["description"],
            opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=list(depends_on or [])))
        self.register_outputs({})
