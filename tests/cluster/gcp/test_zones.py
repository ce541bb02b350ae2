"""Issue 36: the GPU and system pools go into gcp.zone as configured; GCE's live answer (zones up, machine types
offered) only validates it, before anything is created, and a changed answer refuses the run instead of moving or
replacing node pools."""
from __future__ import annotations

import pulumi
import pytest

from components.config import ConfigError
from components.offline import gcp_stubs
from tests.support.gcp import CASES, POOL, cluster_plan
from tests.support.plans import by_type


def values(case: str = "g2", **gcp) -> dict:
    extra, model = CASES[case]
    return {"cloud": "gcp", **extra, "gcp": {**extra["gcp"], **gcp}, "models": [model]}


def refused(config: dict) -> str:
    with pytest.raises(pulumi.RunError) as e:
        cluster_plan(config)
    assert isinstance(e.value.__cause__, ConfigError)
    return str(e.value)


def test_every_pool_is_in_the_configured_zone():
    res, _ = cluster_plan(values())
    pools = by_type(res, POOL)
    assert len(pools) == 2  # system + the L4 pool
    assert {tuple(p.inputs["nodeLocations"]) for p in pools} == {("us-central1-a",)}


def test_a_zone_gce_reports_down_is_refused_not_replaced_by_another(monkeypatch):
    monkeypatch.setattr(gcp_stubs, "ZONES_DOWN", {"us-central1-a"})
    message = refused(values())
    assert ("gcp.zone: GCE lists us-central1-a as not up in project my-proj-123 (zones of us-central1 that are up: "
            "us-central1-b, us-central1-c, us-central1-f); the node pools stay in gcp.zone and never follow a live "
            "answer") in message


def test_a_machine_type_the_zone_stops_offering_refuses_the_run_and_moves_nothing(monkeypatch):
    res, _ = cluster_plan(values())
    assert {tuple(p.inputs["nodeLocations"]) for p in by_type(res, POOL)} == {("us-central1-a",)}
    monkeypatch.setattr(gcp_stubs, "NOT_OFFERED", {("us-central1-a", "g2-standard-8")})
    assert "gcp.zone: us-central1-a does not offer g2-standard-8" in refused(values())


def test_another_configured_zone_is_validated_live_as_well(monkeypatch):
    monkeypatch.setattr(gcp_stubs, "NOT_OFFERED", {("us-central1-b", "g2-standard-8")})
    assert "gcp.zone: us-central1-b does not offer g2-standard-8" in refused(values(zone="us-central1-b"))
    res, _ = cluster_plan(values(zone="us-central1-c"))
    assert {tuple(p.inputs["nodeLocations"]) for p in by_type(res, POOL)} == {("us-central1-c",)}


def test_prometheus_volume_and_every_system_node_share_one_zone_so_a_drain_never_strands_it():
    """Issue 36, 'the first drain can take Prometheus down' on EKS: on GKE the system pool (and the cluster's node
    locations) are gcp.zone alone, and Prometheus' claim names standard-rwo, a zonal pd-balanced disk created in the
    zone of its first node; every node it can move to is in that zone. Spreading the system pool over zones without
    a regional (or zone-following) volume would bring the EKS fault here."""
    res, exports = cluster_plan(values())
    system = next(p for p in by_type(res, POOL) if p.inputs["name"] == "system")
    cluster = next(r for r in res if r.type == "gcp:container/cluster:Cluster")
    assert system.inputs["nodeLocations"] == cluster.inputs["nodeLocations"] == ["us-central1-a"]
    assert exports["facts"]["block_storage_class"] == "standard-rwo"
