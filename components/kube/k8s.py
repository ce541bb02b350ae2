"""The small Kubernetes layer every pod of the stack is built from: labels, ports, the hardened
security contexts, the writable scratch a read-only root file system needs, and the model cache's
layout (mount path, HF_HOME, ready markers, compile cache). The Deployment, the Ray pods, the
prefetch Job and the image pre-pull DaemonSet all take these from here, so a setting cannot differ
between them. Pure (no Pulumi).
"""
from __future__ import annotations

import re

from ..planner.vllm_args import VLLM_PORT

# --- labels -----------------------------------------------------------------------------------------
MODEL_LABEL = "vllm-platform/model"
ROLE_LABEL = "vllm-platform/role"


def model_labels(model: str, role: str, base: dict[str, str] | None = None) -> dict[str, str]:
    """Labels of one model's objects; `MODEL_LABEL` + `ROLE_LABEL` select its pods."""
    return {**(base or {}), "app.kubernetes.io/name": "vllm", "app.kubernetes.io/instance": model,
            MODEL_LABEL: model, ROLE_LABEL: role}


def selector(model: str, role: str) -> dict[str, str]:
    return {MODEL_LABEL: model, ROLE_LABEL: role}


# --- how the fleet was sized (policy latency-margin-in-production reads these) -----------------------
# On the serving workload's own metadata (not the pod template: a change rolls no pod).
KNEE_ANNOTATION = "vllm-platform/knee"  # "measured" (planning.measurements) or "estimated" (the capacity model)
MARGIN_ANNOTATION = "vllm-platform/latency-margin"  # the planning margin an estimated knee was judged with
# the calibration's margin for the model's class and load at the knee (planner/margins.py): the production floor
CALIBRATED_MARGIN_ANNOTATION = "vllm-platform/calibrated-margin"


def sizing_annotations(t) -> dict[str, str]:
    """The Topology's knee source and latency margin (planner/measured.py), as the workload's annotations."""
    return {KNEE_ANNOTATION: "measured" if t.knee_measured else "estimated", MARGIN_ANNOTATION: f"{t.latency_margin:g}",
            CALIBRATED_MARGIN_ANNOTATION: f"{t.calibrated_margin:g}"}


# --- ports ------------------------------------------------------------------------------------------
HTTP_PORT_NAME = "http"


def http_port() -> dict:
    """vLLM's OpenAI API (and /metrics, /health) on every single-node serving container."""
    return {"name": HTTP_PORT_NAME, "containerPort": VLLM_PORT, "protocol": "TCP"}


# --- the model cache's layout (one definition for the prefetch Job and every serving shape) ---------
CACHE_VOLUME = "model-cache"
CACHE_MOUNT = "/models"
HF_HOME = f"{CACHE_MOUNT}/hf"
READY_DIR = f"{CACHE_MOUNT}/.ready"
# vLLM's torch.compile artefacts (VLLM_CACHE_ROOT/torch_compile_cache) live beside the weights, so a
# replica started later (or restarted) reuses what the first one compiled instead of compiling again.
COMPILE_CACHE = f"{CACHE_MOUNT}/compile-cache/vllm"


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def ready_marker(repo: str, revision: str | None = None) -> str:
    """Written by the prefetch once `repo` (at `revision`) is complete; a new revision has a new marker,
    so changing it downloads again instead of serving from the old snapshot."""
    return f"{READY_DIR}/{slug(repo)}" + (f"@{revision[:12].lower()}" if revision else "")


def cache_mount(read_only: bool = False) -> dict:
    return {"name": CACHE_VOLUME, "mountPath": CACHE_MOUNT, **({"readOnly": True} if read_only else {})}


def offline_cache_env() -> list[dict]:
    """A serving process reads the weights the prefetch put in the cache and never reaches the Hub;
    its compile cache persists on the same volume."""
    return [{"name": "HF_HOME", "value": HF_HOME}, {"name": "HF_HUB_OFFLINE", "value": "1"},
            {"name": "VLLM_CACHE_ROOT", "value": COMPILE_CACHE}]


# --- hardened security contexts ---------------------------------------------------------------------
# One non-root identity for every serving process: uid 1000 is the Ray images' own `ray` user, and the
# vLLM image (root by default) runs as any uid once HOME and its caches point at writable directories.
RUN_AS_USER = 1000
RUN_AS_GROUP = 1000
# No privileged mode, no added capabilities (the seeds' SYS_PTRACE is not needed for CUDA IPC).
CONTAINER_SECURITY = {
    "privileged": False,
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
}
POD_SECURITY = {"seccompProfile": {"type": "RuntimeDefault"}}


def pod_security(root: bool = False) -> dict:
    """Pod-level context. `root`: some container of the pod must run as uid 0 (a cache fill into a
    root-owned host path, or RDMA memory registration, see container_security)."""
    if root:
        return dict(POD_SECURITY)
    return {**POD_SECURITY, "runAsNonRoot": True, "runAsUser": RUN_AS_USER, "runAsGroup": RUN_AS_GROUP}


