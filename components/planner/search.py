"""plan_topology: enumerate (instance type, TP, PP, KV-cache dtype), refuse what cannot serve,
return the cheapest fleet that carries the declared load (concurrent users or requests/s) within the SLA:
replicas = load / one replica's capacity at its knee (planner/capacity.py)."""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ..catalog import ACCELERATORS, Accelerator, InstanceType
from . import extras, host_tier
from . import memory as mem
from .capacity import LoadPoint, ReplicaShape, Workload, knee
from .estimators import choose
from .margins import cell_for
from .measured import measured_knee, shape_text
from .performance import EFFICIENCY, hop_s
from .request import PlanRequest
from .topology import NoFeasibleTopology, Refusal, Topology
from .vllm_args import ExpertParallel, engine_args

_SHAPE_RULES = {"tp-heads", "tp-kv-heads", "tp-fp8-block"}
def host_reserved_cpu(vcpu: int) -> int:
    """CPUs left to the kubelet's reservation, the cloud's DaemonSets (CNI, CSI, metadata, logging) and
    ours (device plugins, DCGM, node exporter, image pre-pull): at least 2, and 3 % of a big node,
    whose kube-reserved alone grows with its cores (GKE/EKS: 0.25 % of every core above 4)."""
    return max(2, -(-vcpu * 3 // 100))
MIN_POD_MEMORY_GIB = 8


@dataclass(frozen=True)
class _Fit:
    inst: InstanceType
    acc: Accelerator
    tp: int
    pp: int
    kv_dtype: str
    weights_gib_per_gpu: float
    kv_gib_per_gpu: float
    kv_tokens: int
    concurrency: int
    bound: str
    tpot_ms: float
    ttft_ms: float
    replicas: int
    replicas_per_node: int
    nodes: int
    cost: float
    pod_cpu: int
    pod_memory_gib: int
    shm_gib: int
    at_knee: LoadPoint  # the replica's load at its knee (concurrency)
    kv_limit: int  # concurrent requests the KV cache / max_num_seqs allow at the workload's length
    replica: ReplicaShape | None = None  # the replica the knee was computed for
    knee_source: str = ""  # "measured: FILE (...)" where planning.measurements held this shape (planner/measured.py)
    knee_warning: str = ""  # the shape's measurements could not be used: why
    margin: float = 0.0  # the planning margin the knee was judged with (at the knee's load)
    margin_cell: str = ""  # the calibration's cell it came from (margins.Cell.text); "": the stack's or measured
    calibrated_margin: float = 0.0  # the calibration's cell margin at the knee (the production floor)
    calibrated_cell: str = ""  # that cell (margins.Cell.text)
    estimator: str = "step-model"  # what priced the step (planner/estimators.py)
    estimator_why: str = ""
    # wide-EP (planner/wide_ep.py): DP = EP ranks of TP 1 per replica (1: a TP x PP shape), the all2all backend
    # and why, requests per rank, routed experts and replicated GiB per GPU
    dp: int = 1
    all2all: str = ""
    all2all_why: str = ""
    rank_concurrency: int = 0
    experts_per_rank: int = 0
    replicated_gib: float = 0.0

    @property
    def gpus_per_replica(self) -> int:
        return self.tp * self.pp * self.dp

    @property
    def nodes_per_replica(self) -> int:
        """PP stages, one node each; a wide-EP replica's DP ranks fill whole nodes."""
        return self.pp if self.dp == 1 else self.dp // self.inst.gpus

    @property
    def pp_over_ethernet(self) -> bool:
        return self.pp > 1 and not self.inst.fast_fabric

    def rank(self):
        # PP over plain Ethernet only where nothing else fits: a replica across nodes is a RayService (a Ray
        # head, all-or-nothing replicas, hand-offs the SLA barely absorbs), worth it for a model no node holds,
        # not for a few dollars an hour. Then the cheapest; then fewer GPUs in all and per replica; then the
        # model's own KV dtype. An unpriced shape (cost 0 meaning unknown) never counts as cheaper than a priced one.
        return (self.pp_over_ethernet, not self.priced, round(self.cost, 4), self.nodes * self.inst.gpus,
                self.gpus_per_replica, self.kv_dtype != "auto", self.inst.name)

    @property
    def priced(self) -> bool:
        """False for an existing cluster whose stack states no node price: its cost of 0 is unknown, not free."""
        return self.inst.price_hour > 0

    def shape(self) -> str:
        kv = "" if self.kv_dtype == "auto" else ", fp8 KV"
        par = f"TP {self.tp}" + (f" x PP {self.pp}" if self.pp > 1 else "")
        if self.dp > 1:
            par = f"DP {self.dp} x EP {self.dp}"
        price = f" at ${self.cost:,.2f}/h" if self.priced else ", unpriced"
        return f"{self.replicas} x {par} on {self.nodes} x {self.inst.name}{kv}{price}"


def _candidates(req: PlanRequest):
    for inst in req.candidates:
        acc = ACCELERATORS[inst.accelerator]
        tps = [req.tensor_parallel_size] if req.tensor_parallel_size else range(1, inst.gpus + 1)
        for tp in tps:
            pps = [1]
            if tp == inst.gpus:
                pps += range(2, req.max_pipeline_parallel + 1)
            for pp in pps:
                for kv in req.kv_cache_dtypes:
                    if kv == "fp8" and not acc.supports_fp8:
                        continue
                    yield inst, acc, tp, pp, kv


def _pod_share(inst: InstanceType, replicas_per_node: int) -> tuple[int, int, int]:
    """CPU, memory and /dev/shm for one pod: its share of the node after system reservations."""
    cpu = max(1, (inst.vcpu - host_reserved_cpu(inst.vcpu)) // replicas_per_node)
    memory = int((inst.ram_gib * 0.9 - 1) // replicas_per_node)
    gpus = inst.gpus // replicas_per_node
    shm = max(1, min(memory // 4, 2 + 2 * gpus))
    return cpu, memory, shm


def _evaluate(req: PlanRequest, inst: InstanceType, acc: Accelerator, tp: int, pp: int, kv: str):
    m, sla = req.model, req.sla

    def refuse(constraint: str, detail: str, replicas: int = 0) -> Refusal:
        return Refusal(constraint, inst.name, acc.id, tp, pp, kv, detail, replicas)

    if tp > inst.gpus:
        return refuse("tp-gpus-per-node", f"TP {tp} > {inst.gpus} GPUs per {inst.name} node")
    if m.heads % tp:
        return refuse("tp-heads", f"TP {tp} does not divide {m.heads} attention heads")
    if not m.is_mla and m.kv_heads % tp and tp % m.kv_heads:
        return refuse("tp-kv-heads", f"TP {tp} neither divides nor is a multiple of {m.kv_heads} KV heads")
    if m.fp8_block_quantized and req.precision == "fp8" and (m.moe_intermediate // 128) % tp:
        return refuse("tp-fp8-block", f"block-quantized FP8 needs TP to divide moe_intermediate_size/128 = "
                                      f"{m.moe_intermediate // 128}")
    if pp > 1 and not inst.fast_fabric and inst.network_gbps <= 0:
        # PP over plain Ethernet moves only activations and may fit the SLA (the hand-off is in the step
        # time, capacity.py); with no network bandwidth known there is nothing to size it from.
        return refuse("fabric", f"a replica across {pp} nodes needs a network between them; {inst.name} has "
                                f"{_fabric_text(inst)}")
    if pp > m.layers:
        return refuse("pp-layers", f"PP {pp} > {m.layers} layers")
    if req.engine.kv_offload_gib and pp > 1:
        return refuse("host-tier-nodes", f"engine.kvOffloadGiB: the host tier is planned for single-node replicas; "
                                     f"a replica across {pp} nodes ({req.multi_node_shape}) gets none")

    budget = acc.visible_gib * req.gpu_memory_utilization
    opts = req.engine  # a speculative draft and LoRA slots add weights (extras.py)
    weights = mem.weight_bytes_per_gpu(m, req.precision, tp, pp) / mem.GiB + \
        extras.extra_weight_gib(m, req.precision, tp, pp, opts)
    overhead = mem.activation_gib(m, acc, tp, opts.max_num_batched_tokens, opts.max_num_seqs) + \
        mem.non_torch_gib(tp, pp)
    kv_gib = budget - weights - overhead
    if kv_gib <= 0:
        return refuse("memory", f"{weights:.1f} GiB of weights + {overhead:.1f} GiB activations per GPU "
                                f"exceed {budget:.1f} GiB ({req.gpu_memory_utilization:.2f} x {acc.visible_gib:.1f} GiB)")
    graphs = mem.cuda_graph_gib(m)
    headroom = acc.visible_gib * (1 - req.gpu_memory_utilization)
    if graphs > headroom:
        return refuse("cuda-graph", f"CUDA graphs need ~{graphs:.1f} GiB but only {headroom:.1f} GiB is left "
                                    f"outside gpu_memory_utilization {req.gpu_memory_utilization:.2f}")
    kv_bytes = kv_gib * mem.GiB * extras.kv_share(m, tp, pp, kv, opts)
    kv_tokens = mem.kv_cache_tokens(kv_bytes, m, tp, pp, kv, req.max_model_len, batched_tokens(req, acc))
    if kv_tokens < req.max_model_len:
        return refuse("kv-cache", f"KV cache holds {kv_tokens:,} tokens ({kv_gib:.1f} GiB per GPU), "
                                  f"less than one max_model_len {req.max_model_len:,} request")

    shape = ReplicaShape(m, req.precision, acc, inst, tp, pp, kv, kv_tokens,
                         batched_tokens(req, acc), opts.max_num_seqs or mem.default_max_num_seqs(acc), kv_bytes)
    work = Workload(sla.prompt_tokens, sla.output_tokens)
    estimator, estimator_why = choose(m, req.precision, acc, tp, pp, kv, req.estimator)
    eff = replace(EFFICIENCY, estimator=estimator)
    k = knee(shape, work, sla.tpot_ms, sla.ttft_ms, req.max_model_len, eff, percentile=sla.latency_percentile,
             margin=req.margin)
    got = measured_knee(req.measurements, shape, sla.prompt_tokens, sla.output_tokens, sla.tpot_ms, sla.ttft_ms,
                        k.kv_limit, sla.latency_percentile) if req.measurements and k.kv_limit >= 1 else None
    if got and got.refusal:
        return refuse(got.knee.bound, got.refusal)
    if got and got.knee:
        k = got.knee
    if k.concurrency == 0:
        p = k.point
        if p is None:
            per = min(sla.tokens_per_request, req.max_model_len)
            return refuse("kv-cache", f"KV cache holds {shape.kv_tokens_at(per):,} tokens of {per:,}-token "
                                      f"requests, less than one request (max_model_len {req.max_model_len:,})")
        tpot, ttft = p.latency(sla.latency_percentile)
        what, got, limit = ("TPOT", tpot, sla.tpot_ms) if k.bound == "tpot" else ("TTFT", ttft, sla.ttft_ms)
        if pp > 1 and not inst.fast_fabric:  # would the replica meet the SLA but for the hand-offs?
            hops = {"tpot": (pp - 1) * hop_s(m, inst, 1) * 1e3,
                    "ttft": (pp - 1) * hop_s(m, inst, min(sla.prompt_tokens, shape.max_num_batched_tokens)) * 1e3}
            if (got - hops[k.bound]) * (1 + k.margin) <= limit:
                return refuse("fabric", f"PP {pp} over {_fabric_text(inst)}: the activation hand-offs add "
                                        f"{hops[k.bound]:.1f} ms to the {what}, {got:.1f} ms{_judged(k, got)} > SLA "
                                        f"{limit:g} ms")
        if k.bound == "tpot":
            return refuse("tpot", f"decode needs ~{got:.1f} ms/token even for one request{_judged(k, got)} > SLA "
                                  f"{limit:g} ms")
        return refuse("ttft", f"prefill of {sla.prompt_tokens} tokens needs ~{got:.0f} ms{_judged(k, got)} > SLA "
                              f"{limit:g} ms")
    concurrency, bound, at = k.concurrency, k.bound, k.point
    calibrated = cell_for(m, concurrency, estimator)  # what the calibration asks of an estimate at this load
    if sla.requests_per_second is not None:
        replicas = max(req.min_replicas, math.ceil(sla.requests_per_second / at.arrival_rate - 1e-9))
    else:
        replicas = max(req.min_replicas, math.ceil(sla.concurrency / concurrency))
    if replicas > req.max_replicas:
        return refuse("max-replicas", f"{replicas} replicas of {concurrency} concurrent requests "
                                      f"({at.arrival_rate:.2f} requests/s) each are needed for {sla.load_text}; "
                                      f"replicas.max is {req.max_replicas}", replicas)
    rpn = inst.gpus // tp if pp == 1 else 1
    nodes = fleet_nodes(replicas, rpn, pp, req.spread_nodes)
    cpu, memory, shm = _pod_share(inst, rpn)
    if memory < MIN_POD_MEMORY_GIB:
        return refuse("host-memory", f"{memory} GiB of host memory per pod < {MIN_POD_MEMORY_GIB} GiB")
    lora_gib = extras.lora_host_bytes(m, tp, opts) / mem.GiB  # the CPU LoRA cache, pinned in the workers
    if opts.lora:
        detail = host_tier.lora_refusal_detail(
            extras.cpu_loras(opts), bool(opts.lora.max_cpu_loras), opts.lora.max_loras, opts.lora.max_lora_rank,
            extras.lora_adapter_bytes(m, opts.lora.max_lora_rank), tp, memory, shm, inst.gpus // rpn, inst.name, rpn)
        if detail:
            return refuse("host-memory", detail)
    if opts.kv_offload_gib:
        detail = host_tier.refusal_detail(opts.kv_offload_gib, memory, shm, inst.gpus // rpn, inst.name, rpn,
                                          lora_gib, extras.cpu_loras(opts))
        if detail:
            return refuse("host-memory", detail)
        shm = host_tier.shm_with_offload(shm, opts.kv_offload_gib)
    return _Fit(inst, acc, tp, pp, kv, weights, kv_gib, kv_tokens, concurrency, bound, at.tpot_ms, at.ttft_ms,
                replicas, rpn, nodes, nodes * inst.price_hour, cpu, memory, shm, at, k.kv_limit, shape,
                got.source if got and got.knee else "", got.warning if got else "", margin=k.margin,
                margin_cell=k.margin_cell, calibrated_margin=calibrated.margin, calibrated_cell=calibrated.text(),
                estimator=estimator, estimator_why=estimator_why)


def _judged(k, got: float) -> str:
    """How a refused figure was judged: " (p99); 32.4 ms with the 20 % planning margin" (the stack's margin)."""
    text = f" ({k.percentile})" if k.percentile != "mean" else ""
    return text + (f"; {got * (1 + k.margin):.1f} ms with the {k.margin * 100:g} % planning margin" if k.margin else "")


def _knee_notes(req: PlanRequest, best: _Fit) -> tuple[str, ...]:
    """Why the stack's measurements did not give the planned shape's knee: unusable (a warning), or of another
    shape than the one planned."""
    if best.knee_warning:
        return (best.knee_warning,)
    if best.knee_source or not req.measurements:
        return ()
    other = ", ".join(dict.fromkeys(f"{shape_text(s.accelerator, s.tp, s.pp)} ({s.file})" for s in req.measurements))
    return (f"planning.measurements hold {other}, not the planned {shape_text(best.acc.id, best.tp, best.pp)}: its "
            f"knee is estimated",)


def _fabric_text(inst: InstanceType) -> str:
    if inst.network_gbps <= 0:
        return "no network fabric"
    return f"{inst.fabric or 'Ethernet'} at {inst.network_gbps:g} Gbps"


def batched_tokens(req: PlanRequest, acc: Accelerator) -> int:
    """--max-num-batched-tokens: the stack's engine.maxNumBatchedTokens, else vLLM's default for the GPU."""
    return req.engine.max_num_batched_tokens or mem.default_max_num_batched_tokens(acc)


def fleet_nodes(replicas: int, replicas_per_node: int, pp: int, spread_nodes: int = 1) -> int:
    """GPU nodes for `replicas`: `pp` nodes each when a replica spans nodes (its PP stages, or a wide-EP replica's
    nodes), else packed replicas_per_node to a node but over at least `spread_nodes` nodes."""
    if pp > 1:
        return replicas * pp
    return max(math.ceil(replicas / replicas_per_node), min(replicas, spread_nodes))


def evaluate(req: PlanRequest) -> tuple[list[_Fit], list[Refusal]]:
    """The TP x PP shapes (a wide-EP request: planner/wide_ep.py evaluate; choose.evaluate picks)."""
    fits, refusals = [], []
    for cand in _candidates(req):
        r = _evaluate(req, *cand)
        (refusals if isinstance(r, Refusal) else fits).append(r)
    return fits, refusals


def _smaller_refused(best: _Fit, refusals: list[Refusal]) -> list[Refusal]:
    """Refusals of shapes with fewer GPUs per replica on the same instance type: why we went bigger."""
    out = {}
    for r in refusals:
        if r.instance_type == best.inst.name and r.tp * r.pp * r.dp < best.gpus_per_replica \
                and r.kv_cache_dtype == best.kv_dtype:
            out.setdefault((r.tp, r.pp, r.dp), r)
    # shapes vLLM cannot even start (TP not dividing the heads) say little about why we went bigger
    ordered = sorted(out.values(), key=lambda r: (r.constraint in _SHAPE_RULES, -r.tp * r.pp * r.dp))
    return ordered


def _next_shape(best: _Fit, alt: _Fit | None) -> str:
    """The runner-up: "next cheapest" only where both shapes have a price; unpriced shapes (cost 0 meaning
    unknown) are ranked after priced ones and among themselves by the GPUs they take (_Fit.rank)."""
    if not alt:
        return "no other feasible shape"
    if best.priced and alt.priced:
        return f"next cheapest: {alt.shape()}"
    return f"next (unpriced, not compared on cost): {alt.shape()}"


def _topology(req: PlanRequest, best: _Fit, alt: _Fit | None, refusals: list[Refusal]) -> Topology:
    m, inst = req.model, best.inst
    smaller = _smaller_refused(best, refusals)
    tail = f"{req.sla.latency_percentile} " if req.sla.latency_percentile != "mean" else ""
    bound_text = {
        "tpot": f"{tail}TPOT SLA {req.sla.tpot_ms:g} ms", "ttft": f"{tail}TTFT SLA {req.sla.ttft_ms:g} ms",
        "kv-cache": "KV-cache capacity", "measured": "the highest concurrency measured (planning.measurements)",
        "max-num-seqs": "engine.maxNumSeqs" if req.engine.max_num_seqs else "vLLM's max_num_seqs default",
    }[best.bound]
    why = [f"{best.shape()}"]
    if smaller:
        s = smaller[0]
        if s.dp > 1:  # the detail names the DP x EP shape
            why.append(f"refused {s.detail.replace(': ', f' ({s.constraint}: ', 1)})")
        else:
            why.append(f"TP {s.tp}" + (f" x PP {s.pp}" if s.pp > 1 else "") + f" refused ({s.constraint}: {s.detail})")
    why.append(f"{best.concurrency} concurrent requests per replica ({best.at_knee.arrival_rate:.2f} requests/s), "
               f"bound by {bound_text}; {best.replicas} replica(s) for {req.sla.load_text}")
    why.append(_next_shape(best, alt))
    rpn = best.replicas_per_node
    if req.spread_nodes > 1 and best.nodes_per_replica == 1 and best.replicas > 1:
        why.insert(1, f"spread over at least {min(best.replicas, req.spread_nodes)} nodes")
    served = req.served_model_name or m.id
    # an override is what the engine runs with; a wide-EP rank's engine core takes its own share
    seqs = req.engine.max_num_seqs or best.rank_concurrency or best.concurrency
    expert = ExpertParallel(best.dp, inst.gpus, best.all2all, req.wide_ep.redundant_experts) if best.dp > 1 else None
    args = engine_args(req, best.tp, best.pp, best.kv_dtype, seqs, served, batched_tokens(req, best.acc), expert)
    notes = list(req.engine.summary())
    if best.kv_dtype != "auto" and "auto" in req.kv_cache_dtypes:
        notes.append("FP8 KV cache chosen by the planner (kvCacheDtype: allow-fp8): lower quality, "
                     "set kvCacheDtype: auto to refuse it")
    memory = extras.describe(m, req.precision, best.tp, best.pp, best.kv_dtype, req.engine, best.pod_memory_gib)
    if memory:
        notes.append(f"memory: {memory}")
    offload = req.engine.kv_offload_gib or 0.0
    offload_tokens = host_tier.host_tokens(offload, m, best.tp, best.pp, best.kv_dtype) if offload else 0
    if offload:
        notes.append(host_tier.describe(offload, offload_tokens, best.kv_tokens, best.pod_memory_gib))
    return Topology(
        model=m.id, model_name=m.name, model_repo=req.model_source or m.repo_for(req.precision), served_model_name=served,
        precision=req.precision, cloud=inst.cloud, accelerator=best.acc.id, instance_type=inst.name,
        fabric=inst.fabric, gpus_per_node=inst.gpus, tensor_parallel_size=best.tp,
        pipeline_parallel_size=best.pp, gpus_per_replica=best.gpus_per_replica,
        nodes_per_replica=best.nodes_per_replica, data_parallel_size=best.dp, all2all_backend=best.all2all,
        replicas_per_node=rpn, replicas=best.replicas, min_replicas=req.min_replicas,
        max_replicas=req.max_replicas, nodes=best.nodes,
        min_nodes=fleet_nodes(req.min_replicas, rpn, best.nodes_per_replica, req.spread_nodes),
        max_nodes=fleet_nodes(req.max_replicas, rpn, best.nodes_per_replica, req.spread_nodes),
        spread_nodes=req.spread_nodes if best.nodes_per_replica == 1 else 1,
        efa_interfaces=inst.efa_interfaces, kv_cache_dtype=best.kv_dtype, max_model_len=req.max_model_len,
        gpu_memory_utilization=req.gpu_memory_utilization, max_num_seqs=seqs if expert else best.concurrency,
        kv_cache_tokens=best.kv_tokens * best.dp, kv_cache_gib_per_gpu=round(best.kv_gib_per_gpu, 2),
        weights_gib=round(m.weight_bytes(req.precision) / mem.GiB, 1),
        weights_gib_per_gpu=round(best.weights_gib_per_gpu, 2),
        concurrency_at_full_length=round(best.kv_tokens * best.dp / req.max_model_len, 2),
        concurrency_per_replica=best.concurrency, concurrency_bound=best.bound,
        target_concurrency=req.sla.concurrency, est_tpot_ms=best.tpot_ms,
        est_ttft_ms=best.ttft_ms, sla_tpot_ms=req.sla.tpot_ms, sla_ttft_ms=req.sla.ttft_ms,
        price_per_node_hour=inst.price_hour, cost_per_hour=round(best.cost, 2), pod_cpu=best.pod_cpu,
        pod_memory_gib=best.pod_memory_gib, shm_gib=best.shm_gib,
        vllm_args=tuple(args.to_cli()), engine=args, engine_notes=tuple(notes), moe=m.is_moe,
        reason="; ".join(why), alternative=alt.shape() if alt else None,
        refused_smaller=tuple(str(r) for r in smaller),
        prompt_tokens=req.sla.prompt_tokens, output_tokens=req.sla.output_tokens,
        target_requests_per_second=req.sla.requests_per_second, kv_limit_concurrency=best.kv_limit,
        knee_requests_per_second=round(best.at_knee.arrival_rate, 4),
        knee_output_tokens_per_s=round(best.at_knee.output_tps, 1),
        knee_total_tokens_per_s=round(best.at_knee.total_tps, 1),
        knee_tpot_tail_ms=round(best.at_knee.tpot_tail_ms, 2), knee_ttft_tail_ms=round(best.at_knee.ttft_tail_ms, 1),
        knee_tpot_p90_ms=round(best.at_knee.tpot_p90_ms, 2), knee_ttft_p90_ms=round(best.at_knee.ttft_p90_ms, 1),
        latency_percentile=req.sla.latency_percentile, latency_margin=best.margin,
        knee_source=best.knee_source or f"estimated, margin {best.margin * 100:g} %", knee_measured=bool(best.knee_source),
        margin_cell=best.margin_cell, calibrated_margin=best.calibrated_margin, calibrated_cell=best.calibrated_cell,
        estimator="measured" if best.knee_source else best.estimator, estimator_why=best.estimator_why,
        knee_notes=_knee_notes(req, best),
        kv_offload_gib=offload, kv_offload_tokens=offload_tokens,
    )


@dataclass(frozen=True)
class CandidateShape:
    """One feasible shape the planner chose between (candidate_shapes): where and how a replica would run, what
    the plan would pay for the fleet on it, and the `vllm serve` arguments it would run."""
    instance_type: str
    accelerator: str
    gpus_per_node: int
    tp: int
    pp: int
    kv_cache_dtype: str
    max_num_seqs: int  # --max-num-seqs as the plan would run it (engine.maxNumSeqs, else the knee)
    kv_limit: int  # concurrent requests the KV cache / max_num_seqs hold at the workload's lengths
    cost_per_hour: float  # the fleet on this shape
    price_per_node_hour: float
    knee_source: str  # "measured: FILE (...)" where planning.measurements held this shape, else ""
    vllm_args: tuple[str, ...]

    @property
    def multi_node(self) -> bool:
        return self.pp > 1

    def label(self) -> str:
        kv = "" if self.kv_cache_dtype == "auto" else ", fp8 KV"
        return f"{shape_text(self.accelerator, self.tp, self.pp)}{kv} on {self.instance_type}"


def candidate_shapes(req: PlanRequest, limit: int | None = None) -> list[CandidateShape]:
    """The feasible shapes of `req`, best first in the order plan_topology ranks them (_Fit.rank: single-node
    before PP over Ethernet, then the cheapest fleet); the first is the one the plan chooses. `limit`: at most
    that many. Pure; the profile Job (components/profiling/plan.py) measures the first few."""
    fits, _ = evaluate(req)
    fits.sort(key=_Fit.rank)
    served = req.served_model_name or req.model.id
    out = []
    for f in fits[:limit]:
        seqs = req.engine.max_num_seqs or f.rank_concurrency or f.concurrency
        expert = ExpertParallel(f.dp, f.inst.gpus, f.all2all, req.wide_ep.redundant_experts) if f.dp > 1 else None
        args = engine_args(req, f.tp, f.pp, f.kv_dtype, seqs, served, batched_tokens(req, f.acc), expert)
        out.append(CandidateShape(f.inst.name, f.acc.id, f.inst.gpus, f.tp, f.pp, f.kv_dtype, seqs, f.kv_limit,
                                  round(f.cost, 2), f.inst.price_hour, f.knee_source, tuple(args.to_cli())))
    return out
