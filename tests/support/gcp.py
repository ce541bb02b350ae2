"""GKE cluster plans of in-memory configs, and the resource types and cases the GKE tests share."""
from __future__ import annotations

import functools
import json
import tempfile
from pathlib import Path

from components.offline.runner import OFFLINE_SECRET, run_program
from tests.support.plans import by_type, prod_gateway

CLUSTER_ONLY = """
import dataclasses
import pulumi
from components.config import load_stack_config
from components.planning import plan_stack
from components.platform import _cluster
from components.providers import cloud_provider_opts

loaded = load_stack_config()
topologies = plan_stack(loaded.config)
facts = _cluster("vllm-cluster", loaded, topologies, cloud_provider_opts(loaded.config))


def kind(v):
    for t in (pulumi.Output, pulumi.ProviderResource, pulumi.CustomResource):
        if isinstance(v, t):
            return t.__name__
    return type(v).__name__


def plain(pool):
    d = {f.name: getattr(pool, f.name) for f in dataclasses.fields(pool)}
    return {**d, "taints": [dataclasses.asdict(t) for t in pool.taints], "tolerations": pool.tolerations()}


pulumi.export("topology", {n: t.to_dict() for n, t in topologies.items()})
pulumi.export("shape", {f.name: kind(getattr(facts, f.name)) for f in dataclasses.fields(facts)})
pulumi.export("pool_shape", {k: {f.name: kind(getattr(p, f.name)) for f in dataclasses.fields(p)}
                             for k, p in facts.gpu_pools.items()})
pulumi.export("depends_on", [kind(r) for r in facts.depends_on])
pulumi.export("depends_on_urns", [r.urn for r in facts.depends_on])
pulumi.export("pools", {k: plain(p) for k, p in facts.gpu_pools.items()})
pulumi.export("facts", {"cloud": facts.cloud, "name": facts.name, "system_node_selector": facts.system_node_selector,
                        "rwx_storage_class": facts.rwx_storage_class, "cache_read_gbps": facts.cache_read_gbps,
                        "driver_preinstalled": facts.driver_preinstalled,
                        "block_storage_class": facts.block_storage_class,
                        "network_policy_enforced": facts.network_policy_enforced})
if facts.kubeconfig is not None:
    pulumi.export("kubeconfig", facts.kubeconfig)
"""


@functools.lru_cache(maxsize=None)


def _program() -> Path:
    # tmp*: a clone in the temp dir (CI) does not take it for a neighbour (tests/support/guard.py)
    path = Path(tempfile.mkdtemp(prefix="tmp-gcp-cluster-")) / "cluster_only.py"
    path.write_text(CLUSTER_ONLY)
    return path


def cluster_plan(values: dict, secrets: dict | None = None):
    """(resources, exports) of the cluster alone for an in-memory stack config."""
    secrets = {"hfToken": OFFLINE_SECRET, **(secrets or {})}
    config = {f"vllm-platform:{k}": v if isinstance(v, str) else json.dumps(v) for k, v in values.items()}
    config.update({f"vllm-platform:{k}": v for k, v in secrets.items()})
    return run_program(config, [f"vllm-platform:{k}" for k in secrets], "test", program=_program())

PROJECT = "my-proj-123"

GCP = {"project": PROJECT, "region": "us-central1", "zone": "us-central1-a",
       "masterAuthorizedNetworks": ["203.0.113.0/28"]}

CLUSTER = "gcp:container/cluster:Cluster"

POOL = "gcp:container/nodePool:NodePool"

FILESTORE = "gcp:filestore/instance:Instance"

CASES = {
    # Llama-3.1-405B BF16 does not fit one 8 x H100 node: TP 8 x PP 2 over GPUDirect-TCPX.
    "a3-high": ({"environment": "prod", "gcp": GCP, "gateway": prod_gateway("gcp")},
                {"name": "llama-405b", "model": "llama-3.1-405b", "precision": "bf16", "accelerator": "h100",
                 "instanceTypes": ["a3-highgpu-8g"], "maxModelLen": 16384, "replicas": {"min": 1, "max": 2}}),
    # A 1.4 TB dense model needs two 8 x H200 nodes; A3 Ultra comes through a reservation.
    "a3-ultra": ({"gcp": {**GCP, "reservation": "h200-dense"}},
                 {"name": "dense-700b", "model": "example/dense-700b", "precision": "bf16",
                  "architecture": {"paramsB": 700, "layers": 128, "hidden": 16384, "heads": 128, "kvHeads": 8,
                                   "vocab": 128256, "maxContext": 32768},
                  "instanceTypes": ["a3-ultragpu-8g"], "maxModelLen": 16384, "replicas": {"min": 1, "max": 2}}),
    "g2": ({"gcp": GCP, "modelCache": {"kind": "rwx", "sizeGib": 100}},
           {"name": "llama-8b", "model": "llama-3.1-8b", "instanceTypes": ["g2-standard-8"], "maxModelLen": 8192,
            "sla": {"concurrency": 4}, "replicas": {"min": 1, "max": 3}}),
}


@functools.lru_cache(maxsize=None)


def plan(case: str):
    extra, model = CASES[case]
    return cluster_plan({"cloud": "gcp", **extra, "models": [model]})


def gpu_pool(case: str):
    pools = [p for p in by_type(plan(case)[0], POOL) if p.inputs["name"] != "system"]
    assert len(pools) == 1
    return pools[0].inputs

