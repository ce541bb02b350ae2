"""The stack's `planning:` block: how the planner judges the SLA (docs/measurements.md).

* latencyMargin: the share the knee keeps the estimated TPOT and TTFT under the SLA (estimate x (1 + margin) <=
  SLA), for every model of the stack; unset, the calibration's cell for the model's class and load
  (planner/margins.py, read when the plan is made, so a refit that moves it moves every stack that did not choose
  its own).
* measurements: what bench/bench_serve.py (or `vllm bench serve --save-result`) measured for the stack's model on
  one shape; the planner reads that shape's knee from them instead of estimating it (planner/measured.py). Paths are
  relative to the stack file's directory, as models[].configFile is. The files are read here, once: a bad file is a
  configuration error naming its entry.
* profile: a Job on the stack's own GPU pool measures the planner's cheapest single-node candidate shapes with
  `vllm serve` + `vllm bench serve` (components/profiling/, docs/measurements.md "Profiling on the cluster"), within
  the time bounds given here; its rows file is what `measurements` then lists.
"""
from __future__ import annotations

from typing import Literal

from pydantic import Field, PrivateAttr, ValidationInfo, field_validator, model_validator

from ..catalog import ACCELERATORS
from ..catalog.measured import MeasuredShape, MeasurementError, read
from .base import _Base, field_error
from .models import config_path

# The schema's bounds on planning.latencyMargin. 0: judge the estimate as it is (the model's own error then lands on
# the SLA); 1: the estimate doubled, beyond which a margin says the estimate is not believed: measure instead.
LATENCY_MARGIN_RANGE = (0.0, 1.0)


class MeasurementSource(_Base):
    """One planning.measurements entry: a file (or a directory of vLLM results) and, for vLLM's own result
    files, the shape they were measured on."""
    file: str = Field(description="bench/bench_serve.py's rows file, a `vllm bench serve --save-result` JSON, or a "
                                  "directory of them; relative to the stack file's directory")
    accelerator: str | None = Field(None, description="a vLLM result's GPU (catalog id); a rows file states its own")
    tp: int | None = Field(None, ge=1, description="a vLLM result's tensor parallelism")
    pp: int = Field(1, ge=1, description="a vLLM result's pipeline parallelism")
    model: str | None = Field(None, description="the deployment a vLLM result measured (models[].name, its model or "
                                                "Hub repo); default: the result's model_id (vLLM's --model)")
    precision: str | None = Field(None, description="a vLLM result's weights' precision; default: the deployment's")
    _shapes: tuple[MeasuredShape, ...] = PrivateAttr(())

    @field_validator("accelerator")
    @classmethod
    def _known(cls, v):
        if v is not None and v not in ACCELERATORS:
            raise ValueError(f"unknown GPU {v!r}; allowed: {', '.join(ACCELERATORS)}")
        return v

    @model_validator(mode="after")
    def _read(self, info: ValidationInfo):
        path = config_path(self.file, info.context)
        try:
            shapes = read(path, self.file, self.accelerator, self.tp, self.pp if self.accelerator else 1, self.model,
                          self.precision)
        except MeasurementError as e:
            raise field_error("file", str(e)) from None
        if self.accelerator is None and self.pp != 1:
            raise field_error("pp", "only beside accelerator and tp (a rows file states its own PP)")
        self._shapes = tuple(shapes)
        return self

    @property
    def shapes(self) -> tuple[MeasuredShape, ...]:
        return self._shapes


# planning.profile's bounds. A shape needs its weights loaded and CUDA graphs captured (minutes for a 70B) before the
# first of ~8 sweep levels of 32+ requests each: under 10 minutes only the smallest models finish; the Job as a whole
# is bounded to 12 h (a forgotten profile must not hold a GPU node for days).
PROFILE_SHAPE_MINUTES = (10, 240)
PROFILE_TOTAL_MINUTES = (10, 720)
PROFILE_CANDIDATES = (1, 8)


class Profile(_Base):
    """planning.profile: measure the planner's candidate shapes on the stack's own GPU pool (a Job per model)."""
    enabled: bool = Field(False, description="run the profile Job on `pulumi up` for each listed model whose "
                                             "candidate shapes are not all measured")
    candidates: int = Field(3, description="the planner's N cheapest single-node shapes on the model's GPU pool "
                                           "(one per TP x PP) to measure")
    max_minutes_per_shape: int = Field(30, description="each shape's bound: weights load, /health, the "
                                                       "concurrency sweep; a shape past it keeps the levels done")
    max_minutes: int = Field(120, description="the Job's bound (activeDeadlineSeconds): every shape together; the "
                                              "cost bound the plan prints is one GPU node for this long")
    models: list[str] | None = Field(None, description="the deployments (models[].name) to profile; default: all")

    @field_validator("candidates")
    @classmethod
    def _candidates(cls, v):
        return _within(v, PROFILE_CANDIDATES, "shapes per model", "e.g. 3: the plan's shape and the next two")

    @field_validator("max_minutes_per_shape")
    @classmethod
    def _shape_minutes(cls, v):
        return _within(v, PROFILE_SHAPE_MINUTES, "minutes for one shape",
                       "a 70B loads its weights and captures CUDA graphs in 5-15 minutes before the sweep starts")

    @field_validator("max_minutes")
    @classmethod
    def _total_minutes(cls, v):
        return _within(v, PROFILE_TOTAL_MINUTES, "minutes for the whole Job", "it holds one GPU node that long")

    @model_validator(mode="after")
    def _shape_fits_total(self):
        if self.max_minutes_per_shape > self.max_minutes:
            raise field_error("maxMinutesPerShape", f"{self.max_minutes_per_shape} is more than maxMinutes "
                                                    f"{self.max_minutes} (the whole Job's bound); raise maxMinutes "
                                                    f"to at least {self.max_minutes_per_shape} or lower "
                                                    f"maxMinutesPerShape")
        return self

    def profiles(self, deployment: str) -> bool:
        return self.enabled and (self.models is None or deployment in self.models)


