"""A stack's own measurements of one replica (planning.measurements, docs/measurements.md), read from disk.

Pure. Two kinds of file:

* the rows file bench/bench_serve.py writes (bench/results/STACK-DEPLOYMENT.json): a JSON list of rows in the shape
  of components/catalog/measurements.Measurement, each naming its GPU, model, precision, TP and PP; the p99 TPOT and
  TTFT ride in the row's `notes` ("p99 TPOT 131.41 ms, p99 TTFT 322980.86 ms, 500 requests, 0 failed",
  bench_serve.parse_result writes exactly that);
* what `vllm bench serve --save-result` writes (vLLM 0.31 vllm/benchmarks/serve.py: `date` "%Y%m%d-%H%M%S",
  `model_id`, `max_concurrency`, `completed`, `failed`, `total_input_tokens`, `total_output_tokens`,
  `request_throughput`, `output_throughput`, `total_token_throughput`, `mean_tpot_ms`, `mean_ttft_ms` and, per
  --metric-percentiles (bench_serve.py asks 90,99), `p90_tpot_ms`, `p90_ttft_ms`, `p99_tpot_ms`, `p99_ttft_ms`): one JSON object, a file of them one per line
  (--append-result), or a directory of them (the c{C}.json files bench_serve.py keeps beside its rows file). Such a
  result records neither the GPU nor the TP: the stack states them beside the file.

Anything else is a MeasurementError whose text names the file and the fix (the schema adds the field path).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from .accelerators import ACCELERATORS

BENCH_NOTES = re.compile(r"(?:p90 TPOT (?P<tpot90>[\d.]+|None) ms, p90 TTFT (?P<ttft90>[\d.]+|None) ms, )?"
                         r"p99 TPOT (?P<tpot>[\d.]+|None) ms, p99 TTFT (?P<ttft>[\d.]+|None) ms, (?P<done>\d+) "
                         r"requests, (?P<failed>\d+) failed")
VLLM_KEYS = ("completed", "total_input_tokens", "total_output_tokens", "mean_tpot_ms", "mean_ttft_ms",
             "output_throughput")
ROW_KEYS = ("gpu", "model", "precision", "tp", "pp", "prompt_tokens", "output_tokens", "mode", "concurrency",
            "tpot_ms", "ttft_ms", "output_tps")
RERUN = "rerun bench/bench_serve.py (docs/measurements.md)"


class MeasurementError(ValueError):
    """A measurements file the planner cannot use: the file, what is wrong and the fix."""


@dataclass(frozen=True)
class MeasuredPoint:
    """One closed-loop run: `concurrency` users, the averages and latencies it measured."""
    concurrency: int
    prompt_tokens: float  # average per request
    output_tokens: float
    tpot_ms: float  # mean
    ttft_ms: float
    tpot_p99_ms: float | None  # None: the run did not report it
    ttft_p99_ms: float | None
    requests_per_s: float
    output_tps: float
    total_tps: float
    date: str  # YYYY-MM-DD
    tpot_p90_ms: float | None = None  # None: the run did not report it (--metric-percentiles without 90)
    ttft_p90_ms: float | None = None

    def latency(self, percentile: str) -> tuple[float | None, float | None]:
        if percentile == "p99":
            return self.tpot_p99_ms, self.ttft_p99_ms
        if percentile == "p90":
            return self.tpot_p90_ms, self.ttft_p90_ms
        return self.tpot_ms, self.ttft_ms


@dataclass(frozen=True)
class MeasuredShape:
    """The points one file holds for one replica shape. `precision` None: the deployment's own (a vLLM result
    does not record it); `model` is what the file names: a catalog id (rows) or vLLM's --model (a result)."""
    file: str  # as the stack wrote it
    model: str
    accelerator: str
    tp: int
    pp: int
    precision: str | None
    points: tuple[MeasuredPoint, ...]

    @property
    def date(self) -> str:
        return max(p.date for p in self.points)


def _fail(file: str, message: str) -> MeasurementError:
    return MeasurementError(f"{file}: {message}")


