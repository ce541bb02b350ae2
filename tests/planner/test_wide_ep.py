"""Wide-EP sizing (components/planner/wide_ep.py, docs/wide-ep.md): DP = EP = GPUs per replica at TP 1, the memory
per GPU from the expert split, the all2all backend per fabric, and the refusals (uneven experts, a fabric that
cannot carry it, a model that does not fit), pinned by hand-worked figures."""
from __future__ import annotations

import pytest

from components.catalog import MODELS
from components.catalog.instances import InstanceType
from components.planner import NoFeasibleTopology, PlanRequest, Sla, plan_topology
from components.planner.request import WideEp
from components.planner.wide_ep import backend_for, weight_gib_per_rank


def node(fabric: str | None = "infiniband", acc: str = "h200", gpus: int = 8, cloud: str = "existing",
         gbps: float = 3200) -> InstanceType:
    return InstanceType(cloud, f"{acc}-{fabric}", acc, gpus, 192, 2048, 0, gbps, fabric, 0.0, "test")


def request(inst: InstanceType, model: str = "deepseek-v3", precision: str = "fp8", users: int = 128,
            max_replicas: int = 3, wide_ep: WideEp = WideEp(), **kw) -> PlanRequest:
    return PlanRequest(model=MODELS[model], precision=precision, candidates=(inst,), max_model_len=32768,
                       sla=Sla(ttft_ms=3000, tpot_ms=80, concurrency=users), min_replicas=2,
                       max_replicas=max_replicas, wide_ep=wide_ep, **kw)


def test_deepseek_v3_on_infiniband_h200_is_dp16_ep16_over_two_nodes_with_deepep_low_latency():
    t = plan_topology(request(node()))
    assert (t.data_parallel_size, t.tensor_parallel_size, t.pipeline_parallel_size) == (16, 1, 1)
    assert (t.gpus_per_replica, t.nodes_per_replica, t.replicas, t.nodes) == (16, 2, 2, 4)
    assert t.all2all_backend == "deepep_low_latency"
    args = list(t.vllm_args)
    i = args.index("--data-parallel-size")
    assert args[i:i + 7] == ["--data-parallel-size", "16", "--data-parallel-size-local", "8",
                             "--enable-expert-parallel", "--all2all-backend", "deepep_low_latency"]
    assert args[args.index("--tensor-parallel-size") + 1] == "1"
    # --max-num-seqs is per DP rank (each rank's engine core schedules its own requests): 80 per replica / 16
    assert args[args.index("--max-num-seqs") + 1] == "5" and t.concurrency_per_replica == 80
    assert "--distributed-executor-backend" not in args
    # one node (DP 8) would need 4 replicas of 40 for 128 users, above replicas.max 3: that is why two nodes
    assert "refused DP 8 x EP 8 over 1 node(s) (max-replicas: 4 replicas of 40" in t.reason


def test_plan_lines_say_dp_ep_backend_and_why_and_what_the_estimate_leaves_out():
    t = plan_topology(request(node()))
    notes = "\n".join(t.engine_notes)
    assert "wide-EP: DP 16 x EP 16 (TP 1 per rank) over 2 x h200-infiniband per replica; 16 of 256 routed experts " \
           "per GPU" in notes
    assert "all2all: deepep_low_latency over infiniband" in notes
    assert "IBGDA" in notes
    assert "the all2all dispatch and combine are not in it" in notes


def test_memory_per_gpu_is_the_replicated_part_plus_its_expert_share():
    # DeepSeek-V3 FP8: 671 B parameters, 37 B active, 256 experts top-8 -> one expert (all layers) = 634/248 B
    # = 2.556 B; dense = 671 - 256 x 2.556 = 16.55 B parameters. Checkpoint bytes per parameter: the model's own.
    req = request(node())
    m = MODELS["deepseek-v3"]
    per_param = m.weight_bytes("fp8") / 671e9
    dense, experts, n = weight_gib_per_rank(req, 16)
    assert n == 16
    assert dense == pytest.approx(16.55e9 * per_param / 2**30, rel=2e-3)
    assert experts == pytest.approx(16 * 2.5565e9 * per_param / 2**30, rel=2e-3)
    # EPLB's redundant experts are held too: (256 + 16) / 16 = 17 per rank
    _, more, n = weight_gib_per_rank(request(node(), wide_ep=WideEp(redundant_experts=16)), 16)
    assert n == 17 and more == pytest.approx(experts * 17 / 16)


def test_eplb_renders_enable_eplb_and_its_redundant_experts():
    t = plan_topology(request(node(), wide_ep=WideEp(redundant_experts=16)))
    args = list(t.vllm_args)
    assert args[args.index("--enable-eplb") + 1:args.index("--enable-eplb") + 3] == \
        ["--eplb-config", '{"num_redundant_experts":16}']


