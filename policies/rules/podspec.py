"""Reading pods out of workload resources: templates, containers, GPUs, node placement, vLLM settings.

Kinds and paths are data: a new workload kind is one row in POD_TEMPLATES.
"""
from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field

import yaml

from .core import as_dict, as_list, as_number, get, known
from .facts import GPU_RESOURCE, INSTANCE_TYPES, POOL_LABEL, InstanceType, pool_name

DEPLOYMENT = "kubernetes:apps/v1:Deployment"
STATEFULSET = "kubernetes:apps/v1:StatefulSet"
DAEMONSET = "kubernetes:apps/v1:DaemonSet"
REPLICASET = "kubernetes:apps/v1:ReplicaSet"
JOB = "kubernetes:batch/v1:Job"
CRONJOB = "kubernetes:batch/v1:CronJob"
POD = "kubernetes:core/v1:Pod"
RAYSERVICE = "kubernetes:ray.io/v1:RayService"
RAYCLUSTER = "kubernetes:ray.io/v1:RayCluster"
RAYJOB = "kubernetes:ray.io/v1:RayJob"
LWS = "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet"

# type token -> where its pod templates are: (label, path); "*" walks a list.
POD_TEMPLATES: dict[str, tuple[tuple[str, tuple], ...]] = {
    DEPLOYMENT: (("template", ("spec", "template")),),
    STATEFULSET: (("template", ("spec", "template")),),
    DAEMONSET: (("template", ("spec", "template")),),
    REPLICASET: (("template", ("spec", "template")),),
    JOB: (("template", ("spec", "template")),),
    CRONJOB: (("template", ("spec", "jobTemplate", "spec", "template")),),
    POD: (("pod", ()),),
    RAYSERVICE: (("head", ("spec", "rayClusterConfig", "headGroupSpec", "template")),
                 ("worker", ("spec", "rayClusterConfig", "workerGroupSpecs", "*", "template"))),
    RAYCLUSTER: (("head", ("spec", "headGroupSpec", "template")),
                 ("worker", ("spec", "workerGroupSpecs", "*", "template"))),
    RAYJOB: (("head", ("spec", "rayClusterSpec", "headGroupSpec", "template")),
             ("worker", ("spec", "rayClusterSpec", "workerGroupSpecs", "*", "template"))),
    LWS: (("leader", ("spec", "leaderWorkerTemplate", "leaderTemplate")),
          ("worker", ("spec", "leaderWorkerTemplate", "workerTemplate"))),
}
POD_TYPES = frozenset(POD_TEMPLATES)
RAY_TYPES = frozenset({RAYSERVICE, RAYCLUSTER, RAYJOB})
# Long-running kinds that serve requests (a Job or DaemonSet never serves the model).
SERVING_TYPES = frozenset({DEPLOYMENT, STATEFULSET, POD, RAYSERVICE, RAYCLUSTER, LWS})

# Extended resources that attach a pod to an RDMA-class fabric (EFA device plugin, NVIDIA Network
# Operator's RDMA shared device plugin / SR-IOV), and annotations that attach extra networks
# (GKE multi-networking for GPUDirect-TCPX/TCPXO/RDMA, Multus).
FABRIC_RESOURCE_PREFIXES = ("vpc.amazonaws.com/efa", "rdma/", "nvidia.com/rdma", "nvidia.com/hostdev")
FABRIC_ANNOTATIONS = ("networking.gke.io/interfaces", "k8s.v1.cni.cncf.io/networks")
# Node labels that name an instance / machine type, or our GPU pool (named after its instance type).
INSTANCE_LABELS = ("node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type")
POOL_LABELS = (POOL_LABEL, "cloud.google.com/gke-nodepool", "eks.amazonaws.com/nodegroup", "karpenter.sh/nodepool")
_BY_POOL_NAME: dict[str, InstanceType] = {pool_name(i.name): i for i in INSTANCE_TYPES.values()}


@dataclass
class PodTemplate:
    where: str  # e.g. "template", "worker[0]"
    labels: dict
    annotations: dict
    spec: dict
    ray: bool = False  # a KubeRay pod: the operator adds /dev/shm, probes and ray start itself

    def containers(self, init: bool = True) -> list[tuple[int, dict]]:
        out = list(enumerate(c for c in as_list(self.spec.get("containers")) if isinstance(c, dict)))
        if init:
            out += [(-1, c) for c in as_list(self.spec.get("initContainers")) if isinstance(c, dict)]
        return out

    def gpus(self) -> int:
        """GPUs the pod asks for (the sum over its containers' limits, else requests)."""
        return int(sum(container_gpus(c) for _, c in self.containers(init=False)))


