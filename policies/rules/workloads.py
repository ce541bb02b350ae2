"""Rules on Kubernetes workloads: GPU requests, /dev/shm, privileges, images, probes, the HF token,
KEDA targets, the vLLM command line."""
from __future__ import annotations

import re
from dataclasses import dataclass

from .core import ADVISORY, MANDATORY, UNKNOWN, as_dict, as_list, as_number, get, is_true, known, rule
from .facts import GPU_RESOURCE, MIN_STARTUP_BUDGET_S
from .podspec import (DAEMONSET, FABRIC_ANNOTATIONS, FABRIC_RESOURCE_PREFIXES, POD_TYPES, RAYSERVICE,
                      SERVING_TYPES, command_words, container_name, engine_containers, find_key, pod_templates,
                      requested_resources, runs_vllm_serve, serve_config)

CONFIGMAP = "kubernetes:core/v1:ConfigMap"
SCALEDOBJECT = "kubernetes:keda.sh/v1alpha1:ScaledObject"


def _each_container(resource_type: str, props: dict):
    for tpl in pod_templates(resource_type, props):
        for _, c in tpl.containers():
            yield tpl, c


@rule("gpu-requests-equal-limits", MANDATORY, POD_TYPES,
      "A container's nvidia.com/gpu request equals its limit (GPUs cannot be over-committed).",
      "set resources.requests and resources.limits of nvidia.com/gpu to the same count (or only the limit)")
def gpu_requests_equal_limits(resource_type, props):
    for tpl, c in _each_container(resource_type, props):
        res = as_dict(c.get("resources"))
        req, lim = get(res, "requests", GPU_RESOURCE), get(res, "limits", GPU_RESOURCE)
        if not known(req):
            continue
        if lim is None:
            yield f"{tpl.where} container {container_name(c)}: requests {req} {GPU_RESOURCE} but sets no limit"
        elif known(lim) and as_number(req) != as_number(lim):
            yield (f"{tpl.where} container {container_name(c)}: {GPU_RESOURCE} request {req} "
                   f"differs from limit {lim}")


@rule("shm-memory-backed", MANDATORY, SERVING_TYPES,
      "Every vLLM container mounts a memory-backed emptyDir at /dev/shm (NCCL and the engine's "
      "shared-memory queues outgrow the runtime's 64 MiB).",
      "add a volume {emptyDir: {medium: Memory, sizeLimit: ...}} and mount it at /dev/shm")
def shm_memory_backed(resource_type, props):
    for tpl, index, c in engine_containers(resource_type, props):
        volumes = {v.get("name"): v for v in as_list(tpl.spec.get("volumes")) if isinstance(v, dict)}
        mounts = [m for m in as_list(c.get("volumeMounts")) if get(m, "mountPath") == "/dev/shm"]
        if not mounts:
            if tpl.ray and index == 0:
                continue  # KubeRay mounts a Memory emptyDir at /dev/shm in the Ray container (pod.go addEmptyDir)
            yield f"{tpl.where} container {container_name(c)}: nothing is mounted at /dev/shm"
            continue
        # KubeRay keeps a /dev/shm mount the Ray container already has (addEmptyDir returns early): check it too.
        volume = volumes.get(mounts[0].get("name"))
        medium = get(volume, "emptyDir", "medium")
        if medium not in ("Memory", UNKNOWN):
            yield (f"{tpl.where} container {container_name(c)}: /dev/shm is volume "
                   f"{mounts[0].get('name')!r}, not an emptyDir with medium Memory")


@dataclass(frozen=True)
class NodeAgentException:
    """One privileged node agent the pack admits: a DaemonSet of this name in this namespace whose every
    privileged container runs exactly this image, pinned by a digest (`<image>@sha256:<64 hex>`)."""
    kind: str
    namespace: str
    name: str
    image: str


