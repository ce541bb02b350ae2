"""What the planner is asked: one model deployment, already validated (no Pulumi, no pydantic)."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..catalog import InstanceType, ModelSpec
from ..catalog.measured import MeasuredShape
from .engine_args import EngineOptions

DEFAULT_GPU_MEMORY_UTILIZATION = 0.90


@dataclass(frozen=True)
class Sla:
    ttft_ms: float = 2000.0  # time to first token for an average prompt
    tpot_ms: float = 100.0  # time per output token (inter-token latency)
    concurrency: int = 16  # concurrent users (requests in flight) the fleet must hold within the SLA
    prompt_tokens: int = 1024  # average prompt length
    output_tokens: int = 256  # average completion length
    # The load as an arrival rate instead (requests/s, open loop); when set it sizes the fleet and
    # `concurrency` is ignored.
    requests_per_second: float | None = None
    # What the latencies are judged at: "p90" (the default), "p99" (the tail model's figures, capacity.py) or
    # "mean"; either way with the planning margin (PlanRequest.margin).
    latency_percentile: str = "p90"

    @property
    def load_text(self) -> str:
        if self.requests_per_second is not None:
            return f"{self.requests_per_second:g} requests/s"
        return f"{self.concurrency} concurrent users"

    @property
    def tokens_per_request(self) -> int:
        return self.prompt_tokens + self.output_tokens

    @property
    def decode_context(self) -> float:
        """Average context a running request has while decoding."""
        return self.prompt_tokens + self.output_tokens / 2


@dataclass(frozen=True)
class WideEp:
    """models[].parallelism.mode wide-ep (planner/wide_ep.py): attention DP x expert parallel, TP 1 per rank."""
    all2all: str = "auto"  # parallelism.all2allBackend: auto = the fabric's first (wide_ep.FABRIC_EP)
    redundant_experts: int = 0  # parallelism.eplbRedundantExperts: > 0 turns EPLB on


# serving.multiNode -> the words a refusal uses for a replica across nodes
MULTI_NODE_SHAPES = {"lws": "a LeaderWorkerSet group, vLLM's mp executor",
                     "rayservice": "a RayService, Ray Serve LLM"}


@dataclass(frozen=True)
class PlanRequest:
    model: ModelSpec
    precision: str
    candidates: tuple[InstanceType, ...]  # instance types the fleet may use
    max_model_len: int
    sla: Sla = field(default_factory=Sla)
    min_replicas: int = 1
    max_replicas: int = 64
    gpu_memory_utilization: float = DEFAULT_GPU_MEMORY_UTILIZATION
    kv_cache_dtypes: tuple[str, ...] = ("auto", "fp8")  # the planner picks among these
    tensor_parallel_size: int | None = None  # pin TP (otherwise searched)
    served_model_name: str | None = None
    max_pipeline_parallel: int = 8
    # Replicas spread over at least this many nodes, so that losing one node leaves capacity
    # (production: 2). A single-node replica packs several to a node otherwise.
    spread_nodes: int = 1
    engine: EngineOptions = field(default_factory=EngineOptions)  # typed vLLM options (models[].engine)
    model_source: str | None = None  # what vLLM loads when not the Hub repo: s3:// / gs:// URI or a path
    # Every instance type the stack can buy, any accelerator (planning.priced_pool): a no-fit error only advises
    # an accelerator sold there (a GKE stack on demand has no H200). Empty: the cloud's whole catalog.
    market: tuple[InstanceType, ...] = ()
    # planning.latencyMargin (None: the calibration's cell by model class and load, planner/margins.py) and the
    # stack's measurements of this model (planning.measurements: planner/measured.py reads those shapes' knees)
    latency_margin: float | None = None
    measurements: tuple[MeasuredShape, ...] = ()
    # serving.multiNode: what runs a replica that spans nodes ("lws": a LeaderWorkerSet group running vLLM's mp
    # executor, the default; "rayservice": a KubeRay RayService running Ray Serve LLM). Refusals name it.
    multi_node: str = "lws"
    # planning.estimator: "step-model" (the default) or "auto" (per model class the held-out winner where it can
    # price the shape: planner/estimators.py choose)
    estimator: str = "step-model"
    # models[].parallelism.mode wide-ep: size DP x EP instead of TP x PP (planner/wide_ep.py); None: TP x PP
    wide_ep: WideEp | None = None

    @property
    def multi_node_shape(self) -> str:
        """The multi-node shape as a refusal names it (components/serving/shape.py decides the workload)."""
        return MULTI_NODE_SHAPES.get(self.multi_node, self.multi_node)

    @property
    def margin(self) -> float | None:
        """What the knee keeps the estimated TPOT and TTFT under the SLA (estimate x (1 + margin) <= SLA): the
        stack's planning.latencyMargin, or None for the calibration's cell at each load (planner/margins.py)."""
        return self.latency_margin
