"""serving.rayUpgradeStrategy (components/serving/upgrades.py): None keeps cluster changes for a maintenance window and
says NewCluster is there where the pool can take it; NewCluster rolls them onto a second RayCluster, whose nodes the
GPU pool's max then carries, and is refused, naming the field, where the stack cannot give the pool those nodes."""
from __future__ import annotations

import copy

import pytest

from components.config import ConfigError, parse
from components.wiring import validated_plan
from tests.support.consistency import stack_raw
from tests.support.plans import by_type, plan_config
from tests.support.serving import obj

MODEL = "llama-405b"
NG = "aws:eks/nodeGroup:NodeGroup"


def _raw(stack: str, strategy: str | None = None, **overrides) -> dict:
    raw = copy.deepcopy(stack_raw(stack))
    if strategy is not None:
        raw["serving"] = {"multiNode": "rayservice", **raw.get("serving", {}), "rayUpgradeStrategy": strategy}
    for key, value in overrides.items():
        raw[key] = {**raw.get(key, {}), **value}
    return raw


def _gpu_max(resources) -> int:
    (pool,) = [r for r in by_type(resources, NG) if "gpu" in r.name]
    return pool.inputs["scalingConfig"]["maxSize"]


def _upgrade_warning(exports) -> str:
    (w,) = [w for w in exports["serving"][MODEL]["warnings"] if w.startswith("RAYSERVICE UPGRADES")]
    return w


@pytest.fixture(scope="module")
def new_cluster():
    return plan_config(_raw("prod-llama405b-aws", "NewCluster"), stack="prod-llama405b-aws")


def test_new_cluster_is_written_to_the_rayservice(new_cluster):
    resources, _ = new_cluster
    assert obj(resources, "RayService", MODEL)["spec"]["upgradeStrategy"] == {"type": "NewCluster"}


def test_new_cluster_grows_the_gpu_pool_by_the_second_clusters_workers(new_cluster):
    """TP 8 x PP 2 on two p5 nodes, replicas 1..4, 2 planned (23 per replica for 32 users under the dense models'
    10 % margin at p90; 3 of 13 each under the old 35 % on the mean): 8 nodes at max plus the new cluster's 2 x 2
    workers."""
    resources, _ = new_cluster
    assert _gpu_max(resources) == 12
    default, _ = plan_config(_raw("prod-llama405b-aws"), stack="prod-llama405b-aws")
    assert _gpu_max(default) == 8  # None: the pool holds one fleet at max
    assert obj(default, "RayService", MODEL)["spec"]["upgradeStrategy"] == {"type": "None"}


def test_new_cluster_plan_names_the_overlap_and_no_maintenance_window(new_cluster):
    _, exports = new_cluster
    w = _upgrade_warning(exports)
    assert w.startswith("RAYSERVICE UPGRADES: llama-405b uses upgradeStrategy NewCluster; ")
    assert "brings up a second cluster of 4 GPU node(s) beside the running one" in w
    assert "maintenance window" not in w


def test_none_offers_new_cluster_where_the_pool_can_grow():
    _, exports = plan_config(_raw("prod-llama405b-aws"), stack="prod-llama405b-aws")
    w = _upgrade_warning(exports)
    assert w.startswith("RAYSERVICE UPGRADES: llama-405b uses upgradeStrategy None; ")
    assert w.endswith("; or set serving.rayUpgradeStrategy: NewCluster to roll them onto a second cluster (4 more "
                      "GPU node(s) in the pool during an upgrade)")


def test_none_on_an_existing_cluster_says_why_new_cluster_is_not_offered():
    from tests.support.plans import planned
    w = _upgrade_warning(planned("prod-llama405b-onprem").exports)
    assert w.endswith("; serving.rayUpgradeStrategy NewCluster is not available: cloud existing: the stack neither "
                      "sizes nor sees the cluster's GPU node count, so it cannot make room for a second cluster")


def test_new_cluster_is_refused_on_an_existing_cluster_naming_the_field():
    with pytest.raises(ConfigError) as e:
        validated_plan(parse(_raw("prod-llama405b-onprem", "NewCluster"), {"hfToken"}))
    assert e.value.errors == [
        "serving.rayUpgradeStrategy: NewCluster runs a second RayCluster beside the first during an upgrade "
        "(llama-405b: 4 more GPU node(s)), and cloud existing: the stack neither sizes nor sees the cluster's GPU "
        "node count, so it cannot make room for a second cluster; keep None (cluster changes in a maintenance "
        "window, docs/serving.md \"Cluster changes\")"]


@pytest.mark.parametrize("capacity", ["reservation", "capacityBlock"])
def test_new_cluster_is_refused_on_reserved_aws_capacity(capacity):
    raw = _raw("prod-llama405b-aws", "NewCluster",
               aws={"capacityType": capacity, "capacityReservations": {"p5.48xlarge": "cr-0123456789abcdef0"}})
    with pytest.raises(ConfigError) as e:
        validated_plan(parse(raw, {"hfToken"}))
    assert any(err.startswith("serving.rayUpgradeStrategy: NewCluster runs a second RayCluster") and
               f"aws.capacityType {capacity}: the reserved capacity is sized for one fleet" in err
               for err in e.value.errors), e.value.errors


def test_new_cluster_is_refused_on_a_gcp_reservation():
    from tests.support.stacks import GKE_405B
    raw = _raw("prod-qwen72b-gcp", "NewCluster", gcp={"reservation": "h100-llm-prod"})
    raw["models"] = [GKE_405B]
    with pytest.raises(ConfigError) as e:
        validated_plan(parse(raw, {"hfToken"}))
    assert any("gcp.reservation: the reservation is sized for one fleet" in err for err in e.value.errors), \
        e.value.errors


def test_new_cluster_without_a_rayservice_changes_nothing():
    """A stack of single-node models: nothing to upgrade by cluster, so nothing is refused or grown."""
    plan = validated_plan(parse(_raw("prod-llama70b-aws", "NewCluster"), {"hfToken"}))
    assert not any(t.multi_node for t in plan.values())


def test_an_unknown_strategy_names_the_field():
    with pytest.raises(ConfigError) as e:
        parse(_raw("prod-llama405b-aws", "NewClusterWithIncrementalUpgrade"), {"hfToken"})
    assert any("serving.rayUpgradeStrategy" in err for err in e.value.errors), e.value.errors
