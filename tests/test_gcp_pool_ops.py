"""GKE node pools on day 2: the system pool keeps two nodes in production, and a pool GKE must replace is
deleted before its successor of the same name is created (no 409)."""
from __future__ import annotations

import pulumi
import pytest

from components.cluster.gcp import component, node_pools
from tests.conftest import by_type
from tests.test_gcp_cluster import CASES, GCP, POOL, cluster_plan


def _system(extra: dict) -> dict:
    _, model = CASES["g2"]
    res, _ = cluster_plan({"cloud": "gcp", "gcp": GCP, **extra, "models": [model]})
    (system,) = [p.inputs for p in by_type(res, POOL) if p.inputs["name"] == "system"]
    return system


@pytest.mark.parametrize("extra,nodes", [
    ({"environment": "prod"}, 2),  # an upgrade of one node leaves KEDA, the webhooks and Prometheus running
    ({"environment": "dev"}, 1),
    ({"environment": "prod", "gcp": {**GCP, "systemNodes": 3}}, 3),
])
def test_system_pool_keeps_two_nodes_in_production(extra, nodes):
    system = _system(extra)
    assert system["initialNodeCount"] == nodes
    assert system["autoscaling"]["minNodeCount"] == nodes
    assert system["autoscaling"]["maxNodeCount"] == nodes + 2


def test_pool_options_delete_before_replace_and_leave_the_node_count_to_the_autoscaler():
    opts = node_pools.pool_options(pulumi.ResourceOptions(depends_on=[]))
    assert opts.delete_before_replace is True
    assert opts.ignore_changes == ["initialNodeCount"]


def test_every_node_pool_is_created_with_the_pool_options(monkeypatch):
    seen = []
    original = component.gcp.container.NodePool

    def pool(resource_name, opts=None, **kwargs):
        seen.append((resource_name, opts))
        return original(resource_name, opts=opts, **kwargs)

    monkeypatch.setattr(component.gcp.container, "NodePool", pool)
    extra, model = CASES["g2"]
    cluster_plan({"cloud": "gcp", **extra, "models": [model]})
    assert {n for n, _ in seen} == {"vllm-cluster-system", "vllm-cluster-gpu-g2-standard-8"}
    assert all(o.delete_before_replace is True and o.ignore_changes == ["initialNodeCount"] for _, o in seen)
