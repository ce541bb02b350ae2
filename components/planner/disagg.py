"""Prefill/decode disaggregation (llm-d P/D over vLLM's NixlConnector): size a prefill pool and a decode pool
for the SLA and the load, and say whether that beats the aggregated plan on $ per million output tokens.

Pure. A P/D fleet here is made of single-node instances of one shape (the instance type, TP and KV dtype of a
feasible aggregated shape, search.evaluate), X prefill and Y decode instances, a Deployment each
(components/serving/disagg.py); a shape whose replica spans nodes is never disaggregated (LWS-based wide P/D is
future work). The model, per instance, from the step model (performance.step_cost, called, not re-fitted):

* prefill: a request's prompt of P tokens runs in ceil(P / c) prefill-only steps of c = min(P,
  max_num_batched_tokens) tokens: service S. Requests queue for the prefill server (M/D/1 mean wait
  rho / (2 (1 - rho)) S, or the p99 wait S ln(100 rho) / (1 - rho), the same forms as capacity.py); several short
  prompts batched into one step are not modelled (conservative for short prompts).
* KV transfer: the prompt's KV cache (memory.kv_bytes_for_request per TP rank) read by the decode instance over
  the fabric: per rank over its share of the node's network (RDMA) or all ranks over the node's NIC (TCP).
* decode: pure decode steps (no prefill chunk beside them: the point of P/D): the largest batch D whose step
  time meets the TPOT SLA with the planning margin, within the KV cache and max_num_seqs.
* TTFT = queue + S + KV transfer + one decode step; the prefill load rho is the highest that keeps it within
  the TTFT SLA (with the margin), at most PREFILL_MAX_UTILISATION.

The load in requests/s is the SLA's rate, or (closed loop) its users over the request time at the SLA edge
(TTFT + (O - 1) TPOT), which the fleet then holds within the SLA; X = ceil(load / a prefill instance's rate),
Y = ceil(load / a decode instance's rate). Cost: the instances packed onto nodes like the aggregated plan's.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

from . import memory as mem
from .capacity import QUANTILES, Workload, margin_judge, wait_quantile
from .margins import cell_for
from .estimators import replica_step_cost
from .performance import EFFICIENCY
from .request import PlanRequest
from .search import evaluate, fleet_nodes
from .topology import Disaggregation, NoFeasibleTopology, Topology  # noqa: F401  (Disaggregation: re-exported)

MODES = ("off", "auto", "on")
FIELD = "serving.disaggregation"
# InstanceType.fabric values whose NICs NIXL reaches by RDMA: EFA through NIXL's LIBFABRIC backend (llm-d
# guides/pd-disaggregation modelserver/gpu/vllm/aws: kv_connector_extra_config backends [LIBFABRIC]); GKE's
# GPUDirect RDMA (RoCE CX-7), an existing cluster's InfiniBand / RoCE through UCX's verbs transports (vLLM's
# default backend, nixl/base_worker.py backends ["UCX"]). GPUDirect-TCPX(O) is an NCCL net plugin UCX cannot
# use, and a node without a fabric has only its pod network: there NIXL's UCX falls back to its TCP transport.
RDMA_FABRICS = ("efa", "rdma", "infiniband")
LIBFABRIC_FABRICS = ("efa",)
# ⚠ estimates (no P/D measurement in the calibration set): the share of the line rate a KV read reaches over
# RDMA and over UCX's TCP transport, and the per-request fixed cost (the sidecar's prefill round trip, NIXL's
# notification, the decode scheduler picking the request up).
KV_RDMA_EFFICIENCY = 0.7
KV_TCP_EFFICIENCY = 0.25
KV_TRANSFER_OVERHEAD_S = {"rdma": 0.002, "tcp": 0.005}
PREFILL_MAX_UTILISATION = 0.9  # a prefill pool planned fuller queues without bound on a burst
# auto picks P/D only where it saves at least this share of the aggregated $/M tokens: a second Deployment,
# the sidecar and the KV path are more to run and to fail (a policy choice, not a measurement)
MIN_SAVING = 0.10
# a prompt this short is one prefill chunk beside a decode step: the plan says so when P/D does not pay
SHORT_PROMPT_TOKENS = 1024


@dataclass(frozen=True)
class _Pd:
    fit: object
    transport: str
    prefill: int
    decode: int
    d: int
    lam_p: float
    lam_d: float
    kv_s: float
    ttft_s: float
    tpot_s: float
    nodes: int
    cost: float
    cpm: float | None
    margin: float = 0.0  # the planning margin the decode batch was judged with, and the calibration's cell at it
    margin_cell: str = ""
    calibrated_margin: float = 0.0
    calibrated_cell: str = ""
    service_s: float = 0.0  # one prompt's prefill (the prefill server's service time)
    budget_s: float = 0.0  # the TTFT budget left for queueing at the prefill pool


def transport(fabric: str | None) -> str:
    return "rdma" if fabric in RDMA_FABRICS else "tcp"


def kv_transfer_s(model, tp: int, kv_dtype: str, inst, prompt_tokens: int) -> float:
    """Seconds to move one prompt's KV cache from a prefill to a decode instance (inf without a network)."""
    if inst.network_gbps <= 0:
        return math.inf
    per_rank = mem.kv_bytes_for_request(model, tp, 1, kv_dtype, prompt_tokens, batched_tokens=1)
    how = transport(inst.fabric)
    if how == "rdma":  # every rank reads over its own NICs, in parallel
        seconds = per_rank / (inst.network_gbps / inst.gpus * 1e9 / 8 * KV_RDMA_EFFICIENCY)
    else:  # every rank's share through the node's network stack
        seconds = per_rank * tp / (inst.network_gbps * 1e9 / 8 * KV_TCP_EFFICIENCY)
    return KV_TRANSFER_OVERHEAD_S[how] + seconds


