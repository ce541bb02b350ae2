"""The command line: `python -m components` / `vllm-platform` (topology | table | stacks | plan | capacity).

`commands` holds the parser and the pure commands, `errors` the exit codes, `topology` and `capacity` one
subcommand each, `summary` the plan's text. Importing this package loads only `commands` (which reads no catalog
table and loads no Pulumi SDK): `components.cli:main` is the console script.
"""
from .commands import (
    EXIT_BAD_INPUT,
    EXIT_NO_FIT,
    EXIT_POLICY,
    data_error,
    main,
    parser,
    render_stacks,
    render_table,
    stacks_rows,
    table_rows,
    version,
)

__all__ = ["EXIT_BAD_INPUT", "EXIT_NO_FIT", "EXIT_POLICY", "data_error", "main", "parser", "render_stacks",
           "render_table", "stacks_rows", "table_rows", "version"]


def __getattr__(name: str):
    """The plan's serving text, importable from here as before (loaded on first use)."""
    if name == "serving_lines":
        from .summary import serving_lines
        return serving_lines
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
