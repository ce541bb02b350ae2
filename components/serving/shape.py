"""Which workload a model's replica is (pure): a Deployment when it fits one node; when it spans nodes, what
serving.multiNode says: a LeaderWorkerSet (lws.py, the default) or a KubeRay RayService (rayservice.py).
Everything that differs between the shapes asks here, never `t.multi_node` alone."""
from __future__ import annotations

from ..config.schema import Serving
from ..planner import Topology

DEPLOYMENT, LWS, RAYSERVICE = "deployment", "lws", "rayservice"
FIELD = "serving.multiNode"


def shape(t: Topology, serving: Serving) -> str:
    return serving.multi_node if t.multi_node else DEPLOYMENT


def on_ray(t: Topology, serving: Serving) -> bool:
    """The replica runs Ray Serve LLM (a RayService): its own image, head, routing and autoscaling."""
    return shape(t, serving) == RAYSERVICE


def ray_topologies(serving: Serving, topologies: dict[str, Topology]) -> dict[str, Topology]:
    return {k: t for k, t in topologies.items() if on_ray(t, serving)}


def workload(t: Topology, serving: Serving) -> str:
    """The kind, as the plan names it."""
    return {DEPLOYMENT: "Deployment", LWS: "LeaderWorkerSet", RAYSERVICE: "RayService"}[shape(t, serving)]