# The one exception. GKE A3 Ultra / A4 (GPUDirect RDMA over RoCE) need Google's gIB NCCL plugin on the host
# (/home/kubernetes/bin/gib, /home/kubernetes/bin/nvidia/lib64), which only a privileged pod can write: there
# is no unprivileged way to install it, and GKE's GPUDirect-RDMA how-to applies exactly this DaemonSet
# (GoogleCloudPlatform/container-engine-accelerators gpudirect-rdma/nccl-rdma-installer.yaml; ours is
# components/addons/gke_nccl.py, with its second privileged container folded into this one).
# Narrow by construction: one name, kube-system only, one image reference compared whole and pinned by
# digest (a tag can be moved; a digest cannot). The digest comes from the stack (addons.fabric.
# gibInstallerDigest: no published digest of nccl-plugin-gib:v1.1.0 could be verified offline, and the
# program refuses an A3 Ultra / A4 stack without one rather than ship a made-up pin). hostPID stays allowed
# for it: the upstream installer's entry script works on the host. A3 High / Mega need no exception:
# serving uses NCCL sockets there and no TCPX(O) installer is deployed.
PRIVILEGED_NODE_AGENT = NodeAgentException(
    kind=DAEMONSET, namespace="kube-system", name="nccl-rdma-installer",
    image="us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib:v1.1.0")


def _node_agent(resource_type: str, props: dict, tpl) -> bool:
    agent = PRIVILEGED_NODE_AGENT
    if resource_type != agent.kind or get(props, "metadata", "namespace") != agent.namespace \
            or get(props, "metadata", "name") != agent.name:
        return False
    if is_true(tpl.spec.get("hostIPC")):
        return False
    privileged = [c for _, c in tpl.containers() if is_true(get(c, "securityContext", "privileged"))]
    pinned = re.compile(re.escape(agent.image) + r"@sha256:[0-9a-f]{64}")
    return bool(privileged) and all(isinstance(c.get("image"), str) and pinned.fullmatch(c["image"])
                                    for c in privileged)


@rule("no-privileged-containers", MANDATORY, POD_TYPES,
      "No privileged container, and no pod sharing the host's PID or IPC namespace (one exception: GKE's "
      "gIB NCCL installer DaemonSet nccl-rdma-installer in kube-system, on its image pinned by digest).",
      "remove securityContext.privileged / hostPID / hostIPC; GPUs come through the device plugin")
def no_privileged(resource_type, props):
    for tpl in pod_templates(resource_type, props):
        if _node_agent(resource_type, props, tpl):
            continue
        for key in ("hostPID", "hostIPC"):
            if is_true(tpl.spec.get(key)):
                yield f"{tpl.where}: {key} is true"
        for _, c in tpl.containers():
            if is_true(get(c, "securityContext", "privileged")):
                yield f"{tpl.where} container {container_name(c)}: securityContext.privileged is true"


# IPC_LOCK lets RDMA verbs pin (register) memory; a pod that holds an RDMA device needs it.
CAPABILITY_NEEDS = {"IPC_LOCK": FABRIC_RESOURCE_PREFIXES}


@rule("no-added-capabilities", MANDATORY, POD_TYPES,
      "Containers add no Linux capabilities (SYS_PTRACE is not needed for CUDA IPC); only IPC_LOCK "
      "beside an RDMA/EFA device.",
      "remove securityContext.capabilities.add (keep drop: [ALL])")
def no_added_capabilities(resource_type, props):
    for tpl, c in _each_container(resource_type, props):
        added = [a for a in as_list(get(c, "securityContext", "capabilities", "add")) if known(a)]
        resources = requested_resources(c)
        for cap in added:
            name = str(cap).upper().removeprefix("CAP_")
            needs = CAPABILITY_NEEDS.get(name)
            if needs and any(r.startswith(needs) for r in resources):
                continue
            # GKE attaches RDMA NICs per pod through multi-networking annotations, not a device resource
            if name == "IPC_LOCK" and any(a in (tpl.annotations or {}) for a in FABRIC_ANNOTATIONS):
                continue
            yield f"{tpl.where} container {container_name(c)}: adds capability {name}"


