"""Write what an offline plan registered: resources.json, topology.json and one YAML per Kubernetes object."""
from __future__ import annotations

import base64
import json
import re
import shutil
from pathlib import Path
from typing import Any

import yaml
from pulumi.runtime import rpc

from .mocks import Recorded

SECRET = "[secret]"
# What a redacted value of a Secret's `data` becomes: base64 of SECRET, so the object stays a valid
# Secret (data values are base64) and a reader still sees it is redacted.
SECRET_DATA = base64.b64encode(SECRET.encode()).decode()
NOT_MANIFESTS = ("kubernetes:helm.sh/", "kubernetes:yaml", "kubernetes:kustomize")


def redact(value: Any) -> Any:
    """A secret's shape without its content: maps keep their keys and lists their length, every leaf
    becomes SECRET (so a Secret's stringData stays a map of key -> string)."""
    if rpc.is_rpc_secret(value):
        return redact(value.get("value"))
    if isinstance(value, dict):
        return {k: redact(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact(v) for v in value]
    return SECRET


def sanitize(value: Any) -> Any:
    """Plain data for files: secrets redacted (shape kept, see redact), unknowns marked, resource
    references as URNs."""
    if rpc.is_rpc_secret(value):
        return redact(value)
    if value is rpc.UNKNOWN or (isinstance(value, str) and value == rpc.UNKNOWN):
        return "[unknown]"
    if isinstance(value, dict):
        return {k: sanitize(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [sanitize(v) for v in value]
    if hasattr(value, "urn") and not isinstance(value, (str, bytes)):
        return "[resource]"
    if isinstance(value, float) and value.is_integer():
        return int(value)  # Pulumi's wire format has one number type; manifests want `replicas: 2`
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def sort_keys(value: Any) -> Any:
    """Maps with their keys in order, at every depth (the wire format's map order is not stable)."""
    if isinstance(value, dict):
        return {k: sort_keys(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [sort_keys(v) for v in value]
    return value


def is_manifest(r: Recorded) -> bool:
    return r.custom and r.type.startswith("kubernetes:") and not r.type.startswith(NOT_MANIFESTS) \
        and not r.type.startswith("pulumi:providers")


def manifest(r: Recorded) -> dict:
    body = sort_keys(sanitize(r.inputs))
    head = {"apiVersion": body.pop("apiVersion", None), "kind": body.pop("kind", None),
            "metadata": body.pop("metadata", {})}
    if head["kind"] == "Secret" and isinstance(body.get("data"), dict):
        body["data"] = {k: SECRET_DATA if v == SECRET else v for k, v in body["data"].items()}
    return {**head, **body}


def manifest_filename(m: dict) -> str:
    meta = m.get("metadata") or {}
    parts = [m.get("kind") or "object", meta.get("namespace") or "cluster", meta.get("name") or "unnamed"]
    return "_".join(re.sub(r"[^a-z0-9.-]+", "-", str(p).lower()) for p in parts) + ".yaml"


def manifests(resources: list[Recorded]) -> dict[str, dict]:
    out = {}
    for r in resources:
        if is_manifest(r):
            m = manifest(r)
            name = manifest_filename(m)
            if name in out:
                raise ValueError(f"two Kubernetes objects render to {name}: names must be unique per kind")
            out[name] = m
    return dict(sorted(out.items()))


# libyaml's emitter where PyYAML has it (the same documents; ~6x faster than the pure-Python one, which took most of
# an offline plan's time: a plan writes ~70 manifests, the vendored CRDs among them)
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _dump(obj, **kw) -> str:
    return yaml.dump(obj, Dumper=_DUMPER, allow_unicode=False, **kw)


def resource_rows(resources: list[Recorded]) -> list[dict]:
    """One row per resource, sorted by type and name: the same plan gives the same bytes every run."""
    rows = [{"type": r.type, "name": r.name, "parent": r.parent, "inputs": sanitize(r.inputs)} for r in resources]
    return sorted(rows, key=lambda row: (row["type"], row["name"]))


def write_plan(out_dir: Path, resources: list[Recorded], topology: dict,
               extra: dict[str, str] | None = None) -> dict[str, dict]:
    """Write the plan into `out_dir` (replacing it); `extra`: more files (name -> text), e.g. the diagram."""
    if out_dir.exists():
        shutil.rmtree(out_dir)
    (out_dir / "manifests").mkdir(parents=True)
    # one resource per line: json's C encoder (an indented dump runs the pure-Python one, seconds for a plan's CRDs),
    # and a line diff of two plans still shows which resources changed (`plan --review` compares the rows)
    rows = resource_rows(resources)
    (out_dir / "resources.json").write_text(
        "[\n" + ",\n".join(json.dumps(row, sort_keys=True) for row in rows) + "\n]\n" if rows else "[]\n")
    for name, text in (extra or {}).items():
        (out_dir / name).write_text(text)
    (out_dir / "topology.json").write_text(json.dumps(topology, indent=2, sort_keys=True) + "\n")
    objs = manifests(resources)
    for name, m in objs.items():
        (out_dir / "manifests" / name).write_text(_dump(m, sort_keys=False, width=120))
    releases = [r for r in resources if r.type.startswith("kubernetes:helm.sh/")]
    if releases:
        (out_dir / "helm").mkdir()
        for r in releases:
            (out_dir / "helm" / f"{r.name}.yaml").write_text(_dump(sanitize(r.inputs), sort_keys=True))
    return objs
