"""The model-to-topology planner. Pure functions: nothing here imports pulumi."""
from .request import DEFAULT_GPU_MEMORY_UTILIZATION, PlanRequest, Sla
from .choose import evaluate, plan_topology
from .topology import NoFeasibleTopology, Refusal, Topology

__all__ = ["DEFAULT_GPU_MEMORY_UTILIZATION", "PlanRequest", "Sla", "evaluate", "plan_topology",
           "NoFeasibleTopology", "Refusal", "Topology"]