def image_tag(image: str) -> str | None:
    """The tag of an image reference ("@..." for a digest); None when it has neither."""
    if "@" in image:
        return "@" + image.split("@", 1)[1]
    last = image.rsplit("/", 1)[-1]
    return last.split(":", 1)[1] if ":" in last else None


@rule("image-tag-pinned", MANDATORY, POD_TYPES,
      "Every image names a fixed tag or digest, never `latest` or no tag.",
      "pin the image to a release tag or a digest (components/upstream/versions.py holds them)")
def image_tag_pinned(resource_type, props):
    for tpl, c in _each_container(resource_type, props):
        image = c.get("image")
        if not isinstance(image, str) or not known(image):
            continue
        tag = image_tag(image)
        if tag is None:
            yield f"{tpl.where} container {container_name(c)}: image {image} has no tag (pulls latest)"
        elif tag == "latest":
            yield f"{tpl.where} container {container_name(c)}: image {image} uses the latest tag"


# MIN_STARTUP_BUDGET_S (facts.py, the floor components/kube/probes.py builds every probe with): a startup
# probe that gives up sooner kills vLLM before CUDA graph capture and compilation finish, even with the
# weights already on local disk.
_PROBE_DEFAULTS = {"initialDelaySeconds": 0, "periodSeconds": 10, "failureThreshold": 3}


def probe_budget_s(probe: dict) -> float | None:
    values = {k: as_number(probe.get(k, d)) for k, d in _PROBE_DEFAULTS.items()}
    if any(v is None for v in values.values()):
        return None
    return values["initialDelaySeconds"] + values["periodSeconds"] * values["failureThreshold"]


@rule("vllm-startup-probe", MANDATORY, SERVING_TYPES,
      "A container that runs `vllm serve` has a startupProbe that waits for the weights to load, "
      "so liveness and readiness never count the load as a failure.",
      f"add a startupProbe on /health sized to weight size / storage throughput (at least {MIN_STARTUP_BUDGET_S} s)")
def vllm_startup_probe(resource_type, props):
    for tpl in pod_templates(resource_type, props):
        for _, c in tpl.containers(init=False):
            # a headless vLLM (a multi-node worker: vllm/entrypoints/cli/serve.py run_headless) starts no API server
            # and has nothing to probe; its group's leader is probed, and the gang restart (rules/lws.py) acts on it
            if not runs_vllm_serve(c) or "--headless" in command_words(c):
                continue
            probe = c.get("startupProbe")
            if not isinstance(probe, dict):
                yield f"{tpl.where} container {container_name(c)}: no startupProbe"
                continue
            budget = probe_budget_s(probe)
            if budget is not None and budget < MIN_STARTUP_BUDGET_S:
                yield (f"{tpl.where} container {container_name(c)}: startupProbe gives up after {budget:g} s "
                       f"(< {MIN_STARTUP_BUDGET_S} s)")


HF_TOKEN_VARS = frozenset({"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HUGGINGFACE_HUB_TOKEN", "HUGGINGFACE_TOKEN",
                           "HF_API_TOKEN"})
HF_TOKEN_RE = re.compile(r"\bhf_[A-Za-z0-9]{30,}\b")  # the shape of a Hugging Face user access token


def _hf_env_problems(env: list, where: str):
    for e in env:
        if not isinstance(e, dict):
            continue
        name, value = e.get("name"), e.get("value")
        if name in HF_TOKEN_VARS:
            if value not in (None, ""):
                yield f"{where}: {name} is set from a literal value"
            elif get(e, "valueFrom", "configMapKeyRef") is not None:
                yield f"{where}: {name} is read from a ConfigMap"
            elif get(e, "valueFrom", "secretKeyRef") is None:
                yield f"{where}: {name} is not read from a Secret (valueFrom.secretKeyRef)"
        elif isinstance(value, str) and HF_TOKEN_RE.search(value):
            yield f"{where}: {name} holds what looks like a Hugging Face token"


