"""Model deployments: what to serve, at what SLA, and the model cache."""
from __future__ import annotations

import functools
import os
import warnings
from pathlib import Path
from typing import Literal

from pydantic import Field, PrivateAttr, ValidationInfo, field_validator, model_validator

from ..catalog import ACCELERATORS, INSTANCE_TYPES, ModelSpec, closest_models, find_model, names_fp8
from . import bounds
from .base import DNS_LABEL, _Base, field_error
from .engine import Engine, ExtraValue, Source, check_extra_args


class ConfigDeprecation(UserWarning):
    """A stack key still accepted under an old spelling (printed once; see UPGRADING.md)."""


class Sla(_Base):
    """What one deployment must meet, and the load it must carry. Latencies bound the 90th percentile of
    requests at that load by default (latencyPercentile: p99 or mean); the load is concurrentUsers (requests in
    flight) or requestsPerSecond (arrival rate), default 16 concurrent users. The planner sizes replicas as load / one
    replica's capacity at its knee, where the estimates stay the planning margin (planner/margins.py, by model
    class and load) under the SLA (docs/capacity.md)."""
    ttft_ms: float = Field(2000, gt=0, description="time to first token for an average prompt (ms)")
    tpot_ms: float = Field(100, gt=0, description="time per output token (ms)")
    concurrency: int | None = Field(None, ge=1, description="the same as concurrentUsers (the earlier name)")
    concurrent_users: int | None = Field(None, ge=1, description="requests in flight the fleet holds within the "
                                                                 "SLA (default 16)")
    requests_per_second: float | None = Field(None, gt=0, description="arrival rate the fleet carries within "
                                                                      "the SLA, instead of concurrentUsers")
    prompt_tokens: int = Field(1024, ge=1, description="average prompt length (tokens)")
    output_tokens: int = Field(256, ge=1, description="average completion length (tokens)")
    latency_percentile: Literal["p90", "p99", "mean"] = Field(
        "p90", description="what ttftMs and tpotMs bound: the 90th percentile of requests (default), the 99th, or "
                           "the mean (the capacity model's tail figures; docs/capacity.md \"The planning margin and "
                           "the SLA percentile\")")

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
    min: int = Field(1, ge=0, description="replicas kept running; 0 (dev and staging, single-node models behind the "
                                          "gateway) scales to zero when idle and the first request waits a cold start "
                                          "(docs/scale-to-zero.md)")
    max: int = Field(8, ge=1, description="ceiling for the autoscaler")
    autoscaling: Literal["queue", "slo"] | None = Field(
        None, description="this model's KEDA signals instead of serving.autoscaling: queue or slo "
                          "(docs/autoscaling.md)")
    first_request: Literal["retry"] | None = Field(
        None, description="min 0 only: 'retry' accepts the wake contract (docs/scale-to-zero.md): a request that "
                          "finds the model at zero is held up to 270 s, then answered 503 with Retry-After while the "
                          "model keeps starting, and the clients retry; every cold start is longer than the gateway "
                          "holds a request, so min 0 is refused without it")

    @model_validator(mode="after")
    def _order(self):
        if self.min > self.max:
            raise field_error("min", f"{self.min} is above max ({self.max}); set min <= max")
        if self.first_request is not None and self.min != 0:
            raise field_error("firstRequest", f"{self.first_request!r} is the contract of a model at zero replicas; "
                                              f"min is {self.min}, so no request finds it at zero: remove it")
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


# The all2all backends parallelism.all2allBackend takes: the ones the planner sizes (planner/wide_ep.py ALL2ALL,
# vLLM 0.31.0 vllm/config/parallel.py All2AllBackend); auto = the fabric's first.
ALL2ALL_CHOICES = ("auto", "deepep_low_latency", "deepep_high_throughput", "allgather_reducescatter")
# wide-EP owns these `vllm serve` flags (planner/engine_args.py ExpertParallel, serving/lws.py): not in extraArgs
WIDE_EP_FLAGS = ("--enable-expert-parallel", "--no-enable-expert-parallel", "--all2all-backend", "--enable-eplb",
                 "--no-enable-eplb", "--eplb-config", "--data-parallel-address", "--data-parallel-rpc-port",
                 "--data-parallel-start-rank", "--data-parallel-hybrid-lb", "--data-parallel-external-lb",
                 "--data-parallel-rank", "--api-server-count")


