"""A replica that spans nodes: a KubeRay RayService running Ray Serve LLM with the vLLM engine.

One Ray worker pod per GPU node, so the worker group has nodes_per_replica x replicas pods. Replicas
autoscale through Ray Serve (its autoscaling_config); KubeRay's in-tree autoscaler turns the Serve
replicas' placement groups into worker pods, and the node autoscaler turns those into nodes. KEDA is
not used here: a RayService has no scale subresource.

Field names: KubeRay v1.7.0 CRD (schemas/crds/kuberay/ray.io_rayservices.yaml); Serve LLM config:
docs.ray.io serve/llm configuration reference (LLMConfig: model_loading_config, engine_kwargs,
accelerator_type, runtime_env, deployment_config.autoscaling_config) and the `ray.serve.llm:build_openai_app`
builder.

Operations (docs/serving.md, "Multi-node HA"):
- Upgrades: serving.rayUpgradeStrategy (upgrades.py). None, the default: Serve config changes (engine flags,
  autoscaling, timeouts: everything in serveConfigV2) roll in place, replica by replica; a cluster spec change
  (a new image) is not applied by KubeRay: delete the active RayCluster in a maintenance window and KubeRay
  builds it again from the new spec. NewCluster (KubeRay's own default) brings up a second RayCluster and
  switches over when it is ready: the planned fleet's nodes again, which the GPU pool's max then carries.
  The plan says which for every RayService (upgrades.upgrade_note), naming which changes need what.
- Drains: the worker pods' budget lets one worker (one node) go at a time at the minimum fleet
  (worker_min_available); the head's and the GCS Redis's budgets are in redis.py.
- Auth: `authOptions.mode: token` (KubeRay >= 1.5.1, Ray >= 2.52): the dashboard / job-submission API and
  the GCS refuse calls without the cluster's token, which KubeRay generates into a Secret and hands to the
  Ray containers, the autoscaler and its own client. The NetworkPolicy (network.py) stays the second layer.
  Serve's HTTP proxy and the metrics port are data plane and stay open to whom the policy admits.
- Start-up: the LLM replica waits RAYLLM_ENGINE_START_TIMEOUT_S (Serve LLM, default 3600 s) for the engine,
  and vLLM waits VLLM_ENGINE_READY_TIMEOUT_S (default 600 s) for its engine core; both are set from the
  start-up budget the Deployment's startupProbe uses (probes.budget, via CacheFacts.budget), through the LLM config's
  runtime_env, which Serve LLM applies to the replica and its engine workers and which an in-place Serve
  config update can change. serviceUnhealthySecondThreshold / deploymentUnhealthySecondThreshold are
  deprecated and unread since KubeRay 1.1 (ray-project/kuberay#1685) and are not set.
  The engine waits do not include GPU node provisioning: Serve starts a replica (and so its engine clock)
  only once its placement group is placed, i.e. once every worker of the replica runs on a node. The
  first deploy's deadline does include it (first_deploy_s: the new GPU nodes, the cache fill, the image
  pull, then the budget), as the Deployments' progressDeadlineSeconds does; the plan prints it and the
  Ray replica-stall alert waits for it.
"""
from __future__ import annotations

import math

import yaml

from ..cache.component import CacheFacts, cache_env
from ..cluster.facts import GpuPool
from ..config.schema import Serving
from ..gateway.objects import ray_request_router
from ..planner import Topology
from ..planner.vllm_args import VLLM_PORT
from ..upstream.versions import RAY_VERSION
from .autoscaling import kv_threshold, waiting_threshold
from .deployment import first_start_s
from ..kube.k8s import container_security, pod_security, scratch_env, scratch_mounts, scratch_volumes
from .node_pod import node_pod
from ..kube.pods import CONTAINER_SECURITY, SHM_MOUNT, hf_token_env, model_labels, pod_metadata, shm_volume
from .redis import NO_CONSOLIDATION, GcsStore

