"""One interface for the step-time estimators the planner can price a replica with. Pure (the optional library
is imported only when its estimator is asked for).

* "step-model": planner/performance.py, the project's fitted roofline step model (every GPU and architecture in the
  catalog).
* "aiconfigurator": NVIDIA AIConfigurator's per-operation timings measured on the silicon (planner/aic.py; the
  optional dependency `vllm-platform[aiconfigurator]`), for the GPUs and architectures its database holds: GPU
  kernels only.
* "aiconfigurator+engine": AIC's kernels plus what AIC does not price and the step model fitted: the engine's CPU
  work per step and per running request, and the engine era's kernel factor (performance.Efficiency, fitted on the
  fit half; nothing refitted here).

Both answer the same question: `cost(decode, prefill)` is the seconds of one engine step running `decode` decoding
requests at the shape's average context and `prefill` prompt tokens of a chunked prefill. The capacity model
(capacity.py, burst.py, disagg.py) builds every latency and throughput figure from that one callable; which
estimator prices a step is `Efficiency.estimator`, so the calibration, the knee and the plan all go through here.
"""
from __future__ import annotations

from typing import Callable

from ..catalog import Accelerator, InstanceType, ModelSpec
from .aic import EstimatorUnavailable  # noqa: F401  (the interface's error: defined below this module)
from .performance import EFFICIENCY, Efficiency, step_cost

StepTime = Callable[..., float]  # (decode, prefill=0.0) -> seconds of one engine step
ESTIMATORS = ("step-model", "aiconfigurator", "aiconfigurator+engine")


def replica_step_cost(model: ModelSpec, precision: str, acc: Accelerator, inst: InstanceType, tp: int, pp: int,
                      kv_cache_dtype: str, context: float, prefill_context: float = 0.0,
                      eff: Efficiency = EFFICIENCY) -> StepTime:
    """The step-time callable of one replica shape at fixed contexts, from the estimator `eff` names."""
    if eff.estimator == "step-model":
        return step_cost(model, precision, acc, inst, tp, pp, kv_cache_dtype, context, prefill_context, eff)
    if eff.estimator in ("aiconfigurator", "aiconfigurator+engine"):
        from . import aic
        gpu = aic.step_cost(model, precision, acc, inst, tp, pp, kv_cache_dtype, context, prefill_context)
        if eff.estimator == "aiconfigurator":
            return gpu
        factor, step, seq = eff.gpu_factor, eff.step_overhead_s, eff.seq_overhead_s

        def cost(decode: float, prefill: float = 0.0) -> float:
            return factor * gpu(decode, prefill) + step + seq * (decode + (1 if prefill else 0))
        return cost
    raise ValueError(f"estimator {eff.estimator!r}; allowed: {', '.join(ESTIMATORS)}")
