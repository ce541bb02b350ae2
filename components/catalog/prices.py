"""What a GPU node really costs: per region, per way of buying it (on-demand, spot, reservation,
Capacity Block), dated, with sources; ⚠ marks an estimate (PRICE_LEGEND says what it covers, and the plan prints
it). docs/cost.md explains each figure. The figures are the CSV tables of data/prices/ (one row each with its
source; the columns are the dataclasses below, read by components/catalog/tables.py); this module applies them.

A (cloud, region, type) with a row in data/prices/regional.csv (written by scripts/prices.py from a maintained
source, with its read date) is priced from that row: on demand exactly, spot where the source has it. Where the
source lists the region and lists the type elsewhere but not there, the type is not offered in the region
(`not_offered`): the planner does not pick it (components/planning.py priced_pool), and a stack that pins it
gets a price marked ⚠ that says so (AWS: in a region SkyPilot's catalog covers, header "aws regions read").
Where the source has no figure at all for the region (an AWS region SkyPilot does not read, e.g. il-central-1)
or for the type (GCP A3 Ultra, A4; AWS p5e: no on-demand price), the base region's rate (regional.csv's base-region row, else
data/instance_types.csv) times the region's factor of data/prices/regions.csv is shown, marked ⚠ with the reason;
a region without a factor row is priced at the base rate, marked ⚠, naming the priced regions (a region is chosen
for data residency and latency, and a missing price row must not block a valid deployment: docs/cost.md).
Spot without a regional spot figure is a fraction of on-demand (AWS: the base region's row's ratio, else
spot.csv); Capacity Blocks are the
per-region instance-hour rates AWS published (capacity_blocks.csv).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from .accelerators import ACCELERATORS
from .tables import DATA, DataError, read_table, texts
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
class RegionalPrice:
    """A row of regional.csv: one catalog type's $/hour in one region, as its source lists it."""
    cloud: str
    region: str
    instance_type: str
    on_demand: float
    spot: float | None
    source: str


REGIONAL_FILE = "components/catalog/data/prices/regional.csv"
REGIONAL: dict[tuple[str, str, str], RegionalPrice] = {(r.cloud, r.region, r.instance_type): r for r in read_table(
    "regional.csv", RegionalPrice, key=("cloud", "region", "instance_type"), folder=PRICES,
    allowed={"cloud": ("cloud", CLOUDS), "instance_type": ("instance type", INSTANCE_TYPES)})}


def _header(key: str, what: str) -> str:
    for line in (PRICES / "regional.csv").read_text(encoding="utf-8").splitlines():
        if line.startswith(f"# {key}: "):
            return line.removeprefix(f"# {key}: ").strip()
    raise DataError(f"{REGIONAL_FILE}: no '# {key}: ...' header line ({what}); "
                    f"regenerate it with scripts/prices.py (docs/cost.md)")


REGIONAL_READ = _header("read", "the day its sources were read, YYYY-MM-DD")
# The regions SkyPilot's AWS catalog covers, whatever their types (the header scripts/prices.py writes): there a
# catalog type without a row is not offered, even where the region has no catalog type at all (af-south-1).
AWS_REGIONS_READ = frozenset(_header("aws regions read", "the regions the AWS source covers").split())
# where each cloud's regional source has figures: its regions, and the types it lists anywhere
LISTED_REGIONS = {c: frozenset(r for cc, r, _ in REGIONAL if cc == c) | (AWS_REGIONS_READ if c == "aws" else frozenset())
                  for c in CLOUDS}
LISTED_TYPES = {c: frozenset(t for cc, _, t in REGIONAL if cc == c) for c in CLOUDS}

PRICE_LEGEND = (f"{W} = not a price read for this region and item from a dated source: an estimate (spot prices move; "
                "without a regional spot row, a fraction of on-demand), another region's rate (the price source has no "
                "figure for this region or this type), an expired Capacity Block rate, a type the price source does not "
                "list in this region (pinned), a figure marked for re-check, or no price at all (unpriced); the price's "
                "source says which (docs/cost.md)")


def price_legend(*texts: str) -> list[str]:
    """The legend line for the marks in `texts` (what the plan printed beside its prices), or none."""
    return [f"  {PRICE_LEGEND}"] if any(W in t for t in texts) else []


