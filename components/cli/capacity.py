"""`python -m components capacity`: one replica's latency and throughput over concurrency, and its knee.

The replica is the shape the planner picks for the model on the GPU (TP pinned with --tp). The table prints the
model's estimates; the SLA column and the knee judge them with the planning margin (capacity.LATENCY_MARGIN), at
the mean or, with --percentile p99, at the tail figures. When no shape meets the SLA even for one request, the
table is still printed for the shape that fits in memory (every row says the SLA does not hold) and the command
exits 3, as `topology` does when nothing meets the SLA. Exit codes as the other commands: 2 bad input, 3 no shape
meets the SLA (or nothing fits in memory). The model is anything `topology` takes: a catalog id, a Hub repo id, or
--model-config config.json.
"""
from __future__ import annotations

import json
import sys
from dataclasses import replace

from ..catalog import ACCELERATORS, instance_types, offered
from ..planner import NoFeasibleTopology, PlanRequest, Sla, evaluate
from ..planner.capacity import PERCENTILES, Workload, sweep
from .summary import (DEFAULT_KV_CACHE_DTYPE, KV_CACHE_DTYPE_CHOICES, kv_cache_dtypes, kv_dtype_text,  # noqa: F401
                      knee_lines, margin_text)  # the plan's text; `capacity` prints them too

EXIT_BAD_INPUT, EXIT_NO_FIT = 2, 3
DEFAULT_MAX_MODEL_LEN = 32_768
HEADER = ["concurrency", "TPOT ms", "TPOT p90 ms", "TPOT p99 ms", "TTFT ms", "TTFT p90 ms", "TTFT p99 ms",
          "requests/s", "output tok/s", "total tok/s", "SLA"]


def _fail(code: int, message: str) -> int:
    print(message, file=sys.stderr)
    return code


def _check(a, model) -> str | None:
    if a.gpu not in ACCELERATORS:
        return f"--gpu: unknown GPU {a.gpu!r}; allowed: {', '.join(ACCELERATORS)}"
    for flag, v in (("--prompt-tokens", a.prompt_tokens), ("--output-tokens", a.output_tokens),
                    ("--tpot-ms", a.tpot_ms), ("--ttft-ms", a.ttft_ms), ("--tp", a.tp or 1)):
        if v <= 0:
            return f"{flag}: must be > 0 (got {v:g})"
    if a.tp and model.heads % a.tp:
        return f"--tp: {a.tp} does not divide {model.name}'s {model.heads} attention heads"
    if not instance_types(a.cloud, a.gpu):
        return f"--gpu: no {a.cloud} instance type carries {a.gpu}"
    if not _sold(a.cloud, a.gpu):  # what `topology` and `table` refuse too
        return (f"--gpu: {a.gpu} on {a.cloud} comes as {', '.join(i.name for i in instance_types(a.cloud, a.gpu))}, "
                f"not offered on demand (a stack buys it with gcp.reservation or gcp.spot: true); capacity prices on "
                f"demand: try another --gpu or --cloud")
    return None


def _sold(cloud: str, gpu: str):
    return tuple(i for i in instance_types(cloud, gpu) if offered(i))


def _best_fit(req: PlanRequest):
    """The cheapest shape meeting the SLA; else (SLA relaxed) the cheapest that fits in memory."""
    for r in (req, replace(req, sla=replace(req.sla, tpot_ms=1e9, ttft_ms=1e9))):
        fits, refusals = evaluate(r)
        if fits:
            return min(fits, key=lambda f: f.rank()), r is not req
    raise NoFeasibleTopology("", refusals)


