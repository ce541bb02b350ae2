"""The Hugging Face commit each catalog repository is served at when a stack names none (models[].revision).

A row is a FACT: the 40-hex commit of that repository, with where it was read. Only commits that could be
checked against a source naming them for that exact repository belong here; a commit copied from an
unrelated project's pin, or typed from memory, would pin the cluster to a snapshot nobody tested, or to
one that does not exist (the prefetch then fails on `hf download --revision`).

EMPTY on purpose (2026-12): no source at hand names a commit of the catalog's repositories (meta-llama/
Llama-3.1-*-Instruct, Qwen/Qwen2.5-*-Instruct, Qwen/Qwen3-*, their FP8 variants) that could be verified
offline: the Hub's own API (`GET https://huggingface.co/api/models/<repo>` -> "sha") was not reachable
from where this table was written, and the public repositories searched pin other models. Until a row is
added, `plan` keeps warning "UNPINNED MODEL in production" and the stack pins with models[].revision.

To add a row: `hf api models/<repo> | jq -r .sha` (or the commit of the snapshot you tested, `ls
$HF_HOME/hub/models--<org>--<name>/snapshots/`), then name that command, its date and the commit's page
(https://huggingface.co/<repo>/commit/<sha>) as the source.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

COMMIT = re.compile(r"^[0-9a-f]{40}$")


@dataclass(frozen=True)
class Revision:
    commit: str  # 40 hex digits
    source: str  # where the commit was read: command or page, and its date


REVISIONS: dict[str, Revision] = {}


def resolved_revision(repo: str) -> str | None:
    """The commit a repository is served at by default, where the table knows it."""
    row = REVISIONS.get(repo)
    return row.commit if row else None