class Parallelism(_Base):
    """How a replica splits the model over its GPUs (docs/wide-ep.md)."""
    mode: Literal["tensor", "wide-ep"] = Field(
        "tensor", description="tensor: the planner sizes tensor x pipeline parallelism (the default); wide-ep "
                              "(mixture-of-experts models): attention data-parallel, one rank per GPU, the routed "
                              "experts split over the same ranks (DP = EP = GPUs per replica), a replica over "
                              "several nodes as a LeaderWorkerSet")
    all2all_backend: Literal[ALL2ALL_CHOICES] = Field(  # type: ignore[valid-type]
        "auto", alias="all2allBackend", description="wide-ep: vLLM's --all2all-backend; auto = deepep_low_latency on InfiniBand / RoCE / "
                            "GKE RDMA, allgather_reducescatter on EFA and on one node; a backend the pool's fabric "
                            "cannot carry is refused")
    eplb_redundant_experts: int = Field(
        0, ge=0, le=256, description="wide-ep: > 0 turns vLLM's expert-parallel load balancer on (--enable-eplb) with "
                                     "this many redundant experts spread over the ranks (sized as GPU memory)")

    @model_validator(mode="after")
    def _wide_ep_options(self):
        if self.mode != "wide-ep":
            if self.all2all_backend != "auto":
                raise field_error("all2allBackend", "applies to mode: wide-ep only; remove it or set mode: wide-ep")
            if self.eplb_redundant_experts:
                raise field_error("eplbRedundantExperts", "applies to mode: wide-ep only; remove it or set "
                                                          "mode: wide-ep")
        return self