def _walk(obj, path: tuple, where: str):
    if not path:
        yield where, obj
        return
    head, rest = path[0], path[1:]
    if head == "*":
        for i, item in enumerate(as_list(obj)):
            yield from _walk(item, rest, f"{where}[{i}]")
    else:
        yield from _walk(get(obj, head), rest, where)


def pod_templates(resource_type: str, props: dict) -> list[PodTemplate]:
    out = []
    for label, path in POD_TEMPLATES.get(resource_type, ()):
        for where, tpl in _walk(props, path, label):
            if isinstance(tpl, dict) and isinstance(tpl.get("spec"), dict):
                meta = as_dict(tpl.get("metadata"))
                out.append(PodTemplate(where, as_dict(meta.get("labels")), as_dict(meta.get("annotations")),
                                       tpl["spec"], ray=resource_type in RAY_TYPES))
    return out


def container_name(c: dict) -> str:
    return str(c.get("name") or "unnamed")


def container_gpus(c: dict) -> float:
    res = as_dict(c.get("resources"))
    value = get(res, "limits", GPU_RESOURCE)
    if value is None:
        value = get(res, "requests", GPU_RESOURCE)
    return as_number(value) or 0


def requested_resources(c: dict) -> set[str]:
    res = as_dict(c.get("resources"))
    return set(as_dict(res.get("limits"))) | set(as_dict(res.get("requests")))


def has_fabric(tpl: PodTemplate) -> bool:
    """Whether the pod is attached to an RDMA-class fabric (device resources or extra networks)."""
    if any(a in tpl.annotations for a in FABRIC_ANNOTATIONS):
        return True
    return any(r.startswith(FABRIC_RESOURCE_PREFIXES) for _, c in tpl.containers() for r in requested_resources(c))


def node_label_values(tpl: PodTemplate) -> dict[str, set[str]]:
    """label -> values the pod may land on: nodeSelector and required node affinity (In)."""
    out: dict[str, set[str]] = {}
    for k, v in as_dict(tpl.spec.get("nodeSelector")).items():
        out.setdefault(k, set()).add(str(v))
    terms = get(tpl.spec, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
                "nodeSelectorTerms", default=[])
    for term in as_list(terms):
        for expr in as_list(get(term, "matchExpressions")):
            if get(expr, "operator") == "In" and get(expr, "key"):
                out.setdefault(expr["key"], set()).update(str(v) for v in as_list(expr.get("values")))
    return out


def instance_types(tpl: PodTemplate) -> list[InstanceType]:
    """Catalog instance types the pod's node placement allows (empty when it names none we know)."""
    labels = node_label_values(tpl)
    for key in INSTANCE_LABELS:
        found = [INSTANCE_TYPES[v] for v in labels.get(key, ()) if v in INSTANCE_TYPES]
        if found:
            return found
    for key in POOL_LABELS:
        found = [_BY_POOL_NAME[v] for v in labels.get(key, ()) if v in _BY_POOL_NAME]
        if found:
            return found
    return []


# --- the vLLM engine -------------------------------------------------------------------------

VLLM_IMAGE_RE = re.compile(r"(^|/)vllm-openai(:|@|$)")
_FLAG_ALIASES = {"-tp": "--tensor-parallel-size", "-pp": "--pipeline-parallel-size"}
ENGINE_KEYS = {  # vLLM setting -> its CLI flag and its engine_kwargs / EngineArgs key
    "tensor_parallel_size": "--tensor-parallel-size",
    "pipeline_parallel_size": "--pipeline-parallel-size",
    "gpu_memory_utilization": "--gpu-memory-utilization",
}


@dataclass
class EngineSettings:
    where: str  # "container vllm" or "serveConfigV2 llm_configs[0]"
    values: dict = field(default_factory=dict)  # ENGINE_KEYS name -> number

    def get(self, key: str, default=None):
        return self.values.get(key, default)


