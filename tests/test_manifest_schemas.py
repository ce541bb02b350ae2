"""Every Kubernetes object every shipped stack renders is one the API server would accept.

Custom resources validate against the upstream CRD schemas in schemas/crds (the ones the real
operators install), made strict: an API server silently prunes a field the schema does not know,
so a misspelt field would pass a lenient check and then vanish. Built-in objects validate against
the Kubernetes OpenAPI schema of the stack's cluster.kubernetesVersion (kubernetes-validate, strict).
New stacks are picked up from stacks/ automatically.
"""
from __future__ import annotations

import copy
import dataclasses
import functools
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml
from pulumi.runtime import rpc

from components.config.schema import ClusterSettings
from components.offline.runner import load_stack_yaml, stack_file, stack_names
from tests.support.plans import manifests, planned

CRDS = Path(__file__).resolve().parents[1] / "schemas" / "crds"


def _strict(schema):
    """Close every object schema that lists its properties and does not preserve unknown fields."""
    if isinstance(schema, dict):
        out = {k: _strict(v) for k, v in schema.items()}
        if ("properties" in out and "additionalProperties" not in out
                and not out.get("x-kubernetes-preserve-unknown-fields")):
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [_strict(v) for v in schema]
    return schema


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """Some CRDs hold a bare `=` (YAML's value tag) in an enum: read it as the string it is."""


_Loader.add_constructor("tag:yaml.org,2002:value", lambda loader, node: loader.construct_scalar(node))


@functools.lru_cache(maxsize=None)
def crd_schemas(group: str | None = None) -> dict[tuple[str, str], object]:
    """(apiVersion, kind) -> a validator for that version's openAPIV3Schema; the CRD files are named
    <group>_<plural>.yaml, so only the group's files are read."""
    out = {}
    pattern = f"{group}_*.yaml" if group else "*.yaml"
    for path in sorted(CRDS.rglob(pattern)):
        for doc in yaml.load_all(path.read_text(), Loader=_Loader):
            if not doc or doc.get("kind") != "CustomResourceDefinition":
                continue
            spec = doc["spec"]
            for v in spec["versions"]:
                schema = _strict(copy.deepcopy(v["schema"]["openAPIV3Schema"]))
                out[(f"{spec['group']}/{v['name']}", spec["names"]["kind"])] = jsonschema.Draft7Validator(schema)
    return out


def _plain(value):
    """What the API server receives: secrets unwrapped (the rendered files mask them), and integral
    numbers as integers (the offline recorder carries numbers as protobuf floats)."""
    if rpc.is_rpc_secret(value):
        return _plain(value["value"])
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def objects(stack: str) -> dict[str, dict]:
    return manifests([dataclasses.replace(r, inputs=_plain(r.inputs)) for r in planned(stack).resources])


def kubernetes_version(stack: str) -> str:
    cluster = load_stack_yaml(stack_file(stack)).get("vllm-platform:cluster") or {}
    if isinstance(cluster, str):
        cluster = yaml.safe_load(cluster)
    return str(cluster.get("kubernetesVersion") or ClusterSettings().kubernetes_version)


def problems(obj: dict, k8s_version: str) -> list[str]:
    key = (obj["apiVersion"], obj["kind"])
    group = obj["apiVersion"].rpartition("/")[0]
    validator = crd_schemas(group).get(key) if "." in group else None
    if validator is not None:
        return [f"{'.'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}"
                for e in validator.iter_errors(obj)]
    try:
        kubernetes_validate.validate(obj, k8s_version, strict=True)
    except kubernetes_validate.ValidationError as e:
        return [f"{'.'.join(map(str, e.path)) or '(root)'}: {e.message}"]
    except kubernetes_validate.SchemaNotFoundError as e:
        return [f"no schema: {e.message} (add its CRD to schemas/crds or use a built-in kind)"]
    return []


@pytest.mark.parametrize("stack", stack_names())
def test_every_object_validates(stack):
    version = kubernetes_version(stack)
    objs = objects(stack)
    assert objs, f"{stack} renders no Kubernetes objects"
    failures = {name: p for name, obj in objs.items() if (p := problems(obj, version))}
    assert not failures, f"{stack} (Kubernetes {version}): " + "; ".join(
        f"{name}: {' | '.join(p[:3])}" for name, p in failures.items())


def test_strict_crd_check_catches_a_misspelt_field():
    obj = {"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "metadata": {"name": "x"},
           "spec": {"scaleTargetRef": {"name": "x"}, "minReplicas": 1, "triggers": []}}
    assert any("minReplicas" in p for p in problems(obj, "1.33"))


def test_builtin_check_catches_a_wrong_type():
    obj = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "x"},
           "spec": {"minAvailable": 1, "selector": {"matchLabels": "app=x"}}}
    assert problems(obj, "1.33")


def test_unknown_custom_kind_is_reported():
    obj = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "x"}}
    assert any(p.startswith("no schema") for p in problems(obj, "1.33"))


def test_crd_directory_holds_the_operators_the_stack_uses():
    kinds = {kind for group in ("ray.io", "keda.sh", "monitoring.coreos.com") for _, kind in crd_schemas(group)}
    assert {"RayService", "ScaledObject", "ServiceMonitor", "PodMonitor", "PrometheusRule"} <= kinds
