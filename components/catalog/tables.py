"""The one reader of the catalog's data files (components/catalog/data/): every table the planner works from
(accelerators, instance types, prices, published measurements) is a CSV file there, one row a line, and this
module turns each into the dataclass its module declares. docs/development.md says how to add a row.

The schema of a table is its dataclass: the header must name the dataclass's fields, in their order; each cell
is read as its field's type (int, float, bool `true`/`false`, str; an empty cell is None where the field may be
None, the field's default where it has one, and an error otherwise). Every table has a `source` column, never
empty; a `read` or `*_read` column (the day the source was read) and `valid_until` hold a date, YYYY-MM or
YYYY-MM-DD. A line starting with `#` is a comment (the why beside the figures, as a comment in code would be);
a blank line is skipped. A cell may name a shared text of its folder's texts.yaml as `{name}` (a long note many
rows repeat); a text may name texts above it in that file. Anything else is refused with the file, the line
(and the row's key) and the column named, never a traceback from deep inside the planner: a DataError, which
`python -m components` prints with FIX and exits 2 for (components/cli/commands.py main), as `python -m
components.policy_facts` does, and which the Pulumi program (__main__.py) fails the run with, FIX included.
"""
from __future__ import annotations

import csv
import math
import re
import types
import typing
from collections.abc import Callable, Collection, Mapping
from dataclasses import MISSING, fields
from functools import cache
from pathlib import Path

import yaml

DATA = Path(__file__).resolve().parent / "data"
_REF = re.compile(r"\{([A-Za-z0-9_]+)\}")
_DATE = re.compile(r"\d{4}-\d{2}(-\d{2})?")
_BOOLS = {"true": True, "false": False}


class DataError(ValueError):
    """A data file that does not match its schema: the message names the file, line and column (and, where the
    cell alone does not show it, what to write instead)."""


# What to do about any DataError, as the CLI prints it below the error (components/cli/commands.py, exit 2) and __main__.py
# adds it to the run's error.
FIX = ("fix: correct that line of the catalog's data file (the header line is the table's schema; "
       "docs/development.md \"Adding a data row\" has the rules), then run the command again")


def _where(path: Path) -> str:
    try:
        return str(path.relative_to(DATA.parents[2]))
    except ValueError:
        return str(path)