class ModelDeployment(_Base):
    name: str = Field(pattern=DNS_LABEL, description="Kubernetes name of the deployment")
    model: str = Field(description="catalog id (python -m components table) or Hugging Face repo id; a repo "
                                   "outside the catalog is sized from its config.json (configFile, or the Hub)")
    architecture: Architecture | None = Field(None, description="for a model outside the catalog")
    config_file: str | None = Field(
        None, description="the model's Hugging Face config.json, relative to the stack file's directory: the "
                          "planner sizes the model from it (and from model.safetensors.index.json beside it)")
    revision: str | None = Field(
        None, pattern=r"^[0-9a-f]{40}$",
        description="Hugging Face commit (40 hex digits) to serve: the prefetch downloads it, vLLM runs with "
                    "--revision / --tokenizer-revision and a model outside the catalog is sized from its config.json "
                    "at it; Hub sources only (source kind hf); unset: the repository's main branch at download time")
    precision: Literal["bf16", "fp8", "int8", "int4", "nvfp4", "mxfp4"] | None = None
    accelerator: str | None = Field(None, description="restrict to one GPU (catalog id)")
    instance_types: list[str] | None = Field(None, description="restrict to these instance / machine types")
    tensor_parallel_size: int | None = Field(None, ge=1, description="pin TP instead of searching")
    max_model_len: int | None = Field(None, ge=256, description="default: the model's maximum context")
    gpu_memory_utilization: float = Field(
        0.90, description="share of GPU memory vLLM may use; within config/bounds.py GPU_MEMORY_UTILIZATION_RANGE")
    kv_cache_dtype: Literal["auto", "fp8", "allow-fp8", "any"] = Field(
        "auto", description="auto = the model dtype; fp8 halves KV memory (lower quality); allow-fp8 = the "
                            "planner may pick fp8 where it makes the fleet cheaper (the plan says so); "
                            "any: deprecated spelling of allow-fp8")
    engine: Engine = Field(Engine(), description="typed vLLM options (docs/engine.md)")
    extra_args: dict[str, ExtraValue] = Field(
        default_factory=dict, description="other `vllm serve` flags of vLLM 0.31: {--flag: value}")
    source: Source = Field(Source(), description="where the weights come from (default: the Hub repo)")
    parallelism: Parallelism = Field(Parallelism(), description="tensor x pipeline (default) or wide-ep "
                                                                 "(docs/wide-ep.md)")
    prefix_routing: Literal["approximate", "precise"] | None = Field(
        None, description="this model's prefix-cache routing (docs/prefix-routing.md); unset: gateway.prefixRouting")
    sla: Sla = Sla()
    replicas: Replicas = Replicas()
    _base_dir: Path | None = PrivateAttr(None)  # the stack file's directory (configFile is relative to it)

    # Field validators see the fields declared above them (info.data), so that one bad value
    # does not hide the others: every problem is reported at once.
    @field_validator("config_file")
    @classmethod
    def _readable_config(cls, v, info: ValidationInfo):
        if v is None:
            return v
        if info.data.get("architecture") is not None:
            raise ValueError("give the model's config.json or an inline architecture, not both")
        path = config_path(v, info.context)
        try:
            _file_spec(str(path), info.data.get("model"))
        except OSError as e:
            raise ValueError(f"cannot read {path} ({e.strerror or e}); a relative path is relative to the stack "
                             f"file's directory ({stack_dir(info.context)})") from None
        except ValueError as e:
            raise ValueError(f"{path}: {e}") from None
        return v

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
            raise ValueError(f"unknown instance type(s) {', '.join(unknown)}; "
                             f"see components/catalog/data/instance_types.csv")
        return v

    @field_validator("kv_cache_dtype")
    @classmethod
    def _kv_any_is_allow_fp8(cls, v):
        if v == "any":
            warnings.warn("kvCacheDtype: any is deprecated; it means allow-fp8 (the planner may choose an FP8 KV "
                          "cache, which lowers quality). Write allow-fp8, or auto to keep the model's dtype "
                          "(UPGRADING.md)", ConfigDeprecation, stacklevel=2)
            return "allow-fp8"
        return v

    @field_validator("extra_args")
    @classmethod
    def _extra_args(cls, v):
        return check_extra_args(v)

    @field_validator("precision")
    @classmethod
    def _offered_precision(cls, v, info: ValidationInfo):
        spec = _spec(info.data, info.context)
        if v and spec and v not in spec.precisions:
            raise ValueError(f"{v!r} is not offered for {spec.name}; allowed: {', '.join(spec.precisions)}")
        return v

    @field_validator("tensor_parallel_size")
    @classmethod
    def _tp_divides_heads(cls, tp, info: ValidationInfo):
        spec = _spec(info.data, info.context)
        if tp and spec and spec.heads % tp:
            ok = [d for d in range(1, min(spec.heads, 16) + 1) if spec.heads % d == 0]
            raise ValueError(f"{tp} does not divide {spec.name}'s {spec.heads} attention heads; "
                             f"allowed: {', '.join(map(str, ok))}")
        return tp

    @field_validator("max_model_len")
    @classmethod
    def _within_context(cls, v, info: ValidationInfo):
        spec = _spec(info.data, info.context)
        if v and spec and v > spec.max_context:
            raise ValueError(f"{v} is above {spec.name}'s limit of {spec.max_context}; "
                             f"set maxModelLen <= {spec.max_context}")
        return v

    @model_validator(mode="after")
    def _fits_model(self, info: ValidationInfo):
        self._base_dir = stack_dir(info.context)
        if self.spec is None:
            near = closest_models(self.model)
            hint = f" (closest catalog names: {', '.join(near)})" if near else ""
            raise field_error("model", f"unknown model {self.model!r}: not in the catalog{hint}, and "
                                       f"{_hub_problem(self.model, self.revision)}; or use a catalog id "
                                       f"({', '.join(_catalog_ids())}), or describe it under `architecture`")
        from .engine import engine_problems
        for field, problem in engine_problems(self):
            raise field_error(field, problem)
        problem = self._wide_ep_problem()
        if problem:
            raise field_error(*problem)
        tokens = self.sla.prompt_tokens + self.sla.output_tokens
        if tokens > self.effective_max_model_len:
            raise field_error("sla", f"promptTokens + outputTokens ({tokens}) exceed maxModelLen "
                                     f"{self.effective_max_model_len}; shorten them or raise maxModelLen")
        return self

    def _wide_ep_problem(self) -> tuple[str, str] | None:
        """parallelism.mode wide-ep: only for a mixture-of-experts model, and with nothing that sizes TP or the
        wide-EP flags some other way."""
        if self.parallelism.mode != "wide-ep":
            return None
        spec = self.spec
        if not spec.is_moe:
            moe = ", ".join(k for k, m in _catalog_models().items() if m.is_moe)
            return ("parallelism", f"mode: wide-ep splits routed experts over the GPUs; {spec.name} is a dense "
                                   f"model (no routed experts): remove parallelism (tensor x pipeline is planned), "
                                   f"or serve a mixture-of-experts model ({moe})")
        if spec.active_params_b is None:
            return ("parallelism", f"mode: wide-ep needs {spec.name}'s active parameters (the expert split); give "
                                   f"its config.json (configFile)")
        if self.tensor_parallel_size:
            return ("tensorParallelSize", "wide-ep runs TP 1 per rank (DP = EP = GPUs per replica): remove "
                                          "tensorParallelSize")
        owned = [f for f in self.extra_args if f in WIDE_EP_FLAGS]
        if owned:
            return ("extraArgs", f"{', '.join(owned)}: set by parallelism.mode wide-ep (all2allBackend, "
                                 f"eplbRedundantExperts, the LeaderWorkerSet's ranks); remove them")
        if self.engine.kv_offload_gib:
            return ("engine.kvOffloadGiB", "the host KV tier is not planned for wide-ep replicas; remove it")
        return None

    @property
    def spec(self) -> ModelSpec | None:
        return _spec({"model": self.model, "architecture": self.architecture, "name": self.name,
                      "config_file": self.config_file, "revision": self.revision}, {"base_dir": self._base_dir})

    @property
    def effective_precision(self) -> str:
        spec = self.spec
        if self.precision:
            return self.precision
        if "fp8" in spec.precisions and find_model(self.model) is spec and names_fp8(self.model, spec):
            return "fp8"  # asked for the FP8 checkpoint by its repo id
        return spec.precisions[0]

    @property
    def effective_max_model_len(self) -> int:
        return self.max_model_len or self.spec.max_context


