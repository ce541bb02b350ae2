"""Host memory as a KV tier (models[].engine.kvOffloadGiB, docs/kv-offload.md): does it fit the pod, what it holds.

What vLLM 0.31.0 does with `--kv-offloading-size S --kv-offloading-backend native` (read in its source):
  vllm/config/cache.py kv_offloading_size: "Size of the KV cache offloading buffer in GiB. When TP > 1, this is
    the total buffer size summed across all TP ranks" -> S is the whole replica's, not per GPU.
  vllm/config/vllm.py _post_init_kv_transfer_config: native -> kv_connector OffloadingConnector (unless
    VLLM_USE_SIMPLE_KV_OFFLOAD=1), kv_role kv_both, extra config cpu_bytes_to_use = S x 2^30.
  vllm/v1/kv_offload/cpu/spec.py: num_chunks = cpu_bytes_to_use // (one rank's KV bytes per block x world_size,
    rounded up to a page) -- every rank keeps its own copy of a block, except MLA under TP alone, whose ranks hold
    the same latent and share one copy (distributed/kv_transfer/kv_connector/v1/offloading/config.py
    replicated_layout: MLA, TP > 1, PP 1, the mp executor on one node).
  vllm/v1/kv_offload/cpu/shared_offload_region.py: on CUDA the buffer is one mmap of /dev/shm/vllm_offload_*.mmap,
    checked against the free space of /dev/shm (check_shm_free_space) and pinned (gpu_worker.py
    pin_mmap_region): memory the pod's limit must hold, that the kernel can neither reclaim nor swap.

So the pod's /dev/shm grows by S, and S must fit the pod's memory beside the vLLM processes and the NCCL /
shared-memory queues /dev/shm already held. The tier serves prefix hits only: a block the GPU cache evicted is
copied back over PCIe instead of recomputed. It does not let a replica run more requests at once (running
requests' KV stays on the GPU), so the planner never raises concurrency from it.

The CPU LoRA cache (engine.lora.maxCpuLoras) lives in the same pod memory: every vLLM worker keeps max_cpu_loras
adapters (vLLM's default: max_loras) whole and pinned (vllm/lora/model_manager.py, lora_model.py), so
lora_refusal_detail checks it against the pod first and the tier is checked beside it (planner/extras.py sizes an
adapter with the GPU slots' formula).
"""
from __future__ import annotations

import math

from ..catalog import ModelSpec
from . import memory as mem

# Host memory the vLLM processes take besides the tier: the API server and engine core, and one worker process per
# GPU (torch and CUDA host allocations, pinned staging buffers). ⚠ An allowance, not a measurement.
HOST_BASE_GIB = 4
HOST_PER_GPU_GIB = 4


def process_gib(gpus: int) -> int:
    """Host memory the vLLM processes of one pod need, outside the tier (⚠ allowance)."""
    return HOST_BASE_GIB + HOST_PER_GPU_GIB * gpus


def largest_offload_gib(pod_memory_gib: int, shm_gib: int, gpus: int, lora_gib: float = 0.0) -> int:
    """The largest tier (whole GiB) a pod of this memory holds beside its processes, the shm it had and the CPU
    LoRA cache (lora_gib: planner/extras.py lora_host_bytes)."""
    return max(0, math.floor(pod_memory_gib - shm_gib - process_gib(gpus) - lora_gib))


def copies(model: ModelSpec, tp: int, pp: int) -> int:
    """Copies of each block the buffer keeps: one per rank, one in all for MLA under TP alone."""
    return 1 if model.is_mla and tp > 1 and pp == 1 else tp * pp


