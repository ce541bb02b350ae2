"""A ModelSpec from a Hugging Face `config.json` (pure: a dict in, a ModelSpec or HfConfigError out).

The parameter count is computed from the architecture, part by part (embedding, attention with MLA's
low-rank projections, dense MLP, routed and shared experts, router, norms), not typed by hand; the
checkpoint size follows from `quantization_config`. Where the checkpoint's `model.safetensors.index.json`
is at hand its `metadata.total_size` is checked against the computed size (see check_checkpoint_size).

Conventions (docs/models.md): MLPs are gated (three matrices: gate, up, down), as in every decoder family
sized here; "active" parameters are all parameters but the routed experts a token does not reach.
Multimodal configs (`text_config` + `vision_config`): the text tower is sized exactly; the vision tower is
estimated as a ViT (per layer 4h² + 2hi) and kept in 16 bits; it holds no KV cache.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from .models import ModelSpec

# Keys transformers leaves out of a config.json when they hold the class default (a sparse config is
# valid): the defaults of the families whose published configs rely on them. Source: transformers
# src/transformers/models/<family>/configuration_<family>.py (v4.57); gemma3: Gemma3TextConfig.
CLASS_DEFAULTS: dict[str, dict] = {
    "gemma3_text": {"vocab_size": 262_208, "max_position_embeddings": 131_072, "sliding_window_pattern": 6,
                    "num_key_value_heads": 4, "head_dim": 256, "tie_word_embeddings": True,
                    "num_attention_heads": 8},
    "gemma3": {"vocab_size": 262_208, "max_position_embeddings": 131_072, "sliding_window_pattern": 6,
               "num_key_value_heads": 4, "head_dim": 256, "tie_word_embeddings": True,
               "num_attention_heads": 8},
    "llama4_text": {"interleave_moe_layer_step": 1, "no_rope_layer_interval": 4},
}
# Families with a bias on q/k/v although the config has no attention_bias key (Qwen2 code).
QKV_BIAS_TYPES = {"qwen2", "qwen2_moe", "qwen2_vl", "qwen2_5_vl", "qwen2_5_vl_text", "qwen2_vl_text"}
# Layers that are not attention over a KV cache: the planner cannot size their state.
UNSIZED_LAYER_TYPES = {"linear_attention", "mamba", "mamba2", "conv", "recurrent"}
UNSIZED_MODEL_TYPES = {"qwen3_next", "nemotron_h", "jamba", "falcon_h1", "mamba", "mamba2", "rwkv", "bamba",
                       "granitemoehybrid", "lfm2", "minimax", "minimax_m1", "t5", "bart", "whisper", "bert"}
MXFP4_BITS = 4.25  # 4-bit E2M1 values + one 8-bit E8M0 scale per 32 (OCP MX spec)
NVFP4_BITS = 4.5  # 4-bit E2M1 values + one FP8 E4M3 scale per 16


class HfConfigError(ValueError):
    """A config.json the planner cannot size: every problem, each naming its key."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("; ".join(problems))


@dataclass(frozen=True)
class Breakdown:
    """Parameter counts by part (all layers summed). `experts` = routed experts only."""
    embedding: int
    lm_head: int
    attention: int
    dense_mlp: int
    experts: int
    shared_experts: int
    router: int
    norms: int
    vision: int = 0
    mtp: int = 0  # multi-token-prediction layers in the checkpoint (not loaded unless speculating)
    active_experts: int = 0  # routed expert parameters one token reaches

    @property
    def total(self) -> int:
        """What vLLM loads: every part but the MTP layers."""
        return (self.embedding + self.lm_head + self.attention + self.dense_mlp + self.experts
                + self.shared_experts + self.router + self.norms + self.vision)

    @property
    def active(self) -> int:
        return self.total - self.experts + self.active_experts


@dataclass(frozen=True)
class Quantization:
    precision: str  # bf16 | fp8 | int8 | int4 | nvfp4 | mxfp4
    label: str  # what the checkpoint says, in words
    linear_bits: float = 16.0  # bits per parameter of a quantized linear weight, scales included
    experts_only: bool = False  # MXFP4 in gpt-oss: only the routed experts are quantized
    block: bool = False  # FP8 weight blocks of 128x128


@dataclass
class Described:
    """What parse() found, beside the spec: the count by part and the notes for the user."""
    spec: ModelSpec
    breakdown: Breakdown
    quantization: Quantization
    notes: list[str] = field(default_factory=list)


