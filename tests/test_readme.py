"""The README's quick start and the generated tables in docs/ stay true; the README stays a front page."""
import re

import pytest

from components.cli import render_table
from components.offline.runner import ROOT

README = (ROOT / "README.md").read_text()
PLANNER_DOC = (ROOT / "docs" / "planner.md").read_text()
STACKS_DOC = (ROOT / "docs" / "stacks.md").read_text()


@pytest.mark.parametrize("cloud", ["aws", "gcp"])
def test_readme_table_is_the_generated_one(cloud):
    m = re.search(rf"<!-- table:{cloud}:start -->\n(?:\*\*\w+\*\*\n\n)?(.*?)\n<!-- table:{cloud}:end -->", PLANNER_DOC, re.S)
    assert m, f"docs/planner.md has no {cloud} table markers"
    assert m.group(1).strip() == render_table(cloud, markdown=True).strip(), \
        f"docs/planner.md table is stale: run `python -m components table --markdown --cloud {cloud}` and paste it"


def test_quick_start_is_two_commands_and_ci_runs_the_test_one():
    block = re.search(r"## Quick start\n\n```bash\n(.*?)```", README, re.S).group(1).strip().splitlines()
    assert len(block) == 2
    setup, test = block
    assert "python3 -m venv .venv" in setup and setup.endswith("-m components plan")
    assert test == "scripts/test"  # sets up promtool and the venv itself (tests/test_scripts.py)
    ci = (ROOT / ".ci" / "run").read_text()
    # CI runs the README's test command with its arguments, and the real-engine run (docs/e2e.md), both must pass
    assert '\nscripts/test "$@" || suite=$?' in ci
    assert "\nscripts/e2e tools || tools=$?" in ci and "scripts/e2e run > " in ci
    assert ci.rstrip().endswith('[ "$suite" -eq 0 ] && [ "$e2e_rc" -eq 0 ]')


def test_readme_stacks_table_is_the_generated_one():
    from components.cli import render_stacks
    m = re.search(r"<!-- stacks:start -->\n(.*?)\n<!-- stacks:end -->", STACKS_DOC, re.S)
    assert m, "docs/stacks.md has no stacks table markers"
    assert m.group(1).strip() == render_stacks().strip(), "stale: run `python -m components stacks` and paste it"


def test_readme_is_a_front_page_whose_links_resolve():
    """What, quick start, one picture, where to read more: the reference lives in docs/, and every
    relative link of the README and of docs/ names a file of the repository (and an anchor it has)."""
    assert len(README.splitlines()) <= 120, "the README is a front page: move reference text to docs/"
    assert README.count("```mermaid") == 1
    pages = [ROOT / "README.md", ROOT / "UPGRADING.md", *sorted((ROOT / "docs").glob("*.md"))]
    for page in pages:
        text = page.read_text()
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            assert dest.exists(), f"{page.relative_to(ROOT)}: link to {target} names no file"
            if anchor and dest.suffix == ".md":
                assert anchor in _anchors(dest.read_text()), f"{page.relative_to(ROOT)}: no #{anchor} in {path or page.name}"


def _anchors(markdown: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    heads = re.findall(r"^#+ (.+)$", markdown, re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in heads}
