"""scripts/test, the README's test command: on a fresh machine it installs promtool (Debian's `prometheus`) and the
virtual environment when missing, then runs pytest with its arguments; a second run installs nothing."""
from __future__ import annotations

import os
import shutil
import stat
import subprocess

from tests.support.plans import ROOT

TOOLS = ("bash", "cat", "cut", "dirname", "id", "rm", "sha256sum")


def _exe(path, body):
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def fresh_clone(tmp_path, promtool: bool):
    """A copy of the script in a repository with a stand-in venv, and a PATH of plain tools whose apt-get and
    sudo log what they are asked (and promtool only when asked for)."""
    repo, bin_ = tmp_path / "repo", tmp_path / "bin"
    (repo / "scripts").mkdir(parents=True)
    bin_.mkdir()
    shutil.copy(ROOT / "scripts" / "test", repo / "scripts" / "test")
    for name in ("requirements.txt", "requirements-dev.txt", "pyproject.toml"):
        (repo / name).write_text(name)
    (repo / ".venv" / "bin").mkdir(parents=True)
    log = tmp_path / "log"
    _exe(repo / ".venv" / "bin" / "python", f'echo "python $*" >> {log}\n')
    _exe(repo / ".venv" / "bin" / "pip", f'echo "pip $*" >> {log}\n')
    _exe(bin_ / "apt-get", f'echo "apt-get $*" >> {log}\n')
    _exe(bin_ / "sudo", '"$@"\n')
    if promtool:
        _exe(bin_ / "promtool", "")
    for tool in TOOLS:
        os.symlink(shutil.which(tool), bin_ / tool)
    return repo, {"PATH": str(bin_), "HOME": str(tmp_path)}, log


def test_a_fresh_machine_gets_promtool_and_the_requirements_then_pytest_with_the_arguments(tmp_path):
    repo, env, log = fresh_clone(tmp_path, promtool=False)
    subprocess.run([str(repo / "scripts" / "test"), "tests/cluster", "-n", "0"], env=env, check=True, cwd=tmp_path)
    assert log.read_text().splitlines() == [
        "apt-get update -qq",
        "apt-get install -y -qq --no-install-recommends prometheus",
        "pip install --quiet --no-compile --disable-pip-version-check -r requirements-dev.txt",
        "python -m pytest tests/cluster -n 0",
    ]


def test_a_second_run_installs_nothing(tmp_path):
    repo, env, log = fresh_clone(tmp_path, promtool=True)
    for _ in range(2):
        subprocess.run([str(repo / "scripts" / "test")], env=env, check=True)
    assert log.read_text().splitlines() == [
        "pip install --quiet --no-compile --disable-pip-version-check -r requirements-dev.txt",
        "python -m pytest", "python -m pytest"]
    (repo / "requirements-dev.txt").write_text("changed")  # new requirements: installed again
    subprocess.run([str(repo / "scripts" / "test")], env=env, check=True)
    assert log.read_text().splitlines()[-2] == "pip install --quiet --no-compile --disable-pip-version-check -r requirements-dev.txt"


def test_without_apt_the_script_says_how_to_get_promtool(tmp_path):
    repo, env, log = fresh_clone(tmp_path, promtool=False)
    (tmp_path / "bin" / "apt-get").unlink()
    run = subprocess.run([str(repo / "scripts" / "test")], env=env, capture_output=True, text=True)
    assert run.returncode == 2 and not log.exists()
    assert "set VLLM_PLATFORM_SKIP_PROMTOOL=1" in run.stderr and "prometheus.io/download" in run.stderr
    skipped = subprocess.run([str(repo / "scripts" / "test")], env={**env, "VLLM_PLATFORM_SKIP_PROMTOOL": "1"})
    assert skipped.returncode == 0 and log.read_text().splitlines()[-1] == "python -m pytest"
