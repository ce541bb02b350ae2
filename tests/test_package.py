"""The project is a Python package: `pip install .` / `-e .` give the components and a `vllm-platform`
command equal to `python -m components`, whose `topology` and `table` work anywhere; the dependencies are
declared once, in pyproject.toml."""
from __future__ import annotations

import fnmatch
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import setuptools

import components
from components.cli import commands as cli
from components.offline.runner import ROOT
from components.config.project import ENV, SOURCE_ROOT, project_root

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
PROJECT = PYPROJECT["project"]


def requirement_lines(name: str) -> list[str]:
    return [line.strip() for line in (ROOT / name).read_text().splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def test_dependencies_are_declared_once_pinned_in_pyproject():
    for dep in PROJECT["dependencies"] + PROJECT["optional-dependencies"]["dev"]:
        assert re.fullmatch(r"[A-Za-z0-9_.-]+==\d[\w.]*", dep), f"{dep}: pin it with =="
    assert "pulumi==3.272.0" in PROJECT["dependencies"] and "pulumi-policy==1.21.0" not in PROJECT["dependencies"]
    # the requirements files Pulumi, CI and the README install are the project itself, no second list of pins
    assert requirement_lines("requirements.txt") == ["-e ."]
    assert requirement_lines("requirements-dev.txt") == ["-e .[dev]"]
    assert "-r requirements-dev.txt" in (ROOT / "scripts" / "test").read_text()  # what .ci/run runs


def test_console_script_is_the_module_entry_point():
    assert PROJECT["scripts"] == {"vllm-platform": "components.cli:main"}
    assert "from .cli import main" in (ROOT / "components" / "__main__.py").read_text()
    assert "sys.exit(main())" in (ROOT / "components" / "__main__.py").read_text()
    assert callable(cli.main)
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "components.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+", components.__version__)


def test_every_module_is_packaged_and_nothing_else_is_read_at_run_time():
    find = PYPROJECT["tool"]["setuptools"]["packages"]["find"]
    assert find["namespaces"] is True  # namespace packages are found too
    found = set(setuptools.find_namespace_packages(str(ROOT), include=find["include"], exclude=find["exclude"]))
    dirs = {".".join(p.parent.relative_to(ROOT).parts) for top in ("components", "policies")
            for p in (ROOT / top).rglob("*.py") if "__pycache__" not in p.parts and p.parts[len(ROOT.parts):][:2]
            != ("policies", "venv")}
    assert found - {"components.offline.data"} == dirs  # a data folder (the offline plan's tables), no modules

    assert {"components.offline", "components.cluster.aws", "policies.rules"} <= found
    # the only files read at run time beside the modules are the catalog's tables, and package-data ships them
    files = [p for p in (ROOT / "components").rglob("*") if p.is_file() and p.suffix not in (".py", ".pyc")]
    offline = ROOT / "components" / "offline"
    assert sorted(p.relative_to(offline).as_posix() for p in files if offline in p.parents) == \
        ["data/eks_addon_versions.csv"]
    data = sorted(p.relative_to(ROOT / "components" / "catalog").as_posix() for p in files if offline not in p.parents)
    assert PYPROJECT["tool"]["setuptools"]["package-data"] == {
        "components.catalog": ["data/*.csv", "data/*/*.csv", "data/*/*.yaml"],
        "components.offline": ["data/*.csv"]}  # the offline plan's EKS add-on builds (aws_stubs.py)
    assert "data/instance_types.csv" in data and "data/measurements/blind5.csv" in data
    assert all(fnmatch.fnmatch(d, "data/*.csv") or fnmatch.fnmatch(d, "data/*/*.csv")
               or fnmatch.fnmatch(d, "data/*/*.yaml") for d in data), data


def test_the_policy_packs_virtualenv_is_never_packaged(tmp_path):
    """`pulumi up --policy-pack policies` (and scripts/e2e) make policies/venv, a virtualenv full of packages: a
    wheel built beside it must not carry it (it did: policies.* matched policies/venv/lib/...)."""
    find = PYPROJECT["tool"]["setuptools"]["packages"]["find"]
    for d in ("policies/rules", "policies/venv/lib/python3.11/site-packages/pulumi"):
        (tmp_path / d).mkdir(parents=True)
        (tmp_path / d / "__init__.py").write_text("")
    (tmp_path / "policies" / "__init__.py").write_text("")
    found = set(setuptools.find_namespace_packages(str(tmp_path), include=find["include"], exclude=find["exclude"]))
    assert found == {"policies", "policies.rules"}


