"""Reading an offline plan like `pulumi preview`: the tree of named resources with their key inputs, and
what changed between two plans (their resources.json files).

Pure functions over the rows render.resource_rows writes (type, name, parent, inputs; secrets already
redacted), so the tree printed at plan time and the diff against an older plan read the same data.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Iterator

from ..upstream.versions import CHARTS

Row = dict[str, Any]
MAX_PATHS = 8  # changed input paths listed per resource before "+N more"


def key(row: Row) -> str:
    return f"{row['type']}::{row['name']}"


def _get(d: Any, *path: str | int) -> Any:
    for p in path:
        if isinstance(p, int):
            d = d[p] if isinstance(d, list) and len(d) > p else None
        else:
            d = d.get(p) if isinstance(d, dict) else None
    return d


def _range(lo: Any, want: Any, hi: Any) -> str:
    return f"{want} ({lo}–{hi})" if lo is not None and hi is not None else str(want)


def _images(spec: Any) -> list[str]:
    """Container images anywhere under a pod-bearing object, in order, without repeats."""
    out: list[str] = []

    def walk(x: Any) -> None:
        if isinstance(x, dict):
            for k in ("initContainers", "containers"):
                for c in x.get(k) or []:
                    if isinstance(c, dict) and isinstance(c.get("image"), str) and c["image"] not in out:
                        out.append(c["image"])
            for k, v in x.items():
                if k not in ("initContainers", "containers"):
                    walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
    walk(spec)
    return out


def _workload(i: Row) -> list[str]:
    parts = []
    if _get(i, "spec", "replicas") is not None:
        parts.append(f"replicas {_get(i, 'spec', 'replicas')}")
    images = _images(i.get("spec"))
    if images:
        parts.append("image " + ", ".join(images))
    return parts


def _eks_node_group(i: Row) -> list[str]:
    s = i.get("scalingConfig") or {}
    return [f"instance {', '.join(i.get('instanceTypes') or ['(launch template)'])}",
            f"nodes {_range(s.get('minSize'), s.get('desiredSize'), s.get('maxSize'))}"]


def _gke_node_pool(i: Row) -> list[str]:
    a = i.get("autoscaling") or {}
    lo = a.get("minNodeCount", a.get("totalMinNodeCount"))
    hi = a.get("maxNodeCount", a.get("totalMaxNodeCount"))
    count = i.get("nodeCount", i.get("initialNodeCount"))
    accels = [f"{g.get('count')} x {g.get('type')}" for g in _get(i, "nodeConfig", "guestAccelerators") or []]
    return [f"machine {_get(i, 'nodeConfig', 'machineType')}", *([f"gpus {', '.join(accels)}"] if accels else []),
            f"nodes {_range(lo, count, hi)}"]


def _release(i: Row) -> list[str]:
    """The chart and its version, and where from when that is not the chart's own repository (`charts.mirror`); an
    archive on disk has no version input (its file name carries it)."""
    chart, version, repo = i.get("chart"), i.get("version"), _get(i, "repositoryOpts", "repo")
    line = f"chart {chart}" + (f" {version}" if version is not None else "")
    if repo and repo != next((c.repo for c in CHARTS.values() if c.chart == chart), None):
        line += f" from {repo}"
    return [line, f"namespace {i.get('namespace')}"]


def _asg_schedule(i: Row) -> list[str]:
    """A scheduled action on a GPU group's Auto Scaling group (a Capacity Block's start and end)."""
    n = [int(v) if isinstance(v, float) and v.is_integer() else v
         for v in (i.get("minSize"), i.get("desiredCapacity"), i.get("maxSize"))]
    return [f"at {i.get('startTime')}", f"nodes {_range(n[0], n[1], n[2])}"]


# type token -> the inputs a reviewer looks at first (like `pulumi preview --diff`'s headline fields).
KEY_INPUTS: dict[str, Callable[[Row], list[str]]] = {
    "kubernetes:helm.sh/v3:Release": _release,
    "aws:eks/cluster:Cluster": lambda i: [f"kubernetes {i.get('version')}"],
    "aws:eks/nodeGroup:NodeGroup": _eks_node_group,
    "aws:autoscaling/schedule:Schedule": _asg_schedule,
    "aws:eks/addon:Addon": lambda i: [f"{i.get('addonName')} {i.get('addonVersion')}"],
    "aws:ec2/launchTemplate:LaunchTemplate": lambda i: [f"instance {i['instanceType']}"] if i.get("instanceType") else [],
    "aws:efs/fileSystem:FileSystem": lambda i: [f"throughput {i.get('throughputMode')}"],
    "gcp:container/cluster:Cluster": lambda i: [f"kubernetes {i.get('minMasterVersion')}",
                                                f"channel {_get(i, 'releaseChannel', 'channel')}"],
    "gcp:container/nodePool:NodePool": _gke_node_pool,
    "gcp:filestore/instance:Instance": lambda i: [f"{i.get('tier')} {_get(i, 'fileShares', 'capacityGb')} GB"],
    "kubernetes:apps/v1:Deployment": _workload,
    "kubernetes:apps/v1:DaemonSet": _workload,
    "kubernetes:apps/v1:StatefulSet": _workload,
    "kubernetes:batch/v1:Job": _workload,
    "kubernetes:ray.io/v1:RayService": _workload,
    "kubernetes:core/v1:PersistentVolumeClaim": lambda i: [
        f"{_get(i, 'spec', 'resources', 'requests', 'storage')} {','.join(_get(i, 'spec', 'accessModes') or [])}",
        f"class {_get(i, 'spec', 'storageClassName')}"],
}


def key_inputs(row: Row) -> str:
    fn = KEY_INPUTS.get(row["type"])
    try:
        parts = fn(row["inputs"] or {}) if fn else []
    except (KeyError, TypeError, AttributeError):
        parts = []
    return "; ".join(p for p in parts if p)


def sort_rows(rows: list[Row]) -> list[Row]:
    """Stable review order: by type, then name (registration order can change between runs)."""
    return sorted(rows, key=lambda r: (r["type"], r["name"]))


def tree_lines(rows: list[Row]) -> list[str]:
    """The resources as a tree, component -> children, like `pulumi preview`."""
    keys = {key(r) for r in rows}
    children: dict[str | None, list[Row]] = {}
    for r in rows:
        parent = r.get("parent") if r.get("parent") in keys else None
        children.setdefault(parent, []).append(r)
    for kids in children.values():
        kids.sort(key=lambda r: (r["type"].startswith("pulumi:providers:"), r["type"], r["name"]))

    lines: list[str] = []

    def walk(parent: str | None, prefix: str) -> None:
        kids = children.get(parent, [])
        for n, r in enumerate(kids):
            last = n == len(kids) - 1
            branch = "" if parent is None else ("└─ " if last else "├─ ")
            extra = key_inputs(r)
            lines.append(f"{prefix}{branch}{r['type']}  {r['name']}" + (f"  [{extra}]" if extra else ""))
            walk(key(r), prefix + ("" if parent is None else ("   " if last else "│  ")))
    walk(None, "")
    return lines


def changed_paths(old: Any, new: Any, path: str = "") -> Iterator[str]:
    """Dotted paths (list items as [i]) where `new` differs from `old`."""
    if isinstance(old, dict) and isinstance(new, dict):
        for k in sorted(set(old) | set(new)):
            sub = f"{path}.{k}" if path else str(k)
            if k not in old or k not in new:
                yield sub
            else:
                yield from changed_paths(old[k], new[k], sub)
    elif isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for n, (a, b) in enumerate(zip(old, new)):
            yield from changed_paths(a, b, f"{path}[{n}]")
    elif old != new:
        yield path or "(value)"


def diff_rows(old: list[Row], new: list[Row]) -> tuple[list[Row], list[Row], list[tuple[Row, list[str]]]]:
    """(added, removed, changed with their changed input paths) between two plans' resource rows."""
    before, after = {key(r): r for r in old}, {key(r): r for r in new}
    added = sort_rows([after[k] for k in after.keys() - before.keys()])
    removed = sort_rows([before[k] for k in before.keys() - after.keys()])
    changed = []
    for r in sort_rows([after[k] for k in after.keys() & before.keys()]):
        o = before[key(r)]
        paths = list(changed_paths(o.get("inputs"), r.get("inputs")))
        if o.get("parent") != r.get("parent"):
            paths.insert(0, "(parent)")
        if paths:
            changed.append((r, paths))
    return added, removed, changed


def diff_lines(old: list[Row], new: list[Row]) -> list[str]:
    added, removed, changed = diff_rows(old, new)
    lines = [f"  + {r['type']}  {r['name']}" for r in added]
    lines += [f"  - {r['type']}  {r['name']}" for r in removed]
    for r, paths in changed:
        shown = ", ".join(paths[:MAX_PATHS]) + (f", +{len(paths) - MAX_PATHS} more" if len(paths) > MAX_PATHS else "")
        lines.append(f"  ~ {r['type']}  {r['name']}: {shown}")
    lines.append(f"{len(added)} to add, {len(changed)} to change, {len(removed)} to delete")
    return lines


def read_rows(plan_dir: Path) -> list[Row]:
    """The resource rows of an earlier plan (its directory, or its resources.json)."""
    path = plan_dir / "resources.json" if plan_dir.is_dir() else plan_dir
    return json.loads(path.read_text())
