"""models[].engine, models[].extraArgs and models[].source: typed vLLM options and where the weights live.

Every name a user may give is checked against what the pinned vLLM registers (vllm_registry.py), with the
allowed values in the error. What changes memory (speculative decoding, LoRA, the batch limits) is sized by
the planner (planner/extras.py); docs/engine.md documents each field.
"""
from __future__ import annotations

import difflib
import re
from typing import Literal, Union

from pydantic import Field, field_validator, model_validator

from .base import DNS_LABEL, _Base, field_error
from ..upstream.vllm_registry import (DEPRECATED_QUANTIZATION_METHODS, GENERATION_ARCHITECTURES, LORA_RANKS,
                            POOLING_ARCHITECTURES, QUANTIZATION_METHODS, REASONING_PARSERS, REMOVED_ARCHITECTURES,
                            SPECULATIVE_METHODS, TOOL_CALL_PARSERS, VLLM_SERVE_FLAGS)

CONFIGMAP_KEY = r"^[-._a-zA-Z0-9]+$"


def _one_of(value: str, allowed, what: str) -> str:
    if value not in allowed:
        close = difflib.get_close_matches(value, sorted(allowed), n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise ValueError(f"{value!r} is not a {what} vLLM 0.31 registers{hint} allowed: {', '.join(sorted(allowed))}")
    return value


class ChatTemplate(_Base):
    """A Jinja chat template: inline text (the platform puts it in a ConfigMap mounted into the pods) or a
    key of an existing ConfigMap in the stack's namespace."""
    inline: str | None = Field(None, min_length=1, description="the template text")
    config_map: str | None = Field(None, pattern=DNS_LABEL, description="existing ConfigMap with the template")
    key: str | None = Field(None, pattern=CONFIGMAP_KEY, description="its key (with configMap)")

    @model_validator(mode="after")
    def _one_source(self):
        if (self.inline is None) == (self.config_map is None):
            raise field_error("inline", "set exactly one of inline or configMap (+ key)")
        if self.config_map and not self.key:
            raise field_error("key", f"configMap {self.config_map} needs the key that holds the template")
        if self.inline and self.key:
            raise field_error("key", "only with configMap; an inline template needs no key")
        return self


class Speculative(_Base):
    """Speculative decoding (`--speculative-config` JSON, vllm/config/speculative.py SpeculativeConfig)."""
    method: Literal[SPECULATIVE_METHODS] = Field(description="ngram | eagle | eagle3 | mtp | draft_model")
    model: str | None = Field(None, description="draft model / EAGLE head repo (eagle, eagle3, draft_model)")
    num_speculative_tokens: int = Field(ge=1, le=16, description="tokens proposed per step")
    prompt_lookup_max: int | None = Field(None, ge=1, description="ngram: longest n-gram matched")
    prompt_lookup_min: int | None = Field(None, ge=1, description="ngram: shortest n-gram matched")
    draft_params_b: float | None = Field(None, gt=0, description="draft_model outside the catalog: its "
                                                                 "parameters (billions), for the memory budget")

    @model_validator(mode="after")
    def _fields_for_method(self):
        needs_model = self.method in ("eagle", "eagle3", "draft_model")
        if needs_model and not self.model:
            raise field_error("model", f"method {self.method} needs the draft's repository (e.g. an EAGLE head)")
        if not needs_model and self.model:
            raise field_error("model", f"method {self.method} takes no model ("
                                       f"{'the target checkpoint carries the MTP layers' if self.method == 'mtp' else 'it drafts from the prompt'})")
        lookup = self.prompt_lookup_max is not None or self.prompt_lookup_min is not None
        if lookup and self.method != "ngram":
            raise field_error("promptLookupMax", f"only for method ngram (not {self.method})")
        lo, hi = self.prompt_lookup_min, self.prompt_lookup_max
        if lo is not None and hi is not None and lo > hi:
            raise field_error("promptLookupMin", f"{lo} is above promptLookupMax ({hi})")
        if self.draft_params_b is not None and self.method != "draft_model":
            raise field_error("draftParamsB", "only for method draft_model")
        return self

    def config_json(self) -> dict:
        """The keys vLLM 0.31's SpeculativeConfig reads (its own field names)."""
        out = {"method": self.method, "num_speculative_tokens": self.num_speculative_tokens}
        if self.model:
            out["model"] = self.model
        if self.method == "ngram":
            lo, hi = self.prompt_lookup_min, self.prompt_lookup_max
            out["prompt_lookup_max"] = hi or lo or 5  # vLLM's default when neither is set: 5 and 5
            out["prompt_lookup_min"] = lo or hi or 5
        return out


class LoraAdapter(_Base):
    name: str = Field(pattern=r"^[A-Za-z0-9][-._A-Za-z0-9]*$", description="the model name clients request")
    repo: str | None = Field(None, pattern=r"^[\w.-]+/[\w.-]+$", description="Hugging Face repository")
    path: str | None = Field(None, pattern=r"^/", description="absolute path inside the serving pod")

    @model_validator(mode="after")
    def _one_place(self):
        if (self.repo is None) == (self.path is None):
            raise field_error("repo", "set exactly one of repo or path")
        return self


class Lora(_Base):
    """Multi-LoRA serving (vllm/config/lora.py LoRAConfig)."""
    max_loras: int = Field(1, ge=1, le=64, description="adapters in one batch (GPU slots)")
    max_lora_rank: int = Field(16, description=f"largest adapter rank; one of {', '.join(map(str, LORA_RANKS))}")
    # vLLM's default when unset: max_loras; each worker keeps them whole in host memory, counted against the pod's
    # memory (planner/extras.py lora_host_bytes, planner/host_tier.py lora_refusal_detail; docs/lora.md#memory)
    max_cpu_loras: int | None = Field(None, ge=1, description="adapters cached in host memory (>= maxLoras)")
    adapters: list[LoraAdapter] = Field(default_factory=list, description="preloaded with --lora-modules")
    # VLLM_ALLOW_RUNTIME_LORA_UPDATING (vllm/envs.py): vLLM then serves POST /v1/load_lora_adapter and
    # /v1/unload_lora_adapter (vllm/entrypoints/serve/lora/api_router.py); the gateway refuses both (docs/lora.md)
    runtime_updates: bool = Field(False, description="adapters loaded / unloaded at run time (docs/lora.md)")

    @field_validator("max_lora_rank")
    @classmethod
    def _rank(cls, v):
        if v not in LORA_RANKS:
            raise ValueError(f"{v} is not a rank vLLM 0.31 accepts; allowed: {', '.join(map(str, LORA_RANKS))}")
        return v

    @model_validator(mode="after")
    def _cpu_and_names(self):
        if self.max_cpu_loras is not None and self.max_cpu_loras < self.max_loras:
            raise field_error("maxCpuLoras", f"{self.max_cpu_loras} is below maxLoras ({self.max_loras})")
        names = [a.name for a in self.adapters]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise field_error("adapters", f"adapter name(s) {', '.join(dup)} given twice")
        return self


class Engine(_Base):
    """Typed vLLM options; each becomes its flag (planner/engine_args.py)."""
    tool_call_parser: str | None = Field(None, description="turns on --enable-auto-tool-choice with this parser")
    reasoning_parser: str | None = None
    chat_template: ChatTemplate | None = None
    prefix_caching: bool | None = Field(None, description="unset: vLLM's default (on)")
    quantization: str | None = Field(None, description="--quantization method for the checkpoint")
    max_num_seqs: int | None = Field(None, ge=1, description="default: the planner's concurrency per replica")
    max_num_batched_tokens: int | None = Field(None, ge=256, description="default: vLLM's for the GPU")
    speculative: Speculative | None = None
    lora: Lora | None = None
    # --kv-offloading-size (GiB, the whole replica's: vllm/config/cache.py kv_offloading_size), native backend
    kv_offload_gib: float | None = Field(None, gt=0, le=4096, alias="kvOffloadGiB",
                                         description="host-memory KV tier per replica, GiB (docs/kv-offload.md)")

    @field_validator("tool_call_parser")
    @classmethod
    def _tool(cls, v):
        return v if v is None else _one_of(v, TOOL_CALL_PARSERS, "tool-call parser")

    @field_validator("reasoning_parser")
    @classmethod
    def _reasoning(cls, v):
        return v if v is None else _one_of(v, REASONING_PARSERS, "reasoning parser")

    @field_validator("quantization")
    @classmethod
    def _quant(cls, v):
        return v if v is None else _one_of(v, QUANTIZATION_METHODS, "quantization method")


# A flag the planner, the cache or a typed field sets -> the stack key to use instead.
OWNED_FLAGS = {
    "--model": "model", "--served-model-name": "name", "--tensor-parallel-size": "tensorParallelSize",
    "--pipeline-parallel-size": "(the planner's; pin tensorParallelSize or accelerator instead)",
    "--max-model-len": "maxModelLen", "--gpu-memory-utilization": "gpuMemoryUtilization",
    "--max-num-seqs": "engine.maxNumSeqs", "--max-num-batched-tokens": "engine.maxNumBatchedTokens",
    "--port": "(fixed: the Service and probes use 8000)", "--kv-cache-dtype": "kvCacheDtype",
    "--quantization": "engine.quantization", "--distributed-executor-backend": "(the planner's: ray with PP > 1)",
    "--enable-auto-tool-choice": "engine.toolCallParser", "--tool-call-parser": "engine.toolCallParser",
    "--reasoning-parser": "engine.reasoningParser", "--chat-template": "engine.chatTemplate",
    "--enable-prefix-caching": "engine.prefixCaching", "--no-enable-prefix-caching": "engine.prefixCaching",
    "--speculative-config": "engine.speculative", "--enable-lora": "engine.lora", "--no-enable-lora": "engine.lora",
    "--max-loras": "engine.lora.maxLoras", "--max-lora-rank": "engine.lora.maxLoraRank",
    "--max-cpu-loras": "engine.lora.maxCpuLoras", "--lora-modules": "engine.lora.adapters",
    "--kv-offloading-size": "engine.kvOffloadGiB", "--kv-offloading-backend": "engine.kvOffloadGiB",
    "--revision": "revision", "--tokenizer-revision": "revision", "--load-format": "modelCache.loader",
    "--safetensors-load-strategy": "modelCache.loader", "--shutdown-timeout": "(the drain: sla.tpotMs)",
    "--download-dir": "(the model cache)", "--host": "(the pod's)", "--api-key": "(the gateway's)",
    "--data-parallel-size": "parallelism.mode: wide-ep (docs/wide-ep.md)",
    "--data-parallel-size-local": "parallelism.mode: wide-ep (docs/wide-ep.md)",
    **{f: "(none: it changes the GPUs or the memory the planner sized)" for f in (
        "--decode-context-parallel-size",
        "--prefill-context-parallel-size", "--nnodes", "--node-rank", "--headless", "--device-ids",
        "--kv-cache-memory-bytes", "--num-gpu-blocks-override", "--cpu-offload-gb", "--block-size")},
}
ExtraValue = Union[bool, int, float, str, dict, list]


def check_extra_args(args: dict[str, ExtraValue]) -> dict[str, ExtraValue]:
    """extraArgs: `--flag: value` pairs. Every flag must be a full `vllm serve` flag of vLLM 0.31 that
    nothing else sets; true is a bare switch, false its --no- form, a map is passed as JSON, a list as vLLM's
    parser takes it (planner/engine_args.py list_arg)."""
    problems = []
    for flag, value in args.items():
        if not re.match(r"^--[a-z0-9][-a-z0-9]*$", flag):
            problems.append(f"{flag!r}: write the full flag name, e.g. --enforce-eager")
        elif flag not in VLLM_SERVE_FLAGS:
            close = difflib.get_close_matches(flag, sorted(VLLM_SERVE_FLAGS), n=3, cutoff=0.6)
            problems.append(f"{flag}: not a vLLM 0.31 `vllm serve` flag"
                            + (f"; closest: {', '.join(close)}" if close else ""))
        elif flag in OWNED_FLAGS:
            owner = OWNED_FLAGS[flag]
            problems.append(f"{flag}: refused: it changes the GPUs or the memory the planner sized"
                            if owner.startswith("(none") else f"{flag}: set by the platform {owner}"
                            if owner.startswith("(") else f"{flag}: set by the platform; use {owner}")
        elif value is False and f"--no-{flag[2:]}" not in VLLM_SERVE_FLAGS:
            problems.append(f"{flag}: false has no --no- form here; leave the flag out")
        elif value is None:
            problems.append(f"{flag}: give a value (true for a switch)")
    if problems:
        raise ValueError("; ".join(problems))
    return args


class Source(_Base):
    """Where the weights come from (default: the Hugging Face Hub repository `model`)."""
    kind: Literal["hf", "s3", "gcs", "pvc"] = "hf"
    uri: str | None = Field(None, description="s3://bucket/prefix or gs://bucket/prefix (kind s3 / gcs)")
    claim_name: str | None = Field(None, pattern=DNS_LABEL, description="existing PVC with the weights (kind pvc)")
    path: str | None = Field(None, pattern=r"^[^/\s]\S*$", description="directory inside the claim, relative (kind pvc)")
    region: str | None = Field(None, pattern=r"^[a-z]{2}(-[a-z]+)+-\d$",
                               description="kind s3: the bucket's region (default: aws.region, else us-east-1)")
    service_account: str | None = Field(
        None, pattern=DNS_LABEL, description="Kubernetes service account bound to the cloud role that may read the "
                                             "bucket (EKS Pod Identity / GKE Workload Identity); kind s3 / gcs")

    @field_validator("path")
    @classmethod
    def _inside_claim(cls, v):
        if v and ".." in v.split("/"):
            raise ValueError(f"{v!r} leaves the claim; give a directory inside it")
        return v

    @model_validator(mode="after")
    def _per_kind(self):
        scheme = {"s3": "s3://", "gcs": "gs://"}.get(self.kind)
        if scheme:
            if not self.uri or not re.match(rf"^{scheme}[a-z0-9][-.a-z0-9]{{1,61}}[a-z0-9](/[^\s]*)?$", self.uri):
                raise field_error("uri", f"kind {self.kind} needs uri {scheme}BUCKET/PREFIX (got {self.uri!r})")
            if not self.service_account:
                raise field_error("serviceAccount", f"kind {self.kind} reads the bucket as a Kubernetes service "
                                                    f"account bound to a cloud role; name it (never keys in the "
                                                    f"stack file; see docs/engine.md)")
        elif self.uri:
            raise field_error("uri", f"only for kind s3 / gcs (kind is {self.kind})")
        if self.kind == "pvc" and not self.claim_name:
            raise field_error("claimName", "kind pvc needs the PersistentVolumeClaim that holds the weights")
        if self.kind != "pvc" and (self.claim_name or self.path):
            raise field_error("claimName", f"only for kind pvc (kind is {self.kind})")
        if self.kind != "s3" and self.region:
            raise field_error("region", f"only for kind s3 (kind is {self.kind})")
        if self.kind not in ("s3", "gcs") and self.service_account:
            raise field_error("serviceAccount", f"only for kind s3 / gcs (kind is {self.kind})")
        return self


def architecture_problem(architectures: tuple[str, ...], extra_args: dict) -> str | None:
    """Why vLLM 0.31 cannot serve a config.json's `architectures` (generation), or None. An architecture it has
    no class for may still load through vLLM's Transformers backend: only with extraArgs --model-impl
    transformers, the stack's explicit choice."""
    for arch in architectures:
        if arch in GENERATION_ARCHITECTURES:
            continue
        if arch in POOLING_ARCHITECTURES:
            return (f"architectures {arch}: a pooling model (embeddings / classification) in vLLM 0.31, "
                    f"not a text generator")
        if extra_args.get("--model-impl") == "transformers":
            continue
        gone = f" (vLLM supported it until {REMOVED_ARCHITECTURES[arch]})" if arch in REMOVED_ARCHITECTURES else ""
        return (f"architectures {arch}: vLLM 0.31 has no model class for it{gone}; serve a supported model, or try "
                f"its Transformers implementation with extraArgs {{--model-impl: transformers}}")
    return None


def engine_problems(dep) -> list[tuple[str, str]]:
    """(field path under the deployment, problem) for the options that depend on the model (a ModelDeployment)."""
    from ..catalog import find_model
    from ..catalog.models import mtp_layers

    spec, eng, out = dep.spec, dep.engine, []
    described_by = "configFile" if dep.config_file else "model"
    if (problem := architecture_problem(spec.architectures, dep.extra_args)):
        out.append((described_by, problem))
    if spec.quant_method in DEPRECATED_QUANTIZATION_METHODS and dep.extra_args.get("--allow-deprecated-quantization") \
            is not True:
        out.append((described_by, f"quantization_config.quant_method {spec.quant_method}: deprecated in vLLM 0.31, "
                                   f"which refuses to load it unless extraArgs {{--allow-deprecated-quantization: true}}"))
    sp = eng.speculative
    if sp and sp.method == "mtp" and not mtp_layers(spec):
        out.append(("engine.speculative.method", f"mtp: {spec.name} has no multi-token-prediction layers "
                                                 f"(num_nextn_predict_layers); use ngram, eagle, eagle3 or draft_model"))
    if sp and sp.method == "draft_model" and find_model(sp.model) is None and sp.draft_params_b is None:
        out.append(("engine.speculative.draftParamsB", f"{sp.model} is not in the catalog: give its parameters "
                                                       f"(billions) so that the planner can size its memory"))
    if eng.quantization and spec.needs_online_quantization(dep.effective_precision) and eng.quantization != "fp8":
        out.append(("engine.quantization", f"precision fp8 already quantizes {spec.name} online (--quantization fp8); "
                                           f"drop one of precision and engine.quantization"))
    if dep.revision and dep.source.kind != "hf":
        out.append(("revision", f"pins a Hugging Face commit; source kind {dep.source.kind} has no revisions"))
    if eng.max_num_batched_tokens and eng.max_num_batched_tokens < dep.effective_max_model_len and \
            "--no-enable-chunked-prefill" in dep.extra_args:
        out.append(("engine.maxNumBatchedTokens", "below maxModelLen with chunked prefill off: vLLM refuses it"))
    return out


# Hugging Face organisations / families whose repositories are gated (the Hub asks to accept a licence; a download
# needs a token of an account that did): the Hub's answer "Cannot access gated repo ... Access to model ... is
# restricted" (HTTP 401 / 403) to an anonymous download, as quoted in public bug reports, 2024-2025:
# meta-llama/Llama-3.* (the catalog's), mistralai/Mistral-7B-Instruct-v0.2 and mistralai/Mixtral-8x7B-Instruct-v0.1
# (github.com/McGill-NLP/llm2vec/issues/130, huggingface/transformers/issues/31367), google/gemma-2-2b-it,
# google/gemma-3-4b-pt, google/gemma-3-1b-it, google/embeddinggemma-300m (city96/ComfyUI_ExtraModels/issues/99,
# ariG23498/gemma3-object-detection/issues/5, cactus-compute/cactus/issues/197, vllm-project/semantic-router
# /issues/817). ⚠ A prefix is a family rule: a single repository may differ. Any other repository counts as gated
# when its config.json came from the Hub only with a token (ModelSpec.gated, catalog/hub.py).
GATED_REPO_PREFIXES = ("meta-llama/", "mistralai/", "google/gemma", "google/embeddinggemma")


def needs_hf_token(dep) -> str | None:
    """The gated Hub repository a deployment downloads (model or LoRA adapter), or None."""
    repos = []
    if dep.source.kind == "hf":
        repo = dep.spec.repo_for(dep.effective_precision) if dep.spec else dep.model
        if dep.spec is not None and dep.spec.gated:
            return repo  # its config.json came from the Hub only with a token: gated or private
        repos.append(repo)
    if dep.engine.lora:
        repos += [a.repo for a in dep.engine.lora.adapters if a.repo]
    sp = dep.engine.speculative
    if sp and sp.model:
        repos.append(sp.model)
    return next((r for r in repos if r.lower().startswith(GATED_REPO_PREFIXES)), None)


def gated_downloads(cfg, raw: dict) -> list[str]:
    """`models[i] (name) downloads REPO` for each gated repository the stack downloads; from the raw values
    where the stack is invalid (so that the token error comes with the others)."""
    if cfg is not None:
        return [f"models[{i}] ({d.name}) downloads {r}" for i, d in enumerate(cfg.models)
                if (r := needs_hf_token(d))]
    from ..catalog import find_model
    out = []
    for i, d in enumerate(raw.get("models") or []):
        if not isinstance(d, dict) or not isinstance(d.get("model"), str):
            continue
        spec = find_model(d["model"])
        source = d.get("source") if isinstance(d.get("source"), dict) else {}
        precision = d.get("precision")
        repo = (spec.repo_for(precision) if isinstance(precision, str) else spec.hf_repo) if spec else d["model"]
        if source.get("kind", "hf") == "hf" and repo.lower().startswith(GATED_REPO_PREFIXES):
            out.append(f"models[{i}] ({d.get('name')}) downloads {repo}")
    return out
