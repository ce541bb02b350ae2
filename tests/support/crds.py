"""Vendored upstream CRD schemas (schemas/crds) as closed validators: an unknown field fails, as the API server
would prune it."""
from __future__ import annotations

import copy

import jsonschema
import yaml

from tests.support.plans import ROOT


def _closed(s):
    if isinstance(s, dict):
        out = {k: _closed(v) for k, v in s.items()}
        if "properties" in out and "additionalProperties" not in out \
                and not out.get("x-kubernetes-preserve-unknown-fields"):
            out["additionalProperties"] = False
        return out
    return [_closed(v) for v in s] if isinstance(s, list) else s


def crd_validator(group_file: str, version: str) -> jsonschema.Draft7Validator:
    """The schema of `version` in schemas/crds/<group_file>, closed."""
    doc = yaml.safe_load((ROOT / "schemas" / "crds" / group_file).read_text())
    [v] = [v for v in doc["spec"]["versions"] if v["name"] == version]
    return jsonschema.Draft7Validator(_closed(copy.deepcopy(v["schema"]["openAPIV3Schema"])))


def spec_errors(validator, spec: dict) -> list[str]:
    return [e.message for e in validator.iter_errors({"spec": spec})]
