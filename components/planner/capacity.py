"""Capacity of one replica under load: TPOT and TTFT (mean and tail), tokens/s, and the knee.

Pure. The engine model (vLLM V1, chunked prefill on): every step runs one token for each of the D
requests that are decoding, plus prompt tokens of new requests up to max_num_batched_tokens. In steady
state at request rate lambda (requests/s) with prompts of P and outputs of O tokens:

* D = lambda x (O - 1) x t   (Little's law on the decode phase; t = mean step time = mean TPOT)
* a prompt is prefilled in chunks of c = min(P, max_num_batched_tokens - D) tokens, so a share
  f = lambda x P x t / c of the steps carries a chunk beside the decodes; those steps are slower
  (t_chunk, often compute-bound) than pure decode steps (t_decode, memory-bound). A decoding request sees
  the chunks of the other requests, g = f x D / (D + 1) of its steps: t = (1 - g) t_decode + g t_chunk
* TTFT = half a step (the arrival waits for the running step) + the wait for the prefill "server"
  (M/D/1, utilisation f: f / (2 (1 - f)) x service) + the service, ceil(P / c) chunk steps.
* Closed loop (a fixed number of concurrent users C, as `vllm bench serve --max-concurrency C`):
  lambda is the rate at which C = lambda x (TTFT + (O - 1) x t) (bisection; the left side grows with
  lambda).

Tail figures (p90 and p99, a model; docs/capacity.md compares it with the measured tails that published runs
carry): tail TPOT = a request whose O - 1 decode steps hold the q-th percentile of chunk-carrying steps (binomial,
normal approximation); tail TTFT = the M/M/1 q-th percentile wait, S x ln(f / (1 - q)) / (1 - f), instead of the
mean wait (conservative for a closed loop).

The knee is the highest concurrency whose TPOT and TTFT (at sla.latencyPercentile: p90 by default, p99 or the mean)
stay the planning margin under the SLA (estimate x (1 + margin) <= SLA), capped by what the KV cache holds at the
workload's request length and by max_num_seqs. The margin is the stack's planning.latencyMargin, else the
calibration's cell for the model's class and the load (planner/margins.py), read at each load point.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

from ..catalog import Accelerator, InstanceType, ModelSpec
from . import memory as mem
from .estimators import StepTime, replica_step_cost
from .margins import cell_for
from .performance import EFFICIENCY, Efficiency

DEFAULT_PROMPT_TOKENS = 1024
DEFAULT_OUTPUT_TOKENS = 256
Z99 = 2.326  # one-sided 99th percentile of the standard normal
Z90 = 1.2816  # one-sided 90th
# The planning margin: the knee keeps the estimated TPOT and TTFT this share under the SLA (estimate x (1 + margin) <=
# SLA), so a deployment misses its SLA only where the real TPOT exceeds the estimate by more than the margin: the
# margin is set by the model's unsafe side, not by its average error. It is read per model class and load regime
# (planner/margins.py CELLS: dense models 5-10 %, MoE models 35-120 %); LATENCY_MARGIN is the cell of every held-out
# row together (79 rows, 72 within x 1.35), the fallback for a class without enough rows and the figure the
# policy pack's floor reads when a workload carries no calibrated cell. A stack sets its own
# (planning.latencyMargin, docs/measurements.md); a measured knee (planning.measurements) replaces the estimate.
MARGIN_COVERAGE = 0.90
from ..config.bounds import LATENCY_MARGIN  # noqa: E402  (the value lives beside the other bounds a stack is judged by)
HELD_OUT_COVERED = (72, 79)  # held-out rows within estimate x (1 + LATENCY_MARGIN), of those with a measured TPOT
HELD_OUT_WORST_UNDER = 3.66  # the held-out row furthest on the unsafe side: its measured TPOT over the estimate
PERCENTILES = ("mean", "p90", "p99")  # what the SLA judges: the mean latencies, or the tail model's p90 / p99
DEFAULT_PERCENTILE = "p90"  # sla.latencyPercentile unset (docs/capacity.md "The planning margin and the SLA percentile")


@dataclass(frozen=True)
class Workload:
    """What a replica is asked: average prompt and output lengths, and either the concurrent users
    (closed loop) or the arrival rate in requests/s (open loop). Default: 1 user."""
    prompt_tokens: int = DEFAULT_PROMPT_TOKENS
    output_tokens: int = DEFAULT_OUTPUT_TOKENS
    concurrency: float | None = None
    arrival_rate: float | None = None

    @property
    def request_tokens(self) -> int:
        return self.prompt_tokens + self.output_tokens

    @property
    def decode_context(self) -> float:
        """Average context a decoding request attends to."""
        return self.prompt_tokens + self.output_tokens / 2


@dataclass(frozen=True)
class ReplicaShape:
    """One replica as the planner sized it."""
    model: ModelSpec
    precision: str
    acc: Accelerator
    inst: InstanceType
    tp: int
    pp: int
    kv_cache_dtype: str
    kv_tokens: int  # KV cache per replica, in tokens of the length it was counted at (the planner: max_model_len)
    max_num_batched_tokens: int
    max_num_seqs: int
    # the KV cache in bytes on the busiest rank: kv_limit recounts it in tokens of the workload's requests
    # (a sliding-window layer holds every token of a request shorter than its window plus the batch, so short
    # requests cost more KV per token than max_model_len ones). None: kv_tokens already counts at that length.
    kv_bytes: float | None = None

    def kv_tokens_at(self, length: int) -> int:
        """The KV cache in tokens of requests of `length` tokens."""
        if self.kv_bytes is None:
            return self.kv_tokens
        return mem.kv_cache_tokens(self.kv_bytes, self.model, self.tp, self.pp, self.kv_cache_dtype, length,
                                   self.max_num_batched_tokens)

    def kv_limit(self, w: Workload, max_model_len: int | None = None) -> int:
        """Concurrent requests the replica runs at once: the KV cache counted at the workload's request
        length (at most max_model_len), and max_num_seqs."""
        per = max(1, min(w.request_tokens, max_model_len or w.request_tokens))
        return max(0, min(self.kv_tokens_at(per) // per, self.max_num_seqs))


@dataclass(frozen=True)
class LoadPoint:
    concurrency: float  # requests in the replica (Little's law)
    arrival_rate: float  # requests/s
    decode_batch: float  # requests decoding per step
    prefill_share: float  # share of steps carrying a prefill chunk
    tpot_ms: float
    tpot_tail_ms: float
    ttft_ms: float
    ttft_tail_ms: float
    output_tps: float
    total_tps: float
    saturated: bool = False  # the arrival rate exceeds what the replica can prefill
    tpot_p90_ms: float = 0.0  # the tail model's 90th percentiles (tpot_tail_ms / ttft_tail_ms: the 99th)
    ttft_p90_ms: float = 0.0

    def latency(self, percentile: str = "mean") -> tuple[float, float]:
        """(TPOT, TTFT) in ms: the means, or the p90 / p99 figures."""
        if percentile == "p99":
            return self.tpot_tail_ms, self.ttft_tail_ms
        if percentile == "p90":
            return self.tpot_p90_ms, self.ttft_p90_ms
        return self.tpot_ms, self.ttft_ms

    def misses(self, tpot_ms: float, ttft_ms: float, percentile: str = "mean",
               margin: float = LATENCY_MARGIN) -> str | None:
        """What breaks the SLA (estimate x (1 + margin) above it): "tpot" (also when saturated), "ttft", or None."""
        tpot, ttft = self.latency(percentile)
        if self.saturated or tpot * (1 + margin) > tpot_ms:
            return "tpot"
        return "ttft" if ttft * (1 + margin) > ttft_ms else None

    def meets(self, tpot_ms: float, ttft_ms: float, percentile: str = "mean", margin: float = LATENCY_MARGIN) -> bool:
        return self.misses(tpot_ms, ttft_ms, percentile, margin) is None

    def to_dict(self) -> dict:
        return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in asdict(self).items()}


QUANTILES = {"p90": 0.90, "p99": 0.99}


def wait_quantile(service: float, utilisation: float, q: float) -> float:
    """The q-th quantile of an M/M/1 wait (P(wait > x) = f exp(-(1 - f) x / S)); 0 while f <= 1 - q."""
    f = utilisation
    return service * math.log(f / (1 - q)) / (1 - f) if f > 1 - q else 0.0


def _steps(r: ReplicaShape, w: Workload, decode: float, eff: Efficiency) -> tuple[float, float, float]:
    """(chunk size, pure-decode step s, chunk step s) at `decode` running requests."""
    cost = _cost(r, w, eff)
    chunk = max(1.0, min(w.prompt_tokens, r.max_num_batched_tokens - decode))
    return chunk, cost(decode), cost(decode, chunk)


_COSTS: dict = {}


def _cost(r: ReplicaShape, w: Workload, eff: Efficiency) -> StepTime:
    key = (id(r.model), r.model.id, r.precision, r.acc, r.inst, r.tp, r.pp, r.kv_cache_dtype, w.prompt_tokens,
           w.output_tokens, eff)
    cost = _COSTS.get(key)
    if cost is None:
        if len(_COSTS) > 4096:
            _COSTS.clear()
        cost = _COSTS[key] = replica_step_cost(r.model, r.precision, r.acc, r.inst, r.tp, r.pp, r.kv_cache_dtype,
                                               w.decode_context, w.prompt_tokens / 2, eff)
    return cost


def _at_decode(r: ReplicaShape, w: Workload, decode: float, eff: Efficiency) -> LoadPoint:
    """The steady state with `decode` requests decoding per step. Everything follows explicitly: the
    rate is lambda = D / ((O - 1) t), so the chunk share is f = D x P / ((O - 1) x c)."""
    P, n = w.prompt_tokens, max(w.output_tokens - 1, 1)
    chunk, t_dec, t_chk = _steps(r, w, decode, eff)
    f = decode * P / (n * chunk)
    if f >= 1 or not math.isfinite(t_chk):
        return _saturated(math.inf)
    # a request's own prompt is not prefilled beside its decode: of the chunk steps, a decoding request sees
    # those of the others, D / (D + 1) of them (a smooth finite-population share: 1/2 at D = 1, -> 1 for many)
    g = f * decode / (decode + 1)
    t = (1 - g) * t_dec + g * t_chk
    rate = decode / (n * t)
    service = math.ceil(P / chunk) * t_chk
    ttft = t / 2 + f / (2 * (1 - f)) * service + service

    def tails(q: float, z: float) -> tuple[float, float]:
        """(TPOT, TTFT) at the q-th percentile, s: the M/M/1 waiting-time quantile for TTFT (P(wait > x) =
        f exp(-(1 - f) x / S)), the binomial share of chunk steps a request's O - 1 decode steps see for TPOT."""
        wait = wait_quantile(service, f, q)
        k = min(n, n * g + z * math.sqrt(n * g * (1 - g)))
        return max(t_dec + k / n * (t_chk - t_dec), t), max(ttft, t / 2 + wait + service)

    tpot99, ttft99 = tails(0.99, Z99)
    tpot90, ttft90 = tails(0.90, Z90)
    concurrency = rate * (ttft + n * t)
    return LoadPoint(concurrency, rate, decode, f, t * 1e3, tpot99 * 1e3, ttft * 1e3, ttft99 * 1e3,
                     rate * w.output_tokens, rate * w.request_tokens, tpot_p90_ms=tpot90 * 1e3, ttft_p90_ms=ttft90 * 1e3)


