"""A Mermaid picture of an offline plan: the cluster, its GPU pools with their packing, the add-ons
(with chart versions), the model cache and the served models, as `plan` writes it to build/STACK/.

Read from what the plan registered (resource rows and the topology export), never from the config:
the picture shows what `pulumi up` would build.
"""
from __future__ import annotations

import re
from typing import Any

from .review import Row, key

CLUSTERS = {"vllm-platform:cluster:AwsGpuCluster": "EKS", "vllm-platform:cluster:GcpGpuCluster": "GKE",
            "vllm-platform:cluster:ExistingCluster": "existing cluster"}
CLUSTER_RESOURCES = {"aws:eks/cluster:Cluster", "gcp:container/cluster:Cluster"}
RELEASE = "kubernetes:helm.sh/v3:Release"
SERVICE = "vllm-platform:serving:VllmService"
CACHE = "vllm-platform:cache:ModelCache"
PVC = "kubernetes:core/v1:PersistentVolumeClaim"
SERVING_KINDS = {"kubernetes:apps/v1:Deployment": "Deployment", "kubernetes:ray.io/v1:RayService": "RayService",
                 "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet": "LeaderWorkerSet"}
GATEWAY_PREFIXES = ("kubernetes:gateway.networking.k8s.io/", "kubernetes:inference.networking.k8s.io/")


def node_id(*parts: str) -> str:
    return "_".join(re.sub(r"[^A-Za-z0-9]+", "_", p).strip("_") for p in parts)


def label(text: str) -> str:
    """A quoted Mermaid label: double quotes would end it early, so they become #quot;."""
    return '"' + text.replace('"', "#quot;") + '"'


def packing(t: dict[str, Any]) -> str:
    """'p5.48xlarge x2 (8 GPU/node, TP8xPP2, efa; 2–4 nodes)': the instance, how many nodes now, how a
    replica sits on them, the fabric, and the range the autoscaler may move the node count in."""
    par = f"TP{t['tensor_parallel_size']}" + (f"xPP{t['pipeline_parallel_size']}"
                                              if t["pipeline_parallel_size"] > 1 else "")
    if t.get("replicas_per_node", 1) > 1:
        par += f", up to {t['replicas_per_node']} replicas/node"
    where = t["instance_type"] if t["cloud"] != "existing" else f"{t['accelerator']} nodes"
    fabric = f", {t['fabric']}" if t.get("fabric") and t["fabric"] != "none" else ""
    span = f"{t['min_nodes']}–{t['max_nodes']} nodes" if t["min_nodes"] != t["max_nodes"] else \
        f"fixed at {t['min_nodes']} nodes"
    return f"{where} x{t['nodes']} ({t['gpus_per_node']} GPU/node, {par}{fabric}; {span})"


def _descendants(rows: list[Row], root: str) -> list[Row]:
    kids: dict[str, list[Row]] = {}
    for r in rows:
        kids.setdefault(r.get("parent"), []).append(r)
    out, todo = [], [root]
    while todo:
        for r in kids.get(todo.pop(), []):
            out.append(r)
            todo.append(key(r))
    return out


def _cluster_title(rows: list[Row]) -> str:
    kind = next((CLUSTERS[r["type"]] for r in rows if r["type"] in CLUSTERS), "cluster")
    res = next((r for r in rows if r["type"] in CLUSTER_RESOURCES), None)
    if res is None:
        return kind
    inputs = res.get("inputs") or {}
    version = inputs.get("version") or inputs.get("minMasterVersion")
    where = inputs.get("location")
    return f"{kind} {inputs.get('name', res['name'])}" + (f" ({where})" if where else "") + \
        (f", Kubernetes {version}" if version else "")


def _cache_label(rows: list[Row]) -> str | None:
    cache = next((r for r in rows if r["type"] == CACHE), None)
    if cache is None:
        return None
    below = _descendants(rows, key(cache))
    pvc = next((r for r in below if r["type"] == PVC), None)
    if pvc is not None:
        spec = (pvc.get("inputs") or {}).get("spec") or {}
        size = ((spec.get("resources") or {}).get("requests") or {}).get("storage")
        return f"model cache: {'/'.join(spec.get('accessModes') or [])} {size} ({spec.get('storageClassName')})"
    return "model cache: node-local NVMe"


def _serving_kind(rows: list[Row], service: Row) -> tuple[str | None, str]:
    """(metadata.name, kind) of the workload a VllmService runs."""
    for r in _descendants(rows, key(service)):
        if r["type"] in SERVING_KINDS:
            return ((r.get("inputs") or {}).get("metadata") or {}).get("name"), SERVING_KINDS[r["type"]]
    return None, "?"


def mermaid(stack: str, rows: list[Row], topology: dict[str, dict]) -> str:
    lines = ["flowchart LR", f"  clients([{label('OpenAI-compatible clients')}])"]
    lines.append(f"  subgraph cluster[{label(_cluster_title(rows) + ' · stack ' + stack)}]")
    lines.append("    direction LR")
    lines.append(f"    subgraph pools[{label('GPU node pools')}]")
    for name, t in sorted(topology.items()):
        lines.append(f"      {node_id('pool', name)}[{label(packing(t))}]")
    lines.append("    end")
    releases = sorted((r for r in rows if r["type"] == RELEASE), key=lambda r: r["inputs"].get("chart", ""))
    if releases:
        lines.append(f"    subgraph addons[{label('add-ons (Helm)')}]")
        for r in releases:
            chart, version = r["inputs"].get("chart", r["name"]), r["inputs"].get("version")
            text = f"{chart} {version}" if version is not None else chart  # an archive on disk: no version input
            lines.append(f"      {node_id('addon', chart)}[{label(text)}]")
        lines.append("    end")
    cache = _cache_label(rows)
    if cache:
        lines.append(f"    cache[({label(cache)})]")
    gateway = sorted({r["type"].split(":")[-1] for r in rows if r["type"].startswith(GATEWAY_PREFIXES)})
    if gateway:
        lines.append(f"    gateway{{{{{label('gateway: ' + ', '.join(gateway))}}}}}")
    lines.append(f"    subgraph serving[{label('serving')}]")
    services = sorted((r for r in rows if r["type"] == SERVICE), key=lambda r: r["name"])
    served: dict[str, str] = {}
    for s in services:
        workload, kind = _serving_kind(rows, s)
        name = workload if workload in topology else next((n for n in topology if s["name"].endswith("-" + n)), None)
        if name is None:
            continue
        t = topology[name]
        served[name] = node_id("svc", name)
        text = (f"{name}: {t['model_name']} {t['precision']}<br/>{kind}, "
                f"{t['replicas']} replica(s) ({t['min_replicas']}–{t['max_replicas']})")
        lines.append(f"      {served[name]}[{label(text)}]")
    lines.append("    end")
    lines.append("  end")
    for name in sorted(served):
        entry = "gateway" if gateway else "clients"
        lines.append(f"  {entry} --> {served[name]}")
        lines.append(f"  {served[name]} -->|runs on| {node_id('pool', name)}")
        if cache:
            lines.append(f"  cache -.->|weights| {served[name]}")
    if gateway:
        lines.append("  clients --> gateway")
    return "\n".join(lines) + "\n"


def markdown(stack: str, diagram: str) -> str:
    return f"# Stack `{stack}`\n\n```mermaid\n{diagram}```\n"
