"""NVIDIA AIConfigurator's per-operation silicon timings as a step-time estimator (planner/estimators.py,
`Efficiency.estimator = "aiconfigurator"`). Pure apart from the optional library (`pip install
'vllm-platform[aiconfigurator]'`, aiconfigurator-core, Apache-2.0), which is imported only inside the functions
that price a step, never when this module is imported: planning without it costs nothing.

AIConfigurator (AIC) holds GEMM, attention, MoE and all-reduce kernel timings measured with a given vLLM release
on a given GPU (its "systems") and sums a model's operations into the latency of one engine step. This module
asks it, once per replica shape, for a small grid of steps (decode batch x prefill chunk at the shape's contexts)
and interpolates that grid, so that the capacity model's thousands of calls cost a table look-up each:
`step_cost(...)(decode, prefill)` has the contract of performance.StepCost.__call__ (seconds of one engine step).

What AIC prices and what it does not:
* A step is the sum of the kernels AIC measured (GEMMs, attention, MoE, TP all-reduces); the CPU work of the
  engine between steps (scheduling, sampling) is not in it.
* Its vLLM data is of the release SYSTEMS names per GPU (0.24.0; 0.14.0 on A100), not the pinned vLLM, and of the
  quantisation kernels that release was measured with (SYSTEMS' gemm / moe / kv columns); a shape outside them is
  refused (`supports`), never priced from another precision.
* Pipeline parallelism is refused: the step model's micro-batch schedule (performance.StepCost) is not AIC's.
* It never reaches the network: model configs are AIC's bundled ones (MODELS) or written from the catalog's
  ModelSpec plus MODEL_CONFIGS into a local directory.
"""
from __future__ import annotations

import bisect
import contextlib
import hashlib
import json
import logging
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable

from ..catalog import Accelerator, InstanceType, ModelSpec

from ..upstream.versions import AIC_VERSION  # noqa: E402,F401  (aiconfigurator-core, pinned by the extra)
PACKAGE = "aiconfigurator-core"
INSTALL = "pip install 'vllm-platform[aiconfigurator]'"
BACKEND = "vllm"


class EstimatorUnavailable(RuntimeError):
    """The estimator cannot price this shape (library not installed, GPU, model or precision not in its data).
    Defined here, below planner/estimators.py, which imports this module: aic.py importing estimators.py back would
    be an import circle (pyproject's "acyclic" contract). estimators.py is to re-export this class as its own
    EstimatorUnavailable (`from .aic import EstimatorUnavailable`)."""


@dataclass(frozen=True)
class AicSystem:
    system: str  # AIC's system name (aiconfigurator_core/systems/<system>.yaml)
    vllm: str  # the vLLM release AIC's perf data of that system was measured with (its "current" slot)
    gemm: tuple[str, ...]  # GEMM quant modes that data holds (gemm_dtype)
    moe: tuple[str, ...]  # MoE quant modes (moe_dtype)
    kv: tuple[str, ...]  # KV cache dtypes of the generation-attention data (kv_cache_dtype)


