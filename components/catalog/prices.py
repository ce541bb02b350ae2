"""What a GPU node really costs: per region, per way of buying it (on-demand, spot, reservation,
Capacity Block), dated, with sources; ⚠ marks an estimate. docs/cost.md explains each figure.

The base figures are the on-demand prices of components/catalog/instances.py (AWS us-east-1, GCP
us-central1, read 2025-10). A region is priced as a factor over that base region, stated with its
source; spot as a fraction of the region's on-demand price per instance family; Capacity Blocks as
the per-region instance-hour rates AWS publishes. A region without a row is priced at the base
region's rates, marked ⚠ with the priced regions named in the plan's price basis: a region is chosen
for data residency and latency, and a missing price row must not block a valid deployment
(docs/cost.md says why).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from .instances import PRICES_AS_OF, InstanceType

W = "⚠"


@dataclass(frozen=True)
class Region:
    cloud: str
    name: str
    factor: float  # on-demand price over the base region's (instances.py)
    estimated: bool
    source: str


# AWS publishes one on-demand rate card for us-east-1, us-east-2 and us-west-2 across the EC2 G and P
# families we checked (the Capacity Block table below also lists p5.48xlarge at one rate in us-east-1
# and us-east-2); per type it is not re-read here, hence ⚠. GCP's us-central1, us-east1 and us-west1
# likewise share one price list for Compute Engine GPUs and machine types; ⚠ for the same reason.
REGIONS: dict[tuple[str, str], Region] = {(r.cloud, r.name): r for r in [
    Region("aws", "us-east-1", 1.0, False, f"aws.amazon.com/ec2/pricing/on-demand, {PRICES_AS_OF}"),
    Region("aws", "us-east-2", 1.0, True, f"{W} same rate card as us-east-1 (aws.amazon.com/ec2/pricing/"
                                          f"on-demand), not re-read per type, {PRICES_AS_OF}"),
    Region("aws", "us-west-2", 1.0, True, f"{W} same rate card as us-east-1 (aws.amazon.com/ec2/pricing/"
                                          f"on-demand), not re-read per type, {PRICES_AS_OF}"),
    Region("gcp", "us-central1", 1.0, False, f"cloud.google.com/compute/gpus-pricing, {PRICES_AS_OF}"),
    Region("gcp", "us-east1", 1.0, True, f"{W} same price list as us-central1 (cloud.google.com/compute/"
                                         f"gpus-pricing), not re-read per machine type, {PRICES_AS_OF}"),
    Region("gcp", "us-west1", 1.0, True, f"{W} same price list as us-central1 (cloud.google.com/compute/"
                                         f"gpus-pricing), not re-read per machine type, {PRICES_AS_OF}"),
]}


@dataclass(frozen=True)
class SpotFraction:
    fraction: float  # spot price / on-demand price, every priced region of the cloud
    source: str


# Spot prices move (AWS: continuously; GCP: up to once a day) and no per-type history was read for
# this table: every figure is an estimate (⚠) from published observations, at the dear end so that a
# spot plan does not promise more savings than were seen.
SPOT: dict[tuple[str, str], SpotFraction] = {
    # deploybase.ai/articles/spot-gpu-pricing (2026-03): AWS H100 $6.88 -> $3.44 spot, A100 $3.06 -> $1.53 (0.50);
    # costnimbus.com gpu-cost-management-ml-teams (2026-03): P5 spot ~$2.00-2.50 vs ~$3.90 on-demand /GPU-h
    # (0.51-0.64). The G families use SPOT_OBSERVED below where it has the region.
    ("aws", "*"): SpotFraction(0.60, f"{W} estimate: 0.60 x on-demand, the dear end of the 0.50-0.64 spot/"
                                     f"on-demand band observed for AWS P-family GPUs (deploybase.ai, costnimbus.com, "
                                     f"2026-03); not read from spot price history"),
    # cloud.google.com/spot-vms/pricing (earlier edition): "always provide discounts of 60-91% off of the
    # corresponding on-demand price for machine types and GPUs" -> at most 0.40 x on-demand.
    ("gcp", "*"): SpotFraction(0.40, f"{W} estimate: 0.40 x on-demand, the dear end of the 60-91 % discount "
                                     f"cloud.google.com/spot-vms/pricing guaranteed (earlier edition); not read "
                                     f"per machine type"),
    # costnimbus.com (2026-03): A3-High spot ~$2.25 vs ~$3.00 on-demand per GPU-hour; the H100 shapes
    # are in demand and their spot discount is far smaller than the guaranteed band above.
    ("gcp", "h100"): SpotFraction(0.75, f"{W} estimate: 0.75 x on-demand, A3-High spot ~$2.25 vs ~$3.00 "
                                        f"on-demand per GPU-hour (costnimbus.com, 2026-03)"),
}

SKYPILOT = ("github.com/skypilot-org/skypilot-catalog catalogs/v7/aws/vms.csv @ 001367d2 (a snapshot of EC2 "
            "on-demand and per-zone spot prices; commit date not recorded; after 2024-08 (it lists g6e) and before 2025-06: its "
            "p5.48xlarge on-demand is the pre-2025-06 $98.32)")


@dataclass(frozen=True)
class SpotObserved:
    """A family's spot price in a region, observed on one size: the mean over the zones listed."""
    region: str
    family: str  # instance family, e.g. "g6" (the part before the dot)
    itype: str
    spot_mean: float  # $/hour, mean over `zones` zones
    on_demand: float  # $/hour in the same snapshot
    zones: int

    @property
    def fraction(self) -> float:
        return self.spot_mean / self.on_demand