def _within(v: int, bounds: tuple[int, int], what: str, why: str) -> int:
    low, high = bounds
    if not low <= v <= high:
        raise ValueError(f"{v} is outside {low}-{high} ({what}; {why}); set it between {low} and {high}")
    return v


class Planning(_Base):
    latency_margin: float | None = Field(
        None, description="the share the knee keeps the estimated TPOT/TTFT under the SLA; default: the "
                          "calibration's (docs/measurements.md)")
    estimator: Literal["step-model", "auto"] = Field(
        "step-model", description="what prices a replica's engine step: the fitted step model, or auto: per model "
                                  "class the estimator that bought the least capacity for the same coverage on the "
                                  "held-out rows (aiconfigurator+engine for dense models on the GPUs its data holds; "
                                  "pip install 'vllm-platform[aiconfigurator]'), docs/capacity.md \"Estimators\"")
    measurements: list[MeasurementSource] = Field(
        default_factory=list, description="bench/bench_serve.py rows files or `vllm bench serve` results of this "
                                          "stack's shapes: their knee replaces the estimate (docs/measurements.md)")
    profile: Profile = Field(default_factory=Profile, description="measure the candidate shapes on the stack's GPU "
                                                                  "pool with a Job (docs/measurements.md)")

    @field_validator("estimator")
    @classmethod
    def _estimator_installed(cls, v):
        """auto must size the same on every machine that runs `pulumi up`: never fall back for want of the library."""
        if v == "auto":
            from ..upstream.versions import AIC_VERSION
            from importlib import metadata
            try:
                got = metadata.version("aiconfigurator-core")
            except metadata.PackageNotFoundError:
                got = None
            if got != AIC_VERSION:
                have = f"aiconfigurator-core {got} is installed" if got else "aiconfigurator-core is not installed"
                raise ValueError(f"auto prices dense models with aiconfigurator-core {AIC_VERSION}, and {have}: a plan "
                                 f"made here would size differently from one made where it is; run .venv/bin/pip "
                                 f"install 'vllm-platform[aiconfigurator]' (on every machine that runs pulumi), or set "
                                 f"planning.estimator: step-model")
        return v

    @field_validator("latency_margin")
    @classmethod
    def _bounded(cls, v):
        low, high = LATENCY_MARGIN_RANGE
        if v is not None and not low <= v <= high:
            raise ValueError(f"{v:g} is outside {low:g}-{high:g}: it is the share the knee keeps the estimated TPOT "
                             f"and TTFT under the SLA (0.2 = estimate x 1.2 <= SLA); set it between {low:g} and "
                             f"{high:g}, or remove it for the calibration's default")
        return v

    @field_validator("measurements", mode="before")
    @classmethod
    def _listed(cls, v):
        """A path, or a list of paths and {file: ...} entries."""
        items = [v] if isinstance(v, (str, dict)) else v
        if not isinstance(items, list):
            return v  # the schema reports the type
        return [{"file": i} if isinstance(i, str) else i for i in items]

    @property
    def shapes(self) -> tuple[MeasuredShape, ...]:
        return tuple(s for src in self.measurements for s in src.shapes)



def unmatched(planning: Planning, models) -> list[tuple[str, str]]:
    """(field, problem) for each measurements entry that names none of the stack's models: it would be ignored."""
    out = []
    for i, src in enumerate(planning.measurements):
        for s in src.shapes:
            if not any(measures(s, dep) for dep in models):
                names = ", ".join(f"{d.name} ({d.model})" for d in models)
                out.append((f"planning.measurements.{i}", f"{s.model!r} ({src.file}) is none of the stack's "
                                                                  f"models: {names}; set model: to the deployment's "
                                                                  f"name"))
                break
    return out


def measures(shape: MeasuredShape, dep) -> bool:
    """Whether `shape` measured deployment `dep`: its name (vLLM's --model is the served name), its model, the
    catalog id or a Hub repo of it."""
    spec = dep.spec
    names = {dep.name, dep.model, *((spec.id, spec.hf_repo, spec.fp8_repo) if spec else ())}
    return shape.model in names - {None, ""}