def capacity_arguments(cp) -> None:
    """The `capacity` command's options (the parser entry is in cli.py)."""
    cp.add_argument("--model", help="catalog id (see `table`) or any Hub repo id (its config.json, cached), "
                                    "as `topology` takes it")
    cp.add_argument("--model-config", metavar="PATH", help="size the model from this config.json (docs/models.md)")
    cp.add_argument("--revision", help="Hub commit (40 hex digits) the model's config.json is read at; default: main")
    cp.add_argument("--gpu", required=True, help="GPU type (e.g. h100, l4)")
    cp.add_argument("--precision", choices=["bf16", "fp8", "mxfp4"], help="default: the model's native one")
    cp.add_argument("--tp", type=int, help="pin tensor parallelism; default: what the planner picks")
    cp.add_argument("--prompt-tokens", type=int, default=Sla.prompt_tokens, help="average prompt length")
    cp.add_argument("--output-tokens", type=int, default=Sla.output_tokens, help="average output length")
    cp.add_argument("--tpot-ms", type=float, default=Sla.tpot_ms, help="SLA: time per output token, ms")
    cp.add_argument("--ttft-ms", type=float, default=Sla.ttft_ms, help="SLA: time to first token, ms")
    cp.add_argument("--percentile", choices=list(PERCENTILES), default=Sla.latency_percentile,
                    help="what the SLA bounds: the p90 latencies (default), the p99 ones or the means (sla.latencyPercentile)")
    cp.add_argument("--max-model-len", type=int, help="default: min(32768, the model's limit)")
    cp.add_argument("--cloud", choices=["aws", "gcp"], default="aws", help="whose instance types to consider")
    cp.add_argument("--kv-cache-dtype", choices=list(KV_CACHE_DTYPE_CHOICES), default=DEFAULT_KV_CACHE_DTYPE,
                    help="KV cache, as a stack's kvCacheDtype and `topology --kv-cache-dtype`: the model's dtype, FP8 "
                         "(lower quality), or let the planner choose FP8 when cheaper")
    cp.add_argument("--json", action="store_true", help="print the table as JSON")