def _saturated(rate: float) -> LoadPoint:
    inf = math.inf
    return LoadPoint(inf, rate, inf, 1.0, inf, inf, inf, inf, 0.0, 0.0, saturated=True, tpot_p90_ms=inf,
                     ttft_p90_ms=inf)


def _saturation(r: ReplicaShape, w: Workload) -> float:
    """The decode batch at which prefill takes every step (f = 1): D P = (O - 1) min(P, B - D)."""
    P, n, B = w.prompt_tokens, max(w.output_tokens - 1, 1), r.max_num_batched_tokens
    return min(n, n * B / (P + n))  # f = 1 at D = n (c = P) or at D = n B / (P + n) (c = B - D)


def _solve(r: ReplicaShape, w: Workload, eff: Efficiency, below, steps: int = 22, both: bool = False):
    """The highest decode batch D whose load point satisfies `below` (monotone in D), by bisection
    (with `both`, also the point just above it)."""
    lo, hi = 0.0, _saturation(r, w)
    for _ in range(steps):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if below(_at_decode(r, w, mid, eff)) else (lo, mid)
    point = _at_decode(r, w, lo if lo > 0 else hi * 2 ** -steps, eff)
    return (point, _at_decode(r, w, hi, eff)) if both else point


def at_load(r: ReplicaShape, w: Workload, eff: Efficiency = EFFICIENCY) -> LoadPoint:
    """The replica's steady state for the workload: its arrival rate (open loop; `saturated` when the
    replica cannot keep up), or its concurrent users (closed loop)."""
    if w.arrival_rate is not None:
        p = _solve(r, w, eff, lambda p: not p.saturated and p.arrival_rate <= w.arrival_rate)
        if p.arrival_rate < w.arrival_rate * 0.999:
            return _saturated(w.arrival_rate)
        return p
    users = w.concurrency if w.concurrency is not None else 1
    return replace(_solve(r, w, eff, lambda p: not p.saturated and p.concurrency <= users), concurrency=users)