def _get(cfg: dict, *keys, default=None):
    for k in keys:
        if cfg.get(k) is not None:
            return cfg[k]
    return default


def _text_config(cfg: dict, problems: list[str]) -> tuple[dict, dict | None, list[str]]:
    """The decoder's keys (merged out of `text_config` for multimodal configs) and the vision config."""
    notes: list[str] = []
    if isinstance(cfg.get("text_config"), dict):
        text = {**cfg["text_config"]}
        for k in ("tie_word_embeddings", "quantization_config", "torch_dtype", "dtype"):
            if k not in text and k in cfg:
                text[k] = cfg[k]
        text.setdefault("model_type", f"{cfg.get('model_type', '')}_text")
        vision = cfg.get("vision_config") if isinstance(cfg.get("vision_config"), dict) else None
        notes.append(f"multimodal {cfg.get('model_type', '?')}: text tower sized from text_config" +
                     ("; vision tower estimated from vision_config" if vision else
                      "; no vision_config in this file, so no vision tower is counted"))
        return text, vision, notes
    return dict(cfg), None, notes


def _defaults(text: dict) -> dict:
    mt = text.get("model_type", "")
    return {**CLASS_DEFAULTS.get(mt, {}), **{k: v for k, v in text.items() if v is not None}}


def _int(text: dict, problems: list[str], *keys, required=True, default=None):
    v = _get(text, *keys, default=default)
    if v is None:
        if required:
            problems.append(f"{keys[0]}: missing (required to size the model)")
        return 0
    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
        problems.append(f"{keys[0]}: {v!r} is not a non-negative integer")
        return 0
    return v


def max_context(text: dict) -> int:
    """The context limit vLLM derives: max_position_embeddings, or for YaRN the original length x factor."""
    mpe = text.get("max_position_embeddings") or 0
    rs = text.get("rope_scaling") or text.get("rope_parameters") or {}
    kind = rs.get("rope_type") or rs.get("type") if isinstance(rs, dict) else None
    if kind == "yarn" and rs.get("factor") and rs.get("original_max_position_embeddings"):
        return max(mpe, int(rs["original_max_position_embeddings"] * rs["factor"]))
    return mpe


def sliding_layers(text: dict, layers: int, problems: list[str]) -> tuple[int, int]:
    """(window, layers that use it). Chunked local attention (Llama 4) counts as a window of the chunk."""
    types = text.get("layer_types")
    mt = text.get("model_type", "")
    if isinstance(types, list) and types:
        bad = sorted(set(types) & UNSIZED_LAYER_TYPES)
        if bad:
            problems.append(f"layer_types: {', '.join(bad)} layers hold a recurrent state the planner does not size")
        local = sum(1 for t in types if t in ("sliding_attention", "chunked_attention", "local_attention"))
        window = text.get("sliding_window") or text.get("attention_chunk_size") or 0
        return (window, local) if window and local else (0, 0)
    if text.get("attention_chunk_size"):  # Llama 4: every no_rope_layer_interval-th layer is global (NoPE)
        nope = text.get("no_rope_layers")
        if isinstance(nope, list) and len(nope) == layers:
            local = sum(1 for x in nope if x)  # 1 = a RoPE layer = chunked
        else:
            interval = text.get("no_rope_layer_interval", 4)
            local = layers - layers // interval
        return text["attention_chunk_size"], local
    window = text.get("sliding_window")
    if not window:
        return 0, 0
    if mt.startswith("gemma3"):
        pattern = text.get("sliding_window_pattern") or 6
        return window, layers - layers // pattern
    if "use_sliding_window" in text:  # Qwen2/3: layers from max_window_layers on slide, when switched on
        if not text["use_sliding_window"]:
            return 0, 0
        return window, max(0, layers - (text.get("max_window_layers") or 0))
    return window, layers  # Mistral v0.1 style: every layer slides


