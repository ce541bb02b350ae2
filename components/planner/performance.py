"""Step time of one vLLM engine step: a roofline per pipeline stage, plus communication and overhead.

These are planning estimates, not benchmarks. A step runs `decode` running requests (one token each)
and `prefill` prompt tokens of a chunked prefill (vLLM V1 mixes both in one step, up to
max_num_batched_tokens). Per pipeline stage it reads that stage's weights (an MoE step only the experts
its tokens route to) and the decoding requests' KV cache from HBM, and does ~2 FLOPs per active
parameter per token (at the weights' math peak) plus the attention FLOPs (at the BF16 peak); the stage
takes the larger of the two times (Efficiency.hbm x peak bandwidth for weights, .kv_hbm for the KV cache; .mfu
x peak dense FLOPS), plus two all-reduces per layer when TP > 1 (NVLink or PCIe latency and bandwidth). Pipeline stages
run micro-batches (PP "virtual engines"): a token passes every stage in turn and crosses PP - 1 node
hand-offs that move only activations (tokens x hidden x 2 bytes) over the instance's network;
with fewer micro-batches than stages the idle stages are the pipeline bubble. Every step pays
.step_overhead_s of CPU work plus .seq_overhead_s per running request (scheduling, sampling,
detokenisation).

Three terms were reworked on 2026-12-05 (issue: high-concurrency decode predicted ~2x too slow):
* CPU cost per step and per running request depends on the engine. vLLM's V0 engine (before 0.8.0) scheduled,
  prepared inputs, sampled and detokenised every request in the serving process between GPU steps; V1 (0.8.0
  on, and the pinned 0.31) moves detokenisation out of the engine core and overlaps scheduling with the GPU.
  Old measurements are evaluated with `v0_step_overhead_s` / `v0_seq_overhead_s`; the planner, which plans the
  pinned vLLM, always uses `step_overhead_s` / `seq_overhead_s`.
* Batched GEMM efficiency: a GEMM over M token rows reaches MFU x M / (M + `gemm_half_rows`) of peak (tensor-
  core tiles and fixed per-kernel work), so M rows cost the time of M + gemm_half_rows at MFU. An MoE expert's
  GEMM runs only the rows routed to it (tokens x k / experts touched), so at moderate batches its experts pay
  that floor once each.
* KV reads (paged attention) keep their own fitted efficiency `kv_hbm`, no longer pushed down by the two
  costs above.
The efficiencies are fitted to published vLLM measurements by bench/calibrate.py
(components/planner/calibrated.py names the date and the split).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace

from ..catalog import Accelerator, InstanceType, ModelSpec
from . import calibrated
from .memory import kv_bytes_for_request


# The engine eras whose CPU costs differ, by the vLLM release they start at. V0 is the engine before 0.8.0 made V1 the
# default (VLLM_USE_V1=1). "v1-early" is V1 up to the releases of 2025 (0.8-0.18): the rows of that era we hold run
# slower than the newer ones by more than the GPU work explains. "v1" (0.19 on) is the era of the pinned 0.31 and
# of the newest rows we hold; 0.19 is where those rows start (the tables jump from 0.11 to 0.19), not a known
# engine change.
ENGINE_ERAS: tuple[tuple[str, tuple[int, int, int]], ...] = (
    ("v0", (0, 0, 0)), ("v1-early", (0, 8, 0)), ("v1", (0, 19, 0)))


def _release(vllm_version: str) -> tuple[int, int, int] | None:
    """(major, minor, patch) of "0.10.1.1", "v0.31.0" or "0.6.3.post1"; None where no major.minor is readable."""
    m = re.match(r"v?(\d+)\.(\d+)(?:\.(\d+))?", vllm_version)
    return (int(m[1]), int(m[2]), int(m[3] or 0)) if m else None


def engine_generation(vllm_version: str) -> str:
    """The engine era of a vLLM release (ENGINE_ERAS); an unreadable version is the pinned engine's, "v1"."""
    release = _release(vllm_version)
    if release is None:
        return "v1"
    return [name for name, since in ENGINE_ERAS if release >= since][-1]


