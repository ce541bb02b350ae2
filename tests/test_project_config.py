"""Pulumi.yaml's declared config keys against what the Pulumi CLI does with them. The real engine (scripts/e2e)
found it: the CLI refuses to preview a stack that lacks a declared key without a default ("Stack 'dev' is missing
configuration values 'hfToken' and 'kubeconfig'", pkg/v3 workspace/config.go), so an optional secret declared there
made every stack that does not need it unusable."""
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
PROJECT = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())
STACK_FILES = sorted((ROOT / "stacks").glob("Pulumi.*.yaml")) + sorted((ROOT / "tests" / "stacks").glob("Pulumi.*.yaml"))


def required_keys() -> set[str]:
    """Keys of the project namespace the CLI demands of every stack: declared without a default or a value."""
    out = set()
    for key, decl in (PROJECT.get("config") or {}).items():
        if ":" in key and not key.startswith(PROJECT["name"] + ":"):
            continue
        if not isinstance(decl, dict) or ("default" not in decl and "value" not in decl):
            out.add(key.split(":", 1)[-1])
    return out


@pytest.mark.parametrize("stack", STACK_FILES, ids=lambda p: p.name)
def test_every_stack_sets_every_key_the_cli_requires(stack):
    config = yaml.safe_load(stack.read_text()).get("config") or {}
    have = {k.split(":", 1)[1] for k in config if k.startswith(PROJECT["name"] + ":")}
    assert required_keys() - have == set(), f"{stack.name}: `pulumi preview` would stop: missing configuration"


def test_optional_secrets_are_not_declared():
    """A secret only some stacks set (the token of a gated model, a kubeconfig, API keys, a mirror password) cannot
    be declared: the CLI would demand it of every stack. components/config/load.py checks them instead."""
    from components.config.load import SECRET_KEYS
    assert set(SECRET_KEYS) & set(PROJECT.get("config") or {}) == set()
    assert required_keys() == {"cloud"}