def at_capacity(r: ReplicaShape, w: Workload, limit: int | None = None, eff: Efficiency = EFFICIENCY) -> LoadPoint:
    """The replica flat out, with a queue that never empties (`vllm bench serve --request-rate inf` with
    more prompts than it admits): it runs as many requests as it holds (`limit`, default the KV limit) or
    as many as its prefill keeps fed, whichever is fewer. TTFT here excludes the time queued outside."""
    cap = r.kv_limit(w) if limit is None else limit
    decode = min(max(cap, 1) * (w.output_tokens - 1) / (w.output_tokens - 1 + 1e-9), 0.999 * _saturation(r, w))
    return _at_decode(r, w, decode, eff)


@dataclass(frozen=True)
class Knee:
    concurrency: int  # highest concurrency meeting the SLA; 0 = not even one request
    point: LoadPoint | None  # the load there
    bound: str  # what stops it going higher: "tpot", "ttft", "kv-cache" or "max-num-seqs"
    kv_limit: int
    percentile: str = "mean"  # the latencies it judged
    margin: float = LATENCY_MARGIN  # estimate x (1 + margin) <= SLA, at the knee
    margin_cell: str = ""  # the calibration's cell that margin came from (margins.Cell.text); "": the stack's own


def margin_judge(r: ReplicaShape, margin: float | None, eff: Efficiency = EFFICIENCY):
    """concurrency -> (margin, cell text): the stack's planning.latencyMargin everywhere, else the calibration's
    cell for the model's class at that load (margins.cell_for)."""
    if margin is not None:
        return lambda c: (margin, "")

    def judge(c: float) -> tuple[float, str]:
        cell = cell_for(r.model, c if math.isfinite(c) else 1e9, eff.estimator)
        return cell.margin, cell.text()
    return judge


