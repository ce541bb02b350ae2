"""Published vLLM serving measurements, for calibrating the capacity model (bench/calibrate.py). The rows are
data/measurements/*.csv (the columns are this dataclass, read by components/catalog/tables.py): published.csv,
then the batches read blind, one file each. docs/calibration-data.md gives the row format and rules and, for
each blind batch, how its rows were chosen.

Each row records what its source says: GPU, model, weights' precision, vLLM version, TP x PP, average prompt
and output tokens, the load, and the mean TPOT / TTFT and output / total tokens per second that
`vllm bench serve` (or the source's harness) printed; `⚠` in `notes` marks every inferred field. The tail columns
(`tpot_p90_ms`, `tpot_p99_ms`, `ttft_p90_ms`, `ttft_p99_ms`) hold the percentiles the source prints for that very run,
and are empty where it prints none (never estimated; a median is no p90). Rows with
`usable=False` are kept for the record but cannot be modelled. Load: `mode="closed"` is a fixed number of
concurrent requests (`--max-concurrency C`); `mode="burst"` is `--request-rate inf` with every prompt sent at
once (`concurrency` = the number of prompts).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

from .accelerators import ACCELERATORS
from .tables import DATA, read_table
from .models import MODELS, PRECISIONS

FOLDER = DATA / "measurements"
# The batches read blind, in the order they were read (each by someone who never ran the capacity model or saw
# its errors); docs/calibration-history.md reports each against the model they tested. Since the rework of 2026-12-05
# they are ordinary rows of the calibration split.
BLIND_BATCHES = ("blind", "blind3", "blind4", "blind5")
MODES = ("closed", "burst")


@dataclass(frozen=True)
class Measurement:
    id: str
    gpu: str  # catalog accelerator id
    model: str  # catalog model id
    precision: str
    vllm: str  # vLLM version
    tp: int
    pp: int
    prompt_tokens: float  # average
    output_tokens: float  # average
    mode: str  # "closed" | "burst"
    concurrency: int  # closed: --max-concurrency; burst: prompts sent at once
    tpot_ms: float | None  # mean TPOT (excl. the first token)
    ttft_ms: float | None  # mean TTFT
    output_tps: float | None  # output tokens/s
    total_tps: float | None  # input + output tokens/s
    max_model_len: int
    source: str  # URL (a commit-pinned file where there is one)
    date: str  # the source's date, or ⚠ where it states none
    notes: str = ""
    flags: str = ""  # vllm serve flags beyond the model (they change what is measured)
    usable: bool = True
    read: str = ""  # when the source was read (the published and blind tables carry it; bench rows need not)
    # Tail latencies, as the source prints them for this run (empty where it prints none; never estimated).
    tpot_p90_ms: float | None = None
    tpot_p99_ms: float | None = None
    ttft_p90_ms: float | None = None
    ttft_p99_ms: float | None = None


TAILS = ("tpot_p90_ms", "tpot_p99_ms", "ttft_p90_ms", "ttft_p99_ms")


def _check(m: Measurement) -> str | None:
    for name in ("tp", "pp", "max_model_len"):
        if getattr(m, name) < 1:
            return f"column {name}: {getattr(m, name)} is not a positive whole number"
    for name in ("prompt_tokens", "output_tokens", "concurrency", "tpot_ms", "ttft_ms", "output_tps", "total_tps",
                 *TAILS):
        if (getattr(m, name) or 0) < 0:
            return f"column {name}: {getattr(m, name)} is negative"
    for what in ("tpot", "ttft"):
        # mean <= p99 and p90 <= p99 where both are given (a p99 under the mean, or under the p90, is a misread:
        # a swapped column, a median, or another run's figure)
        mean, p90, p99 = getattr(m, f"{what}_ms"), getattr(m, f"{what}_p90_ms"), getattr(m, f"{what}_p99_ms")
        if p99 is not None and p90 is not None and p99 < p90:
            return (f"column {what}_p99_ms: {p99:g} is below {what}_p90_ms {p90:g}; a p99 is never under the p90 "
                    f"(check both against the source)")
        if p99 is not None and mean is not None and p99 < mean:
            return (f"column {what}_p99_ms: {p99:g} is below the mean {what}_ms {mean:g}; a p99 is never under the "
                    f"mean (check both against the source)")
    if not m.read:
        return "column read: empty; the day the source was read (YYYY-MM-DD)"
    return None


_ALLOWED = {"gpu": ("accelerator", ACCELERATORS), "model": ("model", MODELS),
            "precision": ("precision", PRECISIONS), "mode": ("load mode", MODES)}


def load(name: str, folder: Path = FOLDER) -> tuple[Measurement, ...]:
    """`folder`/`name`.csv (a DataError names the file, line and column of a bad row)."""
    return tuple(read_table(f"{name}.csv", Measurement, allowed=_ALLOWED, check=_check, folder=folder))


@cache
def _table(name: str) -> tuple[Measurement, ...]:
    return load(name)


MEASUREMENTS: tuple[Measurement, ...] = _table("published")


def blind_batches() -> dict[str, tuple[Measurement, ...]]:
    """The rows read blind, batch by batch (data/measurements/blind*.csv)."""
    return {name: _table(name) for name in BLIND_BATCHES}


def every_row() -> tuple[Measurement, ...]:
    """MEASUREMENTS and every blind batch."""
    return MEASUREMENTS + tuple(m for batch in blind_batches().values() for m in batch)


def usable() -> list[Measurement]:
    return [m for m in every_row() if m.usable]