def _read(path: Path) -> str:
    """The file's text (UTF-8; a byte-order mark, as spreadsheet programs write one, is dropped)."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise DataError(f"{_where(path)}: line {line}: byte {data[e.start]:#04x} is not "
                        f"UTF-8; save the file as UTF-8 (CSV UTF-8 in a spreadsheet program)") from None


def _expand(text: str, named: Mapping[str, str], where: str) -> str:
    def one(m: re.Match) -> str:
        if m.group(1) not in named:
            raise DataError(f"{where}: {{{m.group(1)}}} is not a text of texts.yaml in that folder "
                            f"({', '.join(named) or 'none'})")
        return named[m.group(1)]
    return _REF.sub(one, text)


@cache
def texts(folder: Path) -> dict[str, str]:
    """The shared texts of `folder`/texts.yaml (none where there is no such file), each expanded."""
    path = folder / "texts.yaml"
    if not path.exists():
        return {}
    try:
        raw = yaml.safe_load(_read(path)) or {}
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise DataError(f"{_where(path)}: {at}not YAML ({getattr(e, 'problem', None) or e}); each text is one "
                        f"`name: text` line (quote a text that holds ': ' or starts with a quote)") from None
    if not isinstance(raw, dict):
        raise DataError(f"{_where(path)}: expected a mapping of name: text")
    out: dict[str, str] = {}
    for name, text in raw.items():
        if not isinstance(name, str) or not _REF.fullmatch("{" + name + "}") or not isinstance(text, str):
            raise DataError(f"{_where(path)}: text {name!r}: a name of letters, digits and _ with a string value")
        out[name] = _expand(text, out, f"{_where(path)}: text {name!r}")
    return out


def _types(cls: type) -> dict[str, tuple[type, bool]]:
    """field -> (base type, may be None)."""
    hints = typing.get_type_hints(cls)
    out = {}
    for f in fields(cls):
        t, optional = hints[f.name], False
        if isinstance(t, types.UnionType) or typing.get_origin(t) is typing.Union:
            args = [a for a in typing.get_args(t) if a is not type(None)]
            t, optional = args[0], len(args) < len(typing.get_args(t))
        out[f.name] = (t, optional)
    return out


def _cell(text: str, t: type, optional: bool, default: object) -> object:
    if text == "":
        if optional:
            return None
        if default is not MISSING:
            return default
        raise ValueError("empty; this column needs a value")
    if t is bool:
        if text not in _BOOLS:
            raise ValueError(f"{text!r} is not true or false")
        return _BOOLS[text]
    if t is int:
        try:
            return int(text)
        except ValueError:
            raise ValueError(f"{text!r} is not a whole number") from None
    if t is float:
        try:
            v = float(text)
        except ValueError:
            raise ValueError(f"{text!r} is not a number (write it plain: 0.8048, 8192)") from None
        if not math.isfinite(v):
            raise ValueError(f"{text!r} is not a finite number")
        return v
    return text


Allowed = Mapping[str, tuple[str, Collection[str]]]  # column -> (what the values are, the allowed values)


def read_table(name: str, cls: type, allowed: Allowed | None = None,
               check: Callable[[object], str | None] | None = None, key: tuple[str, ...] = (),
               folder: Path = DATA) -> list:
    """The rows of `folder`/`name` as `cls` instances, in file order. `allowed` limits a column to known values
    (a catalog id, an enum); `check` returns what is wrong with a whole row (or None). The `key` columns (default:
    the first) are the row's key: named in messages, and no two rows may share it."""
    path = folder / name
    where = _where(path)
    spec = _types(cls)
    defaults = {f.name: f.default for f in fields(cls)}
    columns = list(spec)
    key = key or (columns[0],)
    if "source" not in spec:
        raise DataError(f"{where}: the table's schema ({cls.__name__}) has no source column")
    try:
        lines = _read(path).splitlines()
    except FileNotFoundError:
        raise DataError(f"{where}: no such data file") from None
    body = [(n, line) for n, line in enumerate(lines, 1) if line.strip() and not line.startswith("#")]
    if not body:
        raise DataError(f"{where}: no header line (expected: {','.join(columns)})")
    named = texts(folder)
    (hn, header), rows, seen = body[0], [], {}
    head = next(csv.reader([header]))
    if head != columns:
        missing = [c for c in columns if c not in head]
        unknown = [c for c in head if c not in columns]
        why = "; ".join(([f"missing column(s) {', '.join(missing)}"] if missing else [])
                        + ([f"unknown column(s) {', '.join(unknown)}"] if unknown else [])) or "columns out of order"
        raise DataError(f"{where}: line {hn}: header: {why} (expected: {','.join(columns)})")
    for n, line in body[1:]:
        cells = next(csv.reader([line]))
        k = tuple(cells[columns.index(c)] for c in key) if len(cells) == len(columns) else tuple(cells[:1])
        row = f"{where}: line {n} ({' '.join(k) or 'empty'})"
        if len(cells) != len(columns):
            fix = ('quote a cell that holds a comma ("a, b")' if len(cells) > len(columns)
                   else "an empty cell is still written (,,)")
            raise DataError(f"{row}: {len(cells)} cells, the header has {len(columns)} ({','.join(columns)}); {fix}")
        values = {}
        for col, text in zip(columns, cells):
            t, optional = spec[col]
            try:
                if t is str:
                    text = _expand(text, named, f"{row}: column {col}")
                if col == "source" and not text.strip():
                    raise ValueError("empty; every row names its source")
                v = _cell(text, t, optional, defaults[col])
                if (col in ("read", "valid_until") or col.endswith("_read")) and v and not _DATE.fullmatch(v):
                    raise ValueError(f"{v!r} is not a date (YYYY-MM or YYYY-MM-DD)")
                if allowed and col in allowed and v is not None:
                    what, ok = allowed[col]
                    if v not in ok:
                        raise ValueError(f"unknown {what} {v!r} (one of: {', '.join(sorted(ok))})")
            except DataError:
                raise
            except ValueError as e:
                raise DataError(f"{row}: column {col}: {e}") from None
            values[col] = v
        obj = cls(**values)
        if check and (why := check(obj)):
            raise DataError(f"{row}: {why}")
        if k in seen:
            raise DataError(f"{row}: {', '.join(key)} {' '.join(k)!r} is already on line {seen[k]}; a key names one "
                            f"row: change it or remove one of the two lines")
        seen[k] = n
        rows.append(obj)
    return rows
