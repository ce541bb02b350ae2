"""Runtime LoRA (models[].engine.lora.runtimeUpdates, docs/lora.md): what the vLLM pod needs.

vLLM 0.31.0 registers POST /v1/load_lora_adapter and /v1/unload_lora_adapter only when the environment variable
VLLM_ALLOW_RUNTIME_LORA_UPDATING is "1" or "true", case-insensitive (vllm/envs.py; vllm/entrypoints/serve/lora/
api_router.py attach_router, which logs "This should ONLY be used for local development!"). The gateway refuses
both paths on the model's route (components/gateway/objects.py lora_admin_block), so only someone who reaches a pod
inside the cluster (kubectl port-forward / exec) loads or unloads an adapter, one pod at a time.
"""
from __future__ import annotations

RUNTIME_LORA_ENV = "VLLM_ALLOW_RUNTIME_LORA_UPDATING"
# vLLM's own paths (api_router.py); the gateway's per-model prefix /<model>/v1 is rewritten to /v1
LORA_ADMIN_PATHS = ("/v1/load_lora_adapter", "/v1/unload_lora_adapter")


def runtime_updates(t) -> bool:
    """Whether a Topology's engine loads adapters at run time."""
    lora = t.engine.options.lora if t.engine is not None else None
    return bool(lora and lora.runtime_updates)


def runtime_lora_env(t) -> list[dict]:
    return [{"name": RUNTIME_LORA_ENV, "value": "true"}] if runtime_updates(t) else []