def test_the_built_package_carries_the_catalog_tables(tmp_path):
    """What setuptools builds from pyproject.toml (a copy of the project, so the repository gets no build
    files) holds every data file, and the catalog loads from it alone, outside any checkout."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for top in ("components", "policies"):
        shutil.copytree(ROOT / top, src / top, ignore=shutil.ignore_patterns("__pycache__", "venv"))
    lib = tmp_path / "lib"
    built = subprocess.run([sys.executable, "-c", "from setuptools import setup; setup()", "-q", "build_py",
                            "--build-lib", str(lib)], cwd=src, capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stderr
    shipped = {p.relative_to(lib).as_posix() for p in (lib / "components" / "catalog" / "data").rglob("*")
               if p.is_file()}
    assert shipped == {p.relative_to(src).as_posix() for p in (src / "components" / "catalog" / "data").rglob("*")
                       if p.is_file()}
    run = tmp_path / "elsewhere"
    run.mkdir()
    check = ("import components.catalog as c, components.catalog.measurements as m, components.catalog.prices as p\n"
             "print(m.__file__.startswith(sys.argv[1]), len(m.every_row()), len(c.INSTANCE_TYPES), len(p.REGIONS),\n"
             "      c.PRICES_AS_OF)")
    loaded = subprocess.run([sys.executable, "-c", "import sys\n" + check, str(lib)], cwd=run, capture_output=True,
                            text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(lib)})
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.split() == ["True", "191", "50", "6", "2025-10"]


def run_outside(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess:
    """Run in a directory that is no project, as an installed `vllm-platform` would be."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop(ENV, None)
    return subprocess.run([sys.executable, *argv], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)


TOPOLOGY = ["topology", "--model", "llama-3.1-8b", "--gpu", "l4", "--max-model-len", "8192"]


def test_topology_and_table_work_outside_the_repository(tmp_path):
    script = run_outside(tmp_path, "-c", "import sys; from components.cli import main; sys.exit(main())", *TOPOLOGY)
    module = run_outside(tmp_path, "-m", "components", *TOPOLOGY)
    assert script.returncode == module.returncode == 0, script.stderr + module.stderr
    assert script.stdout == module.stdout
    # the header names the KV dtypes asked; one g6.xlarge again (at TPOT 100 ms and p90 one L4 holds 12 users under
    # the dense class's 10 % margin; TP 2 on a g6.12xlarge under one 35 % margin)
    lines = script.stdout.splitlines()
    assert lines[0] == "# KV cache dtype considered: auto (--kv-cache-dtype auto); chosen: auto"
    assert lines[1].startswith("llama-3.1-8b: Llama-3.1-8B bf16 on g6.xlarge (1 x l4)")
    table = run_outside(tmp_path, "-c", "import sys; from components.cli import main; sys.exit(main())", "table")
    assert table.returncode == 0 and "llama-3.1-8b     bf16       l4         g6.12xlarge" in table.stdout
    assert list(tmp_path.iterdir()) == []  # nothing written where it ran


def write_project(path: Path, name: str = "vllm-platform") -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "Pulumi.yaml").write_text(f"name: {name}\nruntime: python\n")
    (path / "__main__.py").write_text("")
    return path


def test_the_project_is_found_from_the_environment_the_directory_or_the_checkout(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    checkout = write_project(tmp_path / "checkout")
    (checkout / "stacks").mkdir()
    assert project_root(checkout / "stacks") == checkout  # from a directory inside it
    assert project_root(checkout) == checkout
    other = write_project(tmp_path / "someone-elses", name="platform-team")  # another Pulumi project
    assert project_root(other) == SOURCE_ROOT == ROOT  # falls back to the checkout the package runs from
    monkeypatch.setenv(ENV, str(checkout))
    assert project_root(other) == checkout


@pytest.mark.parametrize("name", ["requirements.txt", "requirements-dev.txt"])
def test_requirement_files_say_where_the_pins_are(name):
    assert "pyproject.toml" in (ROOT / name).read_text()


def test_the_library_entry_points_load_lazily(tmp_path):
    """`from components import Platform` works; the CLI's pure commands do not load the Pulumi providers."""
    check = ("import sys, components, components.cli\n"
             "assert 'pulumi_kubernetes' not in sys.modules and 'pulumi_aws' not in sys.modules\n"
             "from components import Platform, PlatformArgs, VllmService, VllmServiceArgs\n"
             "print(Platform.__module__, VllmService.__module__, sorted(PlatformArgs.__required_keys__))")
    result = run_outside(tmp_path, "-c", check)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["components.platform", "components.package", "['config',", "'hf_token']"]
