"""The facts the planner works from: models, accelerators and instance types, each with its source.

The names below load on first use (their modules read the CSV tables of data/ when imported), so that
`components.catalog.tables` and its DataError can be imported before any table is read: the CLI reports a
malformed data file as bad input (exit 2) rather than a traceback (components/cli/commands.py).
"""
from __future__ import annotations

import importlib

_EXPORTS = {
    "ACCELERATORS": "accelerators", "Accelerator": "accelerators",
    "INSTANCE_TYPES": "instances", "MIN_FABRIC_GBPS": "instances", "PRICES_AS_OF": "instances",
    "InstanceType": "instances", "instance_types": "instances", "offered": "instances",
    "MODELS": "models", "PRECISIONS": "models", "ModelSpec": "models", "closest_models": "models",
    "find_model": "models", "names_fp8": "models",
}
__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
