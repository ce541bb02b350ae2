"""The step model's reworked terms (components/planner/performance.py): the engine's per-request cost, the
batched-GEMM efficiency (dense and MoE expert GEMMs) and the KV-read term, each pinned by hand-worked figures, and
the high-concurrency decode the rework was for (dense 8B on one H100 at 1024/256 tokens)."""
from __future__ import annotations

import dataclasses

import pytest

from components.catalog.measurements import Measurement
from components.planner.calibration import predict, shape_for
from components.planner.capacity import Workload, at_load
from components.planner.performance import EFFICIENCY, Efficiency, StepCost, engine_generation


@pytest.mark.parametrize("version, era", [
    ("0.5.4", "v0"), ("0.6.3.post1", "v0"), ("0.7.3", "v0"), ("0.8.0", "v1-early"), ("0.10.1.1", "v1-early"),
    ("0.11.0", "v1-early"), ("0.18.9", "v1-early"), ("0.19.1", "v1"), ("0.31.0", "v1"), ("v0.31.0", "v1"),
    ("", "v1"), ("nightly", "v1")])
def test_the_engine_era_is_read_from_the_vllm_version(version, era):
    # V1 became vLLM's default engine in 0.8.0; the newest rows start at 0.19; the pinned 0.31 is "v1", and so is
    # anything unreadable
    assert engine_generation(version) == era


def test_an_older_engines_row_pays_its_eras_costs_and_the_planner_never_does():
    eff = Efficiency(0.8, 0.5, 0.001, 10e-6, 0.5, v0_seq_overhead_s=200e-6, v0_step_overhead_s=0.004,
                     early_seq_overhead_s=40e-6, early_step_overhead_s=0.002, v0_gpu_factor=1.75, early_gpu_factor=1.3)
    v0, early, now = eff.for_engine("0.5.4"), eff.for_engine("0.10.1.1"), eff.for_engine("0.31.0")
    assert (v0.step_overhead_s, v0.seq_overhead_s, v0.gpu_factor) == (0.004, 200e-6, 1.75)
    assert (early.step_overhead_s, early.seq_overhead_s, early.gpu_factor) == (0.002, 40e-6, 1.3)
    assert now is eff and (now.step_overhead_s, now.seq_overhead_s, now.gpu_factor) == (0.001, 10e-6, 1.0)
    plain = Efficiency(0.8, 0.5, 0.001, 10e-6)  # no era terms fitted: every era runs the V1 figures
    assert plain.for_engine("0.5.4") == dataclasses.replace(plain, gpu_factor=1.0)
    # the planner's constants are the pinned engine's: the same row measured on V0 predicts slower
    assert EFFICIENCY.gpu_factor == 1.0 and EFFICIENCY.v0_gpu_factor > 1.0
    row = Measurement("t", "h100", "llama-3.1-8b", "bf16", "0.31.0", 1, 1, 1024, 256, "closed", 64, 20.0, None,
                      None, None, 8192, "s", "d")
    assert predict(dataclasses.replace(row, vllm="0.5.4")).tpot_ms > predict(row).tpot_ms * 1.3


def _cost(**kw) -> StepCost:
    base = dict(pp=1, weights_s=0.004, expert_s=0.0, experts=0, expert_keep=1.0, kv_s=1e-4, prefill_kv_s=0.0,
                gemm_s=2e-5, expert_row_s=0.0, experts_per_token=0, gemm_half_rows=0.0, seq_layers_s=0.0, attn_s_decode=1e-6,
                attn_s_prefill=0.0, comm_alpha_s=0.0, comm_s_per_token=0.0, hop_latency_s=0.0, hop_s_per_token=0.0,
                overhead_s=5e-4, seq_overhead_s=1e-5)
    return StepCost(**{**base, **kw})


def test_a_small_gemm_costs_its_rows_plus_the_half_rows():
    # decode of 8: memory 4 ms + 8 x 0.1 ms = 4.8 ms; compute (8 + 0) x 20 us + 8 x 1 us = 0.168 ms; overhead
    # 0.5 ms + 8 x 10 us = 0.58 ms
    assert _cost()(8) == pytest.approx(4.8e-3 + 0.58e-3)
    # a 1024-token chunk beside them: compute (1032 + 256) x 20 us + 8 us = 25.768 ms, over the 4.8 ms memory
    assert _cost(gemm_half_rows=256.0)(8, 1024) == pytest.approx(25.768e-3 + 0.59e-3)
    assert _cost()(8, 1024) == pytest.approx((1032 * 20e-6 + 8e-6) + 0.59e-3)


