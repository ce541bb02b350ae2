"""The planner's answer: one serving topology, and the refusal when nothing fits."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any


@dataclass(frozen=True)
class Refusal:
    """Why one candidate (instance type, TP, PP, KV dtype) cannot serve."""

    constraint: str  # e.g. "memory", "kv-cache", "tp-heads", "fabric", "tpot", "ttft", "max-replicas"
    instance_type: str
    accelerator: str
    tp: int
    pp: int
    kv_cache_dtype: str
    detail: str
    replicas: int = 0  # max-replicas: the replicas this shape needs (the closest shape is the one needing fewest)
    dp: int = 1  # wide-EP (planner/wide_ep.py): DP = EP ranks of TP 1

    def __str__(self) -> str:
        par = f"DP{self.dp}xEP{self.dp}" if self.dp > 1 else f"TP{self.tp}xPP{self.pp}"
        return f"{self.instance_type} {par} kv={self.kv_cache_dtype}: {self.constraint}: {self.detail}"


class NoFeasibleTopology(Exception):
    """No candidate meets every constraint; the message explains the closest ones."""

    def __init__(self, message: str, refusals: list[Refusal]):
        super().__init__(message)
        self.message = message
        self.refusals = refusals

    @property
    def constraints(self) -> set[str]:
        return {r.constraint for r in self.refusals}


@dataclass(frozen=True)
class Disaggregation:
    """The P/D verdict of one model (Topology.disaggregation): what was compared and why it was (not) chosen."""
    mode: str  # serving.disaggregation: auto | on
    chosen: bool
    verdict: str  # the plan's line
    transport: str = ""  # rdma | tcp: how NIXL moves the KV cache
    backend: str = "UCX"  # NIXL backend (kv_connector_extra_config.backends)
    prefill_instances: int = 0
    decode_instances: int = 0
    decode_concurrency: int = 0  # requests one decode instance runs within the TPOT SLA
    prefill_rps: float = 0.0  # requests/s one prefill instance takes within the TTFT SLA
    decode_rps: float = 0.0
    kv_transfer_ms: float = 0.0  # one prompt's KV cache
    ttft_ms: float = 0.0
    tpot_ms: float = 0.0
    nodes: int = 0
    cost_per_hour: float = 0.0
    cost_per_million: float | None = None  # $ per million output tokens, the fleet at its capacity within the SLA
    aggregated_cost_per_million: float | None = None
    aggregated_cost_per_hour: float = 0.0
    # issue 39: each pool's autoscaling bounds (components/serving/autoscaling.py renders a ScaledObject per pool):
    # min the planned instances, max replicas.max split by the plan's prefill:decode ratio (pool_bounds)
    prefill_max: int = 0
    decode_max: int = 0
    # prefill queue target: prompts waiting per prefill instance that a new one still meets the TTFT SLA behind
    # (the TTFT budget left for queueing over one prompt's prefill); the prefill side's share of the TTFT SLA
    # (the SLA less the KV transfer and the first decode step)
    prefill_queue: int = 0
    prefill_ttft_ms: float = 0.0

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Topology:
    model: str  # catalog id
    model_name: str
    model_repo: str  # what vLLM loads
    served_model_name: str
    precision: str
    cloud: str
    accelerator: str
    instance_type: str
    fabric: str | None
    gpus_per_node: int
    tensor_parallel_size: int
    pipeline_parallel_size: int
    gpus_per_replica: int
    nodes_per_replica: int
    replicas_per_node: int
    replicas: int  # needed for the target concurrency (at least min_replicas)
    min_replicas: int
    max_replicas: int
    nodes: int  # GPU nodes for `replicas`
    min_nodes: int  # GPU nodes for `min_replicas`
    max_nodes: int  # GPU nodes for `max_replicas`
    spread_nodes: int  # replicas of a single-node shape spread over at least this many nodes
    efa_interfaces: int
    kv_cache_dtype: str
    max_model_len: int
    gpu_memory_utilization: float
    max_num_seqs: int
    kv_cache_tokens: int  # per replica
    kv_cache_gib_per_gpu: float
    weights_gib: float  # whole model
    weights_gib_per_gpu: float
    concurrency_at_full_length: float  # kv_cache_tokens / max_model_len
    concurrency_per_replica: int  # requests one replica holds within the SLA
    concurrency_bound: str  # what limits concurrency_per_replica: "tpot", "ttft", "kv-cache", "max-num-seqs"
    target_concurrency: int
    est_tpot_ms: float  # at concurrency_per_replica
    est_ttft_ms: float
    sla_tpot_ms: float
    sla_ttft_ms: float
    price_per_node_hour: float
    cost_per_hour: float
    pod_cpu: int  # per pod (a replica's share of its node, or one node of a multi-node replica)
    pod_memory_gib: int
    shm_gib: int
    vllm_args: tuple[str, ...]
    reason: str
    alternative: str | None = None
    refused_smaller: tuple[str, ...] = field(default_factory=tuple)
    # the same arguments, typed (planner/engine_args.EngineArgs): Ray Serve LLM renders its engine_kwargs
    engine: Any = field(default=None, compare=False, repr=False)
    engine_notes: tuple[str, ...] = field(default_factory=tuple)  # engine options and their memory, for the plan
    moe: bool = False  # a mixture-of-experts model (its low-concurrency estimates are optimistic: docs/capacity.md)
    # Capacity at the knee (planner/capacity.py): per replica at concurrency_per_replica, for the SLA's
    # prompt/output lengths, and what the fleet carries at min and max replicas.
    prompt_tokens: int = 0
    output_tokens: int = 0
    target_requests_per_second: float | None = None  # the load as a rate (else target_concurrency users)
    kv_limit_concurrency: int = 0  # concurrent requests the KV cache / max_num_seqs hold at that length
    knee_requests_per_second: float = 0.0
    knee_output_tokens_per_s: float = 0.0
    knee_total_tokens_per_s: float = 0.0
    knee_tpot_tail_ms: float = 0.0  # p99 model (capacity.py)
    knee_ttft_tail_ms: float = 0.0
    knee_tpot_p90_ms: float = 0.0  # p90 model
    knee_ttft_p90_ms: float = 0.0
    # how the knee judged the SLA (capacity.py): the "mean" or "p99" latencies, times 1 + latency_margin
    # (0.0: a topology planned before the margin)
    latency_percentile: str = "mean"
    latency_margin: float = 0.0
    # the calibration's cell that margin was read from (planner/margins.py; "": the stack's planning.latencyMargin
    # or a measured knee) and that cell's margin, the least an estimated knee keeps in production
    margin_cell: str = ""
    calibrated_margin: float = 0.0
    calibrated_cell: str = ""
    # what priced the knee: "step-model", "aiconfigurator+engine" (planner/estimators.py) or "measured"; and why
    estimator: str = "step-model"
    estimator_why: str = ""
    # where the knee came from (planner/measured.py): "measured: FILE (N points, DATE)" or "estimated, margin 20 %";
    # knee_notes: the stack's measurements the plan could not use for it, and why
    knee_source: str = ""
    knee_measured: bool = False
    knee_notes: tuple[str, ...] = field(default_factory=tuple)
    # --- cost (issue 14): what the price is, and the stack-level findings components/costs/notes.py adds;
    # the figures that follow from the plan alone are the properties below (COST_PROPERTIES) ---
    price_basis: str = "on-demand, base region"  # e.g. "spot us-east-1 ⚠" (components/catalog/prices.py)
    # the planner's cheaper shape that leaves no GPU idle ("": none does; None: not asked)
    idle_alternative: str | None = None
    pinned_best: str | None = None  # the planner's best shape without models[].instanceTypes, when cheaper
    pinned_extra_per_hour: float = 0.0  # what the pin costs over pinned_best, $/hour at planned replicas
    # nodes a reservation / Capacity Block holds and bills whether used or not (the pool's max nodes);
    # 0: nodes are billed as they run (on-demand, spot, an existing cluster)
    reserved_nodes: int = 0
    # --- the host-memory KV tier (engine.kvOffloadGiB, planner/host_tier.py): GiB of the pod's memory it pins
    # (shm_gib includes it) and the tokens it holds; 0: none ---
    kv_offload_gib: float = 0.0
    kv_offload_tokens: int = 0
    # serving.disaggregation auto | on: the P/D verdict (Disaggregation, above); None: off
    disaggregation: Any = None
    # models[].parallelism.mode wide-ep (planner/wide_ep.py): DP = EP ranks per replica (TP 1 each; 1: TP x PP
    # only) and the all2all backend between them ("" without)
    data_parallel_size: int = 1
    all2all_backend: str = ""

    @property
    def disaggregated(self) -> bool:
        """Served as separate prefill and decode instances (components/serving/disagg.py)."""
        return bool(self.disaggregation is not None and self.disaggregation.chosen)

    @property
    def fleet_load(self) -> dict:
        """Concurrent users, requests/s and output tokens/s the fleet carries within the SLA."""
        def at(n: int) -> dict:
            return {"replicas": n, "concurrency": n * self.concurrency_per_replica,
                    "requests_per_second": round(n * self.knee_requests_per_second, 3),
                    "output_tokens_per_s": round(n * self.output_tokens_per_s_per_replica, 1)}
        return {"min": at(self.min_replicas), "max": at(self.max_replicas)}

    @property
    def multi_node(self) -> bool:
        return self.nodes_per_replica > 1

    @property
    def wide_ep(self) -> bool:
        """Attention data-parallel with expert parallelism (models[].parallelism.mode wide-ep)."""
        return self.data_parallel_size > 1

    def billed_nodes(self, nodes: int) -> int:
        """Nodes paid for while `nodes` run: a reservation bills every node it holds, used or not."""
        return max(nodes, self.reserved_nodes)

    @property
    def cost_min_per_hour(self) -> float:
        return round(self.billed_nodes(self.min_nodes) * self.price_per_node_hour, 2)

    @property
    def cost_max_per_hour(self) -> float:
        return round(self.billed_nodes(self.max_nodes) * self.price_per_node_hour, 2)

    @property
    def cost_billed_per_hour(self) -> float:
        """What the planned replicas cost: cost_per_hour, or the whole reservation where one is held."""
        if not self.reserved_nodes:
            return self.cost_per_hour
        return round(self.billed_nodes(self.nodes) * self.price_per_node_hour, 2)

    @property
    def idle_gpus(self) -> int:
        """GPUs on the planned (or reserved) nodes that no replica uses, at the planned replicas."""
        return idle_gpus(self.billed_nodes(self.nodes), self.gpus_per_node, self.replicas, self.gpus_per_replica)

    @property
    def idle_gpus_min(self) -> int:
        return idle_gpus(self.billed_nodes(self.min_nodes), self.gpus_per_node, self.min_replicas,
                         self.gpus_per_replica)

    @property
    def idle_gpus_max(self) -> int:
        return idle_gpus(self.billed_nodes(self.max_nodes), self.gpus_per_node, self.max_replicas,
                         self.gpus_per_replica)

    @property
    def output_tokens_per_s_per_replica(self) -> float:
        """Output tokens/s one replica serves within the SLA: the capacity model's figure at its knee
        (planner/capacity.py, concurrency_per_replica concurrent requests), the one source the planner's
        replica count, the fleet load and the $ per million output tokens all read."""
        return self.knee_output_tokens_per_s

    @property
    def cost_per_million_output_tokens(self) -> float | None:
        return cost_per_million_output_tokens(self.cost_billed_per_hour, self.replicas, self.output_tokens_per_s_per_replica)

    def to_dict(self) -> dict:
        d = asdict(self)
        d.pop("engine", None)
        d["engine_notes"] = list(self.engine_notes)
        d["vllm_args"] = list(self.vllm_args)
        d["refused_smaller"] = list(self.refused_smaller)
        d["knee_notes"] = list(self.knee_notes)
        d["multi_node"] = self.multi_node
        d.update({k: getattr(self, k) for k in COST_PROPERTIES})
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Topology":
        """The Topology of a to_dict() (the plan's topology.json / stack output), derived keys dropped."""
        names = {f.name for f in fields(cls)}
        out = {k: tuple(v) if isinstance(v, list) else v for k, v in d.items() if k in names}
        if isinstance(out.get("disaggregation"), dict):
            out["disaggregation"] = Disaggregation(**out["disaggregation"])
        return cls(**out)


COST_PROPERTIES = ("cost_min_per_hour", "cost_max_per_hour", "cost_billed_per_hour", "idle_gpus", "idle_gpus_min", "idle_gpus_max",
                   "output_tokens_per_s_per_replica", "cost_per_million_output_tokens")


def idle_gpus(nodes: int, gpus_per_node: int, replicas: int, gpus_per_replica: int) -> int:
    """GPUs paid for on `nodes` that none of `replicas` uses."""
    return max(0, nodes * gpus_per_node - replicas * gpus_per_replica)


def cost_per_million_output_tokens(cost_per_hour: float, replicas: int, tokens_per_s_per_replica: float
                                   ) -> float | None:
    """$ per million output tokens of a fleet of `replicas` at `cost_per_hour`, each serving
    `tokens_per_s_per_replica` output tokens/s (None when it serves none, or costs nothing)."""
    if replicas <= 0 or tokens_per_s_per_replica <= 0 or cost_per_hour <= 0:
        return None
    return round(cost_per_hour / (replicas * tokens_per_s_per_replica * 3600) * 1e6, 4)