@rule("hf-token-from-secret", MANDATORY, POD_TYPES | {CONFIGMAP},
      "The Hugging Face token reaches pods only by reference to a Kubernetes Secret, never as a literal "
      "in a pod spec, a ConfigMap, a command line or a Ray runtime_env.",
      "env: [{name: HF_TOKEN, valueFrom: {secretKeyRef: {name: hf-token, key: HF_TOKEN}}}]")
def hf_token_from_secret(resource_type, props):
    if resource_type == CONFIGMAP:
        for key, value in sorted(as_dict(props.get("data")).items()):
            if key in HF_TOKEN_VARS:
                yield f"ConfigMap data key {key} holds the token in clear text"
            elif isinstance(value, str) and HF_TOKEN_RE.search(value):
                yield f"ConfigMap data key {key} holds what looks like a Hugging Face token"
        return
    for tpl, c in _each_container(resource_type, props):
        where = f"{tpl.where} container {container_name(c)}"
        yield from _hf_env_problems(as_list(c.get("env")), where)
        words = command_words(c)
        if any(w == "--hf-token" or w.startswith("--hf-token=") for w in words):
            yield f"{where}: passes --hf-token on the command line"
        elif any(HF_TOKEN_RE.search(w) for w in words):
            yield f"{where}: the command line holds what looks like a Hugging Face token"
    if resource_type == RAYSERVICE:
        yield from _runtime_env_problems(serve_config(props))


_ENV_REFERENCE = re.compile(r"^\$\{[A-Za-z_][A-Za-z0-9_]*\}$")  # runtime_env expands ${VAR} from the pod's env


def _runtime_env_problems(config: dict):
    """Ray runtime_env env_vars live in the RayService CR in clear text: a token there is leaked."""
    for where, env_vars in find_key(config, "env_vars"):
        for name, value in as_dict(env_vars).items():
            literal = isinstance(value, str) and value and not _ENV_REFERENCE.match(value)
            if name in HF_TOKEN_VARS and literal:
                yield f"serveConfigV2 {where}.{name} is a literal value, not ${{{name}}} from the pod's Secret env"
            elif name not in HF_TOKEN_VARS and isinstance(value, str) and HF_TOKEN_RE.search(value):
                yield f"serveConfigV2 {where}.{name} holds what looks like a Hugging Face token"


# Kinds whose API has the /scale subresource KEDA drives (apps/v1 and core/v1 built-ins; LeaderWorkerSet
# per its CRD in schemas/crds/lws; Argo Rollouts per its CRD). KubeRay's RayCluster/RayService/RayJob
# CRDs declare only the status subresource (schemas/crds/kuberay), so KEDA cannot scale them.
SCALABLE_KINDS = {
    "Deployment": "apps", "StatefulSet": "apps", "ReplicaSet": "apps", "ReplicationController": "",
    "LeaderWorkerSet": "leaderworkerset.x-k8s.io", "Rollout": "argoproj.io",
}


@rule("keda-target-scalable", MANDATORY, {SCALEDOBJECT},
      "A KEDA ScaledObject targets a kind with a scale subresource (not RayCluster/RayService).",
      "target a Deployment, StatefulSet or LeaderWorkerSet; scale Ray Serve with its own autoscaling_config")
def keda_target_scalable(resource_type, props):
    ref = as_dict(get(props, "spec", "scaleTargetRef"))
    kind = ref.get("kind") or "Deployment"  # KEDA's default
    api_version = ref.get("apiVersion") or "apps/v1"
    if not known(kind) or not known(api_version):
        return
    group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
    if kind not in SCALABLE_KINDS:
        yield f"scaleTargetRef {api_version} {kind} {ref.get('name')} has no scale subresource"
    elif SCALABLE_KINDS[kind] != group:
        yield f"scaleTargetRef {api_version} {kind}: {kind} is served by {SCALABLE_KINDS[kind] or 'core'}/v1"


