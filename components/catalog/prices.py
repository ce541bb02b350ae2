"""What a GPU node really costs: per region, per way of buying it (on-demand, spot, reservation,
Capacity Block), dated, with sources; ⚠ marks an estimate. docs/cost.md explains each figure. The figures are
the CSV tables of data/prices/ (one row each with its source; the columns are the dataclasses below, read by
components/catalog/tables.py); this module applies them.

The base figures are the on-demand prices of data/instance_types.csv (AWS us-east-1, GCP us-central1;
components/catalog/instances.py). A region is priced as a factor over that base region, stated with its source
(data/prices/regions.csv); spot as a fraction of the region's on-demand price per instance family (spot.csv,
spot_observed.csv); Capacity Blocks as the per-region instance-hour rates AWS publishes (capacity_blocks.csv). A
region without a row is priced at the base region's rates, marked ⚠ with the priced regions named in the plan's
price basis: a region is chosen for data residency and latency, and a missing price row must not block a valid
deployment (docs/cost.md says why).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from .accelerators import ACCELERATORS
from .tables import DATA, read_table, texts
from .instances import INSTANCE_TYPES, InstanceType

W = "⚠"
PRICES = DATA / "prices"
CLOUDS = ("aws", "gcp")
BASE_REGIONS = {"aws": "us-east-1", "gcp": "us-central1"}


@dataclass(frozen=True)
class Region:
    cloud: str
    name: str
    factor: float  # on-demand price over the base region's (instance_types.csv price_hour)
    estimated: bool
    source: str


def _estimate_marked(row) -> str | None:
    if row.estimated == (W in row.source):
        return None
    return (f"column estimated: {str(row.estimated).lower()} but the source {'lacks' if row.estimated else 'carries'} "
            f"the {W} mark; the two go together")


REGIONS: dict[tuple[str, str], Region] = {(r.cloud, r.name): r for r in read_table(
    "regions.csv", Region, key=("cloud", "name"), folder=PRICES, check=_estimate_marked,
    allowed={"cloud": ("cloud", CLOUDS)})}


@dataclass(frozen=True)
class SpotFraction:
    fraction: float  # spot price / on-demand price, every priced region of the cloud
    source: str


@dataclass(frozen=True)
class SpotRow:
    """A row of spot.csv: `accelerator` * is the cloud's default."""
    cloud: str
    accelerator: str
    fraction: float
    source: str


SPOT: dict[tuple[str, str], SpotFraction] = {
    (r.cloud, r.accelerator): SpotFraction(r.fraction, r.source) for r in read_table(
        "spot.csv", SpotRow, key=("cloud", "accelerator"), folder=PRICES,
        allowed={"cloud": ("cloud", CLOUDS), "accelerator": ("accelerator", {*ACCELERATORS, "*"})})}


@dataclass(frozen=True)
class SpotObserved:
    """A family's spot price in a region, observed on one size: the mean over the zones listed."""
    region: str
    family: str  # instance family, e.g. "g6" (the part before the dot)
    itype: str
    spot_mean: float  # $/hour, mean over `zones` zones
    on_demand: float  # $/hour in the same snapshot
    zones: int
    source: str

    @property
    def fraction(self) -> float:
        return self.spot_mean / self.on_demand


SPOT_OBSERVED: dict[tuple[str, str], SpotObserved] = {(o.region, o.family): o for o in read_table(
    "spot_observed.csv", SpotObserved, key=("region", "family"), folder=PRICES,
    allowed={"itype": ("instance type", INSTANCE_TYPES)})}


@dataclass(frozen=True)
class CapacityBlock:
    """The effective instance hourly rate of an EC2 Capacity Block for ML."""
    region: str
    instance_type: str
    rate: float
    valid_until: str  # the day AWS said the rate held until
    source: str


CAPACITY_BLOCK_RATES: dict[tuple[str, str], CapacityBlock] = {(b.region, b.instance_type): b for b in read_table(
    "capacity_blocks.csv", CapacityBlock, key=("region", "instance_type"), folder=PRICES,
    allowed={"instance_type": ("instance type", INSTANCE_TYPES)})}
# (region, instance type) -> $/hour
CAPACITY_BLOCKS: dict[tuple[str, str], float] = {k: b.rate for k, b in CAPACITY_BLOCK_RATES.items()}
CAPACITY_BLOCK_VALID_UNTIL = min(b.valid_until for b in CAPACITY_BLOCK_RATES.values())
CAPACITY_BLOCK_SOURCE = texts(PRICES)["capacity_block_source"]

# How GPU nodes are bought -> what the hour costs. An On-Demand Capacity Reservation (AWS) and a GCP
# reservation bill the on-demand rate whether used or not (committed-use discounts are not modelled).
CAPACITY_TYPES = ("onDemand", "spot", "reservation", "capacityBlock")
# Bought for a number of nodes ahead and billed for all of them whether used or not.
RESERVED_CAPACITY_TYPES = ("reservation", "capacityBlock")


@dataclass(frozen=True)
class Price:
    hour: float
    basis: str  # e.g. "spot us-east-1"
    estimated: bool
    source: str

    @property
    def label(self) -> str:
        return f"{self.basis}{' ' + W if self.estimated else ''}"


def priced_regions(cloud: str) -> list[str]:
    return sorted(r for c, r in REGIONS if c == cloud)


