"""engine.lora.maxCpuLoras in host memory (planner/extras.py lora_host_bytes, planner/host_tier.py
lora_refusal_detail, docs/lora.md#memory): every vLLM worker keeps maxCpuLoras adapters (vLLM's default: maxLoras)
whole in pinned host memory, sized with the GPU slots' formula at maxLoraRank; the cache is counted against the
pod's memory where the host KV tier is, stated beside the GPU slots in the plan, and refused naming the field and the
largest that fits."""
import json

import pytest

from components.catalog import find_model
from components.cli import main
from components.offline.runner import ROOT
from components.planner import extras, host_tier
from components.planner.engine_args import EngineOptions, LoraSlots
from components.planner.memory import GiB

STACK = ROOT / "tests" / "stacks" / "Pulumi.lora-runtime-aws.yaml"  # Llama-3.1-8B on g6e.xlarge, 4 x rank 16, 8 cached
MiB = 2**20


def _opts(max_loras=4, rank=16, cpu=8):
    return EngineOptions(lora=LoraSlots(max_loras, rank, cpu))


def test_an_adapter_is_the_slot_formula_for_one_slot_unsplit_over_every_layer():
    """Llama-3.1-8B (hidden 4,096, 32 heads, 8 KV heads, head_dim 128, 32 layers), per layer and unit of rank:
      qkv_proj 3 x 4,096 + (32 + 2 x 8) x 128 = 12,288 + 6,144 = 18,432
      o_proj   32 x 128 + 4,096                                =  8,192
      MLP      3 x 4,096 + 3 x 14,336                          = 55,296
      total 81,920 x rank 16 x 32 layers x 2 bytes = 83,886,080 bytes = 80 MiB
    (the catalog derives the MLP width 14,336.01 from the 8.03 B parameters, hence approx)."""
    m = find_model("llama-3.1-8b")
    assert extras.lora_adapter_bytes(m, 16) == pytest.approx(80 * MiB, rel=1e-5)
    # the same formula as one GPU slot at TP 1 (PP 1: every layer)
    assert extras.lora_adapter_bytes(m, 16) == extras.lora_bytes_per_gpu(m, 1, 1, _opts(max_loras=1))
    # each of a TP 2 pod's two workers keeps the whole adapter (the TP slice is taken only on the GPU):
    # 8 adapters x 80 MiB x 2 workers = 1,280 MiB = 1.25 GiB
    assert extras.lora_host_bytes(m, 2, _opts()) / GiB == pytest.approx(1.25, rel=1e-5)


def test_unset_max_cpu_loras_is_vllms_default_max_loras():
    """vllm/config/lora.py LoRAConfig: max_cpu_loras None -> max_loras (and below max_loras is an error)."""
    assert extras.cpu_loras(_opts(max_loras=4, cpu=None)) == 4
    assert extras.cpu_loras(_opts(max_loras=4, cpu=8)) == 8
    assert extras.cpu_loras(EngineOptions()) == 0 and extras.lora_host_bytes(find_model("llama-3.1-8b"), 1,
                                                                            EngineOptions()) == 0


def test_a_cache_the_pod_cannot_hold_is_refused_naming_the_field_and_the_largest():
    """A g6e.xlarge pod (32 GiB node): 27 GiB, less 8 GiB for the processes (4 + 4 x 1 GPU) and 4 GiB of /dev/shm
    leaves 15 GiB = 15,360 MiB. Rank 320 adapters of Llama-3.1-8B: 80 MiB x 320 / 16 = 1,600 MiB each, one worker:
    15,360 / 1,600 = 9.6 -> 9 fit; 16 take 16 x 1,600 MiB = 25 GiB."""
    args = dict(max_loras=4, rank=320, adapter_bytes=1600 * MiB, workers=1, pod_memory_gib=27, shm_gib=4, gpus=1,
                instance="g6e.xlarge", replicas_per_node=1)
    assert host_tier.largest_cpu_loras(1600 * MiB, 1, 27, 4, 1) == 9
    assert host_tier.lora_refusal_detail(9, True, **args) is None
    assert host_tier.lora_refusal_detail(16, True, **args) == (
        "engine.lora.maxCpuLoras 16 does not fit host memory: 16 LoRA adapter(s) of rank 320 at 1,600 MiB each, one "
        "copy in each of the pod's 1 vLLM worker(s), take 25.0 GiB; the pod gets 27 GiB (a g6e.xlarge node after "
        "system reserve), less 8 GiB for the vLLM processes and 4 GiB of /dev/shm; the largest that fits is 9")
    # maxCpuLoras unset: vLLM caches maxLoras; fewer fit than maxLoras -> lower the slots or the rank
    assert host_tier.lora_refusal_detail(10, False, **{**args, "max_loras": 10}) == (
        "engine.lora.maxCpuLoras (unset: vLLM keeps maxLoras = 10) does not fit host memory: 10 LoRA adapter(s) of "
        "rank 320 at 1,600 MiB each, one copy in each of the pod's 1 vLLM worker(s), take 15.6 GiB; the pod gets 27 GiB "
        "(a g6e.xlarge node after system reserve), less 8 GiB for the vLLM processes and 4 GiB of /dev/shm; the "
        "largest that fits is 9, below engine.lora.maxLoras 10 (vLLM needs maxCpuLoras >= maxLoras): lower "
        "engine.lora.maxLoras or engine.lora.maxLoraRank")


