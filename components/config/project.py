"""Where the Pulumi project is: its stack files (stacks/), its program (__main__.py) and build/.

The package may run from a checkout (`python -m components`, an editable install) or from an installed
copy (`pip install .`, the `vllm-platform` console script), so the project is found, in this order:
VLLM_PLATFORM_PROJECT; the current directory or the nearest one above it whose Pulumi.yaml names this
project; the checkout this package was loaded from; else the current directory. `topology`, `table` and `capacity` need none of it.
"""
from __future__ import annotations

import os
from pathlib import Path

import yaml

from .base import PROJECT

ENV = "VLLM_PLATFORM_PROJECT"
SOURCE_ROOT = Path(__file__).resolve().parents[2]  # the checkout, when the package runs from one


def is_project(path: Path) -> bool:
    """A directory holding this project's Pulumi.yaml and program."""
    meta, program = path / "Pulumi.yaml", path / "__main__.py"
    if not (meta.is_file() and program.is_file()):
        return False
    try:
        return (yaml.safe_load(meta.read_text()) or {}).get("name") == PROJECT
    except yaml.YAMLError:
        return False


def project_root(cwd: Path | None = None) -> Path:
    if os.environ.get(ENV):
        return Path(os.environ[ENV]).resolve()
    here = (cwd or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if is_project(candidate):
            return candidate
    # An installed copy (site-packages) is no project: then the stacks are looked for where the user is.
    return SOURCE_ROOT if is_project(SOURCE_ROOT) else here
