"""Offline plans of shipped stacks (cached: plans are deterministic) and of in-memory configs, and lookups
in what they recorded."""
from __future__ import annotations

import functools
import json
from pathlib import Path

from components.offline.render import manifests, sanitize
from components.offline.runner import OFFLINE_PEM, OFFLINE_SECRET, plan_stack_offline, run_program

ROOT = Path(__file__).resolve().parents[2]


@functools.lru_cache(maxsize=None)
def planned(stack: str, preview: bool = False):
    """Offline plan of stacks/Pulumi.<stack>.yaml (or a stack file path), cached per test process."""
    return plan_stack_offline(stack, preview=preview)


def plan_config(values: dict, preview: bool = False, secrets: dict | None = None, stack: str = "test"):
    """Offline plan of an in-memory config: {"cloud": "aws", "models": [...], ...} (keys without prefix).

    Secrets default to a placeholder hfToken; pass secrets={} to leave it out. gatewayApiKeys gets a placeholder
    unless given.
    """
    secrets = {"hfToken": OFFLINE_SECRET} if secrets is None else dict(secrets)
    if "gatewayApiKeys" not in secrets:  # a placeholder key per gateway client (components/config/gateway.py)
        from components.config.gateway import raw_client_names  # a name, or {name, priority}
        clients = raw_client_names((values.get("gateway") or {}).get("clients"))
        secrets["gatewayApiKeys"] = json.dumps({c: f"{OFFLINE_SECRET}-{c}" for c in clients})
    if ((values.get("gateway") or {}).get("tls") or {}).get("mode") == "certificate":  # the PEM pair it takes
        secrets = {**OFFLINE_PEM, **secrets}
    config = {f"vllm-platform:{k}": v if isinstance(v, str) else json.dumps(v) for k, v in values.items()}
    config.update({f"vllm-platform:{k}": v for k, v in secrets.items()})
    resources, exports = run_program(config, [f"vllm-platform:{k}" for k in secrets], stack, preview)
    return resources, exports


def by_type(resources, type_token: str):
    return [r for r in resources if r.type == type_token]


def one(resources, type_token: str, name: str | None = None):
    found = [r for r in by_type(resources, type_token) if name is None or r.name == name]
    assert len(found) == 1, f"expected one {type_token} {name or ''}, found {[r.name for r in found]}"
    return found[0]


__all__ = ["ROOT", "planned", "plan_config", "by_type", "one", "manifests", "sanitize", "OFFLINE_SECRET"]


def prod_gateway(cloud: str) -> dict:
    """A `gateway:` block production accepts (plain HTTP is for dev, components/config/gateway.py): ACM on AWS, a
    kubernetes.io/tls Secret elsewhere (placeholders, like the shipped prod stacks')."""
    if cloud == "aws":
        return {"tls": {"mode": "acm",
                        "certificateArn": "arn:aws:acm:us-east-1:123456789012:certificate/00000000-0000-0000-0000-0"}}
    return {"tls": {"mode": "secret", "secretName": "llm-gateway-tls"}}
