"""The suite stays inside the repository: a user clones only the repo, so nothing beside it may be read."""
from __future__ import annotations

import os
import sys
import tempfile


class OutsideRepo(RuntimeError):
    """The suite touched a file beside the repository: a fresh clone has nothing there."""


def beside_repo(path: str, root: str, tempdir: str) -> bool:
    """Whether `path` lies under the repository's parent directory but not inside the repository (a sibling
    checkout, reference material). Where the clone itself sits in the temp directory (a CI runner cloning into /tmp),
    the temp files Python and pytest make there (tmp*, pytest-of-*) are not the repository's neighbours."""
    parent = os.path.dirname(root)
    if path == root or path.startswith(root + os.sep):
        return False
    if path == parent:
        return True
    if not path.startswith(parent + os.sep):
        return False
    sibling = path[len(parent) + 1:].split(os.sep, 1)[0]
    return not (parent == tempdir and sibling.startswith(("tmp", "pytest-of-")))


def install(root: str) -> None:
    """Audit hook: refuse every file or directory access beside the repository (the suite must pass with
    nothing beside it). The interpreter and site-packages lie elsewhere."""
    temp = os.path.realpath(tempfile.gettempdir())

    def stays_in_repo(event: str, args: tuple) -> None:
        if event not in ("open", "os.listdir", "os.scandir", "glob.glob") or not args:
            return
        target = args[0]
        if not isinstance(target, (str, bytes, os.PathLike)):
            return
        path = os.path.abspath(os.fsdecode(target))
        if beside_repo(path, root, temp):
            raise OutsideRepo(f"{path} is outside the repository {root}; vendor what the test needs into the repo")

    sys.addaudithook(stays_in_repo)
