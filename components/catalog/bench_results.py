"""Rows that bench/bench_serve.py wrote (bench/results/STACK-NAME.json: a JSON list of objects in the shape of
measurements.Measurement), read back as Measurements for calibration (bench/calibrate.py --results)."""
from __future__ import annotations

import json
from dataclasses import MISSING, fields
from pathlib import Path

from .accelerators import ACCELERATORS
from .measurements import Measurement
from .models import MODELS

_FIELDS = {f.name: f for f in fields(Measurement)}
_REQUIRED = {n for n, f in _FIELDS.items() if f.default is MISSING and f.default_factory is MISSING}
_NUMBERS = ("prompt_tokens", "output_tokens", "tpot_ms", "ttft_ms", "output_tps", "total_tps")


def _row(path: Path, i: int, raw: object) -> Measurement:
    where = f"{path}: row {i}"
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: expected an object with the Measurement fields, got {type(raw).__name__}")
    where = f"{path}: row {i} ({raw.get('id', 'no id')})"
    unknown = sorted(set(raw) - set(_FIELDS))
    missing = sorted(_REQUIRED - set(raw))
    if unknown or missing:
        raise ValueError(f"{where}: " + "; ".join(
            ([f"unknown field(s) {', '.join(unknown)}"] if unknown else [])
            + ([f"missing field(s) {', '.join(missing)}"] if missing else []))
            + " (bench/bench_serve.py writes rows with the columns of components/catalog/data/measurements/"
              "published.csv, the fields of components/catalog/measurements.py Measurement)")
    if raw["gpu"] not in ACCELERATORS:
        raise ValueError(f"{where}: gpu {raw['gpu']!r} is not a catalog accelerator ({', '.join(ACCELERATORS)})")
    if raw["model"] not in MODELS:
        raise ValueError(f"{where}: model {raw['model']!r} is not a catalog model id")
    if raw["mode"] not in ("closed", "burst"):
        raise ValueError(f"{where}: mode must be 'closed' or 'burst', not {raw['mode']!r}")
    for name in ("tp", "pp", "concurrency", "max_model_len"):
        if not isinstance(raw[name], int) or isinstance(raw[name], bool) or raw[name] < 1:
            raise ValueError(f"{where}: {name} must be a positive integer, not {raw[name]!r}")
    for name in _NUMBERS:
        v = raw.get(name)
        if v is not None and (not isinstance(v, (int, float)) or isinstance(v, bool) or v < 0):
            raise ValueError(f"{where}: {name} must be a non-negative number or null, not {v!r}")
    return Measurement(**raw)


def from_bench_results(path: str | Path) -> list[Measurement]:
    """The Measurements in one bench/bench_serve.py result file; a clear error naming the file, row and field
    for anything else."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file (bench/bench_serve.py writes bench/results/STACK-NAME.json)") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not JSON ({e})") from None
    if not isinstance(doc, list):
        raise ValueError(f"{path}: expected a JSON list of rows (what bench/bench_serve.py writes), "
                         f"got {type(doc).__name__}")
    return [_row(path, i, raw) for i, raw in enumerate(doc)]
