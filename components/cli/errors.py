"""The CLI's exit codes and how a command fails: shared by every subcommand and by `python -m components.policy_facts`.

Exit codes: 0 ok; 2 bad input (arguments, a stack file's YAML or its config, a catalog data file);
3 no topology fits; 4 a mandatory policy failed.
"""
from __future__ import annotations

import sys

from ..catalog.tables import FIX, DataError  # reads no table: the catalog's names load on first use

EXIT_BAD_INPUT, EXIT_NO_FIT, EXIT_POLICY = 2, 3, 4


def _fail(code: int, message: str) -> int:
    print(message, file=sys.stderr)
    return code


def data_error(e: DataError) -> int:
    """A catalog data file that does not match its schema: its file, line and column, and the fix (exit 2)."""
    return _fail(EXIT_BAD_INPUT, f"{e}\n{FIX}")
