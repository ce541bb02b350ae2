"""GPU instance / machine types on AWS and GCP, with on-demand prices.

Shapes: AWS from aws/karpenter-provider-aws website/content/en/docs/reference/instance-types.md;
GCP from AI-Hypercomputer/xpk system_characteristics.py and the dstack GCP cluster docs
(both in docs/sizing.md).

Prices are on-demand Linux $/hour, AWS us-east-1 (aws.amazon.com/ec2/pricing/on-demand) and
GCP us-central1 (cloud.google.com/compute/gpus-pricing, accelerator-optimized machine types
with the GPUs included), as read 2025-10. ⚠ marks a figure to re-check before relying on it
(P-family prices changed in the 2025-06 EC2 GPU price reduction). Committed-use, spot and
capacity-block prices and other regions are in prices.py; the planner prices every candidate at
the stack's own region and capacity type (components/planning.py).
"""
from __future__ import annotations

from dataclasses import dataclass

PRICES_AS_OF = "2025-10"


@dataclass(frozen=True)
class InstanceType:
    cloud: str  # "aws" | "gcp" | "existing"
    name: str
    accelerator: str  # catalog accelerator id
    gpus: int
    vcpu: int
    ram_gib: float
    nvme_gb: int  # local instance-store / local SSD bundled with the shape
    network_gbps: float  # total, including the GPU NICs
    fabric: str | None  # "efa" | "gpudirect-tcpx" | "gpudirect-tcpxo" | "rdma" | "infiniband" | None
    price_hour: float
    source: str
    efa_interfaces: int = 0  # AWS: EFA devices (one per network card)
    gke_accelerator: str | None = None  # GCP: cloud.google.com/gke-accelerator
    # what price_hour is: the base region's on-demand rate here; components/catalog/prices.py gives
    # the planner a copy at the stack's region and capacity type (planning.priced_pool)
    price_basis: str = "on-demand, base region"

    @property
    def fast_fabric(self) -> bool:
        """Whether the type has an RDMA-class fabric for a replica spanning nodes.

        Only shapes built for multi-node work count: an RDMA-class fabric of at least
        MIN_FABRIC_GBPS. A 25-100 Gbps EFA on a g5/g6 is an add-on NIC; PP across those (or
        plain Ethernet) runs over NCCL's sockets, which the planner allows only where the
        SLA still holds with the hand-offs in the step time (planner/search.py, docs/capacity.md).
        """
        return self.fabric is not None and self.network_gbps >= MIN_FABRIC_GBPS


MIN_FABRIC_GBPS = 200

_K = "karpenter-provider-aws instance-types.md"
_P = "aws.amazon.com/ec2/pricing/on-demand us-east-1 " + PRICES_AS_OF


def _aws(name, acc, gpus, vcpu, ram, nvme, gbps, efa, price, price_note=""):
    return InstanceType("aws", name, acc, gpus, vcpu, ram, nvme, gbps, "efa" if efa else None, price,
                        f"shape: {_K}; price: {_P}{price_note}", efa_interfaces=efa)


_G = "xpk system_characteristics.py; dstack GCP docs"
_GP = "cloud.google.com/compute/gpus-pricing us-central1 " + PRICES_AS_OF


def _gcp(name, acc, label, gpus, vcpu, ram, ssd, gbps, fabric, price, note=""):
    return InstanceType("gcp", name, acc, gpus, vcpu, ram, ssd, gbps, fabric, price,
                        f"shape: {_G}; price: {_GP}{note}", gke_accelerator=label)