# LLMConfig.accelerator_type for the catalog's GPUs. Serve LLM adds `accelerator_type:<name>` to every
# placement-group bundle, and a Ray node advertises only the type it detects: the first upper-case
# token of the NVML device name (ray/_private/accelerators/nvidia_gpu.py, NVIDIA_GPU_NAME_PATTERN), so
# "NVIDIA A100-SXM4-80GB" is "A100". Ray's constants "A100-40G"/"A100-80G" match no detected node and
# leave the replica's placement group infeasible; the node affinity already picks the memory size.
RAY_ACCELERATOR = {"a10g": "A10G", "l4": "L4", "l40s": "L40S", "a100-40gb": "A100", "a100-80gb": "A100",
                   "h100": "H100", "h200": "H200", "b200": "B200"}
# Serve owns HTTP (the proxy on every node); the model is named by model_loading_config.
NOT_ENGINE_ARGS = {"port", "served_model_name"}
METRICS_PORT = 8080  # KubeRay's default --metrics-export-port
HEAD_PORTS = [("gcs-server", 6379), ("dashboard", 8265), ("client", 10001), ("serve", VLLM_PORT),
              ("metrics", METRICS_PORT)]
HEAD_RESOURCES = {"cpu": "4", "memory": "16Gi"}  # GCS, Serve controller, proxy and the OpenAI ingress
UPSCALE_DELAY_S = 30
DOWNSCALE_DELAY_S = 600  # a multi-node replica takes many minutes to come back: give load time to return
WORKER_GROUP = "gpu"
APP_NAME = "llm"
AUTH_MODE = "token"
# Serve marks a replica unhealthy after 3 failed checks in a row and replaces it, which for a multi-node
# replica is a full reload: give a stalled engine ~3 minutes (the pods' liveness allows ~2) before that.
# Health checks start once the replica's constructor (the engine start, bounded by the budget) returned.
HEALTH_CHECK_PERIOD_S = 30
HEALTH_CHECK_TIMEOUT_S = 30
GRACEFUL_SHUTDOWN_S = 120  # in-flight generations finish on scale-down (the worker pods' grace period)
# With GCS fault tolerance the workers keep serving while the head is away and reconnect when it is back:
# a head evicted from a drained system node is rescheduled and pulls the multi-GB Ray image there first.
# KubeRay's default is 600 s; past it the raylets exit and every replica reloads.
GCS_RECONNECT_TIMEOUT_S = 900


# Preferred, not required: a head must never wait for a Redis that is being moved.
ZONE_KEY = "topology.kubernetes.io/zone"


def worker_min_available(t: Topology) -> int:
    """The worker pods' PodDisruptionBudget: an integer minAvailable (RayCluster pods have no scale subresource,
    so maxUnavailable would fail safe to "0 allowed"; schemas/crds/kuberay/ray.io_rayclusters.yaml has only
    `status` under subresources). One worker pod per GPU node, so a node drain evicts one worker, and a
    multi-node replica dies with any one of its workers: one eviction costs one replica. npr x min - 1 lets
    exactly one worker go at the minimum fleet: a drain or a node-group upgrade (one node at a time on EKS
    and GKE) proceeds one node at a time, each eviction taking at most one replica while the others serve,
    and the next waits until KubeRay's replacement worker is Ready again. With replicas.min 1 that one
    eviction is an outage until the replica is back (a GPU node, the image, the start-up budget): the price of
    never blocking a drain, which minAvailable >= npr x min would do for ever (EKS fails the node-group
    update with PodEvictionFailure after 15 minutes; docs/serving.md, "The GPU workers")."""
    return max(0, t.nodes_per_replica * t.min_replicas - 1)


def first_deploy_s(t: Topology, cache: CacheFacts, node_ready_s: int = 0) -> int:
    """How long the first replica of a new RayService may take: its GPU nodes (ClusterFacts.gpu_node_ready_s),
    the cache filling (overlapping the nodes on a shared cache, after them on node-local NVMe), the image
    pull, then the start-up budget. The Deployments' first-deploy deadline, with the same terms."""
    return first_start_s(t, cache, node_ready_s)


