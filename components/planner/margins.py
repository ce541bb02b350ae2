"""The planning margin by model class and load regime: how far under the SLA an estimated knee keeps the estimate.
Pure.

The capacity model's error is not the same everywhere: on the held-out measurements (calibration.split) dense
models' measured mean TPOT lay within estimate x 1.10 for 9 in 10 rows, MoE models' only within x 2.20. One margin
for all (the 35 % of every row together) made dense models pay for MoE's uncertainty. So the margin is read per
cell, the same way the single margin was: the smallest 5 % step whose estimate x (1 + margin) covers COVERAGE of the
cell's held-out rows (the unsafe side: a row whose measured TPOT exceeds the estimate). The margin applied at a load
is the largest of the cells up to it (cell_for): it never falls as the load rises, so a thin low-margin cell above a
high-margin one (MoE at 128+) does not let the knee jump past loads that miss.

Cells: (estimator, class, regime). The class is "dense" or "moe" (ModelSpec.is_moe); the regime is the
concurrency bucket the load point sits in (CONCURRENCY_BUCKETS; a burst row counts at its peak running batch). A
cell with fewer than MIN_CELL_ROWS held-out rows does not stand on its own: the class's cell ("*" regime) answers
for it, and a class with too few rows falls back to every row together ("*", "*"). The cells are fitted on the
held-out half only (the fit half trained the step model; its error there is optimistic), and
tests/planner/test_calibration.py recomputes them from the rows, so a refit (or a new row) that moves one fails
there until CELLS follows (bench/calibrate.py --check prints the new cells).

A stack's planning.latencyMargin replaces the table for all its models; a measured knee (planning.measurements,
the profiling run) needs only the measurement's own noise margin (planner/measured.py NOISE_MARGIN).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..catalog import ModelSpec

COVERAGE = 0.90  # share of a cell's held-out rows whose measured mean TPOT must lie within estimate x (1 + margin)
STEP = 0.05  # margins are multiples of this
MIN_CELL_ROWS = 10  # held-out rows a cell needs to stand on its own (below: its class's margin, then every row's)
FITTED_ON = "2026-12-06"

# The error is reported, and the margin read, by load: 1, 2-8, 9-64, 65-127 and 128+ concurrent requests,
# contiguous so that no load falls between buckets.
CONCURRENCY_BUCKETS: tuple[tuple[str, int, float], ...] = (
    ("1", 1, 1), ("2-8", 2, 8), ("9-64", 9, 64), ("65-127", 65, 127), ("128+", 128, float("inf")))


def concurrency_bucket(concurrency: float) -> str:
    return next(name for name, low, high in CONCURRENCY_BUCKETS if concurrency <= high)


@dataclass(frozen=True)
class Cell:
    estimator: str  # planner/estimators.py ESTIMATORS
    model_class: str  # "dense", "moe" or "*" (every class)
    regime: str  # a CONCURRENCY_BUCKETS name or "*" (every load)
    margin: float  # estimate x (1 + margin) covers COVERAGE of the cell's held-out rows
    rows: int  # held-out rows with a measured TPOT
    covered: int  # of them within estimate x (1 + margin)
    worst: float  # the cell's row furthest on the unsafe side: measured TPOT over the estimate

    @property
    def name(self) -> str:
        cls = {"*": "every model", "dense": "dense models", "moe": "MoE models"}[self.model_class]
        load = "any load" if self.regime == "*" else f"{self.regime} concurrent requests"
        return f"{cls}, {load}"

    def text(self) -> str:
        """`dense models, 9-64 concurrent requests: 31 of 33 held-out rows within estimate x 1.05 (step-model)`"""
        return (f"{self.name}: {self.covered} of {self.rows} held-out rows within estimate x {1 + self.margin:g}, "
                f"the worst {self.worst:g}x ({self.estimator})")


# Written from the held-out half on FITTED_ON (tests/planner/test_calibration.py recomputes every cell).
CELLS: tuple[Cell, ...] = (
    Cell("step-model", "*", "*", 0.35, 79, 72, 3.66),
    Cell("step-model", "dense", "*", 0.10, 56, 51, 1.88),
    Cell("step-model", "dense", "128+", 0.10, 14, 13, 1.37),
    Cell("step-model", "dense", "9-64", 0.05, 33, 31, 1.88),
    Cell("step-model", "moe", "*", 1.20, 23, 21, 3.66),
    Cell("step-model", "moe", "128+", 0.35, 10, 9, 3.64),
    # aiconfigurator+engine (planner/estimators.py) over the 64 held-out rows it prices (bench/estimators.py)
    Cell("aiconfigurator+engine", "*", "*", 0.35, 64, 58, 4.89),
    Cell("aiconfigurator+engine", "dense", "*", 0.20, 46, 42, 1.56),
    Cell("aiconfigurator+engine", "dense", "128+", 0.35, 10, 9, 1.56),
    Cell("aiconfigurator+engine", "dense", "9-64", 0.10, 27, 26, 1.22),
    Cell("aiconfigurator+engine", "moe", "*", 2.95, 18, 17, 4.89),
)
_BY_KEY = {(c.estimator, c.model_class, c.regime): c for c in CELLS}


def model_class(model: ModelSpec) -> str:
    return "moe" if model.is_moe else "dense"


def _cell(estimator: str, cls: str, regime: str) -> Cell:
    """The cell of one regime: its own where it has the rows, else its class's, else every row's."""
    for key in ((estimator, cls, regime), (estimator, cls, "*"), (estimator, "*", "*"), ("step-model", "*", "*")):
        if key in _BY_KEY:
            return _BY_KEY[key]
    raise KeyError(f"no margin cell for estimator {estimator!r}")


def cell_for(model: ModelSpec, concurrency: float, estimator: str = "step-model") -> Cell:
    """The margin cell that judges `model`'s estimate at `concurrency` requests in flight: the largest margin of the
    regimes up to that load (a replica at the knee runs through every lower load, so the margin never falls as the
    load rises; a falling one would let the knee search jump over loads that miss). Ties: the lowest regime's."""
    cls, top = model_class(model), concurrency_bucket(max(concurrency, 1))
    names = [name for name, _, _ in CONCURRENCY_BUCKETS]
    cells = [_cell(estimator, cls, name) for name in names[:names.index(top) + 1]]
    return max(cells, key=lambda c: c.margin)