_W = " ⚠"
INSTANCE_TYPES: dict[str, InstanceType] = {
    i.name: i
    for i in [
        _aws("g5.xlarge", "a10g", 1, 4, 16, 250, 2.5, 0, 1.006),
        _aws("g5.2xlarge", "a10g", 1, 8, 32, 450, 5, 0, 1.212),
        _aws("g5.4xlarge", "a10g", 1, 16, 64, 600, 10, 0, 1.624),
        _aws("g5.8xlarge", "a10g", 1, 32, 128, 900, 25, 1, 2.448),
        _aws("g5.12xlarge", "a10g", 4, 48, 192, 3800, 40, 1, 5.672),
        _aws("g5.16xlarge", "a10g", 1, 64, 256, 1900, 25, 1, 4.096),
        _aws("g5.24xlarge", "a10g", 4, 96, 384, 3800, 50, 1, 8.144),
        _aws("g5.48xlarge", "a10g", 8, 192, 768, 7600, 100, 1, 16.288),
        _aws("g6.xlarge", "l4", 1, 4, 16, 250, 2.5, 0, 0.8048),
        _aws("g6.2xlarge", "l4", 1, 8, 32, 450, 5, 0, 0.9776),
        _aws("g6.4xlarge", "l4", 1, 16, 64, 600, 10, 0, 1.3232),
        _aws("g6.8xlarge", "l4", 1, 32, 128, 900, 25, 1, 2.0144),
        _aws("g6.12xlarge", "l4", 4, 48, 192, 3760, 40, 1, 4.6016),
        _aws("g6.16xlarge", "l4", 1, 64, 256, 1880, 25, 1, 3.3968),
        _aws("g6.24xlarge", "l4", 4, 96, 384, 3760, 50, 1, 6.6752),
        _aws("g6.48xlarge", "l4", 8, 192, 768, 7520, 100, 1, 13.3504),
        _aws("g6e.xlarge", "l40s", 1, 4, 32, 250, 2.5, 0, 1.861),
        _aws("g6e.2xlarge", "l40s", 1, 8, 64, 450, 5, 0, 2.242),
        _aws("g6e.4xlarge", "l40s", 1, 16, 128, 600, 20, 0, 3.004),
        _aws("g6e.8xlarge", "l40s", 1, 32, 256, 900, 25, 1, 4.529),
        _aws("g6e.12xlarge", "l40s", 4, 48, 384, 3800, 100, 1, 10.493),
        _aws("g6e.16xlarge", "l40s", 1, 64, 512, 1900, 35, 1, 7.577),
        _aws("g6e.24xlarge", "l40s", 4, 96, 768, 3800, 200, 2, 15.066),
        _aws("g6e.48xlarge", "l40s", 8, 192, 1536, 7600, 400, 4, 30.131),
        _aws("p4d.24xlarge", "a100-40gb", 8, 96, 1152, 8000, 400, 4, 21.96, _W),
        _aws("p4de.24xlarge", "a100-80gb", 8, 96, 1152, 8000, 400, 4, 27.45, _W),
        _aws("p5.48xlarge", "h100", 8, 192, 2048, 30400, 3200, 32, 55.04, _W),
        _aws("p5e.48xlarge", "h200", 8, 192, 2048, 30400, 3200, 32, 69.0, _W),
        _aws("p5en.48xlarge", "h200", 8, 192, 2048, 30400, 3200, 16, 63.30, _W),
        _aws("p6-b200.48xlarge", "b200", 8, 192, 2048, 30400, 3200, 8, 113.93, _W),
        _gcp("g2-standard-4", "l4", "nvidia-l4", 1, 4, 16, 0, 10, None, 0.7068),
        _gcp("g2-standard-8", "l4", "nvidia-l4", 1, 8, 32, 0, 16, None, 0.8536),
        _gcp("g2-standard-12", "l4", "nvidia-l4", 1, 12, 48, 0, 16, None, 1.0004),
        _gcp("g2-standard-16", "l4", "nvidia-l4", 1, 16, 64, 0, 32, None, 1.1472),
        _gcp("g2-standard-32", "l4", "nvidia-l4", 1, 32, 128, 0, 32, None, 1.7344),
        _gcp("g2-standard-24", "l4", "nvidia-l4", 2, 24, 96, 0, 32, None, 2.0008),
        _gcp("g2-standard-48", "l4", "nvidia-l4", 4, 48, 192, 0, 50, None, 4.0016),
        _gcp("g2-standard-96", "l4", "nvidia-l4", 8, 96, 384, 0, 100, None, 8.0033),
        _gcp("a2-highgpu-1g", "a100-40gb", "nvidia-tesla-a100", 1, 12, 85, 0, 24, None, 3.6734),
        _gcp("a2-highgpu-2g", "a100-40gb", "nvidia-tesla-a100", 2, 24, 170, 0, 32, None, 7.3468),
        _gcp("a2-highgpu-4g", "a100-40gb", "nvidia-tesla-a100", 4, 48, 340, 0, 50, None, 14.6936),
        _gcp("a2-highgpu-8g", "a100-40gb", "nvidia-tesla-a100", 8, 96, 680, 0, 100, None, 29.3872),
        _gcp("a2-ultragpu-1g", "a100-80gb", "nvidia-a100-80gb", 1, 12, 170, 375, 24, None, 5.0688, _W),
        _gcp("a2-ultragpu-2g", "a100-80gb", "nvidia-a100-80gb", 2, 24, 340, 750, 32, None, 10.1376, _W),
        _gcp("a2-ultragpu-4g", "a100-80gb", "nvidia-a100-80gb", 4, 48, 680, 1500, 50, None, 20.2752, _W),
        _gcp("a2-ultragpu-8g", "a100-80gb", "nvidia-a100-80gb", 8, 96, 1360, 3000, 100, None, 40.5504, _W),
        _gcp("a3-highgpu-8g", "h100", "nvidia-h100-80gb", 8, 208, 1872, 6000, 1000, "gpudirect-tcpx", 88.25, _W),
        _gcp("a3-megagpu-8g", "h100", "nvidia-h100-mega-80gb", 8, 208, 1872, 6000, 1800, "gpudirect-tcpxo", 92.0, _W),
        _gcp("a3-ultragpu-8g", "h200", "nvidia-h200-141gb", 8, 224, 2952, 12000, 3200, "rdma", 84.81, _W),
        _gcp("a4-highgpu-8g", "b200", "nvidia-b200", 8, 224, 3968, 12000, 3600, "rdma", 106.0, _W),
    ]
}


# GCP machine families not sold on demand, only through reservations, flex-start or Spot
# (cloud.google.com/compute/docs/accelerator-optimized-machines: A3 Ultra and A4 consumption options ⚠ re-check).
NOT_ON_DEMAND = {"gcp": ("a3-ultragpu", "a4-highgpu")}


def offered(inst: InstanceType, capacity_type: str = "onDemand") -> bool:
    """Whether `inst` can be bought as `capacity_type` (onDemand, spot, reservation, capacityBlock). One predicate:
    a GKE stack refuses what it is not (components/cluster/gcp/node_pools.py), and `table`, `topology` and
    `capacity`, which price on demand, never quote it."""
    family = inst.name.rsplit("-", 1)[0]
    return not (capacity_type == "onDemand" and family in NOT_ON_DEMAND.get(inst.cloud, ()))


def instance_types(cloud: str, accelerator: str | None = None) -> list[InstanceType]:
    return [
        i for i in INSTANCE_TYPES.values()
        if i.cloud == cloud and (accelerator is None or i.accelerator == accelerator)
    ]