@dataclass(frozen=True)
class Efficiency:
    hbm: float  # share of peak HBM bandwidth decode kernels reach
    mfu: float  # share of dense peak FLOPS a large GEMM reaches
    step_overhead_s: float  # CPU work per engine step
    seq_overhead_s: float = 0.0  # CPU work per running request per step (V1 engine: the pinned vLLM)
    kv_hbm: float = 0.0  # share of peak HBM bandwidth the paged-attention kernels reach reading KV (0: `hbm`)
    gemm_half_rows: float = 0.0  # token rows at which a GEMM reaches half of `mfu`
    v0_seq_overhead_s: float | None = None  # per running request per step on the V0 engine (None: seq_overhead_s)
    v0_step_overhead_s: float | None = None  # per step on the V0 engine (None: step_overhead_s)
    attn_seq_s: float = 0.0  # GPU time per decoding request per layer: attention's per-sequence work
    allreduce_s: float = 0.0  # latency of one TP all-reduce over NVLink (0: ALLREDUCE_LATENCY_S's estimate)
    early_seq_overhead_s: float | None = None  # the same two on V1 releases 0.8-0.18 (None: the V1 terms)
    early_step_overhead_s: float | None = None
    gpu_factor: float = 1.0  # GPU time of a step over what the terms above give (the pinned engine's: 1)
    v0_gpu_factor: float = 1.0  # the V0 engine's kernels against today's (older attention, MoE and GEMM kernels)
    early_gpu_factor: float = 1.0  # V1 releases 0.8-0.18 against today's
    # which model prices a step (planner/estimators.py): this module's fitted step model, or AIConfigurator's
    # per-operation silicon database; the terms above are the step model's and ride along unused otherwise
    estimator: str = "step-model"

    def for_engine(self, vllm_version: str) -> "Efficiency":
        """The terms a measurement taken on `vllm_version` ran with: its engine era's CPU costs (ENGINE_ERAS)."""
        era = engine_generation(vllm_version)
        if era == "v1":
            return self
        step, seq, gpu = ((self.v0_step_overhead_s, self.v0_seq_overhead_s, self.v0_gpu_factor) if era == "v0"
                          else (self.early_step_overhead_s, self.early_seq_overhead_s, self.early_gpu_factor))
        return replace(self, step_overhead_s=self.step_overhead_s if step is None else step,
                       seq_overhead_s=self.seq_overhead_s if seq is None else seq, gpu_factor=gpu)


EFFICIENCY = Efficiency(**calibrated.TERMS)  # the pinned engine's: what the planner plans with

ALLREDUCE_LATENCY_S = {"nvlink": 6e-6, "pcie": 25e-6}  # per all-reduce, small messages (⚠ estimate)
# One pipeline hand-off between nodes: an RDMA fabric (EFA, GPUDirect, InfiniBand/RoCE) vs NCCL's TCP
# socket transport over plain Ethernet (⚠ estimates: NCCL tests show ~10-50 us over RDMA, ~100-200 us
# over TCP), and the share of the line rate a socket transfer reaches (⚠ estimate).
FABRIC_HOP_S = 50e-6
ETHERNET_HOP_S = 150e-6
NETWORK_EFFICIENCY = 0.6
ACTIVATION_BYTES = 2  # bf16 hidden states cross the stage boundary


def _allreduce_s(acc: Accelerator, tp: int, tokens: float, hidden: int, nvlink_latency_s: float) -> float:
    if tp == 1:
        return 0.0
    alpha = max(ALLREDUCE_LATENCY_S["nvlink" if acc.nvlink else "pcie"], nvlink_latency_s)
    volume = 2 * (tp - 1) / tp * tokens * hidden * 2
    return alpha + volume / (acc.link_gbps * 1e9)