# Our accelerators (components/catalog/data/accelerators.csv) -> AIC's systems. Source: aiconfigurator-core 0.12.0's
# wheel: systems/query_versions.yaml (defaults.vllm.current "0.24.0"; overrides.a100_sxm.vllm.current "0.14.0") and
# the distinct gemm_dtype / moe_dtype / kv_cache_dtype of systems/data/<system>/{gemm,moe,attention}/vllm/<version>/
# {gemm,moe,generation_attention}_perf.parquet (read on 2026-12-06; tests/planner/test_aic.py re-reads them from the
# installed wheel). The SXM parts are AWS's and GCP's (p4de/p5/p5e/p6, a2-ultra/a3/a4).
_HOPPER_GEMM = ("bfloat16", "fp8", "fp8_block")
_HOPPER_MOE = ("bfloat16", "fp8", "fp8_block", "int4_wo", "w4a16_mxfp4")
SYSTEMS: dict[str, AicSystem] = {
    "l40s": AicSystem("l40s", "0.24.0", _HOPPER_GEMM, _HOPPER_MOE, ("bfloat16", "fp8")),
    "a100-80gb": AicSystem("a100_sxm", "0.14.0", ("bfloat16",), ("bfloat16",), ("bfloat16",)),
    "h100": AicSystem("h100_sxm", "0.24.0", _HOPPER_GEMM, _HOPPER_MOE, ("bfloat16", "fp8")),
    "h200": AicSystem("h200_sxm", "0.24.0", _HOPPER_GEMM, _HOPPER_MOE, ("bfloat16", "fp8")),
    "b200": AicSystem("b200_sxm", "0.24.0", (*_HOPPER_GEMM, "nvfp4"),
                      (*_HOPPER_MOE, "nvfp4", "w4a8_mxfp4_mxfp8"), ("bfloat16", "fp8")),
}
# Why the other catalog GPUs have no AIC system (same source)
NO_SYSTEM: dict[str, str] = {
    "a10g": "aiconfigurator-core 0.12.0 has no A10G system",
    "l4": "its l4 system is estimate-only: no measured perf data (systems/data/l4 is empty)",
    "a100-40gb": "its a100_sxm data is of the 80 GB part (2039 GB/s HBM); the 40 GB part's HBM runs at 1555 GB/s",
}

# Our catalog models (components/catalog/models.py) -> the HF config AIC reads. A model path AIC ships
# (aiconfigurator_core/model_configs/<org>--<name>_config.json) of the same architecture: the base checkpoints
# stand for their Instruct weights (same shapes), Llama-3.3-70B for itself (Llama-3.1-70B's architecture),
# Qwen3-235B-A22B for Instruct-2507 (same shapes; its max_position_embeddings differs, which AIC does not price).
MODELS: dict[str, str] = {
    "llama-3.1-8b": "meta-llama/Meta-Llama-3.1-8B",
    "llama-3.1-70b": "meta-llama/Meta-Llama-3.1-70B",
    "llama-3.1-405b": "meta-llama/Meta-Llama-3.1-405B",
    "llama-3.3-70b": "meta-llama/Meta-Llama-3.1-70B",
    "qwen3-32b": "Qwen/Qwen3-32B",
    "qwen3-235b-a22b": "Qwen/Qwen3-235B-A22B",
    "mixtral-8x7b": "mistralai/Mixtral-8x7B-v0.1",
    "deepseek-v3": "deepseek-ai/DeepSeek-V3",
    "gpt-oss-120b": "openai/gpt-oss-120b",
}


@dataclass(frozen=True)
class DenseConfig:
    """What a config.json adds to the catalog's ModelSpec for a dense model AIC does not ship."""
    architecture: str
    model_type: str
    intermediate_size: int
    rope_theta: float
    source: str


# Written into a local config.json with the ModelSpec's shapes (hidden, layers, heads, KV heads, head_dim, vocab,
# max_context) for AIC to read; AIC prices Qwen2ForCausalLM as its Llama family.
MODEL_CONFIGS: dict[str, DenseConfig] = {
    "qwen2.5-7b": DenseConfig("Qwen2ForCausalLM", "qwen2", 18_944, 1e6,
                              "huggingface.co/Qwen/Qwen2.5-7B-Instruct config.json"),
    "qwen2.5-32b": DenseConfig("Qwen2ForCausalLM", "qwen2", 27_648, 1e6,
                               "huggingface.co/Qwen/Qwen2.5-32B-Instruct config.json (⚠ not re-read)"),
    "qwen2.5-72b": DenseConfig("Qwen2ForCausalLM", "qwen2", 29_568, 1e6,
                               "huggingface.co/Qwen/Qwen2.5-72B-Instruct config.json (⚠ not re-read)"),
}