# What `upgradeStrategy: None` applies in place (serveConfigV2) and what it leaves unapplied (the cluster spec).
IN_PLACE = "engine flags, autoscaling, Serve timeouts"
NEEDS_WINDOW = ("the Ray image (serving.rayImage, a Ray bump), the model revision (the workers' cache gate), head or "
                "worker resources, the instance type or nodes per replica, fabric or cache changes")


def image_pin_note(model: str, image: str) -> str | None:
    """Production images are pinned by digest; a Ray Serve LLM image named by tag only is reported."""
    if "@sha256:" in image:
        return None
    return (f"IMAGE BY TAG in production: {model} runs {image}, which can be re-pushed under the same tag; set "
            f"serving.rayImage to {image}@sha256:<digest> (`docker buildx imagetools inspect {image}`)")


def _value(text: str):
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def engine_kwargs(vllm_args: tuple[str, ...] | list[str]) -> tuple[str, str, dict]:
    """(model_source, model_id, engine_kwargs) from the planner's `vllm serve` arguments, so that the
    engine runs with exactly the flags a single-node replica would get."""
    args = list(vllm_args)
    source, rest = args[0], args[1:]
    model_id, kwargs, i = source, {}, 0
    while i < len(rest):
        flag = rest[i]
        if not flag.startswith("--"):
            raise ValueError(f"unexpected positional vLLM argument {flag!r}")
        key = flag[2:].replace("-", "_")
        if i + 1 < len(rest) and not rest[i + 1].startswith("--"):
            value, i = _value(rest[i + 1]), i + 2
        else:
            value, i = True, i + 1
        if key == "served_model_name":
            model_id = value
        elif key not in NOT_ENGINE_ARGS:
            kwargs[key] = value
    return source, model_id, kwargs


def target_ongoing_requests(t: Topology, serving: Serving) -> int:
    """Ongoing requests per replica at which Ray Serve adds a replica: the point where KEDA would scale a
    single-node replica (autoscaling.py). The engine's batch (--max-num-seqs) is the planner's concurrency
    per replica, which the KV cache holds at the SLA's request length. KV-bound plans scale at the KV
    threshold's share of that batch, before preemptions start; the others once the batch is full and the
    queue reaches KEDA's waiting threshold."""
    batch = t.concurrency_per_replica
    if t.concurrency_bound == "kv-cache":
        return max(1, math.floor(kv_threshold(t, serving) * batch))
    return batch + int(waiting_threshold(t, serving))


def max_ongoing_requests(t: Topology, serving: Serving) -> int:
    """Requests Serve hands one replica at once: its batch plus a queue of twice KEDA's waiting threshold.
    Beyond that requests wait in Serve's router, which gives them to the next free replica (a new one
    included) rather than to one engine's queue; the engine still shows a queue the alerts can see."""
    return t.concurrency_per_replica + 2 * int(waiting_threshold(t, serving))


def engine_env(budget_s: int) -> dict[str, str]:
    """How long the replica waits for its engine: the start-up budget (probes.py) for both waits."""
    return {"RAYLLM_ENGINE_START_TIMEOUT_S": str(budget_s), "VLLM_ENGINE_READY_TIMEOUT_S": str(budget_s)}


def serve_deployment_name(model_id: str) -> str:
    """The Serve deployment Serve LLM builds for a model: "LLMServer:" + the model id with "/" -> "--" and
    "." -> "_" (ray/llm/_internal/serve/core/server/builder.py, _get_deployment_name); the Serve metrics
    (ray_serve_deployment_replica_healthy) carry it as `deployment`."""
    return "LLMServer:" + model_id.replace("/", "--").replace(".", "_")