def _wait(rho: float, service: float, percentile: str) -> float:
    if rho <= 0:
        return 0.0
    if percentile in QUANTILES:  # the M/M/1 waiting-time quantile, as capacity.py's tail model
        return wait_quantile(service, rho, QUANTILES[percentile])
    return rho / (2 * (1 - rho)) * service


def _size(req: PlanRequest, fit) -> _Pd | str:
    """One shape's P/D fleet, or why it cannot meet the SLA."""
    r, sla = fit.replica, req.sla
    eff = replace(EFFICIENCY, estimator=fit.estimator)  # the estimator that priced the shape (estimators.choose)
    judge = margin_judge(r, req.margin, eff)  # the stack's planning.latencyMargin, else the calibration's cell
    w = Workload(sla.prompt_tokens, sla.output_tokens)
    P, n = w.prompt_tokens, max(w.output_tokens - 1, 1)
    cost = replica_step_cost(r.model, r.precision, r.acc, r.inst, r.tp, r.pp, r.kv_cache_dtype, w.decode_context,
                             P / 2, eff)
    chunk = max(1, min(P, r.max_num_batched_tokens))
    service = math.ceil(P / chunk) * cost(0, chunk)
    cap = r.kv_limit(w, req.max_model_len)
    lo, hi = 0, cap  # the largest decode batch meeting the TPOT SLA (step time grows with the batch)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if cost(mid) * (1 + judge(mid)[0]) * 1e3 <= sla.tpot_ms else (lo, mid - 1)
    if lo < 1:
        return f"TPOT: a decode step takes {cost(1) * 1e3:.1f} ms even for one request (SLA {sla.tpot_ms:g} ms)"
    d, t_dec = lo, cost(lo)
    margin = judge(d)[0]
    kv = kv_transfer_s(r.model, r.tp, r.kv_cache_dtype, r.inst, P)
    fixed = service + kv + t_dec
    budget = sla.ttft_ms / 1e3 / (1 + margin) - fixed
    if budget < 0:
        return (f"TTFT: prefill {service * 1e3:.0f} ms + KV transfer {kv * 1e3:.0f} ms + a decode step "
                f"{t_dec * 1e3:.1f} ms > SLA {sla.ttft_ms:g} ms with the planning margin")
    lo_r, hi_r = 0.0, PREFILL_MAX_UTILISATION
    for _ in range(40):
        mid = (lo_r + hi_r) / 2
        lo_r, hi_r = (mid, hi_r) if _wait(mid, service, sla.latency_percentile) <= budget else (lo_r, mid)
    rho = lo_r
    lam_p, lam_d = rho / service, d / (n * t_dec)
    ttft = fixed + _wait(rho, service, sla.latency_percentile)
    load = sla.requests_per_second if sla.requests_per_second is not None else sla.concurrency / (ttft + n * t_dec)
    least = req.spread_nodes  # production: each role survives a node
    prefill, decode = max(least, math.ceil(load / lam_p - 1e-9)), max(least, math.ceil(load / lam_d - 1e-9))
    decode += max(0, req.min_replicas - prefill - decode)
    if prefill + decode > req.max_replicas:
        return (f"max-replicas: {prefill} prefill + {decode} decode instances for {sla.load_text}; "
                f"replicas.max is {req.max_replicas}")
    rpn = fit.inst.gpus // fit.tp
    nodes = fleet_nodes(prefill + decode, rpn, 1, req.spread_nodes)
    hourly = nodes * fit.inst.price_hour
    cpm = cost_per_million(hourly, req)
    cell = cell_for(r.model, d, eff.estimator)
    return _Pd(fit, transport(fit.inst.fabric), prefill, decode, d, lam_p, lam_d, kv, ttft, t_dec, nodes, hourly, cpm,
               margin, judge(d)[1], cell.margin, cell.text(), service, budget)


