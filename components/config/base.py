"""Shared pieces of the stack-file schema."""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

PROJECT = "vllm-platform"
DNS_LABEL = r"^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$"


def field_error(field: str, message: str) -> ValueError:
    """An error from a model validator that belongs to one field (the loader appends it to the path)."""
    return ValueError(f"@{field}@ {message}")


class _Base(BaseModel):
    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True, frozen=True)