def test_the_host_kv_tier_fits_beside_the_lora_cache():
    """The kv-offload example's pod (460 GiB, 6 GiB /dev/shm, TP 2: 12 GiB of processes) held a 442 GiB tier; with
    1.25 GiB of LoRA cache (8 x 80 MiB x 2 workers) 460 - 6 - 12 - 1.25 = 440.75 -> 440 GiB."""
    assert host_tier.largest_offload_gib(460, 6, 2, 1.25) == 440
    assert host_tier.refusal_detail(440, 460, 6, 2, "p5.48xlarge", 4, 1.25, 8) is None
    assert host_tier.refusal_detail(442, 460, 6, 2, "p5.48xlarge", 4, 1.25, 8) == (
        "engine.kvOffloadGiB 442 GiB does not fit host memory: the pod gets 460 GiB (1/4 of a p5.48xlarge node after "
        "system reserve), less 12 GiB for the vLLM processes, 6 GiB of /dev/shm and 1.25 GiB for the CPU LoRA cache "
        "(8 adapter(s), engine.lora.maxCpuLoras); the largest that fits is 440 GiB")


def test_the_plan_states_the_cache_beside_the_gpu_slots(capsys):
    """The worked stack: 8 cached adapters x 80 MiB x 1 worker = 640 MiB = 0.625 GiB (0.63: the derived MLP width
    above), in the g6e.xlarge pod's 27 GiB."""
    main(["plan", str(STACK)])
    out = capsys.readouterr().out
    assert ("memory: LoRA slots 0.31 GiB/GPU, ~2,560 tokens less KV cache per replica; LoRA CPU cache "
            "(maxCpuLoras 8) 0.63 GiB host memory of the pod's 27 GiB: 8 adapter(s) of 80 MiB (rank 16) in each of "
            "the pod's 1 vLLM worker(s)") in out


def test_a_bigger_cache_moves_to_a_pod_that_holds_it(tmp_path):
    """Rank 320, 16 cached: 25 GiB does not fit g6e.xlarge's 15 GiB (above); g6e.2xlarge (64 GiB node) gives the pod
    int(64 x 0.9 - 1) = 56 GiB, 44 GiB after the processes and /dev/shm."""
    stack = tmp_path / "Pulumi.lora-cpu.yaml"
    stack.write_text(STACK.read_text().replace("maxLoraRank: 16", "maxLoraRank: 320")
                     .replace("maxCpuLoras: 8", "maxCpuLoras: 16"))
    assert main(["plan", str(stack), "--out", str(tmp_path / "out")]) == 0
    t = json.loads((tmp_path / "out" / "topology.json").read_text())["llama-lora"]
    assert (t["instance_type"], t["pod_memory_gib"]) == ("g6e.2xlarge", 56)


def test_a_cache_no_pod_holds_is_refused_naming_the_field(tmp_path, capsys):
    stack = tmp_path / "Pulumi.lora-cpu-huge.yaml"
    stack.write_text(STACK.read_text().replace("maxLoraRank: 16", "maxLoraRank: 320")
                     .replace("maxCpuLoras: 8", "maxCpuLoras: 1000"))
    assert main(["plan", str(stack)]) != 0
    err = capsys.readouterr()
    text = err.out + err.err
    assert "bound by host memory: engine.lora.maxCpuLoras 1000 does not fit host memory: 1000 LoRA adapter(s) of " \
           "rank 320 at 1,600 MiB each" in text
    assert "lower engine.lora.maxCpuLoras to the largest that fits (above)" in text
