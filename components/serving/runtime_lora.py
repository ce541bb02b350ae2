"""Runtime LoRA (models[].engine.lora.runtimeUpdates, docs/lora.md): what the vLLM pod needs.

vLLM 0.31.0 registers POST /v1/load_lora_adapter and /v1/unload_lora_adapter only when the environment variable
VLLM_ALLOW_RUNTIME_LORA_UPDATING is "1" or "true", case-insensitive (vllm/envs.py; vllm/entrypoints/serve/lora/
api_router.py attach_router, which logs "This should ONLY be used for local development!"). The gateway refuses
both paths on the model's route (components/gateway/objects.py lora_admin_block), so only someone who reaches a pod
inside the cluster (kubectl port-forward / exec) loads or unloads an adapter, one pod at a time.

A load through those endpoints lives in one pod only; the endpoint picker's lora-affinity scorer still sends a
request for that adapter to any pod with a free slot, which answers 404. So every replica also runs vLLM's
filesystem LoRA resolver on one directory of the shared model cache, the same path in every pod: a request whose
`model` names no loaded adapter makes the pod look for `<dir>/<model>/` and load it on first use (below). Read in
the vllm 0.31.0 wheel (vllm-0.31.0-cp38-abi3-manylinux_2_28_x86_64.whl, what vllm/vllm-openai:v0.31.0 installs):
- vllm-0.31.0.dist-info/entry_points.txt: `[vllm.general_plugins] lora_filesystem_resolver =
  vllm.plugins.lora_resolvers.filesystem_resolver:register_filesystem_resolver`; vllm/plugins/__init__.py
  load_plugins_by_group loads every plugin of the group while VLLM_PLUGINS is unset (so the stack never sets it),
  and load_general_plugins calls each without catching what it raises.
- vllm/plugins/lora_resolvers/filesystem_resolver.py: register_filesystem_resolver registers it only when
  VLLM_LORA_RESOLVER_CACHE_DIR is set, and raises ValueError ("VLLM_LORA_RESOLVER_CACHE_DIR must be set to a valid
  directory ...") when it is not an existing directory: vLLM then never starts, hence the init container below
  creates it. resolve_lora(base, name) returns os.path.join(dir, name) when `adapter_config.json` there has
  "peft_type": "LORA" and "base_model_name_or_path" equal to the server's model_config.model.
- vllm/engine/arg_utils.py EngineArgs.__post_init__: with HF_HUB_OFFLINE (the serving pods' setting) the model id is
  replaced by its local snapshot, vllm/transformers_utils/repo_utils.py get_model_path (a path that exists stays
  as is): model_config.model is `$HF_HOME/hub/models--ORG--NAME/snapshots/COMMIT`, the value an adapter must name.
- vllm/entrypoints/serve/engine/serving.py _check_model: only with VLLM_ALLOW_RUNTIME_LORA_UPDATING does an unknown
  model name reach OpenAIServingModels.resolve_lora (vllm/entrypoints/openai/models/serving.py); an adapter no
  resolver finds is answered 404 "The model `NAME` does not exist." (NotFoundError, param model), one found that
  fails to load 400 "LoRA adapter 'NAME' was found but could not be loaded." (BadRequestError). A resolved adapter
  is kept in the pod's lora_requests for the pod's life: a changed copy in the directory is not read again.
- vllm/entrypoints/openai/models/serving.py init_static_loras: an --lora-modules adapter that fails to load raises
  ValueError, so the server exits and the pod crash-loops; vllm/lora/lora_model.py from_local_checkpoint reads
  adapter_config.json and adapter_model.safetensors / .bin / .pt: a `path:` adapter is waited for (below).
"""
from __future__ import annotations

import shlex

from ..cache.component import WAIT_RESOURCES, guaranteed
from ..kube.k8s import CACHE_MOUNT, HF_HOME, container_security, root_container_security

RUNTIME_LORA_ENV = "VLLM_ALLOW_RUNTIME_LORA_UPDATING"
# vLLM's own paths (api_router.py); the gateway's per-model prefix /<model>/v1 is rewritten to /v1
LORA_ADMIN_PATHS = ("/v1/load_lora_adapter", "/v1/unload_lora_adapter")
RESOLVER_ENV = "VLLM_LORA_RESOLVER_CACHE_DIR"  # vllm/envs.py, read by the filesystem resolver plugin
RESOLVER_PLUGIN = "lora_filesystem_resolver"  # its entry point name (VLLM_PLUGINS must name it, if ever set)
# On the model cache volume (kube/k8s.py CACHE_MOUNT), mounted at the same path in every pod of every replica: on a
# ReadWriteMany cache (modelCache.kind rwx) one directory all replicas read; a node-local cache is refused
# (serving/checks.py runtime_lora_cache_problems).
RESOLVER_ROOT = f"{CACHE_MOUNT}/lora"
# What vLLM needs in an adapter directory (vllm/lora/peft_helper.py, vllm/lora/lora_model.py)
ADAPTER_CONFIG = "adapter_config.json"
ADAPTER_WEIGHTS = ("adapter_model.safetensors", "adapter_model.bin", "adapter_model.pt")
INIT_NAME = "lora-adapters"
WAIT_S = 15
NOT_FOUND = "404 \"The model `NAME` does not exist.\""
NOT_LOADED = "400 \"LoRA adapter 'NAME' was found but could not be loaded.\""


def _lora(t):
    return t.engine.options.lora if t.engine is not None else None


def runtime_updates(t) -> bool:
    """Whether a Topology's engine loads adapters at run time."""
    lora = _lora(t)
    return bool(lora and lora.runtime_updates)


