"""Every rule of the pack, and the entry points that run them over resources.

Three callers run the same functions: the Pulumi policy pack (policies/pack.py, for
`pulumi preview --policy-pack policies`), the offline plan (`evaluate_plan`, called by
`python -m components plan`) and the tests.
"""
from __future__ import annotations

from typing import Iterable

from . import cloud, gateway, lws, production, sizing, workloads  # noqa: F401  (registers the rules)
from .core import (ADVISORY, MANDATORY, RULES, STACK_RULES, Rule, StackResource, StackRule, Verdict, plain,
                   with_remedy)

RULES_BY_NAME: dict[str, Rule | StackRule] = {r.name: r for r in [*RULES, *STACK_RULES]}
_RULES_BY_TYPE: dict[str, list[Rule]] = {}
for _r in RULES:
    for _t in _r.types:
        _RULES_BY_TYPE.setdefault(_t, []).append(_r)


def rules_for(resource_type: str) -> list[Rule]:
    return _RULES_BY_TYPE.get(resource_type, [])


def _label(r: StackResource) -> str:
    return f"{r.name} ({r.type})"


def evaluate_resources(resources: Iterable[StackResource]) -> list[Verdict]:
    """Verdicts of every resource rule and stack rule, mandatory ones first."""
    resources = list(resources)
    out = []
    for r in resources:
        for rule in rules_for(r.type):
            out += [Verdict(rule.level, rule.name, _label(r), with_remedy(m, rule.remedy))
                    for m in rule.messages(r.type, r.props)]
    for rule in STACK_RULES:
        out += [Verdict(rule.level, rule.name, _label(r), with_remedy(m, rule.remedy))
                for r, m in rule.check(resources)]
    return sorted(out, key=lambda v: (v.level != MANDATORY, v.rule, v.resource))


def evaluate_plan(result) -> list[Verdict]:
    """Verdicts for an offline plan (components.offline.runner.PlanResult): the recorded inputs,
    with secrets masked and unknowns marked exactly as the rendered manifests show them."""
    from components.offline.render import sanitize

    return evaluate_resources(StackResource(r.type, r.name, sanitize(r.inputs))
                              for r in result.resources if r.custom)


__all__ = ["ADVISORY", "MANDATORY", "RULES", "STACK_RULES", "RULES_BY_NAME", "Rule", "StackRule",
           "StackResource", "Verdict", "evaluate_plan", "evaluate_resources", "plain", "rules_for"]