def command_words(c: dict) -> list[str]:
    """command + args as words; a shell script (`sh -c "..."`) is split into its words too."""
    words = []
    for w in as_list(c.get("command")) + as_list(c.get("args")):
        if not isinstance(w, str):
            continue
        if " " in w.strip():
            try:
                words += shlex.split(w)
            except ValueError:
                words += w.split()
        else:
            words.append(w)
    return words


def runs_vllm_serve(c: dict) -> bool:
    """The container runs the vLLM OpenAI server: `vllm serve`, the old api_server module, or the
    vllm-openai image with its own entrypoint (`vllm serve`) left in place."""
    words = command_words(c)
    joined = " ".join(words)
    if re.search(r"(^|[\s/])vllm serve\b", joined) or "vllm.entrypoints.openai" in joined:
        return True
    image = c.get("image")
    return isinstance(image, str) and bool(VLLM_IMAGE_RE.search(image)) and not as_list(c.get("command"))


def flag_values(words: list[str]) -> dict[str, str]:
    """--flag value / --flag=value pairs (the last one wins, as in argparse)."""
    out = {}
    for i, w in enumerate(words):
        if not w.startswith("-"):
            continue
        name, eq, value = w.partition("=")
        name = _FLAG_ALIASES.get(name, name)
        if eq:
            out[name] = value
        elif i + 1 < len(words) and not words[i + 1].startswith("--"):
            out[name] = words[i + 1]
        else:
            out.setdefault(name, "")
    return out


def container_engine(c: dict) -> EngineSettings | None:
    if not runs_vllm_serve(c):
        return None
    flags = flag_values(command_words(c))
    values = {k: as_number(flags[f]) for k, f in ENGINE_KEYS.items() if f in flags}
    return EngineSettings(f"container {container_name(c)}", {k: v for k, v in values.items() if v is not None})


def serve_config(props: dict) -> dict:
    """A RayService's serveConfigV2 (a YAML string in the CR) as data."""
    raw = get(props, "spec", "serveConfigV2")
    if isinstance(raw, dict):
        return raw
    if not isinstance(raw, str) or not known(raw):
        return {}
    try:
        data = yaml.safe_load(raw)
    except yaml.YAMLError:
        return {}
    return data if isinstance(data, dict) else {}


def find_key(obj, key: str, path: str = ""):
    if isinstance(obj, dict):
        for k, v in obj.items():
            here = f"{path}.{k}" if path else str(k)
            if k == key:
                yield here, v
            yield from find_key(v, key, here)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from find_key(v, key, f"{path}[{i}]")


def ray_serve_engines(props: dict) -> list[EngineSettings]:
    """engine_kwargs of every Ray Serve LLM config in the RayService (strings may hold JSON)."""
    out = []
    for where, kwargs in find_key(serve_config(props), "engine_kwargs"):
        if isinstance(kwargs, str):
            try:
                kwargs = json.loads(kwargs)
            except ValueError:
                continue
        kwargs = {k.replace("-", "_"): v for k, v in as_dict(kwargs).items()}
        values = {k: as_number(kwargs[k]) for k in ENGINE_KEYS if k in kwargs}
        out.append(EngineSettings(f"serveConfigV2 {where}", {k: v for k, v in values.items() if v is not None}))
    return out


def engines(resource_type: str, props: dict) -> list[EngineSettings]:
    """Every vLLM engine the workload starts, with the settings it gives it."""
    out = [e for tpl in pod_templates(resource_type, props) for _, c in tpl.containers(init=False)
           if (e := container_engine(c)) is not None]
    if resource_type == RAYSERVICE:
        out += ray_serve_engines(props)
    return out


def is_serving_workload(resource_type: str, props: dict) -> bool:
    return resource_type in SERVING_TYPES and bool(engines(resource_type, props))


def engine_containers(resource_type: str, props: dict) -> list[tuple[PodTemplate, int, dict]]:
    """Containers that hold a vLLM engine: those that run `vllm serve`, and in a Ray Serve LLM
    service every GPU container of the Ray pods (the engine workers live there)."""
    ray_llm = resource_type == RAYSERVICE and bool(ray_serve_engines(props))
    out = []
    for tpl in pod_templates(resource_type, props):
        for i, c in tpl.containers(init=False):
            if runs_vllm_serve(c) or (ray_llm and container_gpus(c) > 0):
                out.append((tpl, i, c))
    return out