def container_security(capabilities: tuple[str, ...] = (), read_only_root: bool = True) -> dict:
    """A serving container: drop ALL, no escalation, read-only root file system, non-root, unless it
    needs capabilities. Kubernetes only puts added capabilities into the *effective* set of a uid 0
    process (a non-root process gets them as permitted-but-inactive; there are no ambient capabilities
    in the Pod API), so a container that needs IPC_LOCK runs as root, with only IPC_LOCK."""
    out = {**CONTAINER_SECURITY, "readOnlyRootFilesystem": read_only_root}
    if capabilities:
        out["capabilities"] = {"drop": ["ALL"], "add": sorted(capabilities)}
        out.update(runAsUser=0, runAsNonRoot=False)
    else:
        out.update(runAsUser=RUN_AS_USER, runAsGroup=RUN_AS_GROUP, runAsNonRoot=True)
    return out


def root_container_security() -> dict:
    """uid 0 without any capability (the cache fill): it can write a root-owned host path it owns, no more."""
    return {**CONTAINER_SECURITY, "readOnlyRootFilesystem": True, "runAsUser": 0, "runAsNonRoot": False}


# --- writable scratch for a read-only root file system ---------------------------------------------
SCRATCH_VOLUME = "scratch"
SCRATCH = "/scratch"  # a path no image uses (mounting over /home/ray would hide the Ray image's Python)
SCRATCH_HOME = f"{SCRATCH}/home"
TMP_VOLUME = "tmp"
# Where vLLM, PyTorch, Triton, FlashInfer, Numba, Outlines and the CUDA driver write at run time;
# each would otherwise land under the read-only root (~/.cache, ~/.triton, /tmp/torchinductor_<user>).
SCRATCH_ENV = {
    "HOME": SCRATCH_HOME,
    "USER": "vllm",  # getpass.getuser() (torch inductor's default cache name) needs a name for uid 1000
    "XDG_CACHE_HOME": f"{SCRATCH_HOME}/.cache",
    "XDG_CONFIG_HOME": f"{SCRATCH_HOME}/.config",
    "TRITON_CACHE_DIR": f"{SCRATCH_HOME}/.triton/cache",
    "TORCHINDUCTOR_CACHE_DIR": f"{SCRATCH}/torchinductor",
    "NUMBA_CACHE_DIR": f"{SCRATCH}/numba",
    "OUTLINES_CACHE_DIR": f"{SCRATCH}/outlines",
    "CUDA_CACHE_PATH": f"{SCRATCH}/nv-compute-cache",
}
SCRATCH_GIB = 20  # compiled kernels and logs; /tmp takes Ray's session directory
TMP_GIB = 10


def scratch_env() -> list[dict]:
    return [{"name": k, "value": v} for k, v in SCRATCH_ENV.items()]


# A download container (the prefetch Job, a node-local cache's init container) needs only a home: the Hub
# client's caches are under HF_HOME on the cache volume, while `hf`, the AWS CLI (~/.aws/cli/cache) and gcloud
# (~/.config/gcloud) write their state under HOME, and Python's tempfile needs a writable /tmp.
HOME_KEYS = ("HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME")


def home_env() -> list[dict]:
    return [{"name": k, "value": SCRATCH_ENV[k]} for k in HOME_KEYS]


def scratch_volumes() -> list[dict]:
    return [{"name": SCRATCH_VOLUME, "emptyDir": {"sizeLimit": f"{SCRATCH_GIB}Gi"}},
            {"name": TMP_VOLUME, "emptyDir": {"sizeLimit": f"{TMP_GIB}Gi"}}]


def scratch_mounts() -> list[dict]:
    return [{"name": SCRATCH_VOLUME, "mountPath": SCRATCH}, {"name": TMP_VOLUME, "mountPath": "/tmp"}]


# --- probes -----------------------------------------------------------------------------------------
HEALTH_PATH = "/health"  # vLLM's OpenAI server: 200 once the engine is up
PROBE_PERIOD_S = 10


def probes(budget_s: int, port: str = HTTP_PORT_NAME) -> dict:
    """startupProbe / readinessProbe / livenessProbe for a vLLM container; the start-up probe allows
    exactly `budget_s` (a multiple of the period), liveness only starts after it succeeded."""
    get = {"path": HEALTH_PATH, "port": port}
    return {
        "startupProbe": {"httpGet": get, "periodSeconds": PROBE_PERIOD_S, "timeoutSeconds": 5,
                         "failureThreshold": budget_s // PROBE_PERIOD_S},
        "readinessProbe": {"httpGet": get, "periodSeconds": 10, "timeoutSeconds": 5, "failureThreshold": 3},
        # a long prefill can stall /health for a few seconds; restart only after ~2 minutes of silence
        "livenessProbe": {"httpGet": get, "periodSeconds": 20, "timeoutSeconds": 10, "failureThreshold": 6},
    }