def not_offered(inst: InstanceType, region: str) -> str | None:
    """Why `inst` is not offered in `region` according to regional.csv's source, or None (offered, or the source
    does not say: it has no figure for that region or that type at all)."""
    if inst.cloud not in CLOUDS or (inst.cloud, region, inst.name) in REGIONAL:
        return None
    if region not in LISTED_REGIONS[inst.cloud] or inst.name not in LISTED_TYPES[inst.cloud]:
        return None
    where = sorted(r for c, r, t in REGIONAL if c == inst.cloud and t == inst.name)
    return (f"{inst.name} is not offered in {region}: its price source lists it in {', '.join(where)} only "
            f"({REGIONAL_FILE}, read {REGIONAL_READ})")


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
    """The regions of `cloud` with prices: a regions.csv factor or regional.csv rows."""
    return sorted({r for c, r in REGIONS if c == cloud} | LISTED_REGIONS[cloud])


def spot_fraction(inst: InstanceType, region: str) -> SpotFraction:
    """Spot over on-demand where regional.csv has no spot figure for (region, type). AWS: the type's spot/on-demand
    ratio in the base region's row of regional.csv (SkyPilot's per-zone spot prices), else spot.csv's estimate.
    GCP keeps spot.csv's estimates (its source has a spot figure wherever it has a row)."""
    base = REGIONAL.get((inst.cloud, BASE_REGIONS[inst.cloud], inst.name)) if inst.cloud == "aws" else None
    if base is not None and base.spot is not None:
        f = base.spot / base.on_demand
        return SpotFraction(f, f"{W} {f:.4f} x on-demand: the {base.region} {inst.name} spot/on-demand ratio "
                               f"(${base.spot} / ${base.on_demand}), {base.source}")
    return SPOT.get((inst.cloud, inst.accelerator)) or SPOT[(inst.cloud, "*")]


def _base_hour(inst: InstanceType) -> tuple[float, str]:
    """The base region's on-demand rate and its source: regional.csv's row, else instance_types.csv's."""
    row = REGIONAL.get((inst.cloud, BASE_REGIONS[inst.cloud], inst.name))
    return (row.on_demand, row.source) if row else (inst.price_hour, inst.source)


def node_price(inst: InstanceType, region: str, capacity_type: str = "onDemand") -> Price:
    """$/hour for one node of `inst` in `region`, bought as `capacity_type`."""
    if capacity_type not in CAPACITY_TYPES:
        raise ValueError(f"capacity type {capacity_type!r}; one of {', '.join(CAPACITY_TYPES)}")
    row = REGIONAL.get((inst.cloud, region, inst.name))
    base = BASE_REGIONS[inst.cloud]
    if row is not None:
        on_demand, od_estimated, od_source, where = row.on_demand, False, row.source, region
    else:
        hour, source = _base_hour(inst)
        reg = REGIONS.get((inst.cloud, region))
        shown = reg or REGIONS[(inst.cloud, base)]
        on_demand, od_estimated = round(hour * shown.factor, 4), True
        why = not_offered(inst, region)
        if why:  # the planner skips such a type (priced_pool); a stack that pins it sees why, and the rate shown
            where = f"{region}{'' if reg else f' at {base} rates'} (not listed in {region} by the price source)"
            missing = f"{W} {why}"
        elif reg is None:
            where = f"{region} at {base} rates (no {region} prices)"
            missing = (f"{W} no {region} row in {REGIONAL_FILE} nor in components/catalog/data/prices/regions.csv "
                       f"(priced: {', '.join(priced_regions(inst.cloud))}); {base} rates shown")
        else:
            where = region
            missing = (f"{W} no {inst.name} figure for {region} in {REGIONAL_FILE}"
                       + ("" if region == base else f"; {base} rate x {reg.factor:g}"))
        od_source = f"{missing}; {source}; region: {shown.source}"
    if capacity_type == "spot":
        if row is not None and row.spot is not None:
            return Price(row.spot, f"spot {where}", True, f"{W} spot prices move: the source's spot price, {row.source}")
        s = spot_fraction(inst, region if (inst.cloud, region) in REGIONS else base)
        return Price(round(on_demand * s.fraction, 4), f"spot {where}", True, f"{od_source}; spot: {s.source}")
    if capacity_type == "capacityBlock":
        block = CAPACITY_BLOCK_RATES.get((region, inst.name))
        if block is not None:
            return Price(block.rate, f"Capacity Block {region} (rate expired {block.valid_until})", True, block.source)
        return Price(on_demand, f"on-demand {where} (no Capacity Block rate known)", True,
                     f"{od_source}; no Capacity Block rate for {inst.name} in {region} in "
                     f"components/catalog/data/prices/capacity_blocks.csv, on-demand shown")
    kind = "reserved (on-demand rate)" if capacity_type == "reservation" else "on-demand"
    return Price(on_demand, f"{kind} {where}", od_estimated, od_source)


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
