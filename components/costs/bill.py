"""The whole bill of a cloud stack beside its GPU nodes (issue 24): the managed control plane, the system
nodes, NAT, the model-weights file storage and the gateway's load balancer, each priced from a row of
components/catalog/data/prices/platform.csv or cpu_instances.csv (source and read date per row) at the stack's
region and negotiated rates (`pricing`). Pure: it registers no resource and calls no cloud API.

What is billed by use (NAT and load balancer data processing, file-storage throughput, data transfer,
root disks, logs) is named on the line or in NOT_INCLUDED, never silently left out. An existing cluster has
no cloud bill here: its GPU nodes are priced at existing.gpuNodes.pricePerNodeHour, as the cost lines say.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from ..catalog.instances import PRICES_AS_OF
from ..catalog.prices import (BASE_REGIONS, CPU_INSTANCES, CPU_PRICES, GKE_FREE_TIER, HOURS_PER_MONTH,
                             PLATFORM_PRICES, REGIONAL_READ, W, Price, negotiated, platform_price, price_legend)
from ..cluster.aws.network import DEFAULT_ZONES
from ..cluster.gcp.node_pools import system_nodes as gcp_system_nodes
from ..cluster.gcp.storage import capacity_gib
from ..cluster.pools import model_cache_gib
from ..config.schema import StackConfig
from ..upstream import kubernetes_support
from ..upstream.kubernetes_support import END_OF_STANDARD_SUPPORT
from ..planner import Topology

NOT_INCLUDED = ("data transfer, root disks (EBS / persistent disk), logs and metrics storage, and the per-GB "
                "charges named on each line")
CLOUD_NAT_VM_CAP = 32  # cloud.google.com/nat/pricing: the per-VM rate is capped at 32 VMs ($0.044 an hour)


@dataclass(frozen=True)
class BillLine:
    item: str  # "EKS control plane (standard support)"
    quantity: float  # clusters, nodes, GiB, ...
    unit_price: float | None  # $ per unit; None: no price known
    unit: str
    per_hour: float | None  # $/hour for the quantity; None: unpriced
    basis: str  # price basis (region, negotiated, ...) and source
    read: str  # when the price was read
    estimated: bool
    extra: str = ""  # billed by use, not in per_hour
    note: str = ""


@dataclass(frozen=True)
class Bill:
    cloud: str
    region: str
    gpu_min: float
    gpu_planned: float
    gpu_max: float
    lines: tuple[BillLine, ...]
    not_included: str = NOT_INCLUDED
    read: tuple[str, ...] = field(default=())

    @property
    def fixed(self) -> float:
        return round(sum(x.per_hour or 0 for x in self.lines), 4)

    @property
    def unpriced(self) -> list[str]:
        return [x.item for x in self.lines if x.per_hour is None]

    @property
    def total(self) -> float:
        return round(self.gpu_planned + self.fixed, 2)

    def to_dict(self) -> dict:
        return {"cloud": self.cloud, "region": self.region, "gpuNodes": {"min": self.gpu_min,
                "planned": self.gpu_planned, "max": self.gpu_max}, "lines": [asdict(x) for x in self.lines],
                "perHour": {"min": round(self.gpu_min + self.fixed, 2), "planned": self.total,
                            "max": round(self.gpu_max + self.fixed, 2)},
                "perMonth": round(self.total * HOURS_PER_MONTH, 2), "unpriced": self.unpriced,
                "notIncluded": self.not_included, "pricesRead": list(self.read)}


def _line(cfg: StackConfig, item: str, key: str, qty: float, note: str = "", hours_per_unit: float = 1) -> BillLine:
    """One platform item: `qty` units of PLATFORM_PRICES[key]; a monthly unit is spread over HOURS_PER_MONTH."""
    row = PLATFORM_PRICES[(cfg.cloud, key)]
    price = negotiated(platform_price(cfg.cloud, key, _region(cfg)), None, cfg.pricing.discount_percent)
    per_hour = round(qty * price.hour / hours_per_unit, 4)
    return BillLine(item, qty, price.hour, row.unit, per_hour, f"{price.basis}; {price.source}", row.read,
                    price.estimated, row.extra, note)


def _node_line(cfg: StackConfig, item: str, itype: str, nodes: int) -> BillLine:
    """System nodes: the CPU type's on-demand rate in the base region, or the stack's negotiated one."""
    rate = cfg.pricing.instance_types.get(itype)
    known = CPU_INSTANCES.get((cfg.cloud, itype))
    if known is None and rate is None:
        return BillLine(f"{item} ({nodes} x {itype})", nodes, None, "node-hour", None,
                        f"{W} no price for {itype} in components/catalog/data/prices/cpu_instances.csv; set "
                        f"pricing.instanceTypes.{itype} (or add its row there with its source)", "", True)
    region = _region(cfg)
    base = BASE_REGIONS[cfg.cloud]
    hour, source = known or (0.0, "")
    listed = Price(hour, f"on-demand {region}" + ("" if region == base else f" at {base} rates (no {region} prices)"),
                   W in source or region != base, source)
    price = negotiated(listed, rate, cfg.pricing.discount_percent)
    return BillLine(f"{item} ({nodes} x {itype})", nodes, price.hour, "node-hour", round(nodes * price.hour, 4),
                    f"{price.basis}; {price.source}", CPU_PRICES[(cfg.cloud, itype)].read if rate is None else "stack file",
                    price.estimated)


def _region(cfg: StackConfig) -> str:
    return cfg.aws.region if cfg.cloud == "aws" else cfg.gcp.region


def _gateway_lb(cfg: StackConfig) -> bool:
    """The gateway's LoadBalancer Service exists (gateway.install: false uses a cluster stack's)."""
    return cfg.gateway.enabled and cfg.gateway.install


def aws_lines(cfg: StackConfig, topologies: dict[str, Topology]) -> list[BillLine]:
    a = cfg.aws
    minor = cfg.cluster.kubernetes_version
    ends = END_OF_STANDARD_SUPPORT["aws"].get(minor)
    # EKS bills extended support from the day standard support ends, only where aws.supportType allows it
    # (STANDARD upgrades the minor instead): judged on kubernetes_support.today(), as config validation is.
    extended = a.support_type == "EXTENDED" and ends is not None and kubernetes_support.today() >= ends
    if a.support_type == "EXTENDED":
        note = (f"aws.supportType EXTENDED: cluster.kubernetesVersion {minor} left standard support on {ends}"
                if extended else
                f"aws.supportType EXTENDED: $0.60/h from {ends}, when {minor} leaves standard support"
                if ends else f"aws.supportType EXTENDED: $0.60/h once {minor} leaves standard support")
    else:
        note = ("aws.supportType STANDARD: EKS upgrades the minor at the end of standard support, never "
                "billing extended support")
    lines = [_line(cfg, f"EKS control plane ({'extended' if extended else 'standard'} support)",
                   "eks-extended" if extended else "eks-standard", 1, note),
             _node_line(cfg, "system nodes", a.system_instance_type, a.system_nodes)]
    if not a.vpc_id:  # a given VPC's NAT is its owner's bill
        zones = len(a.availability_zones or []) or DEFAULT_ZONES
        how = "aws.availabilityZones" if a.availability_zones else "the region's first three zones"
        lines += [_line(cfg, f"NAT gateways (one per zone, {how})", "nat-gateway", zones),
                  _line(cfg, "public IPv4 addresses (the NAT gateways' Elastic IPs)", "public-ipv4", zones)]
    if cfg.model_cache.kind == "rwx" and not cfg.model_cache.storage_class:
        gib = model_cache_gib(cfg.model_cache.size_gib, topologies)
        lines.append(_line(cfg, f"EFS model cache (up to {gib} GiB)", "efs-standard", gib,
                           "EFS bills the bytes stored: the weights, up to the cache's planned size",
                           hours_per_unit=HOURS_PER_MONTH))
    if _gateway_lb(cfg):
        lines.append(_line(cfg, f"gateway NLB ({cfg.gateway.scheme})", "nlb", 1))
        if cfg.gateway.scheme == "internet-facing":
            zones = len(a.subnet_ids or a.availability_zones or []) or DEFAULT_ZONES
            lines.append(_line(cfg, "public IPv4 addresses (the internet-facing NLB, one per zone)", "public-ipv4",
                               zones))
    return lines


def gcp_lines(cfg: StackConfig, topologies: dict[str, Topology]) -> list[BillLine]:
    g = cfg.gcp
    extended = (g.release_channel == "EXTENDED")
    lines = [_line(cfg, "GKE cluster management fee (regional cluster)", "gke-management", 1,
                   GKE_FREE_TIER + ("; gcp.releaseChannel EXTENDED adds a fee while the minor is in extended "
                                    "support (not included)" if extended else "")),
             _node_line(cfg, "system nodes", g.system_machine_type, gcp_system_nodes(cfg))]
    if not g.network:  # the stack's own VPC and its Cloud NAT
        vms = gcp_system_nodes(cfg) + sum(t.nodes for t in topologies.values())
        lines += [_line(cfg, f"Cloud NAT ({vms} VM(s) at planned replicas, rate capped at {CLOUD_NAT_VM_CAP})",
                        "cloud-nat-vm", min(vms, CLOUD_NAT_VM_CAP)),
                  _line(cfg, "Cloud NAT external IP address (at least one, AUTO_ONLY)", "cloud-nat-ip", 1)]
    if cfg.model_cache.kind == "rwx":
        tier = g.filestore_tier
        need = model_cache_gib(cfg.model_cache.size_gib, topologies)
        gib = capacity_gib(tier, need)
        note = (f"the tier's minimum capacity: {gib} GiB provisioned for {need} GiB of cache (Filestore bills "
                f"what is provisioned; gcp.filestoreTier picks the tier)" if gib > need else
                "Filestore bills what is provisioned")
        lines.append(_line(cfg, f"Filestore model cache ({tier}, {gib} GiB)", f"filestore-{tier}", gib, note,
                           hours_per_unit=HOURS_PER_MONTH))
    if _gateway_lb(cfg):
        lines.append(_line(cfg, f"gateway load balancer forwarding rule ({cfg.gateway.scheme})", "forwarding-rule", 1))
    return lines


def stack_bill(cfg: StackConfig, topologies: dict[str, Topology]) -> Bill | None:
    """The bill of a cloud stack at its planned replicas; None for an existing cluster (no cloud bill)."""
    if cfg.cloud == "existing":
        return None
    lines = aws_lines(cfg, topologies) if cfg.cloud == "aws" else gcp_lines(cfg, topologies)
    ts = topologies.values()
    read = sorted({PRICES_AS_OF, REGIONAL_READ, *(x.read for x in lines if x.read and x.read != "stack file")})
    return Bill(cfg.cloud, _region(cfg), round(sum(t.cost_min_per_hour for t in ts), 2),
                round(sum(t.cost_billed_per_hour for t in ts), 2), round(sum(t.cost_max_per_hour for t in ts), 2),
                tuple(lines), read=tuple(read))


def bill_lines(bill: dict | None) -> list[str]:
    """The plan's bill, from the `bill` stack output (Bill.to_dict); nothing for an existing cluster."""
    if not bill:
        return []
    out = [f"bill ({bill['cloud']} {bill['region']}; prices read {', '.join(bill['pricesRead'])}; "
           f"sources per line: components/catalog/data/prices/platform.csv, cpu_instances.csv):",
           f"  GPU nodes: ${bill['gpuNodes']['planned']:,.2f}/h as planned (${bill['gpuNodes']['min']:,.2f} at min "
           f"replicas, ${bill['gpuNodes']['max']:,.2f} at max)"]
    for x in bill["lines"]:
        cost = (f"${x['per_hour']:,.2f}/h ({x['quantity']:g} x ${x['unit_price']:g}/{x['unit']}"
                f"{' ' + W if x['estimated'] else ''})" if x["per_hour"] is not None else f"unpriced {W}")
        extra = f"; plus {x['extra']} (not included)" if x["extra"] else ""
        note = f"; {x['note']}" if x["note"] else ""
        out.append(f"  {x['item']}: {cost}{extra}{note}")
    out += price_legend(*out[2:])  # what the mark beside a line's price means
    total = bill["perHour"]
    unpriced = f" + unpriced: {', '.join(bill['unpriced'])}" if bill["unpriced"] else ""
    out.append(f"  total: ${total['planned']:,.2f}/h as planned (~${bill['perMonth']:,.0f} a month at "
               f"{HOURS_PER_MONTH} h){unpriced}; ${total['min']:,.2f}/h at min replicas, ${total['max']:,.2f}/h at "
               f"max; not included: {bill['notIncluded']}")
    return out