def host_tokens(offload_gib: float, model: ModelSpec, tp: int, pp: int, kv_dtype: str) -> int:
    """Tokens the tier holds: bytes / (one rank's full-attention KV bytes per token x copies), whole blocks.
    ⚠ Sliding-window layers are counted at full length here (vLLM offloads per KV-cache group)."""
    per_token = mem.kv_bytes_per_token_layer(model, tp, kv_dtype) * mem.stage_layers(model, pp) * copies(model, tp, pp)
    blocks = int(offload_gib * mem.GiB // (per_token * mem.BLOCK_SIZE))
    return blocks * mem.BLOCK_SIZE


def _pod_text(pod_memory_gib: int, instance: str, replicas_per_node: int) -> str:
    share = f"1/{replicas_per_node} of " if replicas_per_node > 1 else ""
    return f"the pod gets {pod_memory_gib} GiB ({share}a {instance} node after system reserve)"


def refusal_detail(offload_gib: float, pod_memory_gib: int, shm_gib: int, gpus: int, instance: str,
                   replicas_per_node: int, lora_gib: float = 0.0, cpu_loras: int = 0) -> str | None:
    """Why the tier does not fit a pod, naming the field and the largest that fits; None when it fits. lora_gib:
    the pod's CPU LoRA cache (cpu_loras adapters), which the tier must fit beside."""
    largest = largest_offload_gib(pod_memory_gib, shm_gib, gpus, lora_gib)
    if offload_gib <= largest:
        return None
    less = f"{process_gib(gpus)} GiB for the vLLM processes"
    if lora_gib:
        less += (f", {shm_gib} GiB of /dev/shm and {lora_gib:.2f} GiB for the CPU LoRA cache ({cpu_loras} adapter(s), "
                 f"engine.lora.maxCpuLoras)")
    else:
        less += f" and {shm_gib} GiB of /dev/shm"
    return (f"engine.kvOffloadGiB {offload_gib:g} GiB does not fit host memory: "
            f"{_pod_text(pod_memory_gib, instance, replicas_per_node)}, less {less}; the largest that fits is "
            f"{largest} GiB")


def largest_cpu_loras(adapter_bytes: float, workers: int, pod_memory_gib: int, shm_gib: int, gpus: int) -> int:
    """The most adapters each of `workers` vLLM workers can cache in host memory (adapter_bytes each: planner/
    extras.py lora_adapter_bytes) beside the processes and the shm; the host KV tier is checked after, beside it."""
    room = (pod_memory_gib - shm_gib - process_gib(gpus)) * mem.GiB
    return max(0, int(room // (adapter_bytes * workers)))


def lora_refusal_detail(cpu_loras: int, explicit: bool, max_loras: int, rank: int, adapter_bytes: float,
                        workers: int, pod_memory_gib: int, shm_gib: int, gpus: int, instance: str,
                        replicas_per_node: int) -> str | None:
    """Why the CPU LoRA cache (cpu_loras adapters of adapter_bytes in each of `workers` workers) does not fit a pod,
    naming engine.lora.maxCpuLoras and the largest that fits; None when it fits. explicit: the stack sets
    maxCpuLoras (else vLLM's default, maxLoras)."""
    largest = largest_cpu_loras(adapter_bytes, workers, pod_memory_gib, shm_gib, gpus)
    if cpu_loras <= largest:
        return None
    field = (f"engine.lora.maxCpuLoras {cpu_loras}" if explicit
             else f"engine.lora.maxCpuLoras (unset: vLLM keeps maxLoras = {cpu_loras})")
    need = cpu_loras * adapter_bytes * workers / mem.GiB
    text = (f"{field} does not fit host memory: {cpu_loras} LoRA adapter(s) of rank {rank} at "
            f"{adapter_bytes / 2**20:,.0f} MiB each, one copy in each of the pod's {workers} vLLM worker(s), take "
            f"{need:.1f} GiB; {_pod_text(pod_memory_gib, instance, replicas_per_node)}, less {process_gib(gpus)} GiB "
            f"for the vLLM processes and {shm_gib} GiB of /dev/shm; the largest that fits is {largest}")
    if largest < max_loras:
        text += (f", below engine.lora.maxLoras {max_loras} (vLLM needs maxCpuLoras >= maxLoras): lower "
                 f"engine.lora.maxLoras or engine.lora.maxLoraRank")
    return text


def shm_with_offload(shm_gib: int, offload_gib: float | None) -> int:
    """/dev/shm's size: what the pod had plus the tier (vLLM checks the free space before it maps the buffer)."""
    return shm_gib + (math.ceil(offload_gib) if offload_gib else 0)


def describe(offload_gib: float, tokens: int, gpu_tokens: int, pod_memory_gib: int) -> str:
    """The plan's line: the choice, its cost and the benefit it assumes."""
    ratio = tokens / gpu_tokens if gpu_tokens else 0
    return (f"KV offload: {offload_gib:g} GiB of the pod's {pod_memory_gib} GiB host memory, pinned in /dev/shm "
            f"(native OffloadingConnector), holds {tokens:,} tokens ({ratio:.1f}x the GPU KV cache of "
            f"{gpu_tokens:,}); assumed benefit: more prefix-cache hits for multi-turn / shared-prefix traffic "
            f"(evicted blocks reload over PCIe instead of being recomputed), not more concurrent requests: "
            f"capacity is planned without it")