def _number(file: str, where: str, doc: dict, key: str, optional: bool = False) -> float | None:
    v = doc.get(key)
    if v is None and optional:
        return None
    if not isinstance(v, (int, float)) or isinstance(v, bool) or v < 0:
        raise _fail(file, f"{where}{key} must be a non-negative number, not {v!r}; {RERUN}")
    return float(v)


def _json_docs(path: Path, file: str) -> list:
    try:
        text = path.read_text()
    except OSError as e:
        raise _fail(file, f"cannot read it ({e.strerror or e}); a relative path is relative to the stack file's "
                          f"directory") from None
    try:
        return [json.loads(text)]
    except json.JSONDecodeError as first:
        lines = [line for line in text.splitlines() if line.strip()]
        try:  # --append-result: one result object per line
            docs = [json.loads(line) for line in lines]
        except json.JSONDecodeError:
            docs = []
        if len(docs) > 1 and all(isinstance(d, dict) for d in docs):
            return docs
        raise _fail(file, f"not JSON ({first}); give the rows file bench/bench_serve.py writes or a "
                          f"`vllm bench serve --save-result` result") from None


def _rows(file: str, rows: list) -> list[MeasuredShape]:
    shapes: dict[tuple, list[MeasuredPoint]] = {}
    for i, row in enumerate(rows):
        where = f"row {i}: "
        if not isinstance(row, dict):
            raise _fail(file, f"{where}expected an object (a bench/bench_serve.py row), got {type(row).__name__}")
        missing = [k for k in ROW_KEYS if k not in row]
        if missing:
            raise _fail(file, f"{where}missing {', '.join(missing)}; not a bench/bench_serve.py rows file: {RERUN}")
        if row["mode"] != "closed":
            continue  # a burst run has no fixed concurrency to read a knee from
        if row["gpu"] not in ACCELERATORS:
            raise _fail(file, f"{where}gpu {row['gpu']!r} is not a catalog accelerator ({', '.join(ACCELERATORS)})")
        for key in ("tp", "pp", "concurrency"):
            if not isinstance(row[key], int) or isinstance(row[key], bool) or row[key] < 1:
                raise _fail(file, f"{where}{key} must be a positive integer, not {row[key]!r}")
        notes = BENCH_NOTES.search(str(row.get("notes") or ""))
        if notes and int(notes["failed"]):
            raise _fail(file, f"{where}{notes['failed']} requests failed at concurrency {row['concurrency']}: the "
                              f"figures are not the replica's; fix the failures and {RERUN}")
        out = _number(file, where, row, "output_tokens")
        if not out:
            raise _fail(file, f"{where}output_tokens is 0: nothing was generated; {RERUN}")
        p99 = {k: (float(notes[k]) if notes and notes[k] not in (None, "None") else None)
               for k in ("tpot", "ttft", "tpot90", "ttft90")}
        point = MeasuredPoint(row["concurrency"], _number(file, where, row, "prompt_tokens"), out,
                              _number(file, where, row, "tpot_ms"), _number(file, where, row, "ttft_ms"),
                              p99["tpot"], p99["ttft"], _number(file, where, row, "output_tps") / out,
                              _number(file, where, row, "output_tps"),
                              _number(file, where, row, "total_tps", optional=True) or 0.0, str(row.get("date", "")),
                              p99["tpot90"], p99["ttft90"])
        key = (row["model"], row["gpu"], row["tp"], row["pp"], row["precision"])
        shapes.setdefault(key, []).append(point)
    if not shapes:
        raise _fail(file, f"no closed-loop row (mode closed) to read a knee from; {RERUN}")
    return [MeasuredShape(file, m, acc, tp, pp, prec, tuple(sorted(pts, key=lambda p: p.concurrency)))
            for (m, acc, tp, pp, prec), pts in shapes.items()]


