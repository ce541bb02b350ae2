"""Values in a stack file that only stand in for the user's own: the shipped stacks carry documentation
addresses, example AWS accounts and certificates so that they plan offline; `plan` names each one left in a
stack so that it is replaced before `pulumi up`. Pure: a stack file's `config:` mapping in, warnings out.
"""
from __future__ import annotations

import ipaddress
import re
from typing import Any, Iterator

from .base import PROJECT

# RFC 5737 (IPv4 TEST-NET-1/2/3) and RFC 3849 (IPv6): ranges for documentation, never routed.
DOCUMENTATION_NETWORKS = tuple(ipaddress.ip_network(n) for n in
                               ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "2001:db8::/32"))
# The account ids AWS's own documentation uses in example ARNs (docs.aws.amazon.com, e.g. the IAM
# identifiers page: arn:aws:iam::123456789012:user/JohnDoe); 000000000000 is the all-zero stand-in.
EXAMPLE_ACCOUNTS = ("123456789012", "000000000000")
_ARN_ACCOUNT = re.compile(r"^arn:aws[\w-]*:[^:]*:[^:]*:(\d{12}):")
_ZERO_CERTIFICATE = re.compile(r":certificate/0{8}-0{4}-0{4}-0{4}-0{12}$")
# RFC 2606: second-level domains reserved for documentation
_EXAMPLE_HOST = re.compile(r"(^|[./@])example\.(com|net|org)\.?($|[/:])", re.I)


def placeholder_problem(value: str) -> str | None:
    """What example `value` is, or None."""
    try:
        net = ipaddress.ip_network(value, strict=False)
    except ValueError:
        net = None
    if net is not None:
        doc = next((d for d in DOCUMENTATION_NETWORKS if net.version == d.version and net.subnet_of(d)), None)
        return f"a documentation address range ({doc}, never routed)" if doc else None
    if _ZERO_CERTIFICATE.search(value):
        return "an all-zero example certificate ARN"
    m = _ARN_ACCOUNT.match(value)
    if m and m.group(1) in EXAMPLE_ACCOUNTS:
        return f"an example ARN (account {m.group(1)})"
    if _EXAMPLE_HOST.search(value):
        return "an example.com/.net/.org documentation host name"
    return None


def _walk(value: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, dict):
        if set(value) == {"secure"}:
            return  # ciphertext
        for k, v in value.items():
            yield from _walk(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _walk(v, f"{path}[{i}]")
    elif isinstance(value, str):
        yield path, value


def placeholder_warnings(config: dict[str, Any]) -> list[str]:
    """One line per placeholder value in a stack file's `config:` (namespaced keys), naming its field: the
    project's keys by their path (`aws.endpointPublicAccessCidrs[0]`), other namespaces' in full (`aws:region`)."""
    out = []
    for key, value in config.items():
        root = key[len(PROJECT) + 1:] if key.startswith(PROJECT + ":") else key
        for path, text in _walk(value, root):
            what = placeholder_problem(text)
            if what:
                out.append(f"{path}: {text} is {what}; replace it with your own before `pulumi up`")
    return out