def covering_margin(ratios: list[float], coverage: float = COVERAGE, step: float = STEP) -> float:
    """The smallest multiple of `step` whose estimate x (1 + margin) covers `coverage` of `ratios` (measured /
    estimated TPOT)."""
    k = 0
    while sum(r <= 1 + k * step + 1e-9 for r in ratios) < coverage * len(ratios):
        k += 1
    return round(k * step, 10)


def fit_cells(ratios: list[tuple[str, str, float]], estimator: str = "step-model") -> tuple[Cell, ...]:
    """The cells `ratios` (model class, regime, measured TPOT / estimate), held-out rows, support: every row, each
    class, and each (class, regime) with MIN_CELL_ROWS rows or more."""
    groups: dict[tuple[str, str], list[float]] = {("*", "*"): [r for _, _, r in ratios]}
    for cls, regime, r in ratios:
        groups.setdefault((cls, "*"), []).append(r)
        groups.setdefault((cls, regime), []).append(r)
    order = [("*", "*")] + sorted(k for k in groups if k != ("*", "*"))
    out = []
    for cls, regime in order:
        rs = groups[(cls, regime)]
        if not rs or ((cls, regime) != ("*", "*") and len(rs) < MIN_CELL_ROWS):
            continue
        margin = covering_margin(rs)
        out.append(Cell(estimator, cls, regime, margin, len(rs), sum(r <= 1 + margin + 1e-9 for r in rs),
                        round(max(rs), 2)))
    return tuple(out)