def _result(file: str, doc: dict) -> tuple[str, MeasuredPoint]:
    missing = [k for k in VLLM_KEYS if k not in doc]
    if missing:
        raise _fail(file, f"missing {', '.join(missing)}: not a `vllm bench serve --save-result` result (run it with "
                          f"--percentile-metrics ttft,tpot, as bench/bench_serve.py does)")
    c = doc.get("max_concurrency")
    if not isinstance(c, int) or isinstance(c, bool) or c < 1:
        raise _fail(file, f"max_concurrency is {c!r}: the run was not closed-loop; rerun `vllm bench serve` with "
                          f"--max-concurrency C (bench/bench_serve.py does)")
    done, failed = doc["completed"], doc.get("failed") or 0
    if not done or failed:
        raise _fail(file, f"{done} requests completed, {failed} failed at --max-concurrency {c}: the figures are not "
                          f"the replica's; fix the failures and rerun")
    date = str(doc.get("date", ""))
    date = f"{date[:4]}-{date[4:6]}-{date[6:8]}" if re.fullmatch(r"\d{8}-\d{6}", date) else date
    out = _number(file, "", doc, "total_output_tokens") / done
    return str(doc.get("model_id") or ""), MeasuredPoint(
        c, _number(file, "", doc, "total_input_tokens") / done, out, _number(file, "", doc, "mean_tpot_ms"),
        _number(file, "", doc, "mean_ttft_ms"), _number(file, "", doc, "p99_tpot_ms", optional=True),
        _number(file, "", doc, "p99_ttft_ms", optional=True),
        _number(file, "", doc, "request_throughput", optional=True) or _number(file, "", doc, "output_throughput") / out,
        _number(file, "", doc, "output_throughput"), _number(file, "", doc, "total_token_throughput", optional=True)
        or 0.0, date, _number(file, "", doc, "p90_tpot_ms", optional=True),
        _number(file, "", doc, "p90_ttft_ms", optional=True))


def read(path: Path, file: str, accelerator: str | None = None, tp: int | None = None, pp: int = 1,
         model: str | None = None, precision: str | None = None) -> list[MeasuredShape]:
    """The shapes measured in `path` (`file`: the stack's spelling of it, for messages). A rows file states its own
    shape (then `accelerator` .. `precision` must be None); a vLLM result (or a directory of them) needs the stack to
    give `accelerator` and `tp`; `model` defaults to the result's model_id."""
    stated = accelerator is not None or tp is not None
    if path.is_dir():
        docs = [(f"{file}/{p.name}", d) for p in sorted(path.glob("*.json")) for d in _json_docs(p, f"{file}/{p.name}")]
        if not docs:
            raise _fail(file, "a directory without *.json results; point at bench/bench_serve.py's rows file or at "
                              "the directory of `vllm bench serve --save-result` results (c1.json, c2.json, ...)")
    else:
        docs = [(file, d) for d in _json_docs(path, file)]
    if len(docs) == 1 and isinstance(docs[0][1], list):
        if stated or model or precision:
            raise _fail(file, "a bench/bench_serve.py rows file states its GPU, model, precision, TP and PP in every "
                              "row; give the file alone (remove accelerator, tp, pp, model, precision)")
        return _rows(file, docs[0][1])
    if not all(isinstance(d, dict) for _, d in docs):
        raise _fail(file, "expected the rows file bench/bench_serve.py writes (a JSON list) or `vllm bench serve "
                          "--save-result` results (JSON objects)")
    if accelerator is None or tp is None:
        raise _fail(file, "a `vllm bench serve` result does not record the GPU or the tensor parallelism: give "
                          "them beside the file ({file: ..., accelerator: h100, tp: 1})")
    points: dict[str, list[MeasuredPoint]] = {}
    for name, d in docs:
        model_id, point = _result(name, d)
        points.setdefault(model or model_id, []).append(point)
    if len(points) > 1:
        raise _fail(file, f"results of several models ({', '.join(sorted(points))}): one entry per model")
    ((name, pts),) = points.items()
    if not name:
        raise _fail(file, "the result names no model_id: give `model:` beside the file")
    return [MeasuredShape(file, name, accelerator, tp, pp, precision, tuple(sorted(pts, key=lambda p: p.concurrency)))]