def test_an_moe_expert_gemm_pays_the_floor_once_per_expert_touched():
    # 4 tokens over 8 experts, 2 per token: touched = 8 x (1 - (6/8)^4) = 5.46875 experts
    moe = _cost(experts=8, expert_keep=0.75, experts_per_token=2, expert_s=1e-4, expert_row_s=1e-5,
                gemm_half_rows=64.0, weights_s=1e-3, attn_s_decode=0.0, kv_s=0.0)
    touched = 8 * (1 - 0.75 ** 4)
    memory = 1e-3 + touched * 1e-4
    compute = (4 + 64) * 2e-5 + (4 * 2 + touched * 64) * 1e-5
    assert compute > memory  # the floor makes this step compute-bound
    assert moe(4) == pytest.approx(compute + 5e-4 + 4e-5)


def _anchor(users: int, model="llama-3.1-8b", gpu="h100", tp=1, eff: Efficiency = EFFICIENCY):
    row = Measurement("anchor", gpu, model, "bf16", "0.31.0", tp, 1, 1024, 256, "closed", users, 1.0, None, None,
                      None, 8192, "s", "d")
    return at_load(shape_for(row), Workload(1024, 256, concurrency=users), eff)


def test_an_eras_gpu_factor_scales_the_gpu_work_not_the_cpu_work():
    # 8 decodes: GPU 4.8 ms (above); CPU 0.5 ms + 8 x 10 us
    assert _cost(gpu_factor=1.5)(8) == pytest.approx(1.5 * 4.8e-3 + 0.58e-3)


def test_attention_per_sequence_work_grows_with_the_running_requests():
    # 2 us per request over the stage's layers: 64 requests add 128 us to the GPU part, outside the roofline's max
    assert _cost(seq_layers_s=2e-6)(64) - _cost()(64) == pytest.approx(64 * 2e-6)


def test_tp_all_reduces_cost_the_fitted_latency_per_layer():
    from components.catalog import ACCELERATORS, MODELS
    from components.planner.performance import tp_comm_s
    llama70, h100 = MODELS["llama-3.1-70b"], ACCELERATORS["h100"]
    # 80 layers x 2 all-reduces x 20 us at no tokens; the catalog's 6 us estimate is the floor
    assert tp_comm_s(llama70, h100, 4, 0.0, nvlink_latency_s=20e-6) == pytest.approx(160 * 20e-6)
    assert tp_comm_s(llama70, h100, 4, 0.0, nvlink_latency_s=0.0) == pytest.approx(160 * 6e-6)
    assert tp_comm_s(llama70, h100, 1, 0.0, nvlink_latency_s=20e-6) == 0.0


def test_dense_decode_at_high_concurrency_is_no_longer_twice_the_published_figure():
    # Llama-3.1-8B BF16, one H100, 1024 + 256 tokens, closed loop. Published runs and measured-silicon estimates sit
    # near 10-11 ms at 32 users and 22-25 ms at 128; the constants fitted 2026-12-03 gave 22.9 and 61.5 ms, at one
    # user 6.6 ms. The reworked model (fitted 2026-12-05, docs/capacity.md):
    tpot = {users: round(_anchor(users).tpot_ms, 1) for users in (1, 8, 32, 64, 128)}
    assert tpot == {1: 6.7, 8: 8.1, 32: 12.7, 64: 18.9, 128: 30.8}
    assert tpot[32] < 11 * 1.25 and tpot[128] < 25 * 1.25  # within a quarter of the published figures
    # single user: 16.06 GB of weights at 0.75 x 3,350 GB/s = 6.39 ms, + KV, 0.2 ms CPU, 10 us a request
    assert 6.4 < tpot[1] < 6.6 * 1.1


def test_tensor_parallel_replicas_pay_their_all_reduces_at_low_load():
    # Llama-3.1-70B BF16 at TP 4 on H100, one user: 141 GB / 4 GPUs at 0.75 of 3,350 GB/s = 14.0 ms, plus 160
    # all-reduces a step at 30 us = 4.8 ms (the old model's 6 us estimate gave 14.3 ms in all)
    assert round(_anchor(1, model="llama-3.1-70b", tp=4).tpot_ms, 1) == 19.3
