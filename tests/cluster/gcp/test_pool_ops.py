"""GKE node pools on day 2: the system pool keeps two nodes in production, and a pool GKE must replace is
deleted before its successor of the same name is created (no 409)."""
from __future__ import annotations

import pulumi
import pytest

from components.cluster.gcp import component, node_pools
from tests.support.plans import by_type
from tests.support.gcp import CASES, GCP, POOL, cluster_plan


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


# --- the control plane reaches KEDA's metrics API and the webhooks --------------------------------------

FIREWALL = "gcp:compute/firewall:Firewall"


def test_control_plane_reaches_keda_metrics_and_webhook_ports_on_the_nodes():
    extra, model = CASES["g2"]
    res, _ = cluster_plan({"cloud": "gcp", **extra, "models": [model]})
    (rule,) = [r.inputs for r in by_type(res, FIREWALL) if r.inputs["name"] == "vllm-control-plane-webhooks"]
    assert rule["direction"] == "INGRESS" and rule["network"] == "vllm-net"
    assert rule["allows"] == [{"protocol": "tcp", "ports": ["6443", "9443"]}]
    (source,) = rule["sourceRanges"]
    assert source.startswith("10.0.") and source.endswith("/32")  # the control plane's private endpoint (PSC)
    assert rule["targetServiceAccounts"] == ["vllm-nodes@my-proj-123.iam.gserviceaccount.com"]


def test_control_plane_source_prefers_the_master_cidr_block():
    from components.cluster.gcp.network import control_plane_source
    assert control_plane_source({"master_ipv4_cidr_block": "172.16.0.0/28", "private_endpoint": "172.16.0.2"}) == [
        "172.16.0.0/28"]
    assert control_plane_source({"private_endpoint": "10.0.0.5"}) == ["10.0.0.5/32"]


def test_an_existing_network_gets_no_firewall_rule_from_the_stack():
    extra, model = CASES["g2"]
    shared = {**GCP, "network": "corp", "subnetwork": "gke", "podsRange": "p", "servicesRange": "s"}
    res, _ = cluster_plan({"cloud": "gcp", **extra, "gcp": shared, "models": [model]})
    assert [r for r in by_type(res, FIREWALL) if "control-plane" in r.inputs["name"]] == []