def llm_config(t: Topology, serving: Serving | None = None, budget_s: int | None = None,
               extra_args: tuple[str, ...] | list[str] = ()) -> dict:
    """budget_s: the start-up budget (probes.budget); extra_args: engine flags the model cache decides
    (loader, pinned revision; CacheFacts.engine_args)."""
    serving = serving or Serving()
    if t.engine is not None:  # the planner's typed EngineArgs: no CLI string parsed back into numbers
        e = t.engine.with_cache_flags(list(extra_args))
        source, model_id, kwargs = e.model, e.served_model_name, e.to_engine_kwargs()
    else:
        source, model_id, kwargs = engine_kwargs([*t.vllm_args, *extra_args])
    target, ceiling = target_ongoing_requests(t, serving), max_ongoing_requests(t, serving)
    cfg = {
        "model_loading_config": {"model_id": model_id, "model_source": source},
        "accelerator_type": RAY_ACCELERATOR[t.accelerator],
        "engine_kwargs": kwargs,
        # the SLA alerts, the dashboard and the KV-cache gauges read these; Serve LLM releases before the
        # V1 engine became the default shipped it off, and serving.rayImage may pin one
        "log_engine_metrics": True,
        "deployment_config": {
            "autoscaling_config": {
                "min_replicas": t.min_replicas, "max_replicas": t.max_replicas, "initial_replicas": t.replicas,
                "target_ongoing_requests": target,
                "upscale_delay_s": UPSCALE_DELAY_S, "downscale_delay_s": DOWNSCALE_DELAY_S,
            },
            "max_ongoing_requests": ceiling,
            "health_check_period_s": HEALTH_CHECK_PERIOD_S, "health_check_timeout_s": HEALTH_CHECK_TIMEOUT_S,
            "graceful_shutdown_timeout_s": GRACEFUL_SHUTDOWN_S,
            **ray_request_router(),  # issue 12 (components/gateway/objects.py): prefix-cache-aware replica routing
        },
    }
    if budget_s is not None:
        cfg["runtime_env"] = {"env_vars": engine_env(budget_s)}
    return cfg


def serve_config(t: Topology, serving: Serving | None = None, budget_s: int | None = None,
                 extra_args: tuple[str, ...] | list[str] = ()) -> str:
    app = {"name": APP_NAME, "route_prefix": "/", "import_path": "ray.serve.llm:build_openai_app",
           "args": {"llm_configs": [llm_config(t, serving, budget_s, extra_args)]}}
    return yaml.safe_dump({"applications": [app]}, sort_keys=False)


def head_group(t: Topology, cache: CacheFacts, image: str, labels: dict, system_node_selector: dict[str, str]) -> dict:
    """The head reads the model's config and tokenizer files too (building the Serve app); a shared
    cache is mounted there as well, while with a node-local cache the head fetches them from the Hub."""
    mounts, volumes = [SHM_MOUNT, *scratch_mounts()], [shm_volume(4), *scratch_volumes()]
    env = [*scratch_env(), {"name": "VLLM_NO_USAGE_STATS", "value": "1"}]
    if cache.kind == "rwx":  # offline: no token
        env[0:0] = cache_env()
        mounts.append(cache.mount)
        volumes.append(cache.volume(t.instance_type))
    else:
        env.insert(0, hf_token_env())
    pod = {
        "enableServiceLinks": False, "securityContext": pod_security(),
        "containers": [{
            "name": "ray-head", "image": image, "env": env,
            "ports": [{"name": n, "containerPort": p, "protocol": "TCP"} for n, p in HEAD_PORTS],
            "resources": {"requests": dict(HEAD_RESOURCES), "limits": dict(HEAD_RESOURCES)},
            "volumeMounts": mounts, "securityContext": container_security(),
        }],
        "volumes": volumes,
    }
    if cache.kind == "rwx":
        # Serve LLM reads the model's config and tokenizer on the head when it builds the app, offline: a head
        # started before the prefetch Job's ready marker would fail the app (DEPLOY_FAILED), as a worker would
        pod["initContainers"] = [cache.init_container(t.model_repo, image)]
    if system_node_selector:
        pod["nodeSelector"] = dict(system_node_selector)
    # no GPUs on the head: it schedules, routes and autoscales; engines run on the workers
    return {"rayStartParams": {"dashboard-host": "0.0.0.0", "num-gpus": "0"},
            "template": {"metadata": {"labels": labels}, "spec": pod}}


