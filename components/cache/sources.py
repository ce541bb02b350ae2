"""Where a model's weights come from, and how the prefetch copies them into the model cache (models[].source).

- hf (default): `hf download REPO` into the Hugging Face cache layout (cache.prefetch_script); vLLM loads the
  repo id offline from there.
- s3 / gcs: the prefetch pulls every object under the URI with the Run:ai model streamer's `pull_files` (the
  `runai-model-streamer[s3,gcs]` package the vLLM image carries for `--load-format runai_streamer`; vLLM 0.31
  reads s3:// and gs:// through the same package, vllm/transformers_utils/runai_utils.py SUPPORTED_SCHEMES)
  into CACHE_MOUNT/sources/<slug of the URI>; vLLM loads that directory. Credentials: the pod runs as the
  stack's service account, which EKS Pod Identity or GKE Workload Identity bind to a cloud role that may read
  the bucket (the AWS SDK and Google ADC chains find them); no keys anywhere in the stack.
- pvc: the prefetch mounts the existing claim read-only and copies `path` into the cache directory the same way.

Serving pods then read the cache exactly as for a Hub model (ready marker, offline), whatever the source.
"""
from __future__ import annotations

import shlex
from dataclasses import dataclass

from ..kube.k8s import CACHE_MOUNT, HF_HOME, READY_DIR, ready_marker, slug

SOURCES_DIR = f"{CACHE_MOUNT}/sources"
# Llama repositories also ship the original consolidated checkpoint (`original/`, as large as the safetensors);
# vLLM reads only the safetensors: neither the Hub prefetch (cache.py) nor an s3 / gcs copy fetches it.
EXCLUDE = ("original/*",)
SOURCE_VOLUME = "weights-source"
SOURCE_MOUNT = "/weights-source"


@dataclass(frozen=True)
class WeightsSource:
    """A deployment's weights, as the planner and the cache see them (config/engine.py Source)."""
    kind: str = "hf"  # hf | s3 | gcs | pvc
    uri: str | None = None  # s3://bucket/prefix, gs://bucket/prefix
    claim_name: str | None = None
    path: str = ""
    service_account: str | None = None
    region: str | None = None  # s3: AWS_REGION for the streamer's S3 client

    @property
    def key(self) -> str:
        """What identifies the weights in the cache (its ready marker and directory)."""
        if self.kind in ("s3", "gcs"):
            return self.uri
        return f"pvc://{self.claim_name}/{self.path}".rstrip("/")

    @property
    def local_dir(self) -> str:
        """Where the copy lives in the cache: what vLLM loads."""
        return f"{SOURCES_DIR}/{slug(self.key)}"


def ignore_patterns(src: WeightsSource) -> list[str]:
    """What an s3 / gcs copy skips: the checkpoint's `original/` copy (cache.EXCLUDE, as the Hub prefetch). The
    streamer matches fnmatch patterns against whole object keys, the prefix included (run-ai/runai-model-streamer
    py/runai_model_streamer_s3/files/files.py and ..._gcs/files/files.py, list_files), so the prefix leads."""
    prefix = src.uri.split("://", 1)[1].partition("/")[2].strip("/")
    literal = "".join(f"[{c}]" if c in "*?[" else c for c in prefix)
    return [f"{literal}/{p}" if literal else p for p in EXCLUDE]


def pull_script(src: WeightsSource, expected_gib: float | None = None) -> str:
    """The prefetch for a non-Hub source: idempotent (the ready marker), resumable (a partial copy is replaced
    file by file), and world-readable for the uid-1000 serving pods."""
    marker, dst = ready_marker(src.local_dir), src.local_dir
    of = f" of ~{int(expected_gib * 1024)} MiB" if expected_gib else ""
    if src.kind in ("s3", "gcs"):
        py = ("from runai_model_streamer import pull_files; "  # (path, dst, allow, ignore) as vLLM calls it
              f"pull_files({src.uri!r}, {dst!r}, None, {ignore_patterns(src)!r})")
        copy = f"python3 -c {shlex.quote(py)}"
    else:
        copy = f"cp -a {shlex.quote(SOURCE_MOUNT + ('/' + src.path if src.path else ''))}/. {dst}/"
    return "\n".join([
        "set -eu",
        f'if [ -f {marker} ]; then echo "{src.key} is cached"; exit 0; fi',
        f"mkdir -p {dst}",
        f"(while sleep 60 </dev/null >/dev/null 2>&1; do echo \"progress: $(du -sm {dst} 2>/dev/null | cut -f1)"
        f" MiB{of} of {src.key}\"; done) &",
        "PROGRESS=$!; trap 'kill $PROGRESS 2>/dev/null || true' EXIT",
        copy,
        f"chmod -R a+rX {dst}",
        f'mkdir -p {READY_DIR} && touch {marker} && echo "{src.key} cached: {dst}"',
    ])