def pool_bounds(prefill: int, decode: int, max_replicas: int) -> tuple[int, int]:
    """(prefill max, decode max) of the autoscaled pools: replicas.max split by the plan's prefill:decode ratio,
    the prefill share rounded down and decode taking the rest, each at least its planned count (so both fit
    within replicas.max whenever the planned fleet does: floor(max p / (p + d)) <= max - d iff max >= p + d)."""
    p_max = max(prefill, math.floor(max_replicas * prefill / (prefill + decode)))
    return p_max, max(decode, max_replicas - p_max)


def declared_tokens_per_s(req: PlanRequest) -> float:
    """Output tokens/s of the declared load, the same for both plans: the SLA's rate, or its users each
    waiting the whole SLA (TTFT + (O - 1) TPOT) per request, the least they are promised."""
    sla = req.sla
    rate = sla.requests_per_second if sla.requests_per_second is not None else \
        sla.concurrency / ((sla.ttft_ms + (sla.output_tokens - 1) * sla.tpot_ms) / 1e3)
    return rate * sla.output_tokens


def cost_per_million(hourly: float, req: PlanRequest) -> float | None:
    """$ per million output tokens of a fleet at `hourly` $/h serving the declared load (None: unpriced). The
    same load for both plans, so the comparison is the fleets' cost for it, node rounding and idle GPUs in."""
    tps = declared_tokens_per_s(req)
    if hourly <= 0 or tps <= 0:
        return None
    return round(hourly / (tps * 3600) * 1e6, 4)


def _money(v: float | None) -> str:
    return f"${v:,.4f}" if v is not None else "unpriced"


def _fleet(p: _Pd) -> str:
    return (f"{p.prefill} prefill + {p.decode} decode instances (TP {p.fit.tp} on {p.nodes} x {p.fit.inst.name}, "
            f"${p.cost:,.2f}/h)")


def sla_short(req: PlanRequest) -> str:
    """Why P/D has little to win here, where that is the shape of the requests."""
    P, O = req.sla.prompt_tokens, req.sla.output_tokens
    if P <= SHORT_PROMPT_TOKENS:
        return f"prompts of {P} tokens leave little prefill to take off the decode instances"
    return ""


def multi_node_refusal(model: str, agg: Topology) -> str:
    return (f"{FIELD}: on, but {model} needs {agg.nodes_per_replica} nodes per replica "
            f"({agg.nodes_per_replica} x {agg.instance_type}) and no single-node shape fits; P/D here runs each "
            f"prefill and each decode instance on one node (a Deployment each): wide P/D across nodes "
            f"(LeaderWorkerSet) is future work; set {FIELD}: auto or off")


def no_fabric_text(inst_name: str, fabric: str | None) -> str:
    what = fabric or "no GPU fabric"
    return (f"{inst_name} has {what}, no RDMA NIC NIXL can use: the KV cache would move over UCX's TCP transport "
            f"on the pod network")