# G-family on-demand rates did not change after the snapshot (they match instances.py), so its
# spot/on-demand ratios still apply; the P family's were taken before the 2025-06 price cut and are
# not used (the estimate above stands: the snapshot's p5.48xlarge spot mean in us-east-1, $26.59 over
# 6 zones, is 0.48 of today's $55.04, inside the band it is taken from).
SPOT_OBSERVED: dict[tuple[str, str], SpotObserved] = {(o.region, o.family): o for o in [
    SpotObserved("us-east-1", "g5", "g5.xlarge", 0.4062, 1.006, 5),
    SpotObserved("us-east-2", "g5", "g5.xlarge", 0.3654, 1.006, 3),
    SpotObserved("us-west-2", "g5", "g5.xlarge", 0.3651, 1.006, 3),
    SpotObserved("us-east-1", "g6", "g6.xlarge", 0.4077, 0.8048, 4),
    SpotObserved("us-east-2", "g6", "g6.xlarge", 0.3112, 0.8048, 3),
    SpotObserved("us-west-2", "g6", "g6.xlarge", 0.4486, 0.8048, 3),
    SpotObserved("us-east-1", "g6e", "g6e.12xlarge", 5.1078, 10.49264, 4),
    SpotObserved("us-east-2", "g6e", "g6e.12xlarge", 4.1602, 10.49264, 3),
    SpotObserved("us-west-2", "g6e", "g6e.12xlarge", 4.9584, 10.49264, 4),
]}

# ⚠ EXPIRED: AWS said these rates held until 2025-01-01. Re-reading the pricing page with the project's
# search tools (2026-12) found only copies of that same table ("scheduled to be updated on January 1, 2025"),
# so no current rate could be verified: the figures stay, marked expired in every price basis they give.
CAPACITY_BLOCK_VALID_UNTIL = "2025-01-01"
CAPACITY_BLOCK_SOURCE = (f"{W} EXPIRED {CAPACITY_BLOCK_VALID_UNTIL}: aws.amazon.com/ec2/capacityblocks/pricing, "
                         f"effective instance hourly rate of the table valid until {CAPACITY_BLOCK_VALID_UNTIL} "
                         f"(read 2024-12; no current table found 2026-12; AWS updates it regularly, a block pays "
                         f"the rate at purchase), Linux operating-system fee not included")