def job_volumes(src: WeightsSource) -> tuple[list[dict], list[dict]]:
    """(volumes, mounts) the prefetch needs besides the cache: the source claim, read-only."""
    if src.kind != "pvc":
        return [], []
    return ([{"name": SOURCE_VOLUME, "persistentVolumeClaim": {"claimName": src.claim_name, "readOnly": True}}],
            [{"name": SOURCE_VOLUME, "mountPath": SOURCE_MOUNT, "readOnly": True}])


def adapters_script(repos: tuple[str, ...]) -> str:
    """LoRA adapters and speculative drafts from the Hub (hub_extras), downloaded before the base model's marker is written (serving pods start
    with HF_HUB_OFFLINE=1 and vLLM resolves `--lora-modules name=REPO` from the cache)."""
    downloads = [f"hf download {shlex.quote(r)} --max-workers 8\nmkdir -p {READY_DIR} && touch {ready_marker(r)}"
                 for r in repos]
    # the script may exit early (the model cached already, or an s3 / gcs / pvc copy that never opens HF_HOME):
    # the uid-1000 serving pods must still be able to write the Hub client's lock and ref files beside them
    return "\n".join([*downloads, f"chmod -R a+rwX {HF_HOME}"]) if repos else ""


def apply_source(job_spec: dict, src: WeightsSource | None, adapters: tuple[str, ...] = ()) -> dict:
    """The prefetch Job (cache.prefetch_job_spec) for `src`: its script, the source claim and the service
    account the cloud identity is bound to; LoRA adapters from the Hub are fetched first on every run
    (`hf download` skips what is complete), so adding one to a cached model still downloads it."""
    pod = job_spec["template"]["spec"]
    container = pod["containers"][0]
    if src is not None and src.kind != "hf":
        container["command"] = ["/bin/sh", "-c", pull_script(src)]
        volumes, mounts = job_volumes(src)
        pod["volumes"] = [*pod["volumes"], *volumes]
        container["volumeMounts"] = [*container["volumeMounts"], *mounts]
        if src.service_account:
            pod["serviceAccountName"] = src.service_account
        if src.region:
            container["env"] = [*container["env"], {"name": "AWS_REGION", "value": src.region}]
    if adapters:
        body = container["command"][2]
        container["command"] = ["/bin/sh", "-c", body.replace("set -eu\n", f"set -eu\n{adapters_script(adapters)}\n", 1)]
    return job_spec


def hub_extras(t) -> tuple[str, ...]:
    """The Hub repositories a topology loads besides its model: LoRA adapters and the speculative draft / EAGLE
    head (`engine.speculative.model`); a path (starts with /) is already in the pod. Serving pods start with
    HF_HUB_OFFLINE=1, so the prefetch downloads each of them."""
    o = t.engine.options if t.engine is not None else None
    if o is None:
        return ()
    repos = [p for _, p in o.lora.adapters] if o.lora else []
    if o.speculative and o.speculative.model:
        repos.append(o.speculative.model)
    return tuple(dict.fromkeys(r for r in repos if not r.startswith("/")))


def extras_by_repo(topologies: dict) -> dict[str, tuple[str, ...]]:
    """Model repository -> the Hub extras of every deployment of it: its one prefetch Job downloads them all, and
    each serving pod waits for their markers (cache.wait_container)."""
    out: dict[str, tuple[str, ...]] = {}
    for t in topologies.values():
        out[t.model_repo] = tuple(dict.fromkeys([*out.get(t.model_repo, ()), *hub_extras(t)]))
    return {r: e for r, e in out.items() if e}


def sources_problem(models: list[str], cache_kind: str) -> str:
    """The refusal of weights sources other than the Hub (`models`: the deployments that have one) on a node-local
    cache."""
    return (f"models[].source: {', '.join(models)} copy their weights into a shared cache once; modelCache.kind "
            f"{cache_kind} has one copy per node, which this release fills from the Hub only; use kind rwx")


def check_sources(models: list, cache_kind: str) -> str | None:
    """A problem with the deployments' (ModelDeployment) sources, Hub LoRA adapters and Hub speculative drafts for
    this cache kind (the CacheError text), or None."""
    if cache_kind == "rwx":
        return None
    odd = [f"models[{i}] ({d.name})" for i, d in enumerate(models) if d.source.kind != "hf"]
    if odd:
        return sources_problem(odd, cache_kind)
    lora = [f"models[{i}] ({d.name})" for i, d in enumerate(models)
            if d.engine.lora and any(a.repo for a in d.engine.lora.adapters)]
    if lora:
        return (f"models[].engine.lora.adapters: {', '.join(lora)} name Hub adapters, which the shared cache's prefetch "
                f"Job downloads; with modelCache.kind {cache_kind} use kind rwx or give each adapter a path")
    drafts = [f"models[{i}] ({d.name}) {d.engine.speculative.model}" for i, d in enumerate(models)
              if d.engine.speculative and d.engine.speculative.model
              and not d.engine.speculative.model.startswith("/")]
    if drafts:
        return (f"models[].engine.speculative.model: {', '.join(drafts)}: a Hub draft / EAGLE head, which the shared "
                f"cache's prefetch Job downloads (serving pods run offline); with modelCache.kind {cache_kind} use "
                f"kind rwx")
    return None
