"""Step time of one vLLM engine step: a roofline per pipeline stage, plus communication and overhead.

These are planning estimates, not benchmarks. A step runs `decode` running requests (one token each)
and `prefill` prompt tokens of a chunked prefill (vLLM V1 mixes both in one step, up to
max_num_batched_tokens). Per pipeline stage it reads that stage's weights (an MoE step only the experts
its tokens route to) and the decoding requests' KV cache from HBM, and does ~2 FLOPs per active
parameter per token (at the weights' math peak) plus the attention FLOPs (at the BF16 peak); the stage
takes the larger of the two times (`HBM_EFFICIENCY` x peak bandwidth for weights, `KV_HBM_EFFICIENCY` for the
KV cache; `MFU` x peak dense FLOPS), plus two
all-reduces per layer when TP > 1 (NVLink or PCIe latency and bandwidth). Pipeline stages
run micro-batches (PP "virtual engines"): a token passes every stage in turn and crosses PP - 1 node
hand-offs that move only activations (tokens x hidden x 2 bytes) over the instance's network;
with fewer micro-batches than stages the idle stages are the pipeline bubble. Every step pays
`STEP_OVERHEAD_S` of CPU work plus `SEQ_OVERHEAD_S` per running request (scheduling, sampling,
detokenisation). The efficiencies are fitted to published vLLM measurements by
bench/calibrate.py (components/planner/calibrated.py names the date and the split).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..catalog import Accelerator, InstanceType, ModelSpec
from . import calibrated
from .memory import kv_bytes_for_request


@dataclass(frozen=True)
class Efficiency:
    hbm: float  # share of peak HBM bandwidth decode kernels reach
    mfu: float  # share of dense peak FLOPS a prefill reaches
    step_overhead_s: float  # CPU work per engine step
    seq_overhead_s: float = 0.0  # CPU work per running request per step (scheduling, sampling, detokenising)
    kv_hbm: float = 0.0  # share of peak HBM bandwidth the paged-attention kernels reach reading KV (0: `hbm`)


EFFICIENCY = Efficiency(calibrated.HBM_EFFICIENCY, calibrated.MFU, calibrated.STEP_OVERHEAD_S,
                        calibrated.SEQ_OVERHEAD_S, calibrated.KV_HBM_EFFICIENCY)
HBM_EFFICIENCY, MFU, STEP_OVERHEAD_S = EFFICIENCY.hbm, EFFICIENCY.mfu, EFFICIENCY.step_overhead_s
SEQ_OVERHEAD_S = EFFICIENCY.seq_overhead_s

ALLREDUCE_LATENCY_S = {"nvlink": 6e-6, "pcie": 25e-6}  # per all-reduce, small messages (⚠ estimate)
# One pipeline hand-off between nodes: an RDMA fabric (EFA, GPUDirect, InfiniBand/RoCE) vs NCCL's TCP
# socket transport over plain Ethernet (⚠ estimates: NCCL tests show ~10-50 us over RDMA, ~100-200 us
# over TCP), and the share of the line rate a socket transfer reaches (⚠ estimate).
FABRIC_HOP_S = 50e-6
ETHERNET_HOP_S = 150e-6
NETWORK_EFFICIENCY = 0.6
ACTIVATION_BYTES = 2  # bf16 hidden states cross the stage boundary


def _allreduce_s(acc: Accelerator, tp: int, tokens: float, hidden: int) -> float:
    if tp == 1:
        return 0.0
    alpha = ALLREDUCE_LATENCY_S["nvlink" if acc.nvlink else "pcie"]
    volume = 2 * (tp - 1) / tp * tokens * hidden * 2
    return alpha + volume / (acc.link_gbps * 1e9)


def tp_comm_s(model: ModelSpec, acc: Accelerator, tp: int, tokens: float, layers: int | None = None) -> float:
    """Two all-reduces per layer (after attention and after the MLP) over `layers` (default: all)."""
    return 2 * (model.layers if layers is None else layers) * _allreduce_s(acc, tp, tokens, model.hidden)


def weight_bytes_read_per_step(model: ModelSpec, precision: str, batch: float) -> float:
    """Weights a step streams from HBM for `batch` tokens. An MoE step touches only the experts its
    tokens route to: E x (1 - (1 - k/E)^batch) of them, in expectation."""
    total = model.weight_bytes(precision)
    if not model.is_moe:
        return total
    dense, per_expert = model.expert_split()
    bytes_per_param = total / (model.params_b * 1e9)
    touched = model.experts * (1 - (1 - model.experts_per_token / model.experts) ** max(batch, 1))
    return (dense + touched * per_expert) * bytes_per_param


def peak_flops(precision: str, acc: Accelerator) -> float:
    """Dense peak for the weights' math: FP8 tensor cores for FP8 weights where the GPU has them; MXFP4 (and FP8
    on GPUs without FP8) run as weight-only kernels with BF16 math."""
    fp8_math = precision == "fp8" and acc.supports_fp8
    return (acc.fp8_tflops if fp8_math else acc.bf16_tflops) * 1e12


def _attn_width(model: ModelSpec, decode: bool = False) -> int:
    """Attention FLOPs per context token per layer, over 4 (QK^T and PV, 2 FLOPs a multiply-add). MLA prefills
    with decompressed heads (q/k 192 wide); it decodes absorbed, q/k and v over the latent (about mla_dim)."""
    if not model.is_mla:
        return model.heads * model.head_dim
    return model.heads * (model.mla_dim if decode else 192)


def hop_s(model: ModelSpec, inst: InstanceType, tokens: float) -> float:
    """One pipeline-stage hand-off across nodes: latency plus tokens x hidden x 2 bytes at the node's
    network bandwidth. No network (an existing cluster without a fabric): infinite."""
    if inst.network_gbps <= 0:
        return math.inf
    latency = FABRIC_HOP_S if inst.fast_fabric else ETHERNET_HOP_S
    volume = tokens * model.hidden * ACTIVATION_BYTES
    return latency + volume / (inst.network_gbps * 1e9 / 8 * NETWORK_EFFICIENCY)


@dataclass(frozen=True)
class StepCost:
    """The step-time model of one replica shape at fixed contexts, with every per-token term worked out
    once (the capacity model evaluates thousands of steps per shape). Seconds per unit:"""
    pp: int
    weights_s: float  # reading the stage's weights (dense part; all of a dense model)
    expert_s: float  # reading one expert of the stage (MoE), 0 for a dense model
    experts: int
    expert_keep: float  # 1 - k/E: the chance a token leaves an expert untouched
    kv_s: float  # reading one decoding request's KV cache in the stage
    prefill_kv_s: float  # a prefill chunk's attention reads in the stage
    flop_s_decode: float  # compute per decode token in the stage
    flop_s_prefill: float  # compute per prefill token in the stage
    comm_alpha_s: float  # TP all-reduces of the stage: latency part
    comm_s_per_token: float  # TP all-reduces of the stage: per token
    hop_latency_s: float  # per pipeline hand-off (inf: no network)
    hop_s_per_token: float
    overhead_s: float
    seq_overhead_s: float

    def stage_s(self, decode: float, prefill: float) -> float:
        """One pipeline stage's forward pass over `decode` decoding requests and `prefill` prompt tokens."""
        tokens = decode + prefill
        memory = self.weights_s + decode * self.kv_s + (self.prefill_kv_s if prefill else 0.0)
        if self.experts:
            memory += self.experts * (1 - self.expert_keep ** max(tokens, 1)) * self.expert_s
        compute = decode * self.flop_s_decode + prefill * self.flop_s_prefill
        return max(memory, compute) + self.comm_alpha_s + tokens * self.comm_s_per_token

    def __call__(self, decode: float, prefill: float = 0.0) -> float:
        """Seconds between two tokens of a running request: one engine step.

        With PP, min(PP, requests) micro-batches circulate; each token passes all PP stages and PP - 1
        hand-offs, so TPOT = PP x stage time of one micro-batch + hops. Fewer micro-batches than stages
        leave stages idle (the bubble): TPOT stays PP stage-times while the work per token does not shrink.
        """
        pp = self.pp
        overhead = self.overhead_s + self.seq_overhead_s * (decode + (1 if prefill else 0))
        if pp == 1:
            return self.stage_s(decode, prefill) + overhead
        micro = max(1.0, min(pp, decode))  # continuous, so that the step time never falls as load grows
        d = decode / micro  # a prompt's chunk stays in one micro-batch (its request's virtual engine)
        hops = (pp - 1) * (self.hop_latency_s + (d + prefill) * self.hop_s_per_token)
        return pp * self.stage_s(d, prefill) + hops + overhead


