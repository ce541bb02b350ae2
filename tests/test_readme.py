"""The README's generated parts and quick start stay true."""
import re

import pytest

from components.cli import render_table
from components.offline.runner import ROOT

README = (ROOT / "README.md").read_text()


@pytest.mark.parametrize("cloud", ["aws", "gcp"])
def test_readme_table_is_the_generated_one(cloud):
    m = re.search(rf"<!-- table:{cloud}:start -->\n(?:\*\*\w+\*\*\n\n)?(.*?)\n<!-- table:{cloud}:end -->", README, re.S)
    assert m, f"README has no {cloud} table markers"
    assert m.group(1).strip() == render_table(cloud, markdown=True).strip(), \
        f"README table is stale: run `python -m components table --markdown --cloud {cloud}` and paste it"


def test_quick_start_is_two_commands_and_ci_runs_the_test_one():
    block = re.search(r"## Quick start\n\n```bash\n(.*?)```", README, re.S).group(1).strip().splitlines()
    assert len(block) == 2
    setup, test = block
    assert "python3 -m venv .venv" in setup and setup.endswith("-m components plan")
    ci = (ROOT / ".ci" / "run").read_text()
    assert test in ci


def test_readme_stacks_table_is_the_generated_one():
    from components.cli import render_stacks
    m = re.search(r"<!-- stacks:start -->\n(.*?)\n<!-- stacks:end -->", README, re.S)
    assert m, "README has no stacks table markers"
    assert m.group(1).strip() == render_stacks().strip(), "stale: run `python -m components stacks` and paste it"