def plan_disaggregation(req: PlanRequest, agg: Topology, mode: str, gateway: bool = True) -> Topology:
    """The Topology with its P/D verdict (mode auto | on); where P/D is chosen, the fleet's figures are the P/D
    fleet's (replicas = prefill + decode instances, fixed: min = max). Raises NoFeasibleTopology for `on` where
    no P/D fleet fits."""
    if mode not in MODES:
        raise ValueError(f"{FIELD}: {mode!r}; allowed: {', '.join(MODES)}")
    if mode == "off":
        return agg
    model = agg.served_model_name

    def refuse(text: str) -> Topology:
        if mode == "on":
            raise NoFeasibleTopology(text, [])
        return replace(agg, disaggregation=Disaggregation(mode, False, f"P/D not chosen: {text}",
                                                           aggregated_cost_per_million=cost_per_million(agg.cost_billed_per_hour, req),
                                                           aggregated_cost_per_hour=agg.cost_per_hour))

    if agg.wide_ep:
        return refuse(f"{FIELD}: {mode} is not planned for a wide-EP replica (parallelism.mode wide-ep: one "
                      f"{agg.data_parallel_size}-rank engine per replica; docs/wide-ep.md); set it off or remove "
                      f"parallelism")
    if not gateway:
        return refuse(f"{FIELD}: {mode} needs the gateway (gateway.enabled): its endpoint picker schedules each "
                      f"request's prefill and decode instances")
    if req.min_replicas == 0:
        return refuse(f"{FIELD}: {mode} for {model}, whose replicas.min is 0: P/D pools never scale to zero (each "
                      f"keeps its planned instances); scale to zero needs aggregated serving")
    fits = [f for f in evaluate(req)[0] if f.pp == 1 and f.replica is not None]
    if mode == "auto":
        fits = [f for f in fits if transport(f.inst.fabric) == "rdma"]
        if not fits:
            inst = agg.instance_type
            return refuse(no_fabric_text(inst, agg.fabric) if transport(agg.fabric) == "tcp" and not agg.multi_node
                          else f"no single-node shape of {model} on an RDMA fabric (the plan: "
                               f"{agg.nodes_per_replica} node(s) per replica on {inst})")
    elif not fits:
        raise NoFeasibleTopology(multi_node_refusal(model, agg), [])
    sized = [_size(req, f) for f in fits]
    ok = sorted((p for p in sized if isinstance(p, _Pd)),
                key=lambda p: (not p.cost > 0, round(p.cost, 4), p.cpm or 0, p.fit.inst.name, p.fit.tp))
    if not ok:
        why = next(s for s in sized if isinstance(s, str))
        return refuse(f"no P/D fleet meets the SLA ({why})")
    best = ok[0]
    agg_hour = agg.cost_billed_per_hour
    agg_cpm = cost_per_million(agg_hour, req)
    compared = (f"$/M tok at the declared load {_money(best.cpm)} vs aggregated {_money(agg_cpm)} ({agg.replicas} replica(s), "
                f"${agg_hour:,.2f}/h)")
    if mode == "on":
        chosen, because = True, f"{FIELD}: on"
    elif best.cpm is None or agg_cpm is None:
        chosen, because = False, "unpriced shapes are not compared on cost (set a price, or on)"
    elif best.cpm > agg_cpm * (1 - MIN_SAVING):
        short = sla_short(req)
        chosen, because = False, (f"it saves less than {MIN_SAVING:.0%} at the declared load ({best.nodes} vs "
                                  f"{agg.nodes} node(s))" + (f"; {short}" if short else ""))
    else:
        chosen, because = True, (f"it is {(1 - best.cpm / agg_cpm):.0%} cheaper at the declared load: decode runs "
                                 f"without prefill chunks beside it")
    verdict = f"P/D: {_fleet(best)}, {compared}: {'chosen' if chosen else 'not chosen'} because {because}"
    if best.transport == "tcp":
        verdict += f"; ⚠ {no_fabric_text(best.fit.inst.name, best.fit.inst.fabric)}"
    p_max, d_max = pool_bounds(best.prefill, best.decode, req.max_replicas)
    d = Disaggregation(mode, chosen, verdict, best.transport,
                       "LIBFABRIC" if best.fit.inst.fabric in LIBFABRIC_FABRICS else "UCX",
                       best.prefill, best.decode, best.d, round(best.lam_p, 4), round(best.lam_d, 4),
                       round(best.kv_s * 1e3, 2), round(best.ttft_s * 1e3, 1), round(best.tpot_s * 1e3, 2),
                       best.nodes, round(best.cost, 2), best.cpm, agg_cpm, agg_hour, p_max, d_max,
                       max(1, math.floor(best.budget_s / best.service_s)) if best.service_s > 0 else 1,
                       round(req.sla.ttft_ms - (best.kv_s + best.tpot_s) * 1e3, 1))
    if not chosen:
        return replace(agg, disaggregation=d)
    return chosen_topology(req, agg, best, d)


