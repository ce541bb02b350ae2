"""A burst benchmark run, step by step: `vllm bench serve --request-rate inf` with N identical prompts. Pure.

A burst run is not a steady state: every prompt is queued at t = 0, the engine admits them as its token budget,
KV cache and max_num_seqs allow, and the run ends when the last one finishes. The mean TPOT the benchmark prints
depends on how the prefill of queued prompts interleaves with the decodes (a 32K-prompt run keeps a few
requests decoding beside long chunks; a ShareGPT run prefills everything in the first steps, then decodes a
full batch). So the calibration replays the run with vLLM V1's scheduler rules instead of the steady-state
formulas of capacity.py:

* each step, every running request that finished its prompt decodes one token; the rest of the
  max_num_batched_tokens budget goes to prompt chunks, first to the request already part-way through its prompt,
  then to queued requests in arrival order (first come, first served), while fewer than max_num_seqs run;
* a chunk is scheduled only if the KV cache has room for it (vLLM allocates blocks as tokens arrive; a request
  that does not fit waits), and a request frees its KV when it finishes;
* the prefill step that completes a prompt emits its first token (TTFT); each later step one more token;
* the step time is the step model (performance.StepCost) of that step's decodes and chunk tokens.

Requests are grouped in cohorts (admitted in the same step, so identical from then on). TPOT per request is
(finish - first token) / (O - 1), as `vllm bench serve` computes it; throughput is all tokens over the run.
"""
from __future__ import annotations

from dataclasses import dataclass

from .estimators import StepTime


@dataclass
class _Cohort:
    count: int
    prefilled: int
    generated: int = 0
    first_s: float = 0.0


@dataclass(frozen=True)
class BurstResult:
    tpot_ms: float
    ttft_ms: float
    output_tps: float
    total_tps: float
    duration_s: float
    peak_running: int
    # per-request percentiles of the replay (every request of a cohort alike): TTFT is the queue a request waited in
    tpot_p90_ms: float = 0.0
    tpot_p99_ms: float = 0.0
    ttft_p90_ms: float = 0.0
    ttft_p99_ms: float = 0.0


def _quantile(values: list[tuple[float, int]], q: float) -> float:
    """The q-th quantile (nearest rank) of `values`, (value, how many requests had it)."""
    values = sorted(values)
    rank, seen = q * sum(n for _, n in values), 0
    for v, n in values:
        seen += n
        if seen >= rank - 1e-9:
            return v
    return values[-1][0]


def burst(cost: StepTime, prompts: int, prompt_tokens: int, output_tokens: int, kv_tokens: int,
          max_num_batched_tokens: int, max_num_seqs: int) -> BurstResult:
    P, O = max(1, prompt_tokens), max(2, output_tokens)
    waiting, running = prompts, []
    t = tpot_sum = ttft_sum = 0.0
    done = peak = 0
    ttfts: list[tuple[float, int]] = []
    tpots: list[tuple[float, int]] = []
    while done < prompts:
        decoders = [c for c in running if c.prefilled == P]
        decode = sum(c.count for c in decoders)
        budget = max_num_batched_tokens - decode
        used = sum(c.count * (c.prefilled + c.generated) for c in running)
        free = kv_tokens - used - decode
        prefill = 0
        started: list[tuple[_Cohort, int]] = []  # (cohort, tokens prefilled this step per request)
        partial = next((c for c in running if c.prefilled < P), None)
        if partial is not None and budget > 0:
            chunk = min(P - partial.prefilled, budget)
            if chunk <= free:
                started.append((partial, chunk))
                budget, free, prefill = budget - chunk, free - chunk, prefill + chunk
            else:
                budget = 0  # the part-way request waits for room; nothing queued overtakes it
        n_running = sum(c.count for c in running)
        if budget > 0 and waiting and (partial is None or started):
            whole = min(waiting, budget // P, max(0, free) // P, max_num_seqs - n_running)
            if whole > 0:
                c = _Cohort(whole, 0)
                running.append(c)
                started.append((c, P))
                waiting -= whole
                n_running += whole
                budget, free, prefill = budget - whole * P, free - whole * P, prefill + whole * P
            if waiting and 0 < budget < P and n_running < max_num_seqs and budget <= free:
                c = _Cohort(1, 0)
                running.append(c)
                started.append((c, budget))
                waiting -= 1
                prefill += budget
        if not decode and not prefill:
            raise ValueError("the KV cache cannot hold one prompt chunk: the run never progresses")
        # A step that admits no prompt tokens is followed by identical ones until a request finishes: the KV cache
        # only fills and the budget is unchanged, so nothing queued or part-way can start. Run them at once.
        steps = min(O - c.generated for c in decoders) if not prefill else 1
        t += steps * cost(decode, prefill)
        for c in decoders:
            c.generated += steps
        for c, chunk in started:
            c.prefilled += chunk
            if c.prefilled == P:
                c.generated, c.first_s = 1, t
                ttft_sum += c.count * t
                ttfts.append((t, c.count))
        for c in [c for c in running if c.prefilled == P and c.generated >= O]:
            tpot_sum += c.count * (t - c.first_s) / (O - 1)
            tpots.append(((t - c.first_s) / (O - 1), c.count))
            done += c.count
            running.remove(c)
        peak = max(peak, sum(c.count for c in running))
    return BurstResult(tpot_sum / prompts * 1e3, ttft_sum / prompts * 1e3, prompts * O / t, prompts * (P + O) / t,
                       t, peak, _quantile(tpots, 0.90) * 1e3, _quantile(tpots, 0.99) * 1e3,
                       _quantile(ttfts, 0.90) * 1e3, _quantile(ttfts, 0.99) * 1e3)
