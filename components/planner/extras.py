"""GPU memory of the engine options that add weights or KV cache: a speculative draft and LoRA slots; and the
host memory of the CPU LoRA cache (engine.lora.maxCpuLoras).

Called from the planner's memory budget (search.py): extra_weight_gib adds to the weights on the busiest
rank, kv_share scales the KV pool down to the target model's share (the draft's layers take blocks too);
lora_host_bytes is counted against the pod's memory beside the host KV tier (host_tier.py).
"""
from __future__ import annotations

from ..catalog import ModelSpec, find_model
from ..catalog.models import MTP_LAYERS, mtp_layers  # noqa: F401  (model facts; re-exported)
from .engine_args import EngineOptions
from .memory import GiB, kv_bytes_per_token_layer, stage_layers

LORA_DTYPE_BYTES = 2  # lora_dtype "auto": the model's 16-bit dtype
EAGLE3_DRAFT_VOCAB = 32_000  # EAGLE-3 heads' own LM head (draft_vocab_size of the published heads) ⚠


def _layer_params(model: ModelSpec) -> float:
    """Parameters of one decoder layer (MoE: all experts), from the total less embeddings."""
    return (model.params_b * 1e9 - model.embedding_params) / model.layers


def _intermediate(model: ModelSpec) -> float:
    """Dense MLP width: the catalog's when it has one, else what the layer's parameters leave after attention
    (gate, up, down = 3 x hidden x intermediate) ⚠ for models without it."""
    own = getattr(model, "intermediate", None)
    if own:
        return own
    attn = model.hidden * model.heads * model.head_dim * 2 + model.hidden * model.kv_heads * model.head_dim * 2
    return max(model.hidden, (_layer_params(model) - attn) / (3 * model.hidden))


def draft_weight_bytes(model: ModelSpec, precision: str, opts: EngineOptions) -> float:
    """Weights the draft adds (whole model, before TP). ngram: none; eagle: one decoder layer of the target's
    width (it shares the target's embedding and LM head); eagle3: that plus its fc (3 x hidden -> hidden) and own
    LM head; mtp: the checkpoint's MTP module; draft_model: the draft checkpoint."""
    sp = opts.speculative
    if sp is None or sp.method == "ngram":
        return 0.0
    per_param = model.weight_bytes(precision) / (model.params_b * 1e9)
    if sp.method == "mtp":
        return MTP_LAYERS.get(model.id, (0, _layer_params(model) / 1e9))[1] * 1e9 * per_param
    if sp.method in ("eagle", "eagle3"):
        dense_layer = (model.hidden * model.head_dim * (model.heads * 2 + model.kv_heads * 2)
                       + 3 * model.hidden * (_intermediate(model) if not model.is_moe else model.moe_intermediate))
        extra = 3 * model.hidden * model.hidden + EAGLE3_DRAFT_VOCAB * model.hidden if sp.method == "eagle3" else 0
        return (dense_layer + extra) * 2  # published heads are 16-bit
    draft = find_model(sp.model or "")
    if draft is not None:
        return draft.weight_bytes(draft.precisions[0])
    return (sp.draft_params_b or 0) * 1e9 * 2


def draft_kv_per_token(model: ModelSpec, tp: int, pp: int, kv_dtype: str, opts: EngineOptions) -> float:
    """KV bytes per token the draft keeps on the busiest rank (vLLM gives its layers blocks from the same pool)."""
    sp = opts.speculative
    if sp is None or sp.method == "ngram":
        return 0.0
    if sp.method in ("eagle", "eagle3", "mtp"):
        layers = mtp_layers(model) if sp.method == "mtp" else 1
        return kv_bytes_per_token_layer(model, tp, kv_dtype) * layers
    draft = find_model(sp.model or "")
    if draft is not None:
        return kv_bytes_per_token_layer(draft, tp, kv_dtype) * draft.layers
    # outside the catalog: the target's KV per parameter ⚠
    ratio = (sp.draft_params_b or 0) / model.params_b
    return kv_bytes_per_token_layer(model, tp, kv_dtype) * stage_layers(model, pp) * ratio


def kv_share(model: ModelSpec, tp: int, pp: int, kv_dtype: str, opts: EngineOptions) -> float:
    """Share of the KV pool the target model gets: target / (target + draft) bytes per token."""
    draft = draft_kv_per_token(model, tp, pp, kv_dtype, opts)
    if not draft:
        return 1.0
    target = kv_bytes_per_token_layer(model, tp, kv_dtype) * stage_layers(model, pp)
    return target / (target + draft)


def lora_bytes_per_gpu(model: ModelSpec, tp: int, pp: int, opts: EngineOptions) -> float:
    """vLLM preallocates LoRA A and B stacks for every slot (vllm/lora/layers/base_linear.py and fused_moe.py,
    create_lora_weights, vLLM 0.31.0): per wrapped linear layer max_loras x rank x (input + output) elements, the
    column-parallel outputs and row-parallel inputs split over TP. Per decoder layer, in elements / (slots x rank):
      qkv_proj  3 x hidden + (heads + 2 x kv_heads) x head_dim / TP    (three slices, each its own A)
      o_proj    heads x head_dim / TP + hidden
      MLP       2 x hidden + 2 x I / TP + I / TP + hidden               (gate_up: two slices; down)
      MoE       the MLP term for every expert, I = moe_intermediate
    times the layers on the busiest stage and lora_dtype's 2 bytes."""
    lo = opts.lora
    if lo is None:
        return 0.0
    return (lo.max_loras * lo.max_lora_rank * _lora_layer_elements(model, tp) * stage_layers(model, pp)
            * LORA_DTYPE_BYTES)