def quant_modes(model: ModelSpec, precision: str) -> tuple[str, str] | str:
    """(GEMM, MoE) quant modes of AIC for our `precision` of the model, or why none fits. FP8 is per-tensor (the
    RedHat/compressed-tensors checkpoints) except for the block-quantized checkpoints (fp8_block); MXFP4 is
    gpt-oss's experts at BF16 math (w4a16_mxfp4) beside BF16 attention projections; NVFP4 runs natively on
    Blackwell only."""
    if precision == "bf16":
        return "bfloat16", "bfloat16"
    if precision == "fp8":
        mode = "fp8_block" if model.fp8_block_quantized else "fp8"
        return mode, mode
    if precision == "mxfp4":
        return "bfloat16", "w4a16_mxfp4"
    if precision == "nvfp4":
        return "nvfp4", "nvfp4"
    return f"precision {precision!r}: no vLLM kernel timings of it in aiconfigurator-core {AIC_VERSION}"


def _installed() -> str | None:
    """None if the pinned aiconfigurator-core is importable, else how to get it."""
    import importlib.metadata
    import importlib.util
    if importlib.util.find_spec("aiconfigurator_core") is None:
        return f"{PACKAGE} is not installed: {INSTALL}"
    try:
        version = importlib.metadata.version(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        version = "?"
    if version != AIC_VERSION:
        return (f"{PACKAGE} {version} is installed; this planner's AIC tables are of {AIC_VERSION}: {INSTALL}")
    return None


def supports(model: ModelSpec, precision: str, acc: Accelerator, tp: int, pp: int,
             kv_cache_dtype: str = "auto") -> str | None:
    """None if AIC can price the shape, else one line saying why not (and what to do)."""
    head = "estimator 'aiconfigurator'"
    system = SYSTEMS.get(acc.id)
    if system is None:
        why = NO_SYSTEM.get(acc.id, f"aiconfigurator-core {AIC_VERSION} has no system for it")
        return f"{head}: no vLLM perf data for GPU {acc.id!r} ({why}); use estimator 'step-model'"
    if model.id not in MODELS and model.id not in MODEL_CONFIGS:
        return (f"{head}: model {model.id!r} has no AIC model config (planner/aic.py MODELS, MODEL_CONFIGS); use "
                "estimator 'step-model'")
    if pp > 1:
        return f"{head}: pipeline parallelism (pp={pp}) is not priced by AIC here; use estimator 'step-model'"
    modes = quant_modes(model, precision)
    if isinstance(modes, str):
        return f"{head}: {modes}; use estimator 'step-model'"
    gemm, moe = modes
    if gemm not in system.gemm or (model.is_moe and moe not in system.moe):
        held = ", ".join(system.gemm if gemm not in system.gemm else system.moe)
        return (f"{head}: precision {precision!r} on {acc.id!r}: AIC's {system.system} vLLM {system.vllm} data holds "
                f"{'GEMM' if gemm not in system.gemm else 'MoE'} timings of {held} only, not "
                f"{gemm if gemm not in system.gemm else moe}; use estimator 'step-model'")
    if _kv_mode(kv_cache_dtype) not in system.kv:
        return (f"{head}: kv_cache_dtype {kv_cache_dtype!r} on {acc.id!r}: AIC's {system.system} vLLM {system.vllm} "
                f"data holds KV caches of {', '.join(system.kv)} only; use estimator 'step-model'")
    return _installed()


def _kv_mode(kv_cache_dtype: str) -> str:
    return "fp8" if kv_cache_dtype.startswith("fp8") else "bfloat16"


def _model_path(model: ModelSpec) -> str:
    """A model path AIC reads without the network: the HF id of a config it ships in its list of known models,
    else a local directory holding a config.json (AIC's bundled file copied, or written from ModelSpec)."""
    from aiconfigurator_core.sdk.common import DefaultHFModels
    name = MODELS.get(model.id)
    if name is not None and name in DefaultHFModels:
        return name
    if name is not None:  # shipped as a file but not listed: AIC would try the Hub for it
        import aiconfigurator_core
        bundled = Path(aiconfigurator_core.__file__).parent / "model_configs" / f"{name.replace('/', '--')}_config.json"
        config = json.loads(bundled.read_text())
    else:
        c = MODEL_CONFIGS[model.id]
        config = {"architectures": [c.architecture], "model_type": c.model_type, "hidden_size": model.hidden,
                  "num_hidden_layers": model.layers, "num_attention_heads": model.heads,
                  "num_key_value_heads": model.kv_heads, "head_dim": model.head_dim, "vocab_size": model.vocab,
                  "max_position_embeddings": model.max_context, "intermediate_size": c.intermediate_size,
                  "rope_theta": c.rope_theta, "tie_word_embeddings": model.tied_embeddings,
                  "torch_dtype": "bfloat16", "hidden_act": "silu", "rms_norm_eps": 1e-6}
    text = json.dumps(config, sort_keys=True, indent=1)
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    # the user's own cache (not a shared /tmp path another user could own or plant), named by the content's hash and
    # checked on every use, so a stale or altered file is rewritten, never read
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "vllm-platform" / "aic-configs"
    folder = cache / f"{model.id}-{digest}"
    target = folder / "config.json"
    try:
        if not target.is_file() or target.read_text() != text:
            folder.mkdir(parents=True, exist_ok=True)
            part = folder / f".config.json.{os.getpid()}"
            part.write_text(text)
            os.replace(part, target)
    except OSError as exc:
        raise EstimatorUnavailable(f"estimator 'aiconfigurator': cannot write {target} for AIC to read ({exc}); set "
                                   f"XDG_CACHE_HOME to a writable directory, or use estimator 'step-model'") from exc
    return str(folder)


@contextlib.contextmanager
def _quiet():
    """AIC logs a warning per low-fidelity table it loads (other frameworks' data kept as fallbacks): not ours."""
    logger = logging.getLogger("aiconfigurator_core")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


class _Shape:
    """A ModelSpec as a cache key: its id and the fields AIC's config and quant modes are made of (a ModelSpec holds
    a dict, so it does not hash itself)."""

    def __init__(self, model: ModelSpec):
        self.model = model
        self.key = (model.id, model.hidden, model.layers, model.heads, model.kv_heads, model.head_dim, model.vocab,
                    model.max_context, model.tied_embeddings, model.fp8_block_quantized, model.experts)

    def __hash__(self) -> int:
        return hash(self.key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Shape) and other.key == self.key


@lru_cache(maxsize=32)
def _engine(shape: _Shape, precision: str, acc_id: str, tp: int, kv_mode: str):
    """AIC's compiled engine of one replica shape (AIC loads its perf database once per system itself)."""
    from aiconfigurator_core.sdk.engine import EngineHandle
    system = SYSTEMS[acc_id]
    gemm, moe = quant_modes(shape.model, precision)
    with _quiet():
        return EngineHandle.compile(
            _model_path(shape.model), system.system, BACKEND, backend_version=system.vllm, tp_size=tp, pp_size=1,
            # vLLM's default MoE layout (no --enable-expert-parallel): every expert split over the TP group
            moe_tp_size=tp, moe_ep_size=1, gemm_quant_mode=gemm, moe_quant_mode=moe, kvcache_quant_mode=kv_mode,
            fmha_quant_mode="bfloat16", comm_quant_mode="half")


# The grid a shape is priced on: decode batches (log-spaced, 1.5x apart) and prefill chunk tokens (2x apart);
# between points linear, past the last point the last segment's slope.
DECODE_GRID: tuple[int, ...] = (0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024)
PREFILL_GRID: tuple[int, ...] = (0, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)


@dataclass(frozen=True)
class AicStepCost:
    """AIC's step times of one replica shape on DECODE_GRID x `prefill` (seconds), interpolated."""
    decode: tuple[float, ...]
    prefill: tuple[float, ...]
    seconds: tuple[tuple[float, ...], ...]  # [prefill index][decode index], non-decreasing along both
    system: str
    vllm: str

    def _along_decode(self, row: tuple[float, ...], decode: float) -> float:
        xs = self.decode
        i = min(max(bisect.bisect_right(xs, decode) - 1, 0), len(xs) - 2)
        return row[i] + (row[i + 1] - row[i]) * (decode - xs[i]) / (xs[i + 1] - xs[i])

    def __call__(self, decode: float, prefill: float = 0.0) -> float:
        decode, prefill = max(float(decode), 0.0), max(float(prefill), 0.0)
        ps = self.prefill
        j = min(max(bisect.bisect_right(ps, prefill) - 1, 0), len(ps) - 2)
        lo, hi = self._along_decode(self.seconds[j], decode), self._along_decode(self.seconds[j + 1], decode)
        return lo + (hi - lo) * (prefill - ps[j]) / (ps[j + 1] - ps[j])


def _grid(engine, context: int, prompt: int) -> list[list[float]]:
    """Milliseconds [prefill][decode]. A pure decode step at `context` is AIC's decode step (its generation ops at
    isl + osl // 2 + 1 = context). A mixed step is AIC's shared (non-attention) ops over the chunk's and the decode
    requests' tokens, plus the chunk's attention over its `prompt`-token prompt (AIC spreads a prompt's attention
    over its chunks; a chunk longer than the prompt holds chunk / prompt prompts; prompt 0: each chunk is a whole
    prompt), plus the decode requests' attention at `context`."""
    isl = max(1, context - 1)
    decode_attn = [engine.mixed_step_breakdown(1, d, isl, 1)[3] for d in DECODE_GRID]
    rows = [[engine.decode_step_latency(d, isl, 1) for d in DECODE_GRID]]
    rows[0][0] = rows[0][1]  # an empty step: the smallest real one, so that the cost never falls toward zero
    for p in PREFILL_GRID[1:]:
        whole = prompt or p
        chunk = min(p, whole)
        ctx_attn = engine.mixed_step_breakdown(chunk, 0, whole, 1)[2] * p / chunk
        rows.append([engine.mixed_step_breakdown(p, d, max(whole, p), 1)[1] + ctx_attn + decode_attn[k]
                     for k, d in enumerate(DECODE_GRID)])
    for row in rows:  # monotone in decode
        for k in range(1, len(row)):
            row[k] = max(row[k], row[k - 1])
    for j in range(1, len(rows)):  # and in prefill
        rows[j] = [max(a, b) for a, b in zip(rows[j], rows[j - 1])]
    return rows


@lru_cache(maxsize=256)
def _priced(shape: _Shape, precision: str, acc_id: str, tp: int, kv_mode: str, context: int,
            prompt: int) -> AicStepCost:
    engine = _engine(shape, precision, acc_id, tp, kv_mode)
    with _quiet():
        ms = _grid(engine, context, prompt)
    system = SYSTEMS[acc_id]
    return AicStepCost(tuple(map(float, DECODE_GRID)), tuple(map(float, PREFILL_GRID)),
                       tuple(tuple(v / 1e3 for v in row) for row in ms), system.system, system.vllm)


def step_cost(model: ModelSpec, precision: str, acc: Accelerator, inst: InstanceType, tp: int, pp: int,
              kv_cache_dtype: str, context: float, prefill_context: float = 0.0) -> Callable[..., float]:
    """AIC's step time of the replica shape: `cost(decode, prefill=0.0)` seconds, decoding requests at average
    `context`, prefill chunks of prompts of 2 x `prefill_context` tokens (the capacity model passes P / 2; 0: each
    chunk a whole prompt). Raises EstimatorUnavailable (with supports()'s reason) for a shape AIC cannot price.
    `inst` is not used: AIC's system carries its own intra-node links."""
    why = supports(model, precision, acc, tp, pp, kv_cache_dtype)
    if why is not None:
        raise EstimatorUnavailable(why)
    prompt = max(1, round(2 * prefill_context)) if prefill_context > 0 else 0
    try:
        return _priced(_Shape(model), precision, acc.id, tp, _kv_mode(kv_cache_dtype), max(1, round(context)), prompt)
    except (ValueError, RuntimeError, NotImplementedError, KeyError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise EstimatorUnavailable(f"estimator 'aiconfigurator': {model.id} {precision} TP{tp} on {acc.id}: AIC "
                                   f"refused the shape ({first}); use estimator 'step-model'") from exc
