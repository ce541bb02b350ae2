"""One interface for the step-time estimators the planner can price a replica with. Pure (the optional library
is imported only when its estimator is asked for).

* "step-model": planner/performance.py, the project's fitted roofline step model (every GPU and architecture in the
  catalog).
* "aiconfigurator": NVIDIA AIConfigurator's per-operation timings measured on the silicon (planner/aic.py; the
  optional dependency `vllm-platform[aiconfigurator]`), for the GPUs and architectures its database holds.

Both answer the same question: `cost(decode, prefill)` is the seconds of one engine step running `decode` decoding
requests at the shape's average context and `prefill` prompt tokens of a chunked prefill. The capacity model
(capacity.py, burst.py, disagg.py) builds every latency and throughput figure from that one callable; which
estimator prices a step is `Efficiency.estimator`, so the calibration, the knee and the plan all go through here.
"""
from __future__ import annotations

from typing import Callable

from ..catalog import Accelerator, InstanceType, ModelSpec
from .performance import EFFICIENCY, Efficiency, step_cost

StepTime = Callable[..., float]  # (decode, prefill=0.0) -> seconds of one engine step
ESTIMATORS = ("step-model", "aiconfigurator")


class EstimatorUnavailable(RuntimeError):
    """The estimator cannot price this shape (library not installed, GPU or architecture not in its database)."""


def replica_step_cost(model: ModelSpec, precision: str, acc: Accelerator, inst: InstanceType, tp: int, pp: int,
                      kv_cache_dtype: str, context: float, prefill_context: float = 0.0,
                      eff: Efficiency = EFFICIENCY) -> StepTime:
    """The step-time callable of one replica shape at fixed contexts, from the estimator `eff` names."""
    if eff.estimator == "step-model":
        return step_cost(model, precision, acc, inst, tp, pp, kv_cache_dtype, context, prefill_context, eff)
    if eff.estimator == "aiconfigurator":
        from . import aic
        return aic.step_cost(model, precision, acc, inst, tp, pp, kv_cache_dtype, context, prefill_context)
    raise ValueError(f"estimator {eff.estimator!r}; allowed: {', '.join(ESTIMATORS)}")
