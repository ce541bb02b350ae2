"""The profile Job of one model (planning.profile, docs/measurements.md "Profiling on the cluster"): a batch/v1 Job on
the model's own GPU pool that runs components/profiling/sweep.py inside the pinned vLLM image, shipped with its spec
(components/profiling/plan.py) in a ConfigMap, and writes the rows to the model cache volume (PROFILES_DIR).

The pod is a serving pod's twin where it matters to the measurement: the same image, placement (tolerations and node
affinity of the pool), cache volume at the same path, cache gate (the init container waits for the weights, or fills
a node's NVMe copy), offline Hub environment, /dev/shm, chat template and LoRA preparation, and the cache's engine
arguments (loader, pinned revision) after each shape's planned ones. It asks the GPUs of the largest shape.
profile_job_objects is pure; ProfileJob makes the two objects.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import pulumi
import pulumi_kubernetes as k8s

from ..cache.component import CacheFacts
from ..cluster.facts import GpuPool
from ..kube.k8s import (CACHE_MOUNT, RUN_AS_GROUP, RUN_AS_USER, container_security, offline_cache_env,
                        pod_security, root_container_security, scratch_env, scratch_mounts, scratch_volumes)
from ..kube.pods import SHM_MOUNT, gpu_placement, gpu_resources, hf_token_env, shm_volume
from ..planner import Topology
from ..profiling import sweep
from ..profiling.plan import ProfilePlan
from .deployment import template_mounts, template_volumes
from .fabric import single_node_env, vllm_image, vllm_image_env
from .runtime_lora import lora_init_containers

PROFILES_DIR = f"{CACHE_MOUNT}/profiles"  # /models/profiles/<deployment>/rows.json, summary.json, <shape>.json
SCRIPT_DIR = "/etc/vllm-platform/profile"
SCRIPT_KEY, SPEC_KEY = "sweep.py", "spec.json"
# Finished Jobs (and their pods, whose log holds the rows) stay a week: time to read the result after a weekend.
TTL_AFTER_FINISHED_S = 7 * 24 * 3600
ROLE = "profile"


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
                        labels: dict[str, str]) -> tuple[dict, dict]:
    """(ConfigMap data, Job spec) of one model's profile Job."""
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
    main = {
        "name": "profile", "image": image, "imagePullPolicy": "IfNotPresent",
        "command": ["python3", f"{SCRIPT_DIR}/{SCRIPT_KEY}", f"{SCRIPT_DIR}/{SPEC_KEY}"],
        "env": [*offline_cache_env(), hf_token_env(), *scratch_env(), *single_node_env(t), *vllm_image_env(t),
                {"name": "VLLM_NO_USAGE_STATS", "value": "1"}, {"name": "DO_NOT_TRACK", "value": "1"},
                {"name": "PYTHONUNBUFFERED", "value": "1"}],
        "resources": resources,
        "volumeMounts": [SHM_MOUNT, cache.mount, *scratch_mounts(),
                         {"name": "profile", "mountPath": SCRIPT_DIR, "readOnly": True}, *template_mounts(t)],
        "securityContext": {**container_security(), "runAsNonRoot": True, "runAsUser": RUN_AS_USER,
                            "runAsGroup": RUN_AS_GROUP},
    }
    pod = {
        "restartPolicy": "Never",
        "enableServiceLinks": False,  # a Service named "vllm" would set VLLM_PORT, which vLLM reads as its own
        "automountServiceAccountToken": False,
        "securityContext": pod_security(root=cache.kind == "nvme"),
        "terminationGracePeriodSeconds": int(sweep.STOP_GRACE_S) + 30,
        "initContainers": [cache.init_container(t.model_repo, image, pod_resources=cpu_memory,
                                                expected_gib=t.weights_gib, warm=False),
                           results_dir, *lora_init_containers(t, image, cache)],
        "containers": [main],
        "volumes": [shm_volume(shm), cache.volume(t.instance_type), *scratch_volumes(),
                    {"name": "profile", "configMap": {"name": job_name(plan.deployment)}}, *template_volumes(t)],
        **gpu_placement(pool),
    }
    job = {"backoffLimit": 0, "activeDeadlineSeconds": plan.deadline_s,
           "ttlSecondsAfterFinished": TTL_AFTER_FINISHED_S,
           "template": {"metadata": {"labels": labels}, "spec": pod}}
    return {SCRIPT_KEY: script(), SPEC_KEY: json.dumps(spec, indent=2) + "\n"}, job


class ProfileJob(pulumi.ComponentResource):
    """One model's profile Job and the ConfigMap it runs (planning.profile)."""

    def __init__(self, name: str, plan: ProfilePlan, t: Topology, namespace: str, pool: GpuPool, cache: CacheFacts,
                 labels: dict[str, str], provider=None, depends_on: list | None = None,
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__("vllm-platform:serving:ProfileJob", name, None, opts)
        child = pulumi.ResourceOptions(parent=self, provider=provider, depends_on=list(depends_on or []))
        job_labels = {**labels, "app.kubernetes.io/component": ROLE, "vllm-platform/model": plan.deployment}
        data, spec = profile_job_objects(plan, t, pool, cache, job_labels)
        meta = {"name": job_name(plan.deployment), "namespace": namespace, "labels": job_labels}
        self.config_map = k8s.core.v1.ConfigMap(f"{name}-script", metadata=meta, data=data, opts=child)
        # not awaited: the sweep takes up to planning.profile.maxMinutes; `kubectl wait` follows it (the docs).
        # A new spec (other shapes or bounds) is a new Job: a Job's template cannot change in place.
        self.job = k8s.batch.v1.Job(
            name, metadata={**meta, "annotations": {"pulumi.com/skipAwait": "true"}}, spec=spec,
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(
                depends_on=[self.config_map], replace_on_changes=["spec"], delete_before_replace=True)))
        self.register_outputs({})