def quantization(text: dict, problems: list[str]) -> Quantization:
    q = text.get("quantization_config")
    dtype = str(_get(text, "torch_dtype", "dtype", default="bfloat16"))
    if not q:
        label = "fp16" if "float16" == dtype else "bf16"
        return Quantization("bf16", f"{label} weights (torch_dtype {dtype})")
    method = str(q.get("quant_method", "")).lower()
    if method in ("fp8", "fbgemm_fp8"):
        block = q.get("weight_block_size")
        return Quantization("fp8", f"FP8 {'block ' + 'x'.join(map(str, block)) if block else 'per-tensor/channel'}",
                            8 + (32 / (block[0] * block[1]) if block else 0), block=bool(block))
    if method == "mxfp4":
        return Quantization("mxfp4", "MXFP4 experts (gpt-oss)", MXFP4_BITS, experts_only=True)
    if method in ("awq", "gptq", "awq_marlin", "gptq_marlin"):
        bits = q.get("bits") or q.get("w_bit") or 4
        group = q.get("group_size") or q.get("q_group_size") or 128
        if bits != 4:
            problems.append(f"quantization_config.bits: {bits}-bit {method} is not sized; 4-bit is")
        group = group if group and group > 0 else 4096  # -1 = one group per row
        return Quantization("int4", f"{method.upper()} int4, group {group}", 4 + (16 + 4) / group)
    if method == "compressed-tensors":
        groups = q.get("config_groups") or {}
        first = next(iter(groups.values()), {}) if isinstance(groups, dict) else {}
        w = first.get("weights") or {}
        bits, kind = w.get("num_bits"), w.get("type", "int")
        group = w.get("group_size") or 0
        if bits == 8:
            return Quantization("fp8" if kind == "float" else "int8", f"compressed-tensors {kind}8 ({w.get('strategy')})",
                                8 + (32 / (group * group) if w.get("strategy") == "block" and group else 0),
                                block=w.get("strategy") == "block")
        if bits == 4 and kind == "float":
            return Quantization("nvfp4", "compressed-tensors NVFP4", NVFP4_BITS)
        if bits == 4:
            g = group or 128
            return Quantization("int4", f"compressed-tensors int4 W4A16, group {g}", 4 + 16 / g)
        problems.append(f"quantization_config.config_groups: weights of {bits} bits ({kind}) are not sized; "
                        f"8-bit and 4-bit are")
        return Quantization("bf16", "unsized")
    from ..upstream.vllm_registry import QUANTIZATION_METHODS
    loads = "" if method in QUANTIZATION_METHODS else ", and vLLM 0.31 cannot load it (no such quantization method)"
    problems.append(f"quantization_config.quant_method: {method!r} is not sized{loads}; supported: fp8, "
                    f"compressed-tensors, awq, gptq, mxfp4")
    return Quantization("bf16", "unsized")


def _moe_layers(text: dict, layers: int) -> int:
    """How many layers carry routed experts."""
    if text.get("first_k_dense_replace") is not None:  # DeepSeek: the first k layers are dense
        k, freq = text["first_k_dense_replace"], text.get("moe_layer_freq") or 1
        return sum(1 for i in range(layers) if i >= k and i % freq == 0)
    if text.get("interleave_moe_layer_step"):  # Llama 4: every step-th layer
        step = text["interleave_moe_layer_step"]
        return len(range(step - 1, layers, step))
    only = set(text.get("mlp_only_layers") or [])
    step = text.get("decoder_sparse_step") or 1
    return sum(1 for i in range(layers) if i not in only and (i + 1) % step == 0)


def _vision_params(vision: dict | None, text_hidden: int) -> int:
    """A ViT estimate: per layer 4h² + 2hi (+ biases and norms), patch embedding and a projector."""
    if not vision:
        return 0
    h = vision.get("hidden_size") or 0
    i = vision.get("intermediate_size") or 0
    n = vision.get("num_hidden_layers") or vision.get("depth") or 0
    if not (h and i and n):
        return 0
    p = vision.get("patch_size") or 14
    return n * (4 * h * h + 2 * h * i + 9 * h + i) + 3 * p * p * h + h * text_hidden