def capacity_report(a) -> int:
    from .topology import model_spec  # the same model lookup as `topology` (catalog, Hub, config.json)
    model, problem = model_spec(a)
    if model is None:
        return _fail(EXIT_BAD_INPUT, problem)
    a.gpu = a.gpu.lower()
    problem = _check(a, model)
    if problem:
        return _fail(EXIT_BAD_INPUT, problem)
    precision = a.precision or model.precisions[0]
    if precision not in model.precisions:
        return _fail(EXIT_BAD_INPUT, f"--precision: {model.name} is offered at {', '.join(model.precisions)}")
    mml = a.max_model_len or min(DEFAULT_MAX_MODEL_LEN, model.max_context)
    if a.prompt_tokens + a.output_tokens > mml:
        return _fail(EXIT_BAD_INPUT, f"--prompt-tokens + --output-tokens ({a.prompt_tokens + a.output_tokens}) "
                                     f"exceed --max-model-len {mml}")
    sla = Sla(ttft_ms=a.ttft_ms, tpot_ms=a.tpot_ms, concurrency=1, prompt_tokens=a.prompt_tokens,
              output_tokens=a.output_tokens, latency_percentile=a.percentile)
    req = PlanRequest(model=model, precision=precision, candidates=_sold(a.cloud, a.gpu),
                      max_model_len=mml, sla=sla, tensor_parallel_size=a.tp, max_replicas=10**6,
                      kv_cache_dtypes=kv_cache_dtypes(a.kv_cache_dtype))
    try:
        fit, relaxed = _best_fit(req)
    except NoFeasibleTopology as e:
        kinds = sorted({r.constraint for r in e.refusals})
        return _fail(EXIT_NO_FIT, f"nothing fits: {model.name} {precision} on {a.gpu} ({', '.join(kinds)}); "
                                  f"`python -m components topology` with the same options says why")
    points, knee = sweep(fit.replica, Workload(a.prompt_tokens, a.output_tokens), a.tpot_ms, a.ttft_ms, mml,
                         percentile=a.percentile)
    judge = (a.tpot_ms, a.ttft_ms, knee.percentile, knee.margin)
    doc = {
        "model": model.id, "precision": precision, "gpu": a.gpu, "instance_type": fit.inst.name,
        "tensor_parallel_size": fit.tp, "pipeline_parallel_size": fit.pp, "kv_cache_dtype": fit.kv_dtype,
        "kv_cache_dtypes_considered": list(kv_cache_dtypes(a.kv_cache_dtype)),
        "kv_cache_tokens": fit.kv_tokens, "max_model_len": mml, "prompt_tokens": a.prompt_tokens,
        "output_tokens": a.output_tokens,
        "sla": {"tpot_ms": a.tpot_ms, "ttft_ms": a.ttft_ms, "percentile": a.percentile}, "latency_margin": knee.margin,
        "kv_limit": knee.kv_limit, "knee": knee.concurrency, "knee_bound": knee.bound,
        "rows": [dict(p.to_dict(), sla_holds=p.meets(*judge), knee=round(p.concurrency) == knee.concurrency)
                 for p in points],
    }
    if a.json:
        print(json.dumps(doc, indent=2))
        return _no_sla(relaxed, a)
    par = f"TP {fit.tp}" + (f" x PP {fit.pp}" if fit.pp > 1 else "")
    print(f"{model.name} {precision} on {fit.inst.name} ({par}, KV {fit.kv_dtype}, {fit.kv_tokens:,} tokens); "
          f"{a.prompt_tokens} prompt + {a.output_tokens} output tokens; "
          f"SLA TPOT {a.tpot_ms:g} ms, TTFT {a.ttft_ms:g} ms ({a.percentile}); "
          f"{kv_dtype_text(a.kv_cache_dtype, fit.kv_dtype)}")
    print(f"estimates are the model's; {margin_text(knee.percentile, knee.margin, knee.margin_cell)}")
    if relaxed:
        print("no shape meets the SLA even for one request; the cheapest shape that fits is shown")
    rows = []
    for p, d in zip(points, doc["rows"]):
        mark = "yes" if d["sla_holds"] else "no"
        rows.append([f"{round(p.concurrency)}" + (" <- knee" if d["knee"] else ""), f"{p.tpot_ms:.1f}",
                     f"{p.tpot_p90_ms:.1f}", f"{p.tpot_tail_ms:.1f}", f"{p.ttft_ms:.0f}", f"{p.ttft_p90_ms:.0f}",
                     f"{p.ttft_tail_ms:.0f}", f"{p.arrival_rate:.2f}",
                     f"{p.output_tps:,.0f}", f"{p.total_tps:,.0f}", mark])
    widths = [max(len(x) for x in col) for col in zip(HEADER, *rows)]
    fmt = "  ".join("{:>%d}" % w for w in widths)
    print("\n".join(fmt.format(*r) for r in [HEADER, *rows]))
    bound = {"tpot": "the TPOT SLA", "ttft": "the TTFT SLA", "kv-cache": "the KV cache",
             "max-num-seqs": "max_num_seqs"}[knee.bound]
    length = a.prompt_tokens + a.output_tokens
    held = fit.replica.kv_tokens_at(length)  # sliding-window layers: fewer tokens of short requests
    held_text = f" ({held:,} tokens of such requests)" if held != fit.kv_tokens else ""
    print(f"knee: {knee.concurrency} concurrent requests (bound by {bound}); KV limit {knee.kv_limit} "
          f"at {length} tokens/request{held_text}. p90/p99 columns: the tail model, checked against published "
          f"p99s (docs/capacity.md)")
    return _no_sla(relaxed, a)


def _no_sla(relaxed: bool, a) -> int:
    """Exit 3 (as `topology`) when no shape meets the SLA even for one request: the table shows the closest."""
    if not relaxed:
        return 0
    print(f"no shape meets the SLA (TPOT {a.tpot_ms:g} ms, TTFT {a.ttft_ms:g} ms, {a.percentile}) even for one "
          f"request; the table is the cheapest shape that fits in memory", file=sys.stderr)
    return EXIT_NO_FIT
