"""The repository stands alone: the suite reads nothing beside it (a user clones only the repo)."""
from __future__ import annotations

import os

import pytest

from tests.support.guard import beside_repo
from tests.support.plans import ROOT


def test_reading_beside_the_repository_is_refused():
    with pytest.raises(RuntimeError, match="outside the repository"):
        (ROOT.parent / "shared" / "DESIGN.md").read_text()
    # refused whether or not anything is there: a fresh clone has nothing beside it
    with pytest.raises(RuntimeError, match="vendor what the test needs"):
        (ROOT.parent / "no-such-sibling" / "x.yaml").read_text()
    with pytest.raises(RuntimeError, match="vendor what the test needs"):
        os.listdir(ROOT.parent)


def test_what_counts_as_beside_the_repository():
    root, tmp = "/srv/ci/main", "/tmp"
    assert beside_repo("/srv/ci/shared/DESIGN.md", root, tmp)
    assert beside_repo("/srv/ci", root, tmp)
    assert beside_repo("/srv/ci/main-old/x", root, tmp)
    assert not beside_repo("/srv/ci/main/schemas/crds/README.md", root, tmp)
    assert not beside_repo("/usr/lib/python3.11/os.py", root, tmp)
    # a clone in the temp directory still may not read its neighbours, but pytest's and Python's temp files pass
    assert beside_repo("/tmp/shared/DESIGN.md", "/tmp/clone", tmp)
    assert not beside_repo("/tmp/pytest-of-root/pytest-3/x", "/tmp/clone", tmp)
    assert not beside_repo("/tmp/tmpab12cd/f", "/tmp/clone", tmp)


def test_reading_inside_the_repository_is_allowed():
    assert (ROOT / "schemas" / "crds" / "README.md").read_text().startswith("# Vendored")


def test_every_vendored_file_is_listed_with_its_source():
    listed = {line.split("\t")[0] for line in (ROOT / "schemas" / "sources.tsv").read_text().splitlines()
              if line and not line.startswith("#")}
    on_disk = {str(p.relative_to(ROOT / "schemas" / "crds")) for p in (ROOT / "schemas" / "crds").rglob("*.yaml")}
    assert on_disk <= listed, f"vendored without a source row in schemas/sources.tsv: {sorted(on_disk - listed)}"
    readme = (ROOT / "schemas" / "crds" / "README.md").read_text()
    assert all(f"| {f} |" in readme for f in on_disk)
