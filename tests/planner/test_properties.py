"""Property tests: every topology the planner returns satisfies every constraint; every refusal
names its binding constraint. Invariants are re-derived here from first principles, not read back."""
import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from components.catalog import ACCELERATORS, INSTANCE_TYPES, MODELS, instance_types
from components.planner import NoFeasibleTopology, PlanRequest, Sla, evaluate, plan_topology
from components.planner.explain import ORDER
from components.planner import memory as mem

GiB = 1024**3
ROUNDING = 0.005  # Topology reports GiB figures to two decimals


@st.composite
def requests(draw):
    model = MODELS[draw(st.sampled_from(sorted(MODELS)))]
    cloud = draw(st.sampled_from(["aws", "gcp"]))
    gpus = sorted({i.accelerator for i in instance_types(cloud)})
    gpu = draw(st.one_of(st.none(), st.sampled_from(gpus)))
    mml = draw(st.integers(min_value=2048, max_value=model.max_context))
    sla = Sla(ttft_ms=draw(st.floats(100, 5000)), tpot_ms=draw(st.floats(5, 200)),
              concurrency=draw(st.integers(1, 512)), prompt_tokens=draw(st.integers(64, 1024)),
              output_tokens=draw(st.integers(16, 1024)))
    return PlanRequest(model=model, precision=draw(st.sampled_from(model.precisions)),
                       candidates=tuple(instance_types(cloud, gpu)), max_model_len=mml, sla=sla,
                       min_replicas=draw(st.integers(1, 2)), max_replicas=draw(st.integers(2, 64)),
                       gpu_memory_utilization=draw(st.sampled_from([0.85, 0.90, 0.92, 0.925])),
                       kv_cache_dtypes=draw(st.sampled_from([("auto",), ("auto", "fp8")])),
                       spread_nodes=draw(st.sampled_from([1, 2])))


def _arg(args, flag):
    return args[args.index(flag) + 1]