@rule("keda-replica-bounds", MANDATORY, {SCALEDOBJECT},
      "A KEDA ScaledObject's minReplicaCount is at most its maxReplicaCount (KEDA v2.20.2 "
      "apis/keda/v1alpha1/scaledobject_types.go CheckReplicaCountBoundsAreValid: its admission webhook refuses "
      "\"MinReplicaCount=N must be less than MaxReplicaCount=M\", and without the webhook the HPA it builds is invalid).",
      "set models[].replicas.min <= replicas.max (a P/D pool's bounds come from the plan: docs/autoscaling.md)")
def keda_replica_bounds(resource_type, props):
    low, high = get(props, "spec", "minReplicaCount"), get(props, "spec", "maxReplicaCount")
    if not known(low) or not known(high) or low is None or high is None:
        return
    if as_number(low) > as_number(high):
        yield f"minReplicaCount {low} is above maxReplicaCount {high}"


# From docs/vllm-0.31.md (vLLM 0.31.0, the pinned image).
VLLM_REMOVED_FLAGS = {"--speculative-model": "removed; use --speculative-config with JSON"}


@rule("vllm-current-cli", MANDATORY, POD_TYPES,
      "vLLM is started the way the pinned release (0.31) reads it: `vllm serve MODEL`, no removed flags, "
      "`--config FILE` in two words.",
      "use `vllm serve <model> --flag value` with flags from `vllm serve --help` of the pinned image")
def vllm_current_cli(resource_type, props):
    for tpl, c in _each_container(resource_type, props):
        if not runs_vllm_serve(c):
            continue
        where = f"{tpl.where} container {container_name(c)}"
        words = command_words(c)
        if "vllm.entrypoints.openai.api_server" in " ".join(words):
            yield f"{where}: runs the deprecated vllm.entrypoints.openai.api_server (it ignores a positional model)"
        for w in words:
            flag = w.split("=", 1)[0]
            if flag in VLLM_REMOVED_FLAGS:
                yield f"{where}: {flag} is {VLLM_REMOVED_FLAGS[flag]}"
            if w.startswith("--config="):
                yield f"{where}: {w} is not read by vLLM 0.31; write --config FILE"


@rule("nccl-debug-quiet", ADVISORY, POD_TYPES,
      "NCCL_DEBUG is not INFO/TRACE in a deployed workload (it floods logs on every collective).",
      "drop NCCL_DEBUG or set it to WARN; turn INFO on only while debugging")
def nccl_debug_quiet(resource_type, props):
    for tpl, c in _each_container(resource_type, props):
        for e in as_list(c.get("env")):
            if get(e, "name") == "NCCL_DEBUG" and str(get(e, "value", default="")).upper() in ("INFO", "TRACE"):
                yield f"{tpl.where} container {container_name(c)}: NCCL_DEBUG={e['value']}"


@rule("rayservice-cluster-changes-need-a-window", ADVISORY, [RAYSERVICE],
      "A RayService with upgradeStrategy None applies Serve config changes in place but never rolls a "
      "RayCluster spec change (a new image, resources, the workers' init containers): the new spec is "
      "written and the running cluster keeps the old one until someone replaces it.",
      "after changing the cluster spec, delete the active RayCluster in a maintenance window "
      "(docs/serving.md, \"Cluster changes\"), or use an upgrade strategy the GPU pool has room for")
def rayservice_cluster_changes_need_a_window(resource_type, props):
    strategy = get(props, "spec", "upgradeStrategy", "type")
    if strategy == "None":
        yield (f"RayService {get(props, 'metadata', 'name')}: upgradeStrategy None; a RayCluster spec change "
               f"needs the maintenance-window step")
