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

from dataclasses import dataclass
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


# Which estimator prices a model class, from the held-out comparison (bench/estimators.py on 2026-12-06; the per-cell
# table components/catalog/data/estimators/heldout.csv; docs/capacity.md "Estimators"). The criterion is what a plan
# buys: over the held-out rows both estimators price, the median of estimate x (1 + that estimator's margin cell) /
# measured mean TPOT, the capacity provisioned per unit of real need at the same 90 % coverage (lower: fewer GPUs).
# Median |error| is shown beside it. Nothing here is fitted to those rows: the estimators' terms come from the fit half.
@dataclass(frozen=True)
class Choice:
    estimator: str  # the winner for the class
    rows: int  # held-out rows both price
    provisioned: dict  # estimator -> median estimate x (1 + margin) / measured
    error: dict  # estimator -> median |estimated - measured| / measured TPOT

    def text(self, model_class: str) -> str:
        figures = "; ".join(f"{e}: x {self.provisioned[e]:g} provisioned, median error {self.error[e] * 100:.0f} %"
                            for e in self.provisioned)
        return f"{ {'moe': 'MoE'}.get(model_class, model_class)} models over {self.rows} held-out rows both price: {figures}"


CHOICES: dict[str, Choice] = {
    "dense": Choice("aiconfigurator+engine", 46, {"aiconfigurator+engine": 1.359, "step-model": 1.413},
                    {"aiconfigurator+engine": 0.22, "step-model": 0.34}),
    "moe": Choice("step-model", 18, {"step-model": 1.794, "aiconfigurator+engine": 4.519},
                  {"step-model": 0.33, "aiconfigurator+engine": 0.45}),
}
SETTINGS = ("step-model", "auto")  # planning.estimator


def choose(model: ModelSpec, precision: str, acc: Accelerator, tp: int, pp: int, kv_cache_dtype: str,
           setting: str = "step-model") -> tuple[str, str]:
    """(the estimator that prices this replica shape, the plan's line on why) for planning.estimator `setting`:
    "step-model" always the step model (saying where auto would differ); "auto" the class's winner (CHOICES) where it
    can price the shape, else the step model, with the reason."""
    from . import aic
    from .margins import model_class
    cls = model_class(model)
    choice = CHOICES[cls]
    if choice.estimator == "step-model":
        return "step-model", f"step-model ({choice.text(cls)})"
    why_not = aic.supports(model, precision, acc, tp, pp, kv_cache_dtype)
    if setting != "auto":
        return "step-model", (f"step-model; planning.estimator: auto would price it with {choice.estimator} "
                              f"({choice.text(cls)})" + (f", but: {why_not}" if why_not else ""))
    if why_not:
        return "step-model", f"step-model, not {choice.estimator}: {why_not}"
    return choice.estimator, f"{choice.estimator} ({choice.text(cls)})"