def check_invariants(req: PlanRequest, t) -> None:
    m, inst = req.model, INSTANCE_TYPES[t.instance_type]
    acc = ACCELERATORS[t.accelerator]
    tp, pp = t.tensor_parallel_size, t.pipeline_parallel_size
    assert inst in req.candidates
    # shape
    assert m.heads % tp == 0, "TP divides the attention heads"
    if not m.is_mla:
        assert m.kv_heads % tp == 0 or tp % m.kv_heads == 0, "TP splits or replicates whole KV heads"
    if m.fp8_block_quantized and req.precision == "fp8":
        assert (m.moe_intermediate // 128) % tp == 0, "128-wide FP8 blocks of the experts split evenly over TP"
    assert 1 <= pp <= min(m.layers, req.max_pipeline_parallel)
    assert tp <= inst.gpus == t.gpus_per_node
    assert t.gpus_per_replica == tp * pp and t.nodes_per_replica == pp
    if pp > 1:
        # PP across nodes moves only activations: over a fast fabric, or over Ethernet when it fits the SLA
        assert tp == inst.gpus and inst.network_gbps > 0, "a replica spans nodes only over a network"
    else:
        assert t.replicas_per_node == inst.gpus // tp
    # memory: weights + KV within the utilisation budget of what vLLM sees
    budget = acc.visible_gib * req.gpu_memory_utilization
    assert t.weights_gib_per_gpu + t.kv_cache_gib_per_gpu <= budget + 2 * ROUNDING
    assert t.weights_gib_per_gpu >= m.weight_bytes(req.precision) / GiB / (tp * pp) - ROUNDING
    # KV cache: one full-length request fits; tokens follow from the per-rank KV heads (MLA: not split)
    assert t.kv_cache_tokens >= req.max_model_len
    if not m.sliding_layers:
        dtype = 1 if t.kv_cache_dtype == "fp8" else 2
        heads = 1 if m.is_mla else max(1, m.kv_heads // tp)
        width = m.mla_dim if m.is_mla else 2 * heads * m.head_dim
        per_token = width * dtype * math.ceil(m.layers / pp)
        assert t.kv_cache_tokens <= (t.kv_cache_gib_per_gpu + ROUNDING) * GiB / per_token
        assert t.kv_cache_tokens > (t.kv_cache_gib_per_gpu - ROUNDING) * GiB / per_token - 16
    if t.kv_cache_dtype == "fp8":
        assert acc.supports_fp8 and "fp8" in req.kv_cache_dtypes
    # SLA and fleet
    assert t.est_tpot_ms <= req.sla.tpot_ms and t.est_ttft_ms <= req.sla.ttft_ms
    assert t.replicas * t.concurrency_per_replica >= req.sla.concurrency, "the fleet holds the target"
    assert t.replicas == max(req.min_replicas, math.ceil(req.sla.concurrency / t.concurrency_per_replica))
    assert req.min_replicas <= t.replicas <= req.max_replicas
    # a replica never admits more requests than its KV cache holds at the average length, nor vLLM's default
    per_request = min(req.sla.prompt_tokens + req.sla.output_tokens, req.max_model_len)
    big = acc.visible_gib >= 70 and not acc.id.startswith("a100")
    assert 1 <= t.concurrency_per_replica <= min(t.kv_cache_tokens // per_request, 1024 if big else 256)
    nodes = t.replicas * pp if pp > 1 else max(math.ceil(t.replicas / t.replicas_per_node),
                                               min(t.replicas, req.spread_nodes))
    assert t.nodes == nodes and math.isclose(t.cost_per_hour, round(nodes * inst.price_hour, 2))
    # vLLM gets exactly this shape
    args = t.vllm_args
    assert args[0] == m.repo_for(req.precision)
    assert _arg(args, "--tensor-parallel-size") == str(tp) and _arg(args, "--pipeline-parallel-size") == str(pp)
    assert _arg(args, "--max-model-len") == str(req.max_model_len)
    assert float(_arg(args, "--gpu-memory-utilization")) == req.gpu_memory_utilization
    assert int(_arg(args, "--max-num-seqs")) == t.concurrency_per_replica
    assert int(_arg(args, "--max-num-batched-tokens")) == mem.default_max_num_batched_tokens(acc)
    assert ("--kv-cache-dtype" in args) == (t.kv_cache_dtype != "auto")
    if t.kv_cache_dtype != "auto":
        assert _arg(args, "--kv-cache-dtype") == t.kv_cache_dtype
    online = req.precision == "fp8" and m.precisions[0] != "fp8" and not m.fp8_repo
    assert (_arg(args, "--quantization") == "fp8") if online else "--quantization" not in args
    assert ("--distributed-executor-backend" in args) == (pp > 1)
    flags = [a for a in args[1:] if a.startswith("-")]
    assert all(f.startswith("--") and "=" not in f for f in flags), "full flag names, values as separate args"
    assert len(flags) == len(set(flags)), "no flag given twice"


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])  # ~40 s on 2 cores
@given(requests())
def test_every_topology_satisfies_every_constraint_and_is_cheapest(req):
    try:
        t = plan_topology(req)
    except NoFeasibleTopology as e:
        assert e.refusals, "a refusal carries the candidates' reasons"
        for r in e.refusals:
            assert r.constraint in ORDER and r.detail
        closest = {r.constraint for r in e.refusals}
        assert any(c in str(e) for c in closest), "the message names a binding constraint"
        return
    check_invariants(req, t)
    fits, _ = evaluate(req)
    # PP over plain Ethernet is a last resort: planned only when no single-node or fast-fabric shape fits
    ethernet = t.pipeline_parallel_size > 1 and not INSTANCE_TYPES[t.instance_type].fast_fabric
    preferred = [f for f in fits if not (f.pp > 1 and not f.inst.fast_fabric)]
    assert not (ethernet and preferred), "PP over Ethernet planned although a node (or a fast fabric) holds it"
    fits = preferred or fits
    assert t.cost_per_hour <= min(round(f.cost, 2) for f in fits) + 1e-9
    # tie on cost: the fewest GPUs in all, then per replica
    tied = [f for f in fits if round(f.cost, 4) == round(min(f.cost for f in fits), 4)]
    fewest = min((f.nodes * f.inst.gpus, f.gpus_per_replica) for f in tied)
    assert (t.nodes * t.gpus_per_node, t.gpus_per_replica) == fewest


@settings(max_examples=60, deadline=None)
@given(requests())
def test_every_refused_candidate_really_breaks_its_constraint(req):
    _, refusals = evaluate(req)
    for r in refusals[:40]:
        inst = INSTANCE_TYPES[r.instance_type]
        if r.constraint == "tp-heads":
            assert req.model.heads % r.tp
        elif r.constraint == "fabric":
            assert r.pp > 1 and not inst.fast_fabric
        elif r.constraint == "kv-cache":
            assert f"{req.max_model_len:,}" in r.detail
        elif r.constraint == "tpot":
            assert f"SLA {req.sla.tpot_ms:g} ms" in r.detail
        elif r.constraint == "memory":
            assert "exceed" in r.detail