# (region, instance type) -> effective instance hourly rate of an EC2 Capacity Block for ML.
CAPACITY_BLOCKS: dict[tuple[str, str], float] = {
    ("us-east-1", "p5.48xlarge"): 39.33,
    ("us-east-2", "p5.48xlarge"): 39.33,
    ("us-east-2", "p5e.48xlarge"): 43.26,
    ("us-east-2", "p4d.24xlarge"): 14.75,
    ("us-west-2", "p4d.24xlarge"): 14.75,
}

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
                                           f"{SKYPILOT}")
    return SPOT.get((inst.cloud, inst.accelerator)) or SPOT[(inst.cloud, "*")]


BASE_REGIONS = {"aws": "us-east-1", "gcp": "us-central1"}


def node_price(inst: InstanceType, region: str, capacity_type: str = "onDemand") -> Price:
    """$/hour for one node of `inst` in `region`, bought as `capacity_type`."""
    if capacity_type not in CAPACITY_TYPES:
        raise ValueError(f"capacity type {capacity_type!r}; one of {', '.join(CAPACITY_TYPES)}")
    reg = REGIONS.get((inst.cloud, region))
    unpriced = reg is None
    if unpriced:
        base = BASE_REGIONS[inst.cloud]
        reg = replace(REGIONS[(inst.cloud, base)], estimated=True,
                      source=f"{W} no {region} prices in components/catalog/prices.py (priced: "
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
        rate = CAPACITY_BLOCKS.get((region, inst.name))
        if rate is not None:
            return Price(rate, f"Capacity Block {region} (rate expired {CAPACITY_BLOCK_VALID_UNTIL})", True,
                         CAPACITY_BLOCK_SOURCE)
        return Price(on_demand, f"on-demand {region} (no Capacity Block rate known)", True,
                     f"{od_source}; no Capacity Block rate for {inst.name} in {region} in "
                     f"components/catalog/prices.py, on-demand shown")
    kind = "reserved (on-demand rate)" if capacity_type == "reservation" else "on-demand"
    return Price(on_demand, f"{kind} {region}", od_estimated, od_source)


# --- what a stack pays beside its GPU nodes (components/bill.py) ------------------------------------------
# One row per billed item, priced in the cloud's base region (BASE_REGIONS); another region is shown at the
# base rate, marked ⚠, as node_price does. `read` is the day the figure was read (through the project's
# search tool: stored copies of the pages, whose own date is not always known). ⚠ in `source` marks a
# figure not read from the vendor's own page (a third-party restatement, a per-size derivation or unverified).
PLATFORM_READ = "2026-12-04"


@dataclass(frozen=True)
class PlatformPrice:
    cloud: str
    key: str
    price: float  # $ per `unit`
    unit: str  # "cluster-hour", "node-hour", "GiB-month", ...
    source: str
    read: str = PLATFORM_READ
    extra: str = ""  # what the row does not include (usage charges), as the plan prints it

    @property
    def estimated(self) -> bool:
        return W in self.source


_EKS = "aws.amazon.com/blogs/containers/amazon-eks-extended-support-for-kubernetes-versions-pricing"
_NAT3 = f"{W} aws.amazon.com/vpc/pricing as restated by basavytix.com and cloudburn.io (2026); vendor page not read"
_NLB = (f"{W} aws.amazon.com/elasticloadbalancing/pricing as restated by clustercost.com and "
        f"awsnegotiations.com (2026); vendor page not read")
_FS = (f"{W} cloud.google.com/filestore/pricing renders its per-tier table by script: no stored copy carries the "
       f"figure; last list price known to the project, re-read before relying on it")
PLATFORM_PRICES: dict[tuple[str, str], PlatformPrice] = {(p.cloud, p.key): p for p in [
    PlatformPrice("aws", "eks-standard", 0.10, "cluster-hour", f"{_EKS} (standard support: $0.10 per cluster hour)"),
    PlatformPrice("aws", "eks-extended", 0.60, "cluster-hour",
                  f"{_EKS} (a minor in extended support: $0.60 per cluster hour in total, from 2024-04-01)"),
    PlatformPrice("aws", "nat-gateway", 0.045, "gateway-hour", _NAT3, extra="$0.045 per GB processed"),
    PlatformPrice("aws", "public-ipv4", 0.005, "address-hour",
                  "aws.amazon.com/blogs/networking-and-content-delivery/identify-and-optimize-public-ipv4-address-"
                  "usage-on-aws ($0.005 per public IPv4 address per hour from 2024-02-01)"),
    PlatformPrice("aws", "efs-standard", 0.30, "GB-month", "aws.amazon.com/efs/pricing (Standard storage)",
                  extra="Elastic throughput: $0.03 per GB read, $0.06 per GB written"),
    PlatformPrice("aws", "nlb", 0.0225, "load-balancer-hour", _NLB, extra="$0.006 per NLCU-hour"),
    PlatformPrice("gcp", "gke-management", 0.10, "cluster-hour",
                  "cloud.google.com/kubernetes-engine/pricing (cluster management fee, every mode and topology)"),
    PlatformPrice("gcp", "cloud-nat-vm", 0.0014, "VM-hour",
                  "cloud.google.com/nat/pricing (Public NAT: $0.0014 per VM-hour up to 32 VMs, $0.044 per hour "
                  "beyond)", extra="$0.045 per GiB processed"),
    PlatformPrice("gcp", "cloud-nat-ip", 0.005, "address-hour",
                  "cloud.google.com/nat/pricing (each external IP address a NAT gateway uses)"),
    PlatformPrice("gcp", "forwarding-rule", 0.025, "rule-hour",
                  "cloud.google.com/load-balancing/pricing (first 5 forwarding rules of a project; $0.01 each beyond)",
                  extra="$0.008 per GiB processed in and out"),
    # Filestore bills the provisioned capacity, not what is stored (cloud.google.com/filestore/pricing).
    PlatformPrice("gcp", "filestore-BASIC_HDD", 0.20, "GiB-month",
                  f"{W} cloud.google.com/filestore/pricing example: Basic HDD $0.000274 per GiB-hour in us-west1 "
                  f"(= $0.20 per GiB-month); us-central1 not read"),
    PlatformPrice("gcp", "filestore-BASIC_SSD", 0.30, "GiB-month", _FS),
    PlatformPrice("gcp", "filestore-ZONAL", 0.30, "GiB-month", _FS),
    PlatformPrice("gcp", "filestore-REGIONAL", 0.45, "GiB-month", _FS),
    PlatformPrice("gcp", "filestore-ENTERPRISE", 0.60, "GiB-month", _FS),
]}
GKE_FREE_TIER = ("the GKE free tier ($74.40 a month per billing account) applies to zonal and Autopilot clusters only "
                 "(cloud.google.com/kubernetes-engine/pricing); this stack's cluster is regional")
HOURS_PER_MONTH = 730  # AWS and GCP both convert monthly rates at 730 hours

_M7 = "doit.com/blog/aws-ec2-pricing (m7i.large $0.1008); c3x.dev/blog/m5-vs-m6i-vs-m7i-cost-performance (xlarge)"
_M7X = f"{W} twice the size below (EC2 prices these families linearly in size); {_M7}"
_E2 = (f"{W} cloud.google.com/compute/vm-instance-pricing: e2-standard-8 $0.268 (vCPU $0.021811 + GB $0.002923 an "
       f"hour); stored copies of the page were garbled, not re-read")
# On-demand Linux $/hour of the system pools' CPU types (aws.systemInstanceType / gcp.systemMachineType), base region.
CPU_INSTANCES: dict[tuple[str, str], tuple[float, str]] = {
    ("aws", "m7i.large"): (0.1008, _M7),
    ("aws", "m7i.xlarge"): (0.2016, _M7),
    ("aws", "m7i.2xlarge"): (0.4032, _M7X),
    ("aws", "m7i.4xlarge"): (0.8064, _M7X),
    ("aws", "m6i.xlarge"): (0.192, _M7),
    ("aws", "m6i.2xlarge"): (0.384, _M7X),
    ("aws", "m5.xlarge"): (0.192, _M7),
    ("aws", "m5.2xlarge"): (0.384, _M7X),
    ("gcp", "e2-standard-4"): (0.134, _E2),
    ("gcp", "e2-standard-8"): (0.268, _E2),
    ("gcp", "e2-standard-16"): (0.536, _E2),
}


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
