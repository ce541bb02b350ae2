"""Shared pieces of the stack-file schema."""
from __future__ import annotations

import ipaddress

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

PROJECT = "vllm-platform"
DNS_LABEL = r"^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$"


def field_error(field: str, message: str) -> ValueError:
    """An error from a model validator that belongs to one field (the loader appends it to the path)."""
    return ValueError(f"@{field}@ {message}")


class _Base(BaseModel):
    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True, frozen=True)


def cidr_blocks(value, ipv4_only: bool = False):
    """A CIDR block or a list of them, each in canonical form (203.0.113.0/24, not 203.0.113.7/24)."""
    check = ipaddress.IPv4Network if ipv4_only else ipaddress.ip_network
    bad = []
    for cidr in [value] if isinstance(value, str) else value or []:
        try:
            check(cidr, strict=True)
        except ValueError:
            bad.append(cidr)
    if bad:
        kind = "an IPv4 CIDR block" if ipv4_only else "a CIDR block"
        raise ValueError(f"not {kind}: {', '.join(bad)}; e.g. 203.0.113.7/32")
    return value
