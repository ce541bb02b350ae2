"""How vLLM (V1 engine) budgets GPU memory, per rank (see docs/sizing.md).

requested = visible memory x gpu_memory_utilization
kv_cache  = requested - (weights + peak activation of the profile run + non-torch memory)
CUDA graphs are captured after profiling, so they must fit in the (1 - utilization) headroom.
"""
from __future__ import annotations

import math

from ..catalog import Accelerator, ModelSpec

GiB = 1024**3
BLOCK_SIZE = 16  # tokens per KV block on CUDA


def _large_defaults(acc: Accelerator) -> bool:
    """vLLM (EngineArgs batch defaults) gives GPUs of >= 70 GiB other than A100 the larger defaults."""
    return acc.visible_gib >= 70 and not acc.id.startswith("a100")


def default_max_num_seqs(acc: Accelerator) -> int:
    """vLLM's API-server default: 1024 on GPUs with >= 70 GiB other than A100, else 256."""
    return 1024 if _large_defaults(acc) else 256


def default_max_num_batched_tokens(acc: Accelerator) -> int:
    """vLLM's API-server default (chunked prefill on): 8192 on the large GPUs, else 2048. The profile
    run is one forward pass of this many tokens, and sliding-window layers keep this many extra."""
    return 8192 if _large_defaults(acc) else 2048


def stage_layers(model: ModelSpec, pp: int) -> int:
    """Layers on the busiest pipeline stage."""
    return math.ceil(model.layers / pp)


def weight_bytes_per_gpu(model: ModelSpec, precision: str, tp: int, pp: int) -> float:
    """Weights on the busiest rank: transformer layers split over TP x PP; with PP the first
    stage also holds the embedding and the last the LM head (each split over TP; a tied LM head is a
    copy of the embedding on the last stage). The precision's bytes per parameter come from the
    model (ModelSpec.weight_bytes: bf16, fp8, int8, int4, nvfp4, mxfp4)."""
    total = model.weight_bytes(precision)
    if pp == 1:
        return total / tp
    embed_bytes = model.embedding_params * 2  # 16-bit in every checkpoint we serve
    one_matrix = model.vocab * model.hidden * 2
    return (total - embed_bytes) / (tp * pp) + one_matrix / tp


def non_torch_gib(tp: int, pp: int) -> float:
    """CUDA context and cuBLAS workspace, plus NCCL buffers when ranks talk."""
    return 0.5 + (0.75 if tp * pp > 1 else 0.0)


def activation_gib(model: ModelSpec, acc: Accelerator, tp: int, batched_tokens: int | None = None,
                   max_num_seqs: int | None = None) -> float:
    """Peak of vLLM's profile run: a max_num_batched_tokens forward pass plus the sampler
    over max_num_seqs dummy requests (fp32 logits, gathered on one rank), plus allocator slack.
    batched_tokens / max_num_seqs: the stack's engine overrides (default: vLLM's for the GPU)."""
    t = batched_tokens or default_max_num_batched_tokens(acc)
    hidden_states = t * model.hidden * 2 * 16 / tp
    moe = t * model.experts_per_token * model.moe_intermediate * 2 * 2 / tp if model.is_moe else 0
    sampler = (max_num_seqs or default_max_num_seqs(acc)) * model.vocab * 4 * 2
    return (hidden_states + moe + sampler) / GiB + 0.25


def cuda_graph_gib(model: ModelSpec) -> float:
    """Captured CUDA graphs (not in vLLM's profile): ~0.5 GiB plus a little per layer."""
    return 0.5 + 0.01 * model.layers


def kv_dtype_bytes(kv_cache_dtype: str) -> int:
    return 1 if kv_cache_dtype.startswith("fp8") else 2


def kv_bytes_per_token_layer(model: ModelSpec, tp: int, kv_cache_dtype: str) -> int:
    """KV bytes one token takes in one layer on one rank.

    MLA keeps one latent vector (kv_lora_rank + qk_rope) that is NOT split by TP; otherwise K and V
    for max(1, kv_heads // TP) heads (TP above the KV-head count replicates heads).
    """
    b = kv_dtype_bytes(kv_cache_dtype)
    if model.is_mla:
        return model.mla_dim * b
    return 2 * max(1, model.kv_heads // tp) * model.head_dim * b


def kv_bytes_for_request(model: ModelSpec, tp: int, pp: int, kv_cache_dtype: str, tokens: int,
                         batched_tokens: int) -> float:
    """KV bytes one request of `tokens` tokens holds on the busiest rank. Sliding-window layers
    keep at most min(window - 1 + max_num_batched_tokens, tokens) (vLLM's SlidingWindowSpec);
    with batched_tokens=1 this is what one decode step reads: the window."""
    per_layer = kv_bytes_per_token_layer(model, tp, kv_cache_dtype)
    layers = stage_layers(model, pp)
    if not model.sliding_layers:
        return per_layer * layers * tokens
    swa = math.ceil(model.sliding_layers / pp)
    full = layers - swa
    swa_tokens = min(model.sliding_window - 1 + batched_tokens, tokens)
    return per_layer * (full * tokens + swa * swa_tokens)


def kv_bytes_per_token(model: ModelSpec, tp: int, pp: int, kv_cache_dtype: str, max_model_len: int,
                       batched_tokens: int) -> float:
    """Effective KV bytes per token per rank, at full length (exact for models without sliding windows)."""
    return kv_bytes_for_request(model, tp, pp, kv_cache_dtype, max_model_len, batched_tokens) / max_model_len


def kv_cache_tokens(available_bytes: float, model: ModelSpec, tp: int, pp: int, kv_cache_dtype: str,
                    max_model_len: int, batched_tokens: int) -> int:
    """Tokens the KV cache holds: whole blocks of BLOCK_SIZE tokens (all ranks take the smallest count)."""
    if available_bytes <= 0:
        return 0
    per_token = kv_bytes_per_token(model, tp, pp, kv_cache_dtype, max_model_len, batched_tokens)
    blocks = int(available_bytes // (per_token * BLOCK_SIZE))
    return blocks * BLOCK_SIZE