def stack_dir(context: dict | None) -> Path:
    """The directory a stack file's relative paths start from: the loader's, else the project's stacks/."""
    base = (context or {}).get("base_dir")
    if base is not None:
        return Path(base)
    from .project import project_root
    return project_root() / "stacks"


def config_path(value: str, context: dict | None) -> Path:
    path = Path(os.path.expanduser(value))
    return path if path.is_absolute() else stack_dir(context) / path


@functools.lru_cache(maxsize=64)
def _file_spec_cached(path: str, mtime: float, model: str | None) -> ModelSpec:
    from ..catalog.hub import spec_from_file
    repo = model if model and "/" in model else None
    return spec_from_file(Path(path), repo=repo)


def _file_spec(path: str, model: str | None) -> ModelSpec:
    return _file_spec_cached(path, os.stat(path).st_mtime, model)


@functools.lru_cache(maxsize=64)
def _hub_lookup(repo: str, revision: str | None, cache: str, offline: bool) -> ModelSpec | str:
    """The spec from the Hub (or its cache), or why not: looked up once per process."""
    from ..catalog.hf_config import HfConfigError
    from ..catalog.hub import HubUnavailable, spec_from_hub
    try:
        return spec_from_hub(repo, revision)
    except HubUnavailable as e:
        return str(e)
    except HfConfigError as e:
        return f"its config.json cannot be sized: {e}"


def _hub(repo: str, revision: str | None) -> ModelSpec | str:
    from ..catalog import hub
    return _hub_lookup(repo, revision, str(hub.cache_root()), hub.offline())


def _hub_problem(repo: str, revision: str | None) -> str:
    found = _hub(repo, revision)
    return found if isinstance(found, str) else "its config.json was found"


def _spec(data: dict, context: dict | None = None) -> ModelSpec | None:
    """The model's description: its configFile, else the catalog entry, else the inline `architecture`,
    else its config.json from the Hugging Face Hub (cached on disk; None when none can be had)."""
    model = data.get("model")
    if model is None:
        return None
    if data.get("config_file"):
        try:
            return _file_spec(str(config_path(data["config_file"], context)), model)
        except (ValueError, OSError):
            return None  # reported on configFile
    found = find_model(model)
    if found is not None:
        return found
    a = data.get("architecture")
    if a is None:
        hub = _hub(model, data.get("revision"))
        return None if isinstance(hub, str) else hub
    return ModelSpec(
        id=data.get("name") or "custom", name=model, hf_repo=model, params_b=a.params_b, layers=a.layers,
        hidden=a.hidden, heads=a.heads, kv_heads=a.kv_heads, head_dim=a.head_dim or a.hidden // a.heads,
        vocab=a.vocab, max_context=a.max_context, source="stack file (inline architecture)")


def _catalog_ids():
    from ..catalog import MODELS
    return list(MODELS)


def _catalog_models():
    from ..catalog import MODELS
    return MODELS


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
