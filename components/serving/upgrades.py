"""How a RayService rolls a change of its RayCluster spec: KubeRay's upgradeStrategy (serving.rayUpgradeStrategy).

KubeRay v1.7.0's RayServiceUpgradeType (ray-operator/apis/ray/v1/rayservice_types.go; the CRD vendored in
schemas/crds/kuberay/ray.io_rayservices.yaml leaves `upgradeStrategy.type` a free string):
- None: Serve config changes (serveConfigV2) roll in place; a cluster spec change (image, resources, the
  workers' init containers) is written and never rolled out: an operator deletes the active RayCluster in a
  maintenance window (docs/serving.md, "Cluster changes"). The default: it needs no spare GPU.
- NewCluster: KubeRay builds a second RayCluster from the new spec beside the running one, moves the serve
  Service to it once its Serve app is RUNNING and deletes the old one. The new cluster starts its worker group
  at `replicas` (the planned replicas x nodes per replica, rayservice.worker_group), so for the overlap the pool
  needs the running fleet, up to replicas.max (the pool's planned max), plus that many more nodes. With this
  strategy the GPU pool's max node count carries them (surge_nodes -> cluster/pools.gpu_pool_specs): an
  autoscaling ceiling, billed only while an upgrade runs (the GPU quota must cover it).
  It is refused where the stack cannot give the pool those nodes (upgrade_problems).
- NewClusterWithIncrementalUpgrade needs Gateway API routing and an operator feature gate: not offered.
"""
from __future__ import annotations

from ..planner import Topology

NONE = "None"
NEW_CLUSTER = "NewCluster"
STRATEGIES = (NONE, NEW_CLUSTER)
FIELD = "serving.rayUpgradeStrategy"


def surge_nodes(t: Topology) -> int:
    """GPU nodes a NewCluster upgrade of t adds while both clusters run: the new cluster's workers at their
    initial count, one node per worker (t.nodes: the planned replicas' nodes)."""
    return t.nodes if t.multi_node else 0


def pool_surge(strategy: str, topologies: dict[str, Topology]) -> dict[str, int]:
    """Deployment (served model) name -> extra GPU nodes its pool must be able to add (gpu_pool_specs)."""
    if strategy != NEW_CLUSTER:
        return {}
    return {t.served_model_name: surge_nodes(t) for t in topologies.values() if t.multi_node}


def no_room(cloud: str, aws_capacity_type: str | None = None, gcp_reservation: str | None = None) -> str | None:
    """Why the stack's GPU pools cannot take a second cluster's nodes, or None where they can (components/wiring.py
    passes the stack's cloud, aws.capacityType and gcp.reservation)."""
    if cloud == "existing":
        return ("cloud existing: the stack neither sizes nor sees the cluster's GPU node count, so it cannot make "
                "room for a second cluster")
    if cloud == "aws" and aws_capacity_type in ("reservation", "capacityBlock"):
        return (f"aws.capacityType {aws_capacity_type}: the reserved capacity is sized for one fleet and the "
                f"second cluster's nodes would find none")
    if cloud == "gcp" and gcp_reservation:
        return ("gcp.reservation: the reservation is sized for one fleet and the second cluster's nodes would find "
                "none")
    return None


def upgrade_problems(strategy: str, topologies: dict[str, Topology], blocked: str | None) -> list[str]:
    """serving.rayUpgradeStrategy NewCluster where the GPU pool cannot be given the second cluster's nodes
    (blocked: no_room's reason)."""
    surge = pool_surge(strategy, topologies)
    if not surge or not blocked:
        return []
    need = ", ".join(f"{m}: {n} more GPU node(s)" for m, n in surge.items())
    return [f"{FIELD}: NewCluster runs a second RayCluster beside the first during an upgrade ({need}), and "
            f"{blocked}; keep {NONE} (cluster changes in a maintenance window, docs/serving.md \"Cluster changes\")"]


def upgrade_note(t: Topology, strategy: str, blocked: str | None, in_place: str, needs_window: str) -> str:
    """What the plan says about a RayService's upgrades. blocked: no_room's reason (None: NewCluster is possible)."""
    m, n = t.served_model_name, surge_nodes(t)
    extra = f"+${n * t.price_per_node_hour:,.2f}/h while both run" if t.price_per_node_hour else "for the overlap"
    if strategy == NEW_CLUSTER:
        return (f"RAYSERVICE UPGRADES: {m} uses upgradeStrategy NewCluster; `pulumi up` applies Serve config changes "
                f"({in_place}) in place, and a RayCluster spec change ({needs_window}) brings up a second cluster "
                f"of {n} GPU node(s) beside the running one (the GPU pool's max includes them; {extra}), moves "
                f"the endpoint once its Serve app is ready and deletes the old cluster")
    offer = (f"; or set {FIELD}: {NEW_CLUSTER} to roll them onto a second cluster ({n} more GPU node(s) in the pool "
             f"during an upgrade)" if blocked is None else f"; {FIELD} {NEW_CLUSTER} is not available: {blocked}")
    return (f"RAYSERVICE UPGRADES: {m} uses upgradeStrategy None; `pulumi up` applies Serve config changes "
            f"({in_place}) in place, but a RayCluster spec change ({needs_window}) is written and NOT rolled out: "
            f"delete the active RayCluster in a maintenance window (docs/serving.md, \"Cluster changes\"){offer}")
