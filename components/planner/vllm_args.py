"""The exact vLLM arguments for a planned replica (vLLM 0.31; full flag names only), as one typed EngineArgs
(engine_args.py) that the Deployment renders as `vllm serve` args and Ray Serve LLM as engine_kwargs."""
from __future__ import annotations

from .engine_args import VLLM_PORT, EngineArgs, ExpertParallel, ratio_arg  # noqa: F401  (re-exported)
from .request import PlanRequest


def engine_args(req: PlanRequest, tp: int, pp: int, kv_cache_dtype: str, max_num_seqs: int,
                served_model_name: str, max_num_batched_tokens: int,
                expert_parallel: ExpertParallel | None = None) -> EngineArgs:
    """Everything sizing depends on is explicit, so a change of vLLM default cannot silently change the fleet;
    the stack's typed engine options (req.engine) follow."""
    m, opts = req.model, req.engine
    quantization = opts.quantization or ("fp8" if m.needs_online_quantization(req.precision) else None)
    return EngineArgs(
        model=req.model_source or m.repo_for(req.precision), served_model_name=served_model_name,
        tensor_parallel_size=tp, pipeline_parallel_size=pp, max_model_len=req.max_model_len,
        gpu_memory_utilization=req.gpu_memory_utilization, max_num_seqs=max_num_seqs,
        max_num_batched_tokens=max_num_batched_tokens, kv_cache_dtype=kv_cache_dtype, quantization=quantization,
        distributed_executor_backend="ray" if pp > 1 else None, expert_parallel=expert_parallel, options=opts)


def vllm_args(req: PlanRequest, tp: int, pp: int, kv_cache_dtype: str, max_num_seqs: int,
              served_model_name: str, max_num_batched_tokens: int) -> list[str]:
    """Container args for the vllm/vllm-openai image, whose entrypoint is `vllm serve`."""
    return engine_args(req, tp, pp, kv_cache_dtype, max_num_seqs, served_model_name, max_num_batched_tokens).to_cli()