def _lora_layer_elements(model: ModelSpec, tp: int) -> float:
    """A and B elements of one decoder layer per unit of rank (the terms of lora_bytes_per_gpu)."""
    h, hd = model.hidden, model.head_dim
    attn = 3 * h + (model.heads + 2 * model.kv_heads) * hd / tp + model.heads * hd / tp + h
    if model.is_moe:
        mlp = model.experts * (3 * h + 3 * model.moe_intermediate / tp)
    else:
        mlp = 3 * h + 3 * _intermediate(model) / tp
    return attn + mlp


def lora_adapter_bytes(model: ModelSpec, rank: int) -> float:
    """One adapter at `rank` as a worker holds it in host memory: the slot formula above for one slot, unsplit
    (TP 1) and over every layer. vLLM 0.31 loads an adapter into each worker's CPU cache whole (vllm/lora/
    worker_manager.py _load_adapter: LoRAModel.from_local_checkpoint(device="cpu"), pinned in lora_model.py
    from_lora_tensors); the TP slice and the PP stage are taken only when it is copied into a GPU slot (set_lora).
    At maxLoraRank this is an upper bound: an adapter of lower rank, or one that wraps fewer modules, is smaller."""
    return rank * _lora_layer_elements(model, 1) * model.layers * LORA_DTYPE_BYTES


def cpu_loras(opts: EngineOptions) -> int:
    """Adapters each worker keeps in host memory: --max-cpu-loras, vLLM's default maxLoras when unset
    (vllm/config/lora.py LoRAConfig: max_cpu_loras None -> max_loras; below max_loras is an error)."""
    lo = opts.lora
    if lo is None:
        return 0
    return lo.max_cpu_loras or lo.max_loras


def lora_host_bytes(model: ModelSpec, tp: int, opts: EngineOptions) -> float:
    """Host memory of one pod's CPU LoRA cache: cpu_loras adapters at maxLoraRank in each of its TP workers (one
    process per GPU, each with its own LRU cache: vllm/lora/model_manager.py, capacity = max_cpu_loras)."""
    lo = opts.lora
    if lo is None:
        return 0.0
    return cpu_loras(opts) * lora_adapter_bytes(model, lo.max_lora_rank) * tp


def extra_weight_gib(model: ModelSpec, precision: str, tp: int, pp: int, opts: EngineOptions) -> float:
    """GiB per GPU the draft (split over TP like the target; it runs on the last stage) and LoRA slots add."""
    return (draft_weight_bytes(model, precision, opts) / tp + lora_bytes_per_gpu(model, tp, pp, opts)) / GiB


def describe(model: ModelSpec, precision: str, tp: int, pp: int, kv_dtype: str, opts: EngineOptions,
             pod_memory_gib: int | None = None) -> str:
    """The extra memory, as the plan shows it: GPU, and the CPU LoRA cache in the pod's host memory."""
    parts = []
    d = draft_weight_bytes(model, precision, opts) / tp / GiB
    if opts.speculative and opts.speculative.method != "ngram":
        parts.append(f"draft {d:.2f} GiB/GPU + {100 * (1 - kv_share(model, tp, pp, kv_dtype, opts)):.0f}% of the KV pool")
    lora = lora_bytes_per_gpu(model, tp, pp, opts)
    if lora:
        # preallocated before the KV cache is sized: the pool is that much smaller (search.py weights)
        tokens = int(lora // (kv_bytes_per_token_layer(model, tp, kv_dtype) * stage_layers(model, pp)))
        parts.append(f"LoRA slots {lora / GiB:.2f} GiB/GPU, ~{tokens:,} tokens less KV cache per replica")
        parts.append(describe_lora_host(model, tp, opts, pod_memory_gib))
    return "; ".join(parts)


def describe_lora_host(model: ModelSpec, tp: int, opts: EngineOptions, pod_memory_gib: int | None = None) -> str:
    """The CPU LoRA cache as the plan shows it, beside the GPU slots (counted in the pod's host memory by
    host_tier.lora_refusal_detail)."""
    lo = opts.lora
    n = cpu_loras(opts)
    field = f"maxCpuLoras {n}" if lo.max_cpu_loras else f"maxCpuLoras unset: vLLM keeps maxLoras = {n}"
    pod = f" of the pod's {pod_memory_gib} GiB" if pod_memory_gib else ""
    return (f"LoRA CPU cache ({field}) {lora_host_bytes(model, tp, opts) / GiB:.2f} GiB host memory{pod}: "
            f"{n} adapter(s) of {lora_adapter_bytes(model, lo.max_lora_rank) / 2**20:,.0f} MiB (rank "
            f"{lo.max_lora_rank}) in each of the pod's {tp} vLLM worker(s)")
