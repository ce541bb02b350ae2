"""The exact `vllm serve` arguments for a planned replica (vLLM 0.31; full flag names only)."""
from __future__ import annotations

from .request import PlanRequest

VLLM_PORT = 8000


def vllm_args(req: PlanRequest, tp: int, pp: int, kv_cache_dtype: str, max_num_seqs: int,
              served_model_name: str, max_num_batched_tokens: int) -> list[str]:
    """Container args for the vllm/vllm-openai image, whose entrypoint is `vllm serve`:
    the model first (positional), then flags. Everything sizing depends on is explicit,
    so a change of vLLM default cannot silently change the fleet."""
    m = req.model
    args = [
        m.repo_for(req.precision),
        "--served-model-name", served_model_name,
        "--tensor-parallel-size", str(tp),
        "--pipeline-parallel-size", str(pp),
        "--max-model-len", str(req.max_model_len),
        "--gpu-memory-utilization", ratio_arg(req.gpu_memory_utilization),
        "--max-num-seqs", str(max_num_seqs),
        # the profile run's activation peak (and the sliding-window cache) were sized for this; the
        # API server's default is not what every engine entry point (Ray Serve LLM) falls back to
        "--max-num-batched-tokens", str(max_num_batched_tokens),
        "--port", str(VLLM_PORT),
    ]
    if kv_cache_dtype != "auto":
        args += ["--kv-cache-dtype", kv_cache_dtype]
    if m.needs_online_quantization(req.precision):
        args += ["--quantization", "fp8"]
    if pp > 1:
        args += ["--distributed-executor-backend", "ray"]
    return args


def ratio_arg(value: float) -> str:
    """Two decimals as people write them (0.90), but never rounded: vLLM must run with the exact
    fraction the planner sized the KV cache and the CUDA-graph headroom for (0.925 stays 0.925)."""
    two = f"{value:.2f}"
    return two if float(two) == value else repr(value)
