"""Model deployments: what to serve, at what SLA, and the model cache."""
from __future__ import annotations

from typing import Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from ..catalog import ACCELERATORS, INSTANCE_TYPES, ModelSpec, find_model
from . import bounds
from .base import DNS_LABEL, _Base, field_error


class Sla(_Base):
    """What one deployment must meet, and the load it must carry. Latencies are means per request at that
    load; the load is concurrentUsers (requests in flight) or requestsPerSecond (arrival rate), default 16
    concurrent users. The planner sizes replicas as load / one replica's capacity at its knee."""
    ttft_ms: float = Field(2000, gt=0, description="time to first token for an average prompt (ms)")
    tpot_ms: float = Field(100, gt=0, description="time per output token (ms)")
    concurrency: int | None = Field(None, ge=1, description="the same as concurrentUsers (the earlier name)")
    concurrent_users: int | None = Field(None, ge=1, description="requests in flight the fleet holds within the "
                                                                 "SLA (default 16)")
    requests_per_second: float | None = Field(None, gt=0, description="arrival rate the fleet carries within "
                                                                      "the SLA, instead of concurrentUsers")
    prompt_tokens: int = Field(1024, ge=1, description="average prompt length (tokens)")
    output_tokens: int = Field(256, ge=1, description="average completion length (tokens)")

    @model_validator(mode="after")
    def _one_load(self):
        if self.concurrency is not None and self.concurrent_users is not None \
                and self.concurrency != self.concurrent_users:
            raise field_error("concurrentUsers", f"{self.concurrent_users} differs from concurrency "
                                                 f"({self.concurrency}), its earlier name; set only concurrentUsers")
        if self.requests_per_second is not None and (self.concurrency or self.concurrent_users) is not None:
            raise field_error("requestsPerSecond", "give the load once: requestsPerSecond or concurrentUsers, "
                                                   "not both")
        return self

    @property
    def users(self) -> int:
        """Concurrent users the fleet holds (the default 16 when no load is declared)."""
        return self.concurrent_users or self.concurrency or 16


class Replicas(_Base):
    min: int = Field(1, ge=1, description="replicas kept running (>= 1: a cold 70B start takes minutes)")
    max: int = Field(8, ge=1, description="ceiling for the autoscaler")

    @model_validator(mode="after")
    def _order(self):
        if self.min > self.max:
            raise field_error("min", f"{self.min} is above max ({self.max}); set min <= max")
        return self


class Architecture(_Base):
    """A model outside the catalog, described from its config.json."""
    params_b: float = Field(gt=0, description="total parameters, billions")
    layers: int = Field(ge=1)
    hidden: int = Field(ge=1, description="hidden_size")
    heads: int = Field(ge=1, description="num_attention_heads")
    kv_heads: int = Field(ge=1, description="num_key_value_heads")
    head_dim: int | None = Field(None, ge=1, description="head_dim (default hidden / heads)")
    vocab: int = Field(ge=1, description="vocab_size")
    max_context: int = Field(ge=1, description="max_position_embeddings")

    @model_validator(mode="after")
    def _gqa(self):
        if self.heads % self.kv_heads:
            raise field_error("kvHeads", f"{self.kv_heads} does not divide heads ({self.heads})")
        return self