def knee(r: ReplicaShape, w: Workload, tpot_ms: float, ttft_ms: float, max_model_len: int | None = None,
         eff: Efficiency = EFFICIENCY, percentile: str = DEFAULT_PERCENTILE, margin: float | None = None) -> Knee:
    """The highest concurrency (1 .. the KV limit) whose TPOT and TTFT (means, p90 or p99) times 1 + margin
    meet the SLA (margin None: the calibration's cell at each load, margin_judge).

    TPOT, TTFT and the concurrency all grow with the arrival rate, so this bisects the rate for the
    highest one that meets the SLA within the KV limit; the knee is the concurrency there (rounded down).
    """
    if percentile not in PERCENTILES:
        raise ValueError(f"percentile: {percentile!r}; allowed: {', '.join(PERCENTILES)}")
    cap = r.kv_limit(w, max_model_len)
    judge = margin_judge(r, margin, eff)
    if cap < 1:
        return Knee(0, None, "kv-cache", cap, percentile, *judge(1))

    def ok(p: LoadPoint) -> bool:
        return p.meets(tpot_ms, ttft_ms, percentile, judge(p.concurrency)[0]) and p.concurrency <= cap

    edge, over = _solve(r, w, eff, ok, steps=20, both=True)
    c = min(cap, math.floor(edge.concurrency + 1e-6)) if ok(edge) else 0
    if c < 1:
        first = at_load(r, Workload(w.prompt_tokens, w.output_tokens, concurrency=1), eff)
        miss = first.misses(tpot_ms, ttft_ms, percentile, judge(1)[0])
        if miss:
            return Knee(0, first, miss, cap, percentile, *judge(1))
        c = 1
    over_margin = judge(over.concurrency)[0]
    if c < cap and over.meets(tpot_ms, ttft_ms, percentile, over_margin):  # only the cap stopped the bisection
        c = cap
    if c >= cap:
        bound = "max-num-seqs" if cap == r.max_num_seqs else "kv-cache"
    else:
        bound = over.misses(tpot_ms, ttft_ms, percentile, over_margin) or "tpot"
    point = at_load(r, Workload(w.prompt_tokens, w.output_tokens, concurrency=c), eff)
    while c > 1 and not point.meets(tpot_ms, ttft_ms, percentile, judge(c)[0]):  # the whole knee, its own margin
        c -= 1
        point = at_load(r, Workload(w.prompt_tokens, w.output_tokens, concurrency=c), eff)
    return Knee(c, point, bound, cap, percentile, *judge(c))


def sweep_levels(cap: int) -> list[int]:
    """1, 2, 4, ... up to the KV limit, and the limit itself."""
    levels, c = [], 1
    while c < cap:
        levels.append(c)
        c *= 2
    return levels + [cap] if cap >= 1 else []


def sweep(r: ReplicaShape, w: Workload, tpot_ms: float, ttft_ms: float, max_model_len: int | None = None,
          eff: Efficiency = EFFICIENCY, percentile: str = DEFAULT_PERCENTILE,
          margin: float | None = None) -> tuple[list[LoadPoint], Knee]:
    k = knee(r, w, tpot_ms, ttft_ms, max_model_len, eff, percentile, margin)
    levels = sorted(set(sweep_levels(k.kv_limit)) | ({k.concurrency} if k.concurrency else set()))
    pts = [at_load(r, Workload(w.prompt_tokens, w.output_tokens, concurrency=c), eff) for c in levels]
    return pts, k
