"""engine.kvOffloadGiB (planner/host_tier.py, docs/kv-offload.md): the worked stack tests/stacks/Pulumi.kv-offload-aws.yaml
plans with vLLM's native offload flags, states the tier's size, what it holds and the benefit it assumes, grows
/dev/shm by it inside the pod's memory limit, and a tier the host cannot hold is refused naming the field."""
import json

import pytest
import yaml

from components.cli import main
from components.offline.runner import ROOT
from components.planner import host_tier

STACK = ROOT / "tests" / "stacks" / "Pulumi.kv-offload-aws.yaml"


@pytest.fixture(scope="module")
def plan(tmp_path_factory):
    out = tmp_path_factory.mktemp("kv-offload")
    assert main(["plan", str(STACK), "--out", str(out)]) == 0
    return out


def test_the_plan_passes_vllms_native_offload_flags(plan):
    args = json.loads((plan / "topology.json").read_text())["qwen-chat"]["vllm_args"]
    i = args.index("--kv-offloading-size")
    assert args[i:i + 4] == ["--kv-offloading-size", "160", "--kv-offloading-backend", "native"]


def test_the_plan_states_the_tier_its_capacity_and_the_assumed_benefit(plan, capsys):
    main(["plan", str(STACK)])
    out = capsys.readouterr().out
    # Qwen3-32B at TP 2: 64 layers x 2 (K, V) x 4 KV heads per rank x 128 x 2 bytes = 128 KiB a token per rank,
    # two copies (one per rank): 160 GiB / 256 KiB = 655,360 tokens
    assert ("KV offload: 160 GiB of the pod's 460 GiB host memory, pinned in /dev/shm (native OffloadingConnector), "
            "holds 655,360 tokens (2.1x the GPU KV cache of 306,624); assumed benefit: more prefix-cache hits for "
            "multi-turn / shared-prefix traffic (evicted blocks reload over PCIe instead of being recomputed), not "
            "more concurrent requests: capacity is planned without it") in out
    t = json.loads((plan / "topology.json").read_text())["qwen-chat"]
    assert (t["kv_offload_gib"], t["kv_offload_tokens"]) == (160, 655_360)
    assert t["max_num_seqs"] == 20  # concurrency is the SLA's (the knee without the tier, too), not raised by it


def test_the_pod_holds_the_tier_in_its_memory_limit_and_shm(plan):
    dep = yaml.safe_load((plan / "manifests" / "deployment_llm_qwen-chat.yaml").read_text())
    spec = dep["spec"]["template"]["spec"]
    vllm = next(c for c in spec["containers"] if c["name"] == "vllm")
    assert vllm["resources"]["limits"]["memory"] == "460Gi" == vllm["resources"]["requests"]["memory"]
    # the 6 GiB the pod had for NCCL and the engine's queues + the 160 GiB buffer vLLM maps there
    assert {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "166Gi"}} in spec["volumes"]


def test_a_tier_the_host_cannot_hold_is_refused_naming_the_field_and_the_largest(tmp_path, capsys):
    text = STACK.read_text().replace("kvOffloadGiB: 160", "kvOffloadGiB: 1900")
    stack = tmp_path / "Pulumi.kv-big.yaml"
    stack.write_text(text)
    assert main(["plan", str(stack)]) != 0
    err = capsys.readouterr()
    text = err.out + err.err
    assert ("models[0] (qwen-chat): Qwen3-32B bf16: bound by host memory: engine.kvOffloadGiB 1900 GiB does not fit "
            "host memory: the pod gets 1842 GiB (a p5.48xlarge node after system reserve), less 36 GiB for the vLLM "
            "processes and 18 GiB of /dev/shm; the largest that fits is 1788 GiB") in text
    assert "lower engine.kvOffloadGiB to the largest that fits (above)" in text


def test_a_bigger_tier_moves_to_a_shape_whose_pod_holds_it(tmp_path):
    """500 GiB does not fit a TP 2 pod (460 GiB): the planner takes TP 4, two pods to a node."""
    stack = tmp_path / "Pulumi.kv-500.yaml"
    stack.write_text(STACK.read_text().replace("kvOffloadGiB: 160", "kvOffloadGiB: 500"))
    assert main(["plan", str(stack), "--out", str(tmp_path / "out")]) == 0
    t = json.loads((tmp_path / "out" / "topology.json").read_text())["qwen-chat"]
    assert (t["tensor_parallel_size"], t["pod_memory_gib"], t["shm_gib"]) == (4, 921, 510)


def test_the_allowance_and_the_copies():
    assert host_tier.process_gib(1) == 8 and host_tier.process_gib(8) == 36
    assert host_tier.largest_offload_gib(460, 6, 2) == 442
    assert host_tier.largest_offload_gib(10, 4, 2) == 0


def test_mla_under_tp_keeps_one_copy_and_pp_one_per_rank():
    from components.catalog import find_model
    v3 = find_model("deepseek-v3")
    assert host_tier.copies(v3, 8, 1) == 1 and host_tier.copies(v3, 8, 2) == 16
    qwen = find_model("qwen3-32b")
    assert host_tier.copies(qwen, 2, 1) == 2


def test_extra_args_may_not_set_the_offload_flags():
    from components.config.engine import check_extra_args
    with pytest.raises(ValueError, match="--kv-offloading-size: set by the platform; use engine.kvOffloadGiB"):
        check_extra_args({"--kv-offloading-size": 10})
    with pytest.raises(ValueError, match="--kv-offloading-backend: set by the platform; use engine.kvOffloadGiB"):
        check_extra_args({"--kv-offloading-backend": "lmcache"})


LWS_STACK = ROOT / "tests" / "stacks" / "Pulumi.lws-aws-p5.yaml"


@pytest.mark.parametrize("multi_node, shape", [
    (None, "a LeaderWorkerSet group, vLLM's mp executor"),  # serving.multiNode's default, lws
    ("rayservice", "a RayService, Ray Serve LLM")])
def test_a_tier_across_nodes_is_refused_naming_the_stacks_multi_node_shape(tmp_path, capsys, multi_node, shape):
    """The refusal names what actually runs the replica (serving.multiNode), not Ray Serve LLM on an LWS stack."""
    text = LWS_STACK.read_text().replace("      replicas: {min: 2, max: 3}",
                                         "      replicas: {min: 2, max: 3}\n      engine: {kvOffloadGiB: 100}")
    if multi_node:
        text = text.replace("  vllm-platform:modelCache:", f"  vllm-platform:serving:\n    multiNode: {multi_node}\n"
                                                           "  vllm-platform:modelCache:")
    stack = tmp_path / "Pulumi.lws-kv.yaml"
    stack.write_text(text)
    assert main(["plan", str(stack)]) != 0
    err = capsys.readouterr()
    out = err.out + err.err
    assert (f"engine.kvOffloadGiB: the host tier is planned for single-node replicas; a replica across 8 nodes "
            f"({shape}) gets none") in out
    assert (multi_node == "rayservice") == ("Ray Serve LLM" in out)
