"""Wide expert parallelism (models[].parallelism.mode: wide-ep, docs/wide-ep.md): a mixture-of-experts replica
whose attention runs data-parallel, one rank per GPU (TP 1: every rank holds the attention, the dense layers,
the shared experts and the embeddings, and its own requests' KV cache), and whose routed experts are split
over the same ranks (EP = DP = GPUs per replica), the tokens moved to their experts and back by an all2all
backend the fabric must carry. Pure: sized from the architecture, the GPU and the fabric family.

What is sized (per GPU): the replicated part (ModelSpec.expert_split's dense parameters at the checkpoint's
bytes per parameter) + ceil((experts + EPLB redundant experts) / EP) experts + the backend's buffers, the profile
run's activations and vLLM's non-torch memory as for any rank; the KV cache is what is left, per rank. What the
latency covers: each rank is priced by the step model as a TP-1 replica of the same model at its own batch
(planner/capacity.py knee): its dense and attention work exactly as a rank runs it, its expert reads as if it read
every expert its batch touches (pessimistic once the batch touches more than its E / EP share); the all2all
dispatch and combine are NOT in the step time (optimistic, growing with the nodes a replica spans), and no
wide-EP measurement calibrates it. The plan says so (NOTE lines) wherever it prints a wide-EP knee.

Sources (every flag also in components/upstream/vllm_registry.py VLLM_SERVE_FLAGS, read off the 0.31.0 wheel):
- vLLM 0.31.0 vllm/config/parallel.py: All2AllBackend (naive, pplx, deepep_high_throughput, deepep_low_latency,
  deepep_v2, mori_*, nixl_ep, allgather_reducescatter, flashinfer_*), default "allgather_reducescatter";
  enable_expert_parallel ("use expert parallelism instead of tensor parallelism for MoE layers"); EPLBConfig
  num_redundant_experts; data_parallel_rpc_port default 29550 (re-read in the 0.31.0 wheel's own file in the
  review of issue 39: the deepep_* and allgather_reducescatter choices and the 29550 default are there; pplx and
  naive are removed and fall back to allgather_reducescatter; first read in the search index's copy at commit
  00193b82b0e2d4faea5d3b4ea4f6c4c2bd9d057a).
- vllm-project/vllm docs/serving/expert_parallel_deployment.md: EP size = TP x DP; "DeepEP ... multi-node",
  deepep_high_throughput for prefill-dominated, deepep_low_latency (CUDA graphs) for decode-dominated work; the
  multi-node example: one primary node with the API server, the others `--headless` with
  `--data-parallel-start-rank` = the cumulative local DP size of the nodes before; GLOO_SOCKET_IFNAME on InfiniBand;
  expert distribution (E + redundant) / EP ranks.
- llm-d/llm-d guides/wide-ep-lws (README: validated on H200 / B200 with InfiniBand or RoCE, incl. GKE RoCE;
  manifests/modelserver/base/decode.yaml: LWS, `--data-parallel-size $((LWS_GROUP_SIZE * DP_SIZE_LOCAL))`,
  `--data-parallel-address ${LWS_LEADER_ADDRESS}`, `--data-parallel-start-rank` = LWS_WORKER_INDEX x DP_SIZE_LOCAL,
  VLLM_ALL2ALL_BACKEND deepep_low_latency with NVSHMEM_REMOTE_TRANSPORT=ibgda, NVSHMEM_IB_ENABLE_IBGDA=true).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ..catalog import ACCELERATORS
from ..catalog.instances import fabric_family
from ..catalog.models import GB
from . import extras
from . import memory as mem
from .capacity import ReplicaShape, Workload, knee
from .estimators import choose
from .margins import cell_for
from .performance import EFFICIENCY
from .request import PlanRequest
from .search import _Fit, _pod_share, batched_tokens, fleet_nodes  # one candidate type with the TP x PP search
from .topology import Refusal

# Nodes one wide-EP replica may span (EP 64 on 8-GPU nodes): the largest llm-d guide (DP 16 prefill + DP 16
# decode) is well inside it; beyond it the unmodelled all2all dominates what the step model can say.
MAX_NODES = 8
# DP rank RPC port (--data-parallel-rpc-port): every node must agree; vLLM 0.31's default, spelt out.
DATA_PARALLEL_RPC_PORT = 29550


@dataclass(frozen=True)
class All2All:
    """One all2all backend of vLLM 0.31 and what it needs of the fabric between nodes."""
    name: str
    needs: str  # what the fabric must offer across nodes (the plan's words)
    rdma: bool  # needs NVSHMEM / GPUDirect RDMA verbs across nodes (InfiniBand or RoCE), not any NCCL transport
    buffer_gib: float  # GPU memory its buffers take per rank (⚠ estimate: not measured here)
    source: str
    env: tuple[tuple[str, str], ...] = ()  # what every rank's container needs for it across nodes


# DeepEP's NVSHMEM transport across nodes, as llm-d's wide-EP decode/prefill pods set it (guides/wide-ep-lws
# manifests/modelserver/base/decode.yaml): GPU-initiated RDMA (IBGDA). (torch's gloo group on the pod network, not
# the RDMA NICs, which vllm docs/serving/expert_parallel_deployment.md "InfiniBand Clusters" asks for, is the
# fabric's own GLOO_SOCKET_IFNAME=eth0: components/serving/fabric.py FABRICS.)
_NVSHMEM_IBGDA = (("NVSHMEM_REMOTE_TRANSPORT", "ibgda"), ("NVSHMEM_IB_ENABLE_IBGDA", "true"))

# vLLM 0.31.0 vllm/config/parallel.py All2AllBackend; what each needs: docs/serving/expert_parallel_deployment.md,
# llm-d guides/wide-ep-lws. Only the backends the planner may pick are listed; the others (pplx, deepep_v2,
# mori_* (AMD), nixl_ep, flashinfer_* (NVLink domains: GB200 NVL72)) are refused by the config with why.
ALL2ALL: dict[str, All2All] = {a.name: a for a in (
    All2All("deepep_low_latency", "NVSHMEM over InfiniBand / RoCE with GPUDirect RDMA (IBGDA)", True, 2.0,
            "vllm docs/serving/expert_parallel_deployment.md (multi-node decode, CUDA graphs); llm-d "
            "guides/wide-ep-lws decode.yaml", _NVSHMEM_IBGDA),
    All2All("deepep_high_throughput", "NVSHMEM over InfiniBand / RoCE with GPUDirect RDMA", True, 2.0,
            "vllm docs/serving/expert_parallel_deployment.md (multi-node prefill); llm-d guides/wide-ep-lws "
            "prefill.yaml", _NVSHMEM_IBGDA),
    All2All("allgather_reducescatter", "any NCCL transport (NCCL all-gather and reduce-scatter)", False, 0.0,
            "vllm/config/parallel.py (the default all2all_backend)"),
)}
DEFAULT_BACKEND = "allgather_reducescatter"  # vLLM 0.31's default: a replica on one node (NVLink) needs no more


@dataclass(frozen=True)
class FabricEp:
    """What a fabric family carries between the nodes of one wide-EP replica."""
    backends: tuple[str, ...]  # ALL2ALL names it carries, the planner's choice first; () = no multi-node EP
    why: str


# Fabric family (components/catalog/instances.py fabric_family) -> multi-node all2all. A replica on one node
# keeps its all2all on NVLink whatever the fabric (any backend of ALL2ALL).
FABRIC_EP: dict[str, FabricEp] = {
    "infiniband": FabricEp(("deepep_low_latency", "deepep_high_throughput", "allgather_reducescatter"),
                           "InfiniBand with GPUDirect RDMA carries DeepEP's NVSHMEM (IBGDA) kernels (llm-d's "
                           "wide-EP guide, validated on H200 InfiniBand)"),
    "roce": FabricEp(("deepep_low_latency", "deepep_high_throughput", "allgather_reducescatter"),
                     "RoCE with GPUDirect RDMA carries DeepEP's NVSHMEM (IBGDA) kernels (llm-d's wide-EP guide, "
                     "validated on RoCE)"),
    "gke-rdma": FabricEp(("deepep_low_latency", "deepep_high_throughput", "allgather_reducescatter"),
                         "GKE's GPUDirect RDMA NICs (RoCE, A3 Ultra / A4) carry DeepEP's NVSHMEM kernels (llm-d's "
                         "wide-EP guide, validated on GKE H200 / B200 RoCE)"),
    "efa": FabricEp(("allgather_reducescatter",),
                    "EFA is libfabric's SRD, not InfiniBand verbs: DeepEP's NVSHMEM IBGDA transport does not run on "
                    "it, so vLLM 0.31 moves tokens with NCCL all-gather / reduce-scatter through aws-ofi-nccl"),
    "gpudirect-tcpx": FabricEp((), "GPUDirect-TCPX here is NCCL's socket transport (no receive-datapath "
                                   "daemon): two all2alls per MoE layer per step over TCP"),
    "gpudirect-tcpxo": FabricEp((), "GPUDirect-TCPXO here is NCCL's socket transport (no receive-datapath "
                                    "daemon): two all2alls per MoE layer per step over TCP"),
    "none": FabricEp((), "no GPU fabric: two all2alls per MoE layer per step over the pod network"),
}


def backend_for(family: str, nodes: int, requested: str) -> tuple[str | None, str]:
    """(backend, why) for a replica over `nodes` nodes of a fabric family; (None, why not) when it cannot."""
    if requested != "auto" and requested not in ALL2ALL:
        return None, f"all2all backend {requested!r} is not one the planner sizes ({', '.join(ALL2ALL)})"
    if nodes == 1:
        chosen = DEFAULT_BACKEND if requested == "auto" else requested
        return chosen, (f"{chosen}: the replica fits one node, its all2all stays on NVLink"
                        + (" (vLLM 0.31's default backend)" if requested == "auto" else " (parallelism.all2allBackend)"))
    fab = FABRIC_EP.get(family, FabricEp((), f"no wide-EP data for fabric {family!r}"))
    if not fab.backends:
        return None, (f"a replica across {nodes} nodes needs an RDMA fabric (InfiniBand, RoCE, GKE RDMA) or EFA; "
                      f"{family}: {fab.why}")
    if requested == "auto":
        chosen = fab.backends[0]
    elif requested in fab.backends:
        chosen = requested
    else:
        return None, (f"{requested} needs {ALL2ALL[requested].needs}; {family}: {fab.why}; "
                      f"use {' or '.join(fab.backends)} (parallelism.all2allBackend) or an InfiniBand / RoCE pool")
    return chosen, f"{chosen} over {family} ({ALL2ALL[chosen].needs}): {fab.why}"


def weight_gib_per_rank(req: PlanRequest, ep: int) -> tuple[float, float, int]:
    """(replicated GiB, expert GiB, experts per rank) one rank holds: the dense part whole, its share of the routed
    experts (EPLB's redundant experts spread over the ranks too), at the checkpoint's bytes per parameter."""
    m = req.model
    total = m.weight_bytes(req.precision)
    per_param = total / (m.params_b * GB)
    dense, per_expert = m.expert_split()
    experts = math.ceil((m.experts + req.wide_ep.redundant_experts) / ep)  # evaluate() refuses an uneven split
    return dense * per_param / mem.GiB, experts * per_expert * per_param / mem.GiB, experts


def _shapes(req: PlanRequest):
    for inst in req.candidates:
        acc = ACCELERATORS[inst.accelerator]
        for nodes in range(1, MAX_NODES + 1):
            for kv in req.kv_cache_dtypes:
                if kv == "fp8" and not acc.supports_fp8:
                    continue
                yield inst, acc, nodes, kv


def evaluate(req: PlanRequest):
    """(fits, refusals) over instance type x nodes per replica x KV dtype, DP = EP = nodes x GPUs per node."""
    fits, refusals = [], []
    m, sla, opts = req.model, req.sla, req.engine
    for inst, acc, nodes, kv in _shapes(req):
        ep = nodes * inst.gpus

        def refuse(constraint: str, detail: str, replicas: int = 0) -> None:
            refusals.append(Refusal(constraint, inst.name, acc.id, 1, 1, kv,
                                    f"DP {ep} x EP {ep} over {nodes} node(s): {detail}", replicas, dp=ep))

        routed = m.experts + req.wide_ep.redundant_experts
        if routed % ep:
            refuse("ep-experts", f"{ep} ranks do not divide the {routed} routed experts"
                                 + (f" ({m.experts} + {req.wide_ep.redundant_experts} redundant)"
                                    if req.wide_ep.redundant_experts else "")
                                 + ": every rank holds the same number of experts")
            continue
        backend, why = backend_for(fabric_family(inst.cloud, inst.fabric), nodes, req.wide_ep.all2all)
        if backend is None:
            refuse("fabric", why)
            continue
        budget = acc.visible_gib * req.gpu_memory_utilization
        dense, experts_gib, per_rank = weight_gib_per_rank(req, ep)
        weights = dense + experts_gib + extras.extra_weight_gib(m, req.precision, 1, 1, opts)
        overhead = mem.activation_gib(m, acc, 1, opts.max_num_batched_tokens, opts.max_num_seqs) + \
            mem.non_torch_gib(ep, 1) + ALL2ALL[backend].buffer_gib
        kv_gib = budget - weights - overhead
        if kv_gib <= 0:
            refuse("memory", f"{dense:.1f} GiB replicated + {experts_gib:.1f} GiB of experts ({per_rank} of "
                             f"{m.experts}) + {overhead:.1f} GiB activations and buffers per GPU exceed {budget:.1f} "
                             f"GiB ({req.gpu_memory_utilization:.2f} x {acc.visible_gib:.1f} GiB)")
            continue
        if mem.cuda_graph_gib(m) > acc.visible_gib * (1 - req.gpu_memory_utilization):
            refuse("cuda-graph", "CUDA graphs do not fit outside gpu_memory_utilization")
            continue
        batched = batched_tokens(req, acc)
        kv_bytes = kv_gib * mem.GiB * extras.kv_share(m, 1, 1, kv, opts)
        kv_tokens = mem.kv_cache_tokens(kv_bytes, m, 1, 1, kv, req.max_model_len, batched)
        if kv_tokens < req.max_model_len:
            refuse("kv-cache", f"a rank's KV cache holds {kv_tokens:,} tokens ({kv_gib:.1f} GiB), less than one "
                               f"max_model_len {req.max_model_len:,} request")
            continue
        rank = ReplicaShape(m, req.precision, acc, inst, 1, 1, kv, kv_tokens, batched,
                            opts.max_num_seqs or mem.default_max_num_seqs(acc), kv_bytes)
        estimator, estimator_why = choose(m, req.precision, acc, 1, 1, kv, req.estimator)
        k = knee(rank, Workload(sla.prompt_tokens, sla.output_tokens), sla.tpot_ms, sla.ttft_ms, req.max_model_len,
                 replace(EFFICIENCY, estimator=estimator), percentile=sla.latency_percentile, margin=req.margin)
        if k.concurrency == 0:
            if k.point is None:
                refuse("kv-cache", "a rank's KV cache holds less than one request")
            else:
                tpot, ttft = k.point.latency(sla.latency_percentile)
                refuse(k.bound, f"one request per rank needs ~{tpot:.1f} ms/token, ~{ttft:.0f} ms to first token "
                                f"(SLA {sla.tpot_ms:g} / {sla.ttft_ms:g} ms, margin {k.margin * 100:g} %)")
            continue
        at = k.point
        point = replace(at, concurrency=at.concurrency * ep, arrival_rate=at.arrival_rate * ep,
                        output_tps=at.output_tps * ep, total_tps=at.total_tps * ep)
        concurrency = k.concurrency * ep
        if sla.requests_per_second is not None:
            replicas = max(req.min_replicas, math.ceil(sla.requests_per_second / point.arrival_rate - 1e-9))
        else:
            replicas = max(req.min_replicas, math.ceil(sla.concurrency / concurrency))
        if replicas > req.max_replicas:
            refuse("max-replicas", f"{replicas} replicas of {concurrency} concurrent requests each are needed for "
                                   f"{sla.load_text}; replicas.max is {req.max_replicas}", replicas)
            continue
        cpu, memory, shm = _pod_share(inst, 1)
        n = fleet_nodes(replicas, 1, nodes)
        calibrated = cell_for(m, k.concurrency, estimator)
        fits.append(_Fit(inst, acc, 1, 1, kv, weights, kv_gib, kv_tokens, concurrency, k.bound, at.tpot_ms,
                         at.ttft_ms, replicas, 1, n, n * inst.price_hour, cpu, memory, shm, point,
                         k.kv_limit * ep, rank, margin=k.margin, margin_cell=k.margin_cell,
                         calibrated_margin=calibrated.margin, calibrated_cell=calibrated.text(), estimator=estimator,
                         estimator_why=estimator_why, dp=ep, all2all=backend, all2all_why=why,
                         rank_concurrency=k.concurrency, experts_per_rank=per_rank, replicated_gib=dense))
    return fits, refusals


def rank_key(f) -> tuple:
    """The smallest DP x EP that fits and carries the load first (the fewest ranks every MoE layer's all2all
    spans, the smallest group a failed GPU restarts, and the least unmodelled all2all in the estimate), then the
    cheapest fleet (an unpriced shape after priced ones), then the model's own KV dtype."""
    return (f.dp, not f.priced, round(f.cost, 4), f.kv_dtype != "auto", f.inst.name)


def explain(req: PlanRequest, refusals: list[Refusal]) -> str:
    """Why no wide-EP shape fits: the refusal that got furthest per instance type, and what to change."""
    order = ["fabric", "ep-experts", "memory", "cuda-graph", "kv-cache", "ttft", "tpot", "max-replicas"]
    best: dict[str, Refusal] = {}
    for r in refusals:
        cur = best.get(r.instance_type)
        if cur is None or order.index(r.constraint) > order.index(cur.constraint):
            best[r.instance_type] = r
    # a fabric that cannot carry the all2all is said even where a smaller shape got further (memory on one node)
    fabric: dict[str, Refusal] = {}
    for r in refusals:
        if r.constraint == "fabric":
            fabric.setdefault(r.instance_type, r)  # the smallest shape it refused
    shown = [*best.values(), *(r for k, r in fabric.items() if best[k] is not r)]
    lines = [f"  {r.instance_type}: {r.constraint}: {r.detail}" for r in shown]
    return (f"no wide-EP shape (DP = EP over 1..{MAX_NODES} nodes, TP 1 per rank) serves {req.model.name} "
            f"(parallelism.mode: wide-ep):\n" + "\n".join(lines) +
            "\n  fix: the refusals say what to change (an RDMA fabric, more GPU memory, replicas.max, the SLA), or "
            "remove parallelism to plan TP x PP")


def plan_lines(f, req: PlanRequest) -> list[str]:
    """What the plan prints under the model: DP x EP, the all2all backend and why, and what the estimate covers."""
    nodes = f.nodes_per_replica
    lines = [f"wide-EP: DP {f.dp} x EP {f.dp} (TP 1 per rank) over {nodes} x {f.inst.name} per replica; "
             f"{f.experts_per_rank} of {req.model.experts} routed experts per GPU"
             + (f" (EPLB: {req.wide_ep.redundant_experts} redundant)" if req.wide_ep.redundant_experts else "")
             + f", {f.replicated_gib:.1f} GiB replicated (attention, dense, embeddings) per GPU; "
             f"{f.rank_concurrency} concurrent requests per rank",
             f"all2all: {f.all2all_why}"]
    if ALL2ALL[f.all2all].rdma:
        lines.append("all2all prerequisite: the nodes' NVIDIA driver with GPUDirect RDMA / IBGDA enabled and the "
                     "RDMA devices in the pod (the fabric's device plugin): DeepEP's NVSHMEM fails at start-up "
                     "without them (docs/wide-ep.md)")
    lines.append("NOTE: the wide-EP knee is each rank's TP-1 step model x DP; the all2all dispatch and combine are "
                 "not in it, and no wide-EP measurement calibrates it: measure before trusting the replica count "
                 "(docs/wide-ep.md \"What the estimate covers\")")
    return lines
