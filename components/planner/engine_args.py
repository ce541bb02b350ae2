"""One typed set of vLLM engine arguments, rendered for both serving shapes.

`EngineArgs.to_cli()` is the Deployment's `vllm serve` argument list (model first, full flag names, values as
separate arguments); `EngineArgs.to_engine_kwargs()` is Ray Serve LLM's `engine_kwargs` (vLLM's EngineArgs
field names, typed values). Nothing is parsed back from strings. Flag names: vLLM 0.31.0
(config/vllm_registry.py VLLM_SERVE_FLAGS).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace

VLLM_PORT = 8000


@dataclass(frozen=True)
class Speculation:
    """What the planner needs of `--speculative-config` (the JSON keeps vLLM's own key names)."""
    method: str  # ngram | eagle | eagle3 | mtp | draft_model
    num_speculative_tokens: int
    model: str | None = None
    prompt_lookup_max: int | None = None
    prompt_lookup_min: int | None = None
    draft_params_b: float | None = None  # draft_model outside the catalog

    def config(self) -> dict:
        out: dict = {"method": self.method, "num_speculative_tokens": self.num_speculative_tokens}
        if self.model:
            out["model"] = self.model
        if self.method == "ngram":
            out["prompt_lookup_max"] = self.prompt_lookup_max
            out["prompt_lookup_min"] = self.prompt_lookup_min
        return out


@dataclass(frozen=True)
class ExpertParallel:
    """Wide expert parallelism (models[].parallelism.mode wide-ep, planner/wide_ep.py): attention data-parallel
    over `data_parallel_size` ranks (TP 1 each), the routed experts split over the same ranks (EP = DP), tokens
    moved between them by `all2all_backend`. The flags every rank runs; the per-node ones (--data-parallel-address,
    --data-parallel-start-rank, --headless) are the LeaderWorkerSet's (components/serving/lws.py).
    vLLM 0.31.0 vllm/engine/arg_utils.py (parallel group) / vllm/config/parallel.py ParallelConfig."""
    data_parallel_size: int  # every rank of the replica: EP size = TP (1) x DP
    data_parallel_size_local: int  # ranks per node (its GPUs)
    all2all_backend: str  # ParallelConfig.all2all_backend (All2AllBackend)
    redundant_experts: int = 0  # EPLB's num_redundant_experts; > 0 turns --enable-eplb on

    def flags(self) -> list[tuple[str, object]]:
        out: list[tuple[str, object]] = [
            ("--data-parallel-size", self.data_parallel_size),
            ("--data-parallel-size-local", self.data_parallel_size_local),
            ("--enable-expert-parallel", True),
            ("--all2all-backend", self.all2all_backend)]
        if self.redundant_experts:
            out += [("--enable-eplb", True), ("--eplb-config", {"num_redundant_experts": self.redundant_experts})]
        return out


@dataclass(frozen=True)
class LoraSlots:
    max_loras: int
    max_lora_rank: int
    max_cpu_loras: int | None = None
    adapters: tuple[tuple[str, str], ...] = ()  # (name, path the pod reads)
    # VLLM_ALLOW_RUNTIME_LORA_UPDATING in the pod (an environment variable, no flag): the load / unload endpoints
    runtime_updates: bool = False


@dataclass(frozen=True)
class EngineOptions:
    """The stack's typed engine options, as the planner receives them (platform-free)."""
    tool_call_parser: str | None = None
    reasoning_parser: str | None = None
    chat_template_path: str | None = None  # where the pod reads the template
    chat_template_config_map: str | None = None  # the ConfigMap mounted there
    chat_template_sha256: str | None = None  # an inline template's hash: a change rolls the pods (vLLM reads it once)
    prefix_caching: bool | None = None
    quantization: str | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    speculative: Speculation | None = None
    lora: LoraSlots | None = None
    # the host-memory KV tier, GiB for the whole replica (--kv-offloading-size; planner/host_tier.py)
    kv_offload_gib: float | None = None
    # extraArgs, checked against vLLM 0.31's flags: (flag, value) with YAML types kept
    extra: tuple[tuple[str, object], ...] = ()

    def summary(self) -> list[str]:
        """The options that are set, for the plan output."""
        out = []
        if self.tool_call_parser:
            out.append(f"tool calling ({self.tool_call_parser})")
        if self.reasoning_parser:
            out.append(f"reasoning parser {self.reasoning_parser}")
        if self.chat_template_path:
            out.append(f"chat template {self.chat_template_path}")
        if self.prefix_caching is not None:
            out.append(f"prefix caching {'on' if self.prefix_caching else 'off'}")
        if self.quantization:
            out.append(f"quantization {self.quantization}")
        if self.speculative:
            s = self.speculative
            out.append(f"speculative {s.method}{' ' + s.model if s.model else ''} x{s.num_speculative_tokens}")
        if self.lora:
            lo = self.lora
            out.append(f"LoRA {lo.max_loras} x rank {lo.max_lora_rank}, {len(lo.adapters)} adapter(s)"
                       + (", runtime load/unload (inside the cluster; the gateway answers the endpoints 403)"
                          if lo.runtime_updates else ""))
        if self.extra:
            out.append("extra " + " ".join(k for k, _ in self.extra))
        return out


@dataclass(frozen=True)
class EngineArgs:
    model: str  # what vLLM loads: a Hub repo id, s3:// / gs:// URI or a path
    served_model_name: str
    tensor_parallel_size: int
    pipeline_parallel_size: int
    max_model_len: int
    gpu_memory_utilization: float
    max_num_seqs: int
    max_num_batched_tokens: int
    kv_cache_dtype: str = "auto"
    quantization: str | None = None
    distributed_executor_backend: str | None = None
    expert_parallel: ExpertParallel | None = None  # wide-EP: DP x EP flags (None: TP x PP only)
    options: EngineOptions = field(default_factory=EngineOptions)
    # flags the model cache decides (loader, pinned revision): string values only (cache.engine_args)
    cache_flags: tuple[tuple[str, str | bool], ...] = ()

    def with_cache_flags(self, flags: list[str] | tuple[str, ...]) -> EngineArgs:
        """Add the cache's `--flag [value]` pairs (CacheFacts.engine_args): names and string values, no numbers."""
        pairs, i = [], 0
        while i < len(flags):
            flag = flags[i]
            if not flag.startswith("--"):
                raise ValueError(f"unexpected positional vLLM argument {flag!r}")
            if i + 1 < len(flags) and not flags[i + 1].startswith("--"):
                pairs.append((flag, flags[i + 1]))
                i += 2
            else:
                pairs.append((flag, True))
                i += 1
        return replace(self, cache_flags=self.cache_flags + tuple(pairs))

    def _typed(self) -> list[tuple[str, object]]:
        """(flag, typed value) in the order the CLI shows them; True = a bare switch, False = its --no- form."""
        o = self.options
        out: list[tuple[str, object]] = [
            ("--served-model-name", self.served_model_name),
            ("--tensor-parallel-size", self.tensor_parallel_size),
            ("--pipeline-parallel-size", self.pipeline_parallel_size),
            *(self.expert_parallel.flags() if self.expert_parallel else []),
            ("--max-model-len", self.max_model_len),
            ("--gpu-memory-utilization", self.gpu_memory_utilization),
            ("--max-num-seqs", self.max_num_seqs),
            # the profile run's activation peak (and the sliding-window cache) were sized for this; the
            # API server's default is not what every engine entry point (Ray Serve LLM) falls back to
            ("--max-num-batched-tokens", self.max_num_batched_tokens),
            ("--port", VLLM_PORT),
        ]
        if self.kv_cache_dtype != "auto":
            out.append(("--kv-cache-dtype", self.kv_cache_dtype))
        if self.quantization:
            out.append(("--quantization", self.quantization))
        if self.distributed_executor_backend:
            out.append(("--distributed-executor-backend", self.distributed_executor_backend))
        if o.tool_call_parser:
            out += [("--enable-auto-tool-choice", True), ("--tool-call-parser", o.tool_call_parser)]
        if o.reasoning_parser:
            out.append(("--reasoning-parser", o.reasoning_parser))
        if o.chat_template_path:
            out.append(("--chat-template", o.chat_template_path))
        if o.prefix_caching is not None:
            out.append(("--enable-prefix-caching", o.prefix_caching))
        if o.speculative:
            out.append(("--speculative-config", o.speculative.config()))
        if o.lora:
            lo = o.lora
            out += [("--enable-lora", True), ("--max-loras", lo.max_loras), ("--max-lora-rank", lo.max_lora_rank)]
            if lo.max_cpu_loras:
                out.append(("--max-cpu-loras", lo.max_cpu_loras))
            if lo.adapters:
                out.append(("--lora-modules", [f"{n}={p}" for n, p in lo.adapters]))
        if o.kv_offload_gib:
            # vLLM 0.31 vllm/config/vllm.py _post_init_kv_transfer_config: "native" -> OffloadingConnector
            # (kv_role kv_both) with cpu_bytes_to_use = size x 2^30, the whole replica's (config/cache.py)
            size = int(o.kv_offload_gib) if float(o.kv_offload_gib).is_integer() else o.kv_offload_gib
            out += [("--kv-offloading-size", size), ("--kv-offloading-backend", "native")]
        return [*out, *o.extra, *self.cache_flags]

    def to_cli(self) -> list[str]:
        """Container args for the vllm/vllm-openai image (entrypoint `vllm serve`): the model, then flags."""
        args = [self.model]
        for flag, value in self._typed():
            if value is True:
                args.append(flag)
            elif value is False:
                args.append(f"--no-{flag[2:]}")
            elif isinstance(value, dict):
                args += [flag, json.dumps(value, separators=(",", ":"))]
            elif isinstance(value, list):
                args += list_arg(flag, value)
            elif isinstance(value, float) and flag == "--kv-offloading-size":
                args += [flag, repr(value)]  # GiB as written (64.5), not a ratio
            elif isinstance(value, float):
                args += [flag, ratio_arg(value)]
            else:
                args += [flag, str(value)]
        return args

    def to_engine_kwargs(self) -> dict:
        """Ray Serve LLM's engine_kwargs: vLLM's EngineArgs field names (dashes to underscores, the --no- form
        as False). The served name and port are Serve's (model_loading_config, its HTTP proxy)."""
        kwargs = {}
        for flag, value in self._typed():
            if flag in ("--served-model-name", "--port"):
                continue
            key = flag[2:].replace("-", "_")
            if key == "lora_modules":
                # EngineArgs has no lora_modules (an API-server option); Serve LLM loads adapters itself
                continue
            kwargs[key] = value
        return kwargs


# How vLLM's `vllm serve` parser takes a list (vllm/entrypoints/openai/cli_args.py FrontendArgs, its "Special
# case" kwargs; vllm/engine/arg_utils.py get_kwargs: any other list field is nargs="+"): one JSON argument for the
# CORS lists, the flag repeated for --middleware (action "append"), else the flag once and one argument per item.
LIST_AS_JSON = frozenset({"--allowed-origins", "--allowed-methods", "--allowed-headers"})
LIST_REPEATED = frozenset({"--middleware"})


def list_arg(flag: str, value: list) -> list[str]:
    """`--flag` with a list value (models[].extraArgs, --lora-modules) as vLLM's parser reads it; strings only."""
    if flag in LIST_AS_JSON:
        return [flag, json.dumps(value, separators=(",", ":"))]
    items = [v if isinstance(v, str) else json.dumps(v, separators=(",", ":")) for v in value]
    if flag in LIST_REPEATED:
        return [x for v in items for x in (flag, v)]
    return [flag, *items]  # nargs="+" (e.g. --lora-modules a=/p b=/q, --cudagraph-capture-sizes 1 2 4)


def ratio_arg(value: float) -> str:
    """Two decimals as people write them (0.90), but never rounded: vLLM must run with the exact
    fraction the planner sized the KV cache and the CUDA-graph headroom for (0.925 stays 0.925)."""
    two = f"{value:.2f}"
    return two if float(two) == value else repr(value)
