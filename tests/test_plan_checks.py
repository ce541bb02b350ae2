"""The one validation stage after the schema (issue 35): every plan check registers into config/problems.py beside
its concern, exactly once, and wiring.validated_plan collects them all in problems.ORDER. Pinned here, so that a
check dropped (its module no longer imported, its decorator gone) fails a test instead of passing silently."""
import ast
from pathlib import Path

import pytest

from components import wiring  # noqa: F401  (imports every module that registers)
from components.config import problems

ROOT = Path(__file__).resolve().parents[1]

REGISTERED = (  # name -> the module it lives in, in the order the report lists its lines
    ("cluster", "components.cluster.checks"),
    ("cache.nvme", "components.cache.checks"),
    ("cache.sources", "components.cache.checks"),
    ("cache.cross_cloud", "components.cache.checks"),
    ("cache.loader", "components.cache.checks"),
    ("cache.revisions", "components.cache.checks"),
    ("serving.scale_to_zero", "components.serving.checks"),
    ("serving.ray_upgrades", "components.serving.checks"),
    ("serving.runtime_lora_cache", "components.serving.checks"),
    ("serving.wide_ep", "components.serving.checks"),
    ("gateway.production_tls", "components.config.gateway"),
    ("gateway.quota_lora", "components.config.token_quotas"),
    ("gateway.prefix_routing", "components.serving.prefix_routing"),
    ("planner.disagg_production", "components.planner.checks"),
    ("planner.margin_production", "components.planner.checks"),
)


def test_every_check_is_registered_once_in_order():
    got = [(name, check.__module__) for name, check in problems.registered()]
    assert got == list(REGISTERED)
    assert problems.ORDER == tuple(name for name, _ in REGISTERED)
    checks = [check for _, check in problems.registered()]
    assert len(set(checks)) == len(checks) == 15


def test_the_registry_imports_nothing_of_the_project():
    tree = ast.parse((ROOT / "components" / "config" / "problems.py").read_text())
    imported = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert all(n.level == 0 for n in ast.walk(tree) if isinstance(n, ast.ImportFrom))
    assert not [m for m in imported if m.startswith("components")], imported


def test_a_check_outside_order_or_registered_twice_is_refused():
    with pytest.raises(ValueError, match="not in problems.ORDER"):
        problems.plan_check("cache.unknown")
    with pytest.raises(ValueError, match="registered twice"):
        problems.plan_check("cluster")(lambda ctx: [])


def test_collect_refuses_a_check_nobody_registered(monkeypatch):
    monkeypatch.delitem(problems._checks, "cache.loader")
    with pytest.raises(RuntimeError, match="cache.loader"):
        problems.collect(None)


def test_collect_runs_every_check_in_order(monkeypatch):
    for name in problems.ORDER:
        monkeypatch.setitem(problems._checks, name, lambda ctx, name=name: [f"{name}: {ctx}"])
    assert problems.collect("x") == [f"{name}: x" for name in problems.ORDER]