@pytest.mark.parametrize("fabric,cloud,nodes,want", [
    ("infiniband", "existing", 2, "deepep_low_latency"),
    ("rdma", "existing", 2, "deepep_low_latency"),  # RoCE
    ("rdma", "gcp", 2, "deepep_low_latency"),  # GKE RDMA (A3 Ultra / A4)
    ("efa", "aws", 2, "allgather_reducescatter"),
    ("efa", "aws", 1, "allgather_reducescatter"),
    (None, "existing", 1, "allgather_reducescatter"),  # one node: NVLink, whatever the fabric
])
def test_auto_backend_per_fabric(fabric, cloud, nodes, want):
    from components.catalog.instances import fabric_family
    assert backend_for(fabric_family(cloud, fabric), nodes, "auto")[0] == want


@pytest.mark.parametrize("fabric", [None, "gpudirect-tcpx", "gpudirect-tcpxo"])
def test_multi_node_ep_is_refused_without_an_rdma_fabric_or_efa(fabric):
    backend, why = backend_for("none" if fabric is None else fabric, 2, "auto")
    assert backend is None
    assert why.startswith("a replica across 2 nodes needs an RDMA fabric (InfiniBand, RoCE, GKE RDMA) or EFA")


def test_deepep_on_efa_is_refused_with_the_reason_and_what_to_do():
    backend, why = backend_for("efa", 2, "deepep_low_latency")
    assert backend is None
    assert "deepep_low_latency needs NVSHMEM over InfiniBand / RoCE" in why
    assert "EFA is libfabric's SRD" in why
    assert "use allgather_reducescatter (parallelism.all2allBackend) or an InfiniBand / RoCE pool" in why


def test_no_fit_on_efa_with_deepep_names_the_fabric():
    # DeepSeek-V3 does not fit 8 H100s (memory on one node), and DeepEP cannot cross EFA: the message says both
    with pytest.raises(NoFeasibleTopology) as e:
        plan_topology(request(node("efa", acc="h100", cloud="aws"), wide_ep=WideEp(all2all="deepep_low_latency")))
    assert "h100-efa: memory: DP 8 x EP 8 over 1 node(s)" in e.value.message
    assert "h100-efa: fabric: DP 16 x EP 16 over 2 node(s): deepep_low_latency needs NVSHMEM" in e.value.message


def test_one_node_of_plain_ethernet_still_plans_and_two_are_refused():
    # DP 8 on one H200 node holds DeepSeek-V3; at 128 users it needs 4 replicas: with replicas.max 4 it plans there
    t = plan_topology(request(node(None, gbps=100), max_replicas=4))
    assert (t.data_parallel_size, t.nodes_per_replica, t.all2all_backend) == (8, 1, "allgather_reducescatter")
    with pytest.raises(NoFeasibleTopology) as e:
        plan_topology(request(node(None, gbps=100), max_replicas=3))
    assert "needs an RDMA fabric (InfiniBand, RoCE, GKE RDMA) or EFA" in e.value.message


def test_a_gpu_count_that_does_not_divide_the_experts_is_refused():
    with pytest.raises(NoFeasibleTopology) as e:
        plan_topology(request(node(gpus=6)))
    assert "DP 6 x EP 6 over 1 node(s): 6 ranks do not divide the 256 routed experts" in e.value.message
    # Mixtral's 8 experts: one 8-GPU node at most (16 ranks would hold half an expert each)
    fits = plan_topology(request(node(acc="h100"), model="mixtral-8x7b", precision="bf16", users=16))
    assert fits.data_parallel_size == 8


def test_deepseek_does_not_fit_one_h100_node_and_the_plan_says_why_it_went_to_two():
    t = plan_topology(request(node(acc="h100"), users=16, max_replicas=8))
    assert (t.data_parallel_size, t.nodes_per_replica) == (16, 2)
    # 8 ranks: 32 of 256 experts each (76.4 GiB at FP8) beside the 15.5 GiB replicated part exceed 0.90 x 79.2 GiB
    assert "refused DP 8 x EP 8 over 1 node(s) (memory: 15.5 GiB replicated + 76.4 GiB of experts (32 of 256)" \
        in t.reason


def test_the_smallest_dp_ep_that_fits_and_carries_the_load_wins_over_a_bigger_one():
    t = plan_topology(request(node(), users=128, max_replicas=8))
    # DP 8 on one node: 4 replicas of 40 users fit replicas.max 8, so no bigger group is planned
    assert (t.data_parallel_size, t.replicas) == (8, 4)


def test_the_profile_job_refuses_a_wide_ep_model():
    from components.profiling.plan import ProfileRefused, plan_profile
    t = plan_topology(request(node()))
    with pytest.raises(ProfileRefused) as e:
        plan_profile("deepseek-v3", t, [], count=2, max_minutes=60, max_minutes_per_shape=30, out_dir="/out")
    assert "parallelism.mode wide-ep runs one DP x EP engine over its nodes" in str(e.value)


def test_a_tensor_parallel_request_is_planned_as_before():
    # the same model and pool without wide_ep: TP x PP, no DP flags
    t = plan_topology(request(node(), wide_ep=None))
    assert t.data_parallel_size == 1 and t.all2all_backend == ""
    assert "--data-parallel-size" not in t.vllm_args and "--enable-expert-parallel" not in t.vllm_args
