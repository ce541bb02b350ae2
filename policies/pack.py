"""The rules as Pulumi policies. Building them is cheap and side-effect free (tests call
`policy.validate(ResourceValidationArgs(...), report)`); only __main__.py constructs the PolicyPack,
which starts the analyzer server and blocks."""
from __future__ import annotations

from pulumi_policy import (EnforcementLevel, ReportViolation, ResourceValidationArgs, ResourceValidationPolicy,
                           StackValidationArgs, StackValidationPolicy)

from .rules import MANDATORY, RULES, STACK_RULES, Rule, StackResource, StackRule, plain
from .rules.core import with_remedy

PACK_NAME = "vllm-platform"
LEVELS = {MANDATORY: EnforcementLevel.MANDATORY}


def _level(level: str) -> EnforcementLevel:
    return LEVELS.get(level, EnforcementLevel.ADVISORY)


def resource_policy(rule: Rule) -> ResourceValidationPolicy:
    def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
        if args.resource_type not in rule.types:
            return
        for message in rule.messages(args.resource_type, plain(args.props)):
            report_violation(with_remedy(message, rule.remedy), None)

    return ResourceValidationPolicy(name=rule.name, description=rule.description, validate=validate,
                                    enforcement_level=_level(rule.level), remediation_steps=rule.remedy)


def stack_policy(rule: StackRule) -> StackValidationPolicy:
    def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
        resources = [StackResource(r.resource_type, r.name, plain(r.props), r.urn) for r in args.resources]
        for resource, message in rule.check(resources):
            report_violation(with_remedy(message, rule.remedy), resource.urn)

    return StackValidationPolicy(name=rule.name, description=rule.description, validate=validate,
                                 enforcement_level=_level(rule.level), remediation_steps=rule.remedy)


def policies() -> list:
    return [*map(resource_policy, RULES), *map(stack_policy, STACK_RULES)]