def step_cost(model: ModelSpec, precision: str, acc: Accelerator, inst: InstanceType, tp: int, pp: int,
              kv_cache_dtype: str, context: float, prefill_context: float = 0.0,
              eff: Efficiency = EFFICIENCY) -> StepCost:
    """The step model for decoding requests at average `context` and prefill chunks attending to
    `prefill_context` tokens on average (see stage_s in the module docstring for the terms)."""
    hbm = acc.hbm_gbps * 1e9 * eff.hbm
    kv_bw = acc.hbm_gbps * 1e9 * (eff.kv_hbm or eff.hbm)  # paged attention's gathers reach less than GEMMs
    bw = hbm * tp * pp  # weights: a stage's share is 1/PP of the layers, each split over TP
    total = model.weight_bytes(precision)
    if model.is_moe:
        dense, per_expert = model.expert_split()
        per_param = total / (model.params_b * 1e9)
        weights, expert = dense * per_param / bw, per_expert * per_param / bw
        keep = 1 - model.experts_per_token / model.experts
    else:
        weights, expert, keep = total / bw, 0.0, 1.0
    kv = kv_bytes_for_request(model, tp, 1, kv_cache_dtype, max(1, int(context)), batched_tokens=1)
    pf = kv_bytes_for_request(model, tp, 1, kv_cache_dtype, max(1, int(prefill_context)), 1)
    active = (model.active_params_b or model.params_b) * 1e9
    flop = pp * tp * peak_flops(precision, acc) * eff.mfu
    attn = pp * tp * acc.bf16_tflops * 1e12 * eff.mfu  # attention math is BF16 whatever the weights
    width_d, width_p = (4 * model.layers * _attn_width(model, d) / attn for d in (True, False))
    layers = math.ceil(model.layers / pp)
    alpha = tp_comm_s(model, acc, tp, 0.0, layers)
    per_token = tp_comm_s(model, acc, tp, 1.0, layers) - alpha
    latency = hop_s(model, inst, 0.0)
    one = hop_s(model, inst, 1.0)
    return StepCost(pp, weights, expert, model.experts if model.is_moe else 0, keep,
                    kv / pp / kv_bw, pf / pp / kv_bw,
                    2 * active / flop + width_d * context, 2 * active / flop + width_p * prefill_context,
                    alpha, per_token, latency, one - latency if math.isfinite(one) else math.inf,
                    eff.step_overhead_s, eff.seq_overhead_s)


def step_s(model: ModelSpec, precision: str, acc: Accelerator, inst: InstanceType, tp: int, pp: int,
           kv_cache_dtype: str, decode: float, prefill: float = 0.0, context: float = 1.0,
           prefill_context: float = 0.0, eff: Efficiency = EFFICIENCY) -> float:
    """One engine step of `decode` decoding requests (average `context`) and `prefill` prompt tokens."""
    return step_cost(model, precision, acc, inst, tp, pp, kv_cache_dtype, context, prefill_context, eff)(
        decode, prefill)


def tpot_s(model: ModelSpec, precision: str, acc: Accelerator, inst: InstanceType, tp: int, pp: int,
           kv_cache_dtype: str, batch: int, context: float, eff: Efficiency = EFFICIENCY) -> float:
    """A pure decode step of `batch` requests at average `context` (no prefill beside it)."""
    return step_s(model, precision, acc, inst, tp, pp, kv_cache_dtype, batch, 0.0, context, 0.0, eff)
