"""GPU instance / machine types on AWS and GCP, with on-demand prices: one row each in data/instance_types.csv
(shape and price sources per row; the columns are this dataclass, read by components/catalog/tables.py), and the
families not sold on demand in data/not_on_demand.csv.

Prices are on-demand Linux $/hour in the base region (AWS us-east-1, GCP us-central1), read on each row's
`price_read`. Other regions' factors, spot fractions and Capacity Block rates are the tables of data/prices/,
applied by prices.py (committed-use discounts are not modelled); the planner prices every candidate at the stack's
own region and capacity type (components/planning.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .accelerators import ACCELERATORS
from .tables import DATA, read_table

FABRICS = ("efa", "gpudirect-tcpx", "gpudirect-tcpxo", "rdma", "infiniband")


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
    price_read: str = ""  # when price_hour was read (YYYY-MM)

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

# (cloud, pool fabric) -> fabric family, the one name the serving layer (components/serving/fabric.py: NCCL
# environment, devices) and the planner (components/planner/wide_ep.py: which all2all backend the fabric carries)
# both key on: "rdma" is GPUDirect RDMA with Google's gIB NCCL plugin on GKE, RoCE on a cluster of your own;
# every other fabric is its own family, and no fabric is "none".
CLOUD_FAMILY = {("gcp", "rdma"): "gke-rdma", ("existing", "rdma"): "roce", ("aws", "rdma"): "roce"}


def fabric_family(cloud: str, fabric: str | None) -> str:
    """The fabric family of a pool: efa, gpudirect-tcpx, gpudirect-tcpxo, gke-rdma, infiniband, roce or none."""
    if fabric is None:
        return "none"
    return CLOUD_FAMILY.get((cloud, fabric), fabric)


def _check(i: InstanceType) -> str | None:
    if not i.price_read:
        return "column price_read: empty; the day price_hour was read (YYYY-MM)"
    if i.cloud == "aws" and (i.gke_accelerator or (i.fabric == "efa") != (i.efa_interfaces > 0)):
        return "an AWS type has no gke_accelerator, and fabric efa exactly when efa_interfaces > 0"
    if i.cloud == "gcp" and (not i.gke_accelerator or i.efa_interfaces):
        return "a GCP type names its gke_accelerator and has no efa_interfaces"
    return None


def load(folder: Path = DATA) -> dict[str, InstanceType]:
    """`folder`/instance_types.csv by name (a DataError names the file, line and column of a bad row)."""
    return {i.name: i for i in read_table(
        "instance_types.csv", InstanceType, key=("name",), check=_check, folder=folder,
        allowed={"cloud": ("cloud", ("aws", "gcp")), "accelerator": ("accelerator", ACCELERATORS),
                 "fabric": ("fabric", FABRICS)})}


INSTANCE_TYPES: dict[str, InstanceType] = load()
# the oldest price read: what the plan's and the bill's "prices read" says
PRICES_AS_OF = min(i.price_read for i in INSTANCE_TYPES.values())


@dataclass(frozen=True)
class NotOnDemand:
    cloud: str
    family: str  # the type name before its last "-" (a3-ultragpu of a3-ultragpu-8g)
    source: str


# machine families sold only through reservations, flex-start or Spot
NOT_ON_DEMAND: dict[str, tuple[str, ...]] = {}
for _n in read_table("not_on_demand.csv", NotOnDemand, key=("cloud", "family"),
                     allowed={"cloud": ("cloud", ("aws", "gcp"))}):
    NOT_ON_DEMAND[_n.cloud] = (*NOT_ON_DEMAND.get(_n.cloud, ()), _n.family)


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