def count(text: dict, vision: dict | None, problems: list[str]) -> tuple[Breakdown, dict]:
    """The parameter count by part, and the shape fields the spec needs."""
    L = _int(text, problems, "num_hidden_layers", "n_layer", "n_layers")
    H = _int(text, problems, "hidden_size", "n_embd", "d_model")
    heads = _int(text, problems, "num_attention_heads", "n_head")
    kv = _int(text, problems, "num_key_value_heads", required=False, default=1 if text.get("multi_query") else heads)
    V = _int(text, problems, "vocab_size")
    hd = _int(text, problems, "head_dim", required=False, default=(H // heads) if heads else 0)
    inter = _int(text, problems, "intermediate_size", "ffn_dim", required=False, default=4 * H)
    if problems:
        return Breakdown(0, 0, 0, 0, 0, 0, 0, 0), {}
    mt = text.get("model_type", "")
    if heads and kv and heads % kv:
        problems.append(f"num_key_value_heads: {kv} does not divide num_attention_heads ({heads})")

    mla = text.get("kv_lora_rank")
    if mla:
        rope, nope = text.get("qk_rope_head_dim") or 64, text.get("qk_nope_head_dim") or 128
        v_dim, q_rank = text.get("v_head_dim") or 128, text.get("q_lora_rank")
        q = (H * q_rank + q_rank + q_rank * heads * (nope + rope)) if q_rank else H * heads * (nope + rope)
        attn = q + H * (mla + rope) + mla + mla * heads * (nope + v_dim) + heads * v_dim * H
        shape = dict(kv_heads=1, head_dim=nope + rope, mla_dim=mla + rope)
    else:
        attn = H * heads * hd + 2 * H * kv * hd + heads * hd * H
        if text.get("attention_bias") or mt in QKV_BIAS_TYPES:
            attn += heads * hd + 2 * kv * hd + (H if text.get("attention_bias") else 0)
        if text.get("use_qk_norm") or mt.startswith(("qwen3", "gemma3")):
            attn += 2 * hd
        if mt == "gpt_oss":
            attn += heads  # attention sinks
        shape = dict(kv_heads=kv, head_dim=hd, mla_dim=0)

    E = _get(text, "num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts", default=0) or 0
    k = _get(text, "num_experts_per_tok", "experts_per_token", "moe_topk", default=0) or 0
    if E and not k:
        problems.append("num_experts_per_tok: missing for a model with routed experts")
    moe_inter = _get(text, "moe_intermediate_size", default=inter) or inter
    if mt.startswith("llama4"):
        dense_inter = text.get("intermediate_size_mlp") or inter
    else:
        dense_inter = inter
    moe_L = _moe_layers(text, L) if E else 0
    dense_L = L - moe_L
    per_expert = 3 * H * moe_inter + ((2 * moe_inter + H) if mt == "gpt_oss" else 0)
    shared = 0
    if text.get("n_shared_experts"):
        shared = text["n_shared_experts"] * 3 * H * moe_inter
    elif text.get("shared_expert_intermediate_size"):
        shared = 3 * H * text["shared_expert_intermediate_size"] + H  # + its sigmoid gate
    elif mt.startswith("llama4") and E:
        shared = 3 * H * moe_inter
    router = H * E + (E if mt in ("gpt_oss", "deepseek_v3") else 0)
    norms_per_layer = (4 if mt.startswith("gemma") else 2) * H
    tied = bool(text.get("tie_word_embeddings", False))
    b = Breakdown(
        embedding=V * H, lm_head=0 if tied else V * H, attention=L * attn, dense_mlp=dense_L * 3 * H * dense_inter,
        experts=moe_L * E * per_expert, shared_experts=moe_L * shared, router=moe_L * router,
        norms=L * norms_per_layer + H, vision=_vision_params(vision, H),
        active_experts=moe_L * k * per_expert)
    mtp_n = text.get("num_nextn_predict_layers") or 0
    if mtp_n:  # a full MoE layer, its own embedding / head copies and the 2H x H projection (DeepSeek-V3)
        b = replace(b, mtp=mtp_n * (attn + E * per_expert + shared + router + 2 * V * H + 2 * H * H + 4 * H))
    shape.update(layers=L, hidden=H, heads=heads, vocab=V, experts=E, experts_per_token=k,
                 moe_intermediate=moe_inter if E else 0, tied_embeddings=tied, mtp_layers=mtp_n)
    return b, shape


def weight_bytes(b: Breakdown, q: Quantization, with_mtp: bool = False) -> float:
    """Bytes of the checkpoint's weights: quantized linear layers at their bits, the rest in 16 bits
    (embedding, LM head, norms, router, vision tower; for MXFP4 also attention)."""
    if q.experts_only:
        quantized = b.experts
    elif q.precision == "bf16":
        quantized = 0
    else:
        quantized = b.attention + b.dense_mlp + b.experts + b.shared_experts
    mtp = b.mtp if with_mtp else 0
    return quantized * q.linear_bits / 8 + (b.total - quantized) * 2 + mtp * (q.linear_bits / 8 if quantized else 2)


def parse(cfg: dict, *, name: str, repo: str, source: str) -> Described:
    """A ModelSpec for the decoder a config.json describes (HfConfigError lists every problem)."""
    problems: list[str] = []
    if not isinstance(cfg, dict):
        raise HfConfigError(["config.json: not a JSON object"])
    text, vision, notes = _text_config(cfg, problems)
    text = _defaults(text)
    mt = text.get("model_type") or cfg.get("model_type") or ""
    if cfg.get("is_encoder_decoder") or cfg.get("model_type") in UNSIZED_MODEL_TYPES or mt in UNSIZED_MODEL_TYPES:
        raise HfConfigError([f"model_type: {cfg.get('model_type')!r} is not a decoder the planner sizes "
                             f"(encoder-decoder, state-space or linear-attention layers)"])
    if text.get("block_configs"):
        raise HfConfigError(["block_configs: layers of different shapes (NAS, e.g. Nemotron Super) are not sized"])
    try:
        b, shape = count(text, vision, problems)
        q = quantization(text, problems)
        window, local = sliding_layers(text, shape.get("layers", 0), problems)
    except (TypeError, KeyError, AttributeError, ZeroDivisionError, IndexError) as e:  # a key of an unknown shape
        raise HfConfigError([f"{mt or 'config.json'}: a key has a shape the planner does not know ({e}); describe the "
                             f"model with an inline architecture instead"]) from None
    ctx = max_context(text)
    if not ctx:
        problems.append("max_position_embeddings: missing (the context limit)")
    if problems:
        raise HfConfigError(problems)
    if window and window >= ctx:
        window, local = 0, 0
    total_b = b.total / 1e9
    precisions = ("bf16", "fp8") if q.precision == "bf16" else (q.precision,)
    weights = {q.precision: weight_bytes(b, q) / 1e9}
    if vision is None and "multimodal" in " ".join(notes) and "no vision_config" not in " ".join(notes):
        notes.append("vision tower: vision_config has no hidden_size / intermediate_size / layers; not counted")
    spec = ModelSpec(
        id=name, name=name, hf_repo=repo, params_b=total_b, max_context=ctx, source=source,
        active_params_b=b.active / 1e9 if shape["experts"] else None, sliding_window=window if local else 0,
        sliding_layers=local if window else 0, precisions=precisions, weights_gb=weights,
        fp8_block_quantized=q.block and q.precision == "fp8", notes=tuple(notes + [f"weights: {q.label}"]),
        architectures=tuple(a for a in cfg.get("architectures") or () if isinstance(a, str)),
        quant_method=str((text.get("quantization_config") or {}).get("quant_method", "")).lower() or None, **shape)
    return Described(spec, b, q, list(spec.notes))


def check_checkpoint_size(d: Described, index: dict, warn_at: float = 0.05, refuse_at: float = 0.20) -> str | None:
    """Compare the computed checkpoint size with a safetensors index's `metadata.total_size`.

    Returns a warning line beyond `warn_at`; raises HfConfigError beyond `refuse_at` (the config does
    not describe those weights). The checkpoint may also hold MTP layers vLLM does not load: counted here.
    """
    total = (index.get("metadata") or {}).get("total_size") if isinstance(index, dict) else None
    if not isinstance(total, (int, float)) or total <= 0:
        raise HfConfigError(["model.safetensors.index.json: no metadata.total_size"])
    computed = weight_bytes(d.breakdown, d.quantization, with_mtp=True)
    off = computed / total - 1
    line = (f"computed {computed / 1e9:,.1f} GB of weights, the safetensors index says {total / 1e9:,.1f} GB "
            f"({off:+.1%})")
    if abs(off) > refuse_at:
        raise HfConfigError([f"model.safetensors.index.json: {line}: beyond ±{refuse_at:.0%}, the config does not "
                             f"describe these weights (wrong config.json, or an unsized quantization)"])
    return f"checkpoint size check: {line}" if abs(off) > warn_at else None


def describe(cfg: dict, index: dict | None = None, *, name: str, repo: str, source: str) -> ModelSpec:
    """parse() plus the checkpoint size check against a safetensors index; the notes go into spec.notes."""
    d = parse(cfg, name=name, repo=repo, source=source)
    notes = list(d.notes)
    if index is not None:
        warning = check_checkpoint_size(d, index)
        notes.append(warning or "checkpoint size check: within 5% of the safetensors index")
    return replace(d.spec, notes=tuple(notes))


__all__ = ["Breakdown", "Described", "HfConfigError", "Quantization", "check_checkpoint_size", "count",
           "describe", "max_context", "parse", "quantization", "sliding_layers", "weight_bytes"]
