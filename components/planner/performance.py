"""Latency estimates: a roofline for decode, a compute bound for prefill.

These are planning estimates, not benchmarks: decode reads every weight (and the batch's KV
cache) once per step, so TPOT ~ bytes / HBM bandwidth; prefill does ~2 FLOPs per parameter per
prompt token. The efficiencies below are assumptions, chosen to land near published vLLM
numbers (Llama-3.1-70B BF16 at TP 4 on H100 decodes at ~14 ms/token at low load).
"""
from __future__ import annotations

from ..catalog import Accelerator, InstanceType, ModelSpec
from .memory import kv_bytes_for_request

HBM_EFFICIENCY = 0.85  # share of peak HBM bandwidth decode kernels reach
MFU = 0.5  # share of dense peak FLOPS a prefill reaches
ALLREDUCE_LATENCY_S = {"nvlink": 6e-6, "pcie": 25e-6}  # per all-reduce, small messages
FABRIC_HOP_S = 50e-6  # one pipeline-stage hand-off across nodes
STEP_OVERHEAD_S = 0.5e-3  # scheduling, sampling, detokenisation per engine step


def _allreduce_s(acc: Accelerator, tp: int, tokens: float, hidden: int) -> float:
    if tp == 1:
        return 0.0
    alpha = ALLREDUCE_LATENCY_S["nvlink" if acc.nvlink else "pcie"]
    volume = 2 * (tp - 1) / tp * tokens * hidden * 2
    return alpha + volume / (acc.link_gbps * 1e9)


def _tp_comm_s(model: ModelSpec, acc: Accelerator, tp: int, tokens: float) -> float:
    """Two all-reduces per layer (after attention and after the MLP)."""
    return 2 * model.layers * _allreduce_s(acc, tp, tokens, model.hidden)


def weight_bytes_read_per_step(model: ModelSpec, precision: str, batch: int) -> float:
    """Weights a decode step streams from HBM. An MoE step touches only the experts its
    tokens route to: E x (1 - (1 - k/E)^batch) of them, in expectation."""
    total = model.weight_bytes(precision)
    if not model.is_moe:
        return total
    dense, per_expert = model.expert_split()
    bytes_per_param = total / (model.params_b * 1e9)
    touched = model.experts * (1 - (1 - model.experts_per_token / model.experts) ** batch)
    return (dense + touched * per_expert) * bytes_per_param


def tpot_s(model: ModelSpec, precision: str, acc: Accelerator, inst: InstanceType, tp: int, pp: int,
           kv_cache_dtype: str, batch: int, context: float) -> float:
    """Seconds per output token for each of `batch` running requests at average `context`.

    A token passes every pipeline stage in turn, so the stages' reads add up: per GPU column,
    all weights / TP plus the batch's KV cache for all layers (a sliding-window layer reads its window).
    """
    weights = weight_bytes_read_per_step(model, precision, batch) / tp
    kv = batch * kv_bytes_for_request(model, tp, 1, kv_cache_dtype, int(context), batched_tokens=1)
    mem = (weights + kv) / (acc.hbm_gbps * 1e9 * HBM_EFFICIENCY)
    hops = (pp - 1) * FABRIC_HOP_S
    return mem + _tp_comm_s(model, acc, tp, batch) + hops + STEP_OVERHEAD_S


def prefill_s(model: ModelSpec, precision: str, acc: Accelerator, tp: int, pp: int, prompt: int) -> float:
    """Seconds to prefill one prompt: the larger of its compute time over TP GPUs (pipeline stages
    run one after another for a single prompt) and one read of the weights."""
    active = (model.active_params_b or model.params_b) * 1e9
    attn_width = model.heads * (model.head_dim if not model.is_mla else 192)
    flops = 2 * active * prompt + 2 * model.layers * attn_width * prompt * prompt
    fp8_math = precision != "bf16" and acc.supports_fp8
    peak = (acc.fp8_tflops if fp8_math else acc.bf16_tflops) * 1e12
    compute = flops / (tp * peak * MFU)
    read = model.weight_bytes(precision) / tp / (acc.hbm_gbps * 1e9 * HBM_EFFICIENCY)
    return max(compute, read) + _tp_comm_s(model, acc, tp, prompt) + (pp - 1) * FABRIC_HOP_S


def ttft_s(model: ModelSpec, precision: str, acc: Accelerator, inst: InstanceType, tp: int, pp: int,
           kv_cache_dtype: str, batch: int, prompt: int, context: float) -> float:
    """A new prompt is prefilled in a step shared with the running batch's decode (chunked prefill)."""
    return (prefill_s(model, precision, acc, tp, pp, prompt)
            + tpot_s(model, precision, acc, inst, tp, pp, kv_cache_dtype, batch, context))
