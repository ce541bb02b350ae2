"""What a rule is, the verdict it gives, and the property access every rule shares.

A rule is a plain function `(resource_type, props) -> messages`; a stack rule sees every resource
at once. `props` is plain data (dicts, lists, scalars) in the camelCase of the serialized inputs;
a value Pulumi does not know yet (preview) is UNKNOWN, and rules never report on it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

MANDATORY = "mandatory"
ADVISORY = "advisory"
UNKNOWN = "[unknown]"  # what components.offline.render.sanitize writes; plain() maps the SDK's sentinels to it

# The pulumi_policy SDK's markers for values unknown during preview (pulumi_policy/proxy.py).
_POLICY_SDK_UNKNOWNS = frozenset({
    "1c4a061d-8072-4f0a-a4cb-0ff528b18fe7", "3eeb2bf0-c639-47a8-9e75-3b44932eb421",
    "04da6b54-80e4-46f7-96ec-b56ff0331ba9", "6a19a0b0-7e62-4c92-b797-7f8e31da9cc2",
    "030794c1-ac77-496b-92df-f27374a8bd58", "e48ece36-62e2-4504-bad9-02848725956a",
    "dd056dcd-154b-4c76-9bd3-c8f88648b5ff",
})


@dataclass(frozen=True)
class Rule:
    """A check of one resource at a time."""
    name: str
    description: str
    level: str  # MANDATORY | ADVISORY
    remedy: str  # one line: what to change
    types: frozenset[str]  # Pulumi type tokens it looks at
    check: Callable[[str, dict], Iterable[str]]

    def messages(self, resource_type: str, props: dict) -> list[str]:
        if resource_type not in self.types:
            return []
        return list(self.check(resource_type, props))


@dataclass(frozen=True)
class StackResource:
    type: str
    name: str
    props: dict
    urn: str | None = None


@dataclass(frozen=True)
class StackRule:
    """A check that needs several resources (e.g. a PDB for each workload)."""
    name: str
    description: str
    level: str
    remedy: str
    check: Callable[[list[StackResource]], Iterable[tuple[StackResource, str]]]


@dataclass(frozen=True)
class Verdict:
    level: str
    rule: str
    resource: str
    message: str  # what is wrong, then the remedy


RULES: list[Rule] = []
STACK_RULES: list[StackRule] = []


def rule(name: str, level: str, types: Iterable[str], description: str, remedy: str):
    """Register `fn(resource_type, props) -> Iterable[str]` as a rule."""
    def register(fn):
        RULES.append(Rule(name, description, level, remedy, frozenset(types), fn))
        return fn
    return register


def stack_rule(name: str, level: str, description: str, remedy: str):
    def register(fn):
        STACK_RULES.append(StackRule(name, description, level, remedy, fn))
        return fn
    return register


def with_remedy(message: str, remedy: str) -> str:
    return f"{message}; fix: {remedy}"


# --- property access -------------------------------------------------------------------------

def plain(value: Any) -> Any:
    """Plain data from what the policy SDK hands over (read-only proxies that raise on unknowns)."""
    if isinstance(value, str):
        return UNKNOWN if value in _POLICY_SDK_UNKNOWNS else value
    if isinstance(value, Mapping):
        target = value["__target"] if type(value).__name__ == "_DictProxy" else value
        return {k: plain(v) for k, v in target.items()}
    if isinstance(value, (list, tuple)) or type(value).__name__ == "_ListProxy":
        target = value["__target"] if type(value).__name__ == "_ListProxy" else value
        return [plain(v) for v in target]
    return value


def known(value: Any) -> bool:
    return value is not None and value != UNKNOWN


def get(obj: Any, *path: str | int, default: Any = None) -> Any:
    """obj[path[0]][path[1]]...; default where a step is missing or not a container."""
    for key in path:
        if isinstance(obj, dict) and isinstance(key, str):
            obj = obj.get(key)
        elif isinstance(obj, list) and isinstance(key, int) and -len(obj) <= key < len(obj):
            obj = obj[key]
        else:
            return default
        if obj is None:
            return default
    return obj


def as_list(value: Any) -> list:
    return value if isinstance(value, list) else []


def as_dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def as_number(value: Any) -> float | None:
    """A count or ratio given as int, float or numeric string ("8", "0.90"); None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def is_true(value: Any) -> bool:
    """Booleans arrive as bool, or as "true"/"false" strings for some AWS fields."""
    return value is True or (isinstance(value, str) and value.lower() == "true")


def is_false(value: Any) -> bool:
    return value is False or (isinstance(value, str) and value.lower() == "false")
