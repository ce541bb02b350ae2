"""`vllm-platform:pricing`: negotiated rates (an Enterprise Discount Program, a private offer, committed use)
that replace the list prices of components/catalog/data/ (instance_types.csv, prices/*.csv) in the cost lines,
the bill and the planner's ranking of shapes (components/planning.py priced_pool, components/costs/bill.py)."""
from __future__ import annotations

from pydantic import Field, field_validator

from .base import _Base


class PricingSettings(_Base):
    discount_percent: float = Field(
        0, ge=0, lt=100, description="taken off every list price of the stack's cloud (GPU and system nodes, "
                                     "control plane, NAT, file storage, load balancer) that pricing.instanceTypes "
                                     "does not replace")
    instance_types: dict[str, float] = Field(
        default_factory=dict, description="instance / machine type -> the $ per node-hour the stack pays for it, "
                                          "whatever aws.capacityType says: final, discountPercent is not applied "
                                          "on top")

    @field_validator("instance_types")
    @classmethod
    def _rates(cls, v):
        bad = [f"{name}: {rate:g}" for name, rate in v.items() if rate <= 0]
        if bad:
            raise ValueError(f"{', '.join(bad)}: a rate is $ per node-hour above 0, e.g. `p5.48xlarge: 41.5`")
        return v

    @property
    def set(self) -> bool:
        return bool(self.discount_percent or self.instance_types)


def pricing_problem(pricing: PricingSettings, cloud: str, system_type: str | None) -> tuple[str, str] | None:
    """(field, message) where `pricing` does not fit the stack's cloud; None when it does."""
    from ..catalog import INSTANCE_TYPES
    from ..catalog.prices import CPU_INSTANCES

    if cloud == "existing":
        if pricing.set:
            return "pricing", ("an existing cluster has no cloud bill to discount; price its GPU nodes with "
                               "existing.gpuNodes.pricePerNodeHour and remove `pricing`")
        return None
    known = {n for n, i in INSTANCE_TYPES.items() if i.cloud == cloud} | {n for c, n in CPU_INSTANCES if c == cloud}
    unknown = sorted(set(pricing.instance_types) - known - {system_type})
    if unknown:
        other = [n for n in unknown if n in INSTANCE_TYPES]
        why = (f"a {INSTANCE_TYPES[other[0]].cloud.upper()} type, and this stack runs on {cloud.upper()}" if other
               else f"not a type this {cloud.upper()} stack can run (the GPU types of components/catalog/"
                    f"data/instance_types.csv, the CPU types of data/prices/cpu_instances.csv, the system pool's "
                    f"type)")
        return "pricing.instanceTypes", f"{unknown[0]}: {why}; list only the types whose rate you negotiated"
    return None
