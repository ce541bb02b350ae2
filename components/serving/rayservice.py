"""A replica that spans nodes: a KubeRay RayService running Ray Serve LLM with the vLLM engine.

One Ray worker pod per GPU node, so the worker group has nodes_per_replica x replicas pods. Replicas
autoscale through Ray Serve (its autoscaling_config); KubeRay's in-tree autoscaler turns the Serve
replicas' placement groups into worker pods, and the node autoscaler turns those into nodes. KEDA is
not used here: a RayService has no scale subresource.

Field names: KubeRay v1.7.0 CRD (schemas/crds/kuberay/ray.io_rayservices.yaml); Serve LLM config:
docs.ray.io serve/llm configuration reference (LLMConfig: model_loading_config, engine_kwargs,
accelerator_type, deployment_config.autoscaling_config) and the `ray.serve.llm:build_openai_app` builder.
"""
from __future__ import annotations

import yaml

from ..cache import CacheFacts, cache_env
from ..cluster.facts import GpuPool
from ..planner import Topology
from ..planner.vllm_args import VLLM_PORT
from ..versions import RAY_VERSION
from .fabric import capabilities, fabric_env, fabric_resources, host_volumes
from .k8s import container_security, pod_security, scratch_env, scratch_mounts, scratch_volumes
from .pods import (CONTAINER_SECURITY, SHM_MOUNT, gpu_placement, gpu_resources, hf_token_env, model_labels,
                   pod_metadata, shm_volume)
from .probes import engine_ready_env

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


def target_ongoing_requests(t: Topology) -> int:
    """Ray Serve adds replicas when ongoing requests per replica exceed this: the planner's
    concurrency per replica is what one replica holds within the SLA."""
    return max(1, t.concurrency_per_replica)


def llm_config(t: Topology, extra_args: tuple[str, ...] | list[str] = ()) -> dict:
    """extra_args: engine flags the model cache decides (loader, pinned revision; CacheFacts.engine_args)."""
    source, model_id, kwargs = engine_kwargs([*t.vllm_args, *extra_args])
    target = target_ongoing_requests(t)
    return {
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
            # room for a short queue in front of the engine's batch before Serve routes elsewhere
            "max_ongoing_requests": 2 * target,
        },
    }


def serve_config(t: Topology, extra_args: tuple[str, ...] | list[str] = ()) -> str:
    app = {"name": "llm", "route_prefix": "/", "import_path": "ray.serve.llm:build_openai_app",
           "args": {"llm_configs": [llm_config(t, extra_args)]}}
    return yaml.safe_dump({"applications": [app]}, sort_keys=False)


def _ray_env(t: Topology, cache: CacheFacts) -> list[dict]:
    """Workers read the cache offline (no HF_TOKEN); their engines get the same start-up budget as the
    cache's budget for this model (VLLM_ENGINE_READY_TIMEOUT_S) and writable scratch."""
    return [*cache_env(), engine_ready_env(cache.budget(t).total_s), *scratch_env(),
            {"name": "VLLM_NO_USAGE_STATS", "value": "1"}]


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
    if system_node_selector:
        pod["nodeSelector"] = dict(system_node_selector)
    # no GPUs on the head: it schedules, routes and autoscales; engines run on the workers
    return {"rayStartParams": {"dashboard-host": "0.0.0.0", "num-gpus": "0"},
            "template": {"metadata": {"labels": labels}, "spec": pod}}


def worker_group(t: Topology, pool: GpuPool, cache: CacheFacts, image: str, labels: dict) -> dict:
    npr = t.nodes_per_replica
    gpus = t.gpus_per_replica // npr
    caps = capabilities(t)  # IPC_LOCK on RDMA fabrics: that worker runs as uid 0 (fabric.py)
    host_vols, host_mounts = host_volumes(t)
    resources = gpu_resources(gpus, t.pod_cpu, t.pod_memory_gib, fabric_resources(t, pool))
    cpu_memory = {k: {r: v for r, v in resources[k].items() if r in ("cpu", "memory")} for k in ("requests", "limits")}
    pod = {
        # no Kubernetes API calls from the engines (the head keeps its token: the autoscaler sidecar needs it)
        "enableServiceLinks": False, "automountServiceAccountToken": False,
        "securityContext": pod_security(root=bool(caps) or cache.kind == "nvme"),
        "terminationGracePeriodSeconds": 120,
        "initContainers": [cache.init_container(t.model_repo, image, pod_resources=cpu_memory,
                                                expected_gib=t.weights_gib, warm=cache.warms(t))],
        "containers": [{
            "name": "ray-worker", "image": image,
            "env": [*_ray_env(t, cache), *fabric_env(t)],
            "ports": [{"name": "metrics", "containerPort": METRICS_PORT, "protocol": "TCP"}],
            "resources": resources,
            "volumeMounts": [SHM_MOUNT, cache.mount, *scratch_mounts(), *host_mounts],
            "securityContext": container_security(caps),
        }],
        "volumes": [shm_volume(t.shm_gib), cache.volume(t.instance_type), *scratch_volumes(), *host_vols],
        **gpu_placement(pool),
    }
    return {
        "groupName": WORKER_GROUP,
        "replicas": npr * t.replicas, "minReplicas": npr * t.min_replicas, "maxReplicas": npr * t.max_replicas,
        "rayStartParams": {},
        "template": {"metadata": pod_metadata(labels, pool), "spec": pod},
    }


def rayservice_spec(model: str, t: Topology, pool: GpuPool, cache: CacheFacts, image: str,
                    system_node_selector: dict[str, str], base_labels: dict[str, str]) -> dict:
    return {
        "serveConfigV2": serve_config(t, cache.engine_args(t)),
        # the OpenAI endpoint under the model's name, as for a single-node replica
        "serveService": {"metadata": {"name": model, "labels": model_labels(model, "server", base_labels)},
                         "spec": {"type": "ClusterIP",
                                  "ports": [{"name": "serve", "port": VLLM_PORT, "protocol": "TCP"}]}},
        "rayClusterConfig": {
            "rayVersion": RAY_VERSION,
            "enableInTreeAutoscaling": True,
            "autoscalerOptions": {
                "upscalingMode": "Default", "idleTimeoutSeconds": DOWNSCALE_DELAY_S,
                "resources": {"requests": {"cpu": "500m", "memory": "512Mi"},
                              "limits": {"cpu": "500m", "memory": "512Mi"}},
                "securityContext": CONTAINER_SECURITY,
            },
            "headGroupSpec": head_group(t, cache, image, model_labels(model, "ray-head", base_labels),
                                        system_node_selector),
            "workerGroupSpecs": [worker_group(t, pool, cache, image, model_labels(model, "ray-worker", base_labels))],
        },
    }