def resolver_dir(t) -> str:
    """The model's resolver directory, the same in every pod: RESOLVER_ROOT/<served model name>; an adapter published
    as <dir>/<name>/ is requested as `"model": "<name>"`."""
    return f"{RESOLVER_ROOT}/{t.served_model_name}"


def runtime_lora_env(t) -> list[dict]:
    if not runtime_updates(t):
        return []
    return [{"name": RUNTIME_LORA_ENV, "value": "true"}, {"name": RESOLVER_ENV, "value": resolver_dir(t)}]


def resolver_base_model(t, revision: str | None) -> tuple[str, bool]:
    """(the `base_model_name_or_path` an adapter_config.json must hold for the resolver to take it, whether that is
    exact): vLLM's model_config.model in the pod, i.e. the Hub repository's snapshot under HF_HOME (HF_HUB_OFFLINE),
    or the path vLLM loads (a source copied into the cache). Without a pinned revision the commit is whatever the
    repository's main branch was when the cache filled (`refs/main` beside the snapshots)."""
    if t.model_repo.startswith("/"):
        return t.model_repo, True
    repo = f"{HF_HOME}/hub/models--{t.model_repo.replace('/', '--')}"
    return (f"{repo}/snapshots/{revision}", True) if revision else (f"{repo}/snapshots/$(cat {repo}/refs/main)", False)


def path_adapters(t) -> list[tuple[int, str, str]]:
    """(index in engine.lora.adapters, name, path) of the adapters given by `path:` (a Hub `repo:` adapter is
    gated by the cache's wait-for-cache / prefetch, cache/component.py)."""
    lora = _lora(t)
    return [(i, n, p) for i, (n, p) in enumerate(lora.adapters) if p.startswith("/")] if lora else []


def adapter_ready_test(path: str) -> str:
    """The shell test that holds once vLLM can load the adapter at `path` (its config and its weights)."""
    q = lambda f: shlex.quote(f"{path.rstrip('/')}/{f}")  # noqa: E731
    return f"[ -f {q(ADAPTER_CONFIG)} ] && {{ {' || '.join(f'[ -f {q(w)} ]' for w in ADAPTER_WEIGHTS)}; }}"


def adapter_wait_message(i: int, name: str, path: str, kind: str) -> str:
    where = ("on the shared model cache (modelCache.kind rwx: any pod mounting it)" if kind == "rwx" else
             "on this node's own NVMe cache (modelCache.kind nvme: every GPU node needs its own copy)"
             if path.startswith(CACHE_MOUNT + "/") else "in the vLLM image")
    return (f"waiting for LoRA adapter {name} (engine.lora.adapters[{i}].path {path}): vLLM does not start without "
            f"its {ADAPTER_CONFIG} and {ADAPTER_WEIGHTS[0]} (or .bin / .pt) there; copy the adapter {where} "
            f"(docs/lora.md#adapters-given-by-path)")


def lora_init_container(t, image: str, kind: str, mount: dict, resources: dict) -> dict | None:
    """Runs after the cache's own init container, before vLLM: creates the resolver directory (runtimeUpdates;
    vLLM refuses to start without it) and waits for every `path:` adapter (vLLM's init_static_loras exits on a
    missing one). uid 0 without capabilities only where it creates the directory on a volume whose root is root's."""
    paths, runtime = path_adapters(t), runtime_updates(t)
    if not paths and not runtime:
        return None
    lines = ["set -eu"]
    if runtime:
        d = shlex.quote(resolver_dir(t))
        lines += [f"mkdir -p {d} && chmod a+rwx {d}",  # published by any uid; read by vLLM's uid 1000
                  f"echo {shlex.quote(publish_text(t))}"]
    for i, name, path in paths:
        lines.append(f"until {adapter_ready_test(path)}; do echo {shlex.quote(adapter_wait_message(i, name, path, kind))};"
                     f" sleep {WAIT_S}; done")
    return {
        "name": INIT_NAME, "image": image, "command": ["/bin/sh", "-c", "\n".join(lines)],
        "volumeMounts": [mount if runtime else {**mount, "readOnly": True}],
        "resources": resources,
        "securityContext": root_container_security() if runtime else container_security(),
    }


def publish_text(t) -> str:
    return (f"LoRA resolver: an adapter published as {resolver_dir(t)}/NAME/ ({ADAPTER_CONFIG} with \"peft_type\": "
            f"\"LORA\" and the base below, {ADAPTER_WEIGHTS[0]}) is served as \"model\": \"NAME\" by every replica, "
            f"loaded on its first request there (docs/lora.md#publishing-an-adapter)")


def lora_summary(t, revision: str | None) -> dict | None:
    """What the plan prints for a runtime-LoRA model: where adapters are published, the base they must name, and what
    a request for an adapter that is nowhere gets."""
    if not runtime_updates(t):
        return None
    base, exact = resolver_base_model(t, revision)
    text = (f"{publish_text(t)}; base_model_name_or_path \"{base}\""
            + ("" if exact else " (no models[].revision: the commit the cache filled, read it there)")
            + f"; an adapter neither loaded nor published: every replica answers {NOT_FOUND.replace('NAME', '<name>')}"
              f" and the gateway passes it on (one found that fails to load: "
              f"{NOT_LOADED.replace('NAME', '<name>')})")
    return {"resolverDir": resolver_dir(t), "env": RESOLVER_ENV, "baseModel": base, "exactBase": exact, "text": text}


def lora_init_containers(t, image: str, cache) -> list[dict]:
    """What a vLLM pod runs after the cache's init container, on every shape (a Deployment's pods, an LWS group's
    pods): lora_init_container at the wait's guaranteed resources, or nothing."""
    lora = lora_init_container(t, image, cache.kind, cache.mount, guaranteed(WAIT_RESOURCES))
    return [lora] if lora else []