def chosen_topology(req: PlanRequest, agg: Topology, p: _Pd, d: Disaggregation) -> Topology:
    """The P/D fleet as a Topology: its replicas are the prefill + decode instances (min: the planned ones; max:
    both pools at their autoscaling bounds, d.prefill_max + d.decode_max <= replicas.max), per-replica figures are
    the fleet's divided by the planned instances, so that the pools, the bill and the $/M read right."""
    from .search import _topology  # the chosen shape's own topology where it is not the aggregated one
    f = p.fit
    base = agg if (f.inst.name, f.tp, f.kv_dtype) == (agg.instance_type, agg.tensor_parallel_size,
                                                      agg.kv_cache_dtype) else _topology(req, f, None, [])
    total = p.prefill + p.decode
    tps = min(p.prefill * p.lam_p, p.decode * p.lam_d) * req.sla.output_tokens  # the fleet at its capacity
    most = d.prefill_max + d.decode_max
    max_nodes = fleet_nodes(most, f.inst.gpus // f.tp, 1, req.spread_nodes)
    return replace(
        base, replicas=total, min_replicas=total, max_replicas=most, nodes=p.nodes, min_nodes=p.nodes,
        max_nodes=max_nodes, cost_per_hour=round(p.cost, 2), est_ttft_ms=round(p.ttft_s * 1e3, 1),
        est_tpot_ms=round(p.tpot_s * 1e3, 2), concurrency_per_replica=max(1, p.decode * p.d // total),
        knee_output_tokens_per_s=round(tps / total, 1),
        knee_requests_per_second=round(min(p.prefill * p.lam_p, p.decode * p.lam_d) / total, 4),
        reason=f"P/D fleet (the P/D line); the aggregated plan was: {agg.reason}", disaggregation=d,
        latency_margin=p.margin, margin_cell=p.margin_cell, calibrated_margin=p.calibrated_margin,
        calibrated_cell=p.calibrated_cell, knee_source=f"estimated (P/D decode batch {p.d}), margin {p.margin * 100:g} %",
        knee_measured=False)


def disagg_lines(t: Topology) -> list[str]:
    """The plan's P/D line (components/cli/summary.py)."""
    d = t.disaggregation
    if d is None:
        return []
    text = d.verdict if isinstance(d, Disaggregation) else dict(d).get("verdict", "")
    return [f"  {text}"]


def production_problems(production: bool, topologies: dict[str, Topology]) -> list[str]:
    """`serving.disaggregation: problem` lines: production serves P/D only over an RDMA fabric (over UCX's TCP
    transport a prompt's KV cache crosses the pod network on every request: TTFT at the network's mercy, the
    links shared with everything else). Dev and staging may, with the plan's warning."""
    if not production:
        return []
    return [f"{FIELD}: {t.disaggregation.mode} serves {t.served_model_name} P/D in production without an RDMA "
            f"fabric: {no_fabric_text(t.instance_type, t.fabric)}; pin models[].instanceTypes to a type with EFA / "
            f"GPUDirect RDMA / InfiniBand, or set {FIELD}: auto (which then keeps it aggregated) or off"
            for t in topologies.values() if t.disaggregated and t.disaggregation.transport != "rdma"]


def tcp_warning(t: Topology) -> str | None:
    if not t.disaggregated or t.disaggregation.transport == "rdma":
        return None
    return (f"P/D OVER TCP: {t.served_model_name}'s KV cache moves over UCX's TCP transport "
            f"({no_fabric_text(t.instance_type, t.fabric)}); ~{t.disaggregation.kv_transfer_ms:g} ms per prompt "
            f"in the plan, refused in production ({FIELD})")
