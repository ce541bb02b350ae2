"""Serving objects of a plan: topology from the exports, manifests by kind and name, the vLLM container."""
from __future__ import annotations

from components.planner import Topology
from tests.support.plans import manifests, prod_gateway

DEV_MODEL = "llama-8b"

EXISTING = {
    "cloud": "existing", "environment": "prod", "namespace": "llm",
    "existing": {"gpuNodes": {"accelerator": "h100", "gpusPerNode": 8, "vcpu": 192, "ramGib": 2048},
                 "blockStorageClass": "fast-block", "networkPolicyEnforced": True},
    "modelCache": {"kind": "rwx", "storageClass": "nfs", "readGbps": 1},
    "models": [{"name": "chat", "model": "llama-3.1-70b", "maxModelLen": 8192, "replicas": {"min": 2, "max": 6}}],
    "gateway": prod_gateway("existing"),
}


def topology(result, model: str) -> Topology:
    return Topology.from_dict(result.exports["topology"][model])


def objs(resources, kind: str) -> list[dict]:
    return [m for m in manifests(resources).values() if m["kind"] == kind]


def obj(resources, kind: str, name: str) -> dict:
    found = [m for m in objs(resources, kind) if m["metadata"]["name"] == name]
    assert len(found) == 1, f"{kind}/{name}: {len(found)} found"
    return found[0]


def container(deployment: dict, name: str = "vllm") -> dict:
    return next(c for c in deployment["spec"]["template"]["spec"]["containers"] if c["name"] == name)