def spot_fraction(inst: InstanceType, region: str) -> SpotFraction:
    seen = SPOT_OBSERVED.get((region, inst.name.split(".")[0])) if inst.cloud == "aws" else None
    if seen:
        return SpotFraction(seen.fraction, f"{W} {seen.fraction:.4f} x on-demand: {seen.itype} spot ${seen.spot_mean} "
                                           f"(mean of {seen.zones} {region} zones) / on-demand ${seen.on_demand}, "
                                           f"{seen.source}")
    return SPOT.get((inst.cloud, inst.accelerator)) or SPOT[(inst.cloud, "*")]


def node_price(inst: InstanceType, region: str, capacity_type: str = "onDemand") -> Price:
    """$/hour for one node of `inst` in `region`, bought as `capacity_type`."""
    if capacity_type not in CAPACITY_TYPES:
        raise ValueError(f"capacity type {capacity_type!r}; one of {', '.join(CAPACITY_TYPES)}")
    reg = REGIONS.get((inst.cloud, region))
    unpriced = reg is None
    if unpriced:
        base = BASE_REGIONS[inst.cloud]
        reg = replace(REGIONS[(inst.cloud, base)], estimated=True,
                      source=f"{W} no {region} row in components/catalog/data/prices/regions.csv (priced: "
                             f"{', '.join(priced_regions(inst.cloud))}); {base} rates shown")
    on_demand = round(inst.price_hour * reg.factor, 4)
    od_estimated = reg.estimated or W in inst.source
    od_source = f"{inst.source}; region: {reg.source}"
    if unpriced:
        region = f"{region} at {BASE_REGIONS[inst.cloud]} rates (no {region} prices)"
    if capacity_type == "spot":
        s = spot_fraction(inst, reg.name)
        return Price(round(on_demand * s.fraction, 4), f"spot {region}", True, f"{od_source}; spot: {s.source}")
    if capacity_type == "capacityBlock":
        block = CAPACITY_BLOCK_RATES.get((region, inst.name))
        if block is not None:
            return Price(block.rate, f"Capacity Block {region} (rate expired {block.valid_until})", True, block.source)
        return Price(on_demand, f"on-demand {region} (no Capacity Block rate known)", True,
                     f"{od_source}; no Capacity Block rate for {inst.name} in {region} in "
                     f"components/catalog/data/prices/capacity_blocks.csv, on-demand shown")
    kind = "reserved (on-demand rate)" if capacity_type == "reservation" else "on-demand"
    return Price(on_demand, f"{kind} {region}", od_estimated, od_source)


# --- what a stack pays beside its GPU nodes (components/costs/bill.py) ------------------------------------------
# One row per billed item (data/prices/platform.csv), priced in the cloud's base region (BASE_REGIONS); another
# region is shown at the base rate, marked ⚠, as node_price does. `read` is the day the figure was read.
@dataclass(frozen=True)
class PlatformPrice:
    cloud: str
    key: str
    price: float  # $ per `unit`
    unit: str  # "cluster-hour", "node-hour", "GiB-month", ...
    source: str
    read: str
    extra: str = ""  # what the row does not include (usage charges), as the plan prints it

    @property
    def estimated(self) -> bool:
        return W in self.source


PLATFORM_PRICES: dict[tuple[str, str], PlatformPrice] = {(p.cloud, p.key): p for p in read_table(
    "platform.csv", PlatformPrice, key=("cloud", "key"), folder=PRICES, allowed={"cloud": ("cloud", CLOUDS)})}
GKE_FREE_TIER = texts(PRICES)["gke_free_tier"]
HOURS_PER_MONTH = 730  # AWS and GCP both convert monthly rates at 730 hours


@dataclass(frozen=True)
class CpuPrice:
    """On-demand Linux $/hour of a system pool's CPU type (aws.systemInstanceType / gcp.systemMachineType)."""
    cloud: str
    name: str
    price: float
    source: str
    read: str


CPU_PRICES: dict[tuple[str, str], CpuPrice] = {(c.cloud, c.name): c for c in read_table(
    "cpu_instances.csv", CpuPrice, key=("cloud", "name"), folder=PRICES, allowed={"cloud": ("cloud", CLOUDS)})}
# (cloud, type) -> ($/hour, source), base region
CPU_INSTANCES: dict[tuple[str, str], tuple[float, str]] = {k: (c.price, c.source) for k, c in CPU_PRICES.items()}


def platform_price(cloud: str, key: str, region: str) -> Price:
    """$ per unit of one platform item in `region` (the base region's rate, marked, elsewhere)."""
    p = PLATFORM_PRICES[(cloud, key)]
    base = BASE_REGIONS[cloud]
    if region == base:
        return Price(p.price, f"{p.unit} {region}", p.estimated, p.source)
    return Price(p.price, f"{p.unit} {region} at {base} rates (no {region} prices)", True,
                 f"{W} {region}: {base} rate shown; {p.source}")


def negotiated(price: Price, rate: float | None, discount_percent: float) -> Price:
    """A catalog price with the stack's `pricing` applied: an instance type's own negotiated rate replaces
    it (final: no discount on top); otherwise `discountPercent` comes off it."""
    if rate is not None:
        return Price(rate, "negotiated (pricing.instanceTypes)", False, "stack file (pricing.instanceTypes)")
    if not discount_percent:
        return price
    return replace(price, hour=round(price.hour * (1 - discount_percent / 100), 4),
                   basis=f"{price.basis} less {discount_percent:g} % (pricing.discountPercent)")