def tp_comm_s(model: ModelSpec, acc: Accelerator, tp: int, tokens: float, layers: int | None = None,
              nvlink_latency_s: float = 0.0) -> float:
    """Two all-reduces per layer (after attention and after the MLP) over `layers` (default: all); the latency of
    one over NVLink is the larger of ALLREDUCE_LATENCY_S's and `nvlink_latency_s` (the fitted figure)."""
    return 2 * (model.layers if layers is None else layers) * _allreduce_s(acc, tp, tokens, model.hidden,
                                                                           nvlink_latency_s)


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
    gemm_s: float  # compute per token row of the stage's dense GEMMs (all of a dense model's)
    expert_row_s: float  # compute per token row of one expert's GEMMs in the stage (MoE), 0 for a dense model
    experts_per_token: int  # k (MoE)
    gemm_half_rows: float  # a GEMM of M rows takes the time of M + this many at MFU
    seq_layers_s: float  # attention's per-sequence work of one decoding request over the stage's layers
    attn_s_decode: float  # attention math per decode token in the stage
    attn_s_prefill: float  # attention math per prefill token in the stage
    comm_alpha_s: float  # TP all-reduces of the stage: latency part
    comm_s_per_token: float  # TP all-reduces of the stage: per token
    hop_latency_s: float  # per pipeline hand-off (inf: no network)
    hop_s_per_token: float
    overhead_s: float
    seq_overhead_s: float
    gpu_factor: float = 1.0  # the engine era's GPU time against the pinned engine's (Efficiency.for_engine)

    def stage_s(self, decode: float, prefill: float) -> float:
        """One pipeline stage's forward pass over `decode` decoding requests and `prefill` prompt tokens."""
        tokens = decode + prefill
        memory = self.weights_s + decode * self.kv_s + (self.prefill_kv_s if prefill else 0.0)
        compute = (tokens + self.gemm_half_rows) * self.gemm_s + decode * self.attn_s_decode \
            + prefill * self.attn_s_prefill
        if self.experts:
            touched = self.experts * (1 - self.expert_keep ** max(tokens, 1))
            memory += touched * self.expert_s
            # each touched expert's GEMM runs its routed rows plus the small-GEMM floor
            compute += (tokens * self.experts_per_token + touched * self.gemm_half_rows) * self.expert_row_s
        return max(memory, compute) + decode * self.seq_layers_s + self.comm_alpha_s + tokens * self.comm_s_per_token

    def __call__(self, decode: float, prefill: float = 0.0) -> float:
        """Seconds between two tokens of a running request: one engine step.

        With PP, min(PP, requests) micro-batches circulate; each token passes all PP stages and PP - 1
        hand-offs, so TPOT = PP x stage time of one micro-batch + hops. Fewer micro-batches than stages
        leave stages idle (the bubble): TPOT stays PP stage-times while the work per token does not shrink.
        """
        pp = self.pp
        overhead = self.overhead_s + self.seq_overhead_s * (decode + (1 if prefill else 0))
        if pp == 1:
            return self.gpu_factor * self.stage_s(decode, prefill) + overhead
        micro = max(1.0, min(pp, decode))  # continuous, so that the step time never falls as load grows
        d = decode / micro  # a prompt's chunk stays in one micro-batch (its request's virtual engine)
        hops = (pp - 1) * (self.hop_latency_s + (d + prefill) * self.hop_s_per_token)
        return self.gpu_factor * pp * self.stage_s(d, prefill) + hops + overhead


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
    k = model.experts_per_token if model.is_moe else 0
    per_expert = model.expert_split()[1] if model.is_moe else 0.0
    flop = pp * tp * peak_flops(precision, acc) * eff.mfu
    attn = pp * tp * acc.bf16_tflops * 1e12 * eff.mfu  # attention math is BF16 whatever the weights
    width_d, width_p = (4 * model.layers * _attn_width(model, d) / attn for d in (True, False))
    layers = math.ceil(model.layers / pp)
    alpha = tp_comm_s(model, acc, tp, 0.0, layers, eff.allreduce_s)
    per_token = tp_comm_s(model, acc, tp, 1.0, layers, eff.allreduce_s) - alpha
    latency = hop_s(model, inst, 0.0)
    one = hop_s(model, inst, 1.0)
    return StepCost(pp, weights, expert, model.experts if model.is_moe else 0, keep,
                    kv / pp / kv_bw, pf / pp / kv_bw,
                    2 * max(active - k * per_expert, 0.0) / flop, 2 * per_expert / flop, k, eff.gemm_half_rows,
                    eff.attn_seq_s * layers,
                    width_d * context, width_p * prefill_context,
                    alpha, per_token, latency, one - latency if math.isfinite(one) else math.inf,
                    eff.step_overhead_s, eff.seq_overhead_s, eff.gpu_factor)


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