def worker_group(t: Topology, pool: GpuPool, cache: CacheFacts, image: str, labels: dict) -> dict:
    npr = t.nodes_per_replica
    # the head keeps its token (the autoscaler sidecar needs it); the workers make no API calls (node_pod)
    pod = node_pod(t, pool, cache, image, {
        "name": "ray-worker", "ports": [{"name": "metrics", "containerPort": METRICS_PORT, "protocol": "TCP"}]},
        grace_s=GRACEFUL_SHUTDOWN_S)
    return {
        "groupName": WORKER_GROUP,
        "replicas": npr * t.replicas, "minReplicas": npr * t.min_replicas, "maxReplicas": npr * t.max_replicas,
        "rayStartParams": {},
        "template": {"metadata": pod_metadata(labels, pool), "spec": pod},
    }


def head_stays_put(head: dict) -> dict:
    """The head is on the system pool (head_group); the node autoscalers do not move it to consolidate nodes,
    and a crashed head container restarts in place (KubeRay's own default, spelled out)."""
    template = head["template"]
    template.setdefault("metadata", {}).setdefault("annotations", {}).update(NO_CONSOLIDATION)
    template["spec"]["restartPolicy"] = "Always"
    return head


def gcs_fault_tolerance(cluster: dict, gcs: GcsStore) -> dict:
    """GCS state in the stack's Redis (redis.py), password by Secret reference; workers wait for a head
    that comes back instead of exiting after KubeRay's 600 s."""
    cluster["gcsFaultToleranceOptions"] = {
        "redisAddress": gcs.address,
        "redisPassword": {"valueFrom": {"secretKeyRef": {"name": gcs.secret, "key": gcs.password_key}}},
    }
    if gcs.selector:  # the head beside its GCS store: Redis stays in its volume's zone (redis.py)
        cluster["headGroupSpec"]["template"]["spec"]["affinity"] = {"podAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "podAffinityTerm": {
                "topologyKey": ZONE_KEY, "labelSelector": {"matchLabels": dict(gcs.selector)}}}]}}
    for group in cluster["workerGroupSpecs"]:
        for c in group["template"]["spec"]["containers"]:
            c["env"] = [*c.get("env", []), {"name": "RAY_gcs_rpc_server_reconnect_timeout_s",
                                            "value": str(GCS_RECONNECT_TIMEOUT_S)}]
    return cluster


def rayservice_spec(model: str, t: Topology, pool: GpuPool, cache: CacheFacts, image: str,
                    system_node_selector: dict[str, str], base_labels: dict[str, str], *,
                    serving: Serving | None = None, gcs: GcsStore | None = None) -> dict:
    """gcs: where the GCS persists (production), or None for an in-memory GCS."""
    serving = serving or Serving()
    cluster = {
        "rayVersion": RAY_VERSION,
        "authOptions": {"mode": AUTH_MODE},
        "enableInTreeAutoscaling": True,
        "autoscalerOptions": {
            "upscalingMode": "Default", "idleTimeoutSeconds": DOWNSCALE_DELAY_S,
            "resources": {"requests": {"cpu": "500m", "memory": "512Mi"},
                          "limits": {"cpu": "500m", "memory": "512Mi"}},
            "securityContext": CONTAINER_SECURITY,
        },
        "headGroupSpec": head_stays_put(head_group(t, cache, image, model_labels(model, "ray-head", base_labels),
                                                   system_node_selector)),
        "workerGroupSpecs": [worker_group(t, pool, cache, image, model_labels(model, "ray-worker", base_labels))],
    }
    if gcs is not None:
        gcs_fault_tolerance(cluster, gcs)
    return {
        "serveConfigV2": serve_config(t, serving, cache.budget(t).total_s, cache.engine_args(t)),
        # the OpenAI endpoint under the model's name, as for a single-node replica
        "serveService": {"metadata": {"name": model, "labels": model_labels(model, "server", base_labels)},
                         "spec": {"type": "ClusterIP",
                                  "ports": [{"name": "serve", "port": VLLM_PORT, "protocol": "TCP"}]}},
        "upgradeStrategy": {"type": serving.ray_upgrade_strategy},
        "rayClusterConfig": cluster,
    }