class ModelDeployment(_Base):
    name: str = Field(pattern=DNS_LABEL, description="Kubernetes name of the deployment")
    model: str = Field(description="catalog id (python -m components table) or Hugging Face repo id")
    architecture: Architecture | None = Field(None, description="for a model outside the catalog")
    precision: Literal["bf16", "fp8", "mxfp4"] | None = None
    accelerator: str | None = Field(None, description="restrict to one GPU (catalog id)")
    instance_types: list[str] | None = Field(None, description="restrict to these instance / machine types")
    tensor_parallel_size: int | None = Field(None, ge=1, description="pin TP instead of searching")
    max_model_len: int | None = Field(None, ge=256, description="default: the model's maximum context")
    gpu_memory_utilization: float = Field(
        0.90, description="share of GPU memory vLLM may use; within config/bounds.py GPU_MEMORY_UTILIZATION_RANGE")
    kv_cache_dtype: Literal["auto", "fp8", "any"] = Field(
        "any", description="auto = the model dtype; fp8 halves KV memory; any = the planner picks")
    sla: Sla = Sla()
    replicas: Replicas = Replicas()
    revision: str | None = Field(
        None, pattern=r"^[0-9a-f]{40}$",
        description="Hugging Face commit (40 hex digits) to serve: the prefetch downloads it and vLLM runs with "
                    "--revision / --tokenizer-revision; unset: the repository's main branch at download time")

    # Field validators see the fields declared above them (info.data), so that one bad value
    # does not hide the others: every problem is reported at once.
    @field_validator("accelerator")
    @classmethod
    def _known_accelerator(cls, v):
        if v is not None and v not in ACCELERATORS:
            raise ValueError(f"unknown accelerator {v!r}; allowed: {', '.join(ACCELERATORS)}")
        return v

    @field_validator("gpu_memory_utilization")
    @classmethod
    def _policy_bounds(cls, v):
        problem = bounds.gpu_memory_utilization_problem(v)
        if problem:
            raise ValueError(problem)
        return v

    @field_validator("instance_types")
    @classmethod
    def _known_instances(cls, v):
        unknown = [i for i in v or [] if i not in INSTANCE_TYPES]
        if unknown:
            raise ValueError(f"unknown instance type(s) {', '.join(unknown)}; see components/catalog/instances.py")
        return v

    @field_validator("precision")
    @classmethod
    def _offered_precision(cls, v, info: ValidationInfo):
        spec = _spec(info.data)
        if v and spec and v not in spec.precisions:
            raise ValueError(f"{v!r} is not offered for {spec.name}; allowed: {', '.join(spec.precisions)}")
        return v

    @field_validator("tensor_parallel_size")
    @classmethod
    def _tp_divides_heads(cls, tp, info: ValidationInfo):
        spec = _spec(info.data)
        if tp and spec and spec.heads % tp:
            ok = [d for d in range(1, min(spec.heads, 16) + 1) if spec.heads % d == 0]
            raise ValueError(f"{tp} does not divide {spec.name}'s {spec.heads} attention heads; "
                             f"allowed: {', '.join(map(str, ok))}")
        return tp

    @field_validator("max_model_len")
    @classmethod
    def _within_context(cls, v, info: ValidationInfo):
        spec = _spec(info.data)
        if v and spec and v > spec.max_context:
            raise ValueError(f"{v} is above {spec.name}'s limit of {spec.max_context}; "
                             f"set maxModelLen <= {spec.max_context}")
        return v

    @model_validator(mode="after")
    def _fits_model(self):
        if self.spec is None:
            raise field_error("model", f"unknown model {self.model!r}: use a catalog id ({', '.join(_catalog_ids())}) "
                                       f"or describe it under `architecture`")
        tokens = self.sla.prompt_tokens + self.sla.output_tokens
        if tokens > self.effective_max_model_len:
            raise field_error("sla", f"promptTokens + outputTokens ({tokens}) exceed maxModelLen "
                                     f"{self.effective_max_model_len}; shorten them or raise maxModelLen")
        return self

    @property
    def spec(self) -> ModelSpec | None:
        return _spec({"model": self.model, "architecture": self.architecture, "name": self.name})

    @property
    def effective_precision(self) -> str:
        spec = self.spec
        if self.precision:
            return self.precision
        if spec.fp8_repo and self.model.lower() == spec.fp8_repo.lower():
            return "fp8"  # asked for the FP8 checkpoint by its repo id
        return spec.precisions[0]

    @property
    def effective_max_model_len(self) -> int:
        return self.max_model_len or self.spec.max_context


def _spec(data: dict) -> ModelSpec | None:
    """The catalog entry for `model`, or one built from the inline `architecture`."""
    model = data.get("model")
    if model is None:
        return None
    found = find_model(model)
    if found is not None:
        return found
    a = data.get("architecture")
    if a is None:
        return None
    return ModelSpec(
        id=data.get("name") or "custom", name=model, hf_repo=model, params_b=a.params_b, layers=a.layers,
        hidden=a.hidden, heads=a.heads, kv_heads=a.kv_heads, head_dim=a.head_dim or a.hidden // a.heads,
        vocab=a.vocab, max_context=a.max_context, source="stack file (inline architecture)")


def _catalog_ids():
    from ..catalog import MODELS
    return list(MODELS)


class ModelCache(_Base):
    kind: Literal["rwx", "nvme"] = Field("rwx", description="rwx = shared file system; nvme = node-local disks")
    size_gib: int | None = Field(None, ge=10, description="default: the weights it holds x 1.5")
    storage_class: str | None = Field(None, description="existing RWX StorageClass (existing clusters)")
    read_gbps: float | None = Field(None, gt=0, description="sustained read GB/s of the cache per node; "
                                                            "default: what the cloud's storage documents")
    loader: Literal["auto", "safetensors", "eager", "runai-streamer"] = Field(
        "auto", description="how vLLM reads the weights: safetensors (vLLM's default mmap loader), eager "
                            "(--safetensors-load-strategy eager), runai-streamer (--load-format runai_streamer, "
                            "concurrent reads; single-node replicas only); auto: runai-streamer on a shared file "
                            "system, eager for Ray Serve LLM there, safetensors with a page-cache warm-up on NVMe")
