"""The VPC: private subnets across Availability Zones behind one NAT gateway per zone and an S3
gateway endpoint, or the subnets of a VPC the stack is given."""
from __future__ import annotations

import ipaddress
import math
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws

from ...config.schema import AwsSettings

DEFAULT_ZONES = 3
# Tags the AWS Load Balancer Controller and EKS use to find subnets for load balancers.
PUBLIC_ELB_TAG = {"kubernetes.io/role/elb": "1"}
INTERNAL_ELB_TAG = {"kubernetes.io/role/internal-elb": "1"}


@dataclass
class NetworkFacts:
    vpc_id: Any  # Input[str]
    private_subnet_ids: list[Any]  # Input[str], one per zone; [0] hosts the zonal (EFA) GPU pools
    zones: list[str]  # the zone of each private subnet, same order
    # "aws.availabilityZones" or "aws.subnetIds": what the user changes to move a pool to another zone.
    zones_field: str = "aws.availabilityZones"
    # What nodes need before they boot: a route out (image pulls) from every private subnet.
    egress: list[Any] = field(default_factory=list)


def subnet_layout(vpc_cidr: str, zones: int) -> list[tuple[str, str]]:
    """(private, public) CIDR per zone. Private subnets get the big blocks: the VPC CNI gives every pod
    a VPC address. The public ones (NAT gateways, internet-facing load balancers) share the last block."""
    vpc = ipaddress.IPv4Network(vpc_cidr)
    blocks = list(vpc.subnets(prefixlen_diff=math.ceil(math.log2(zones + 1))))
    public = list(blocks[-1].subnets(prefixlen_diff=max(1, math.ceil(math.log2(zones)))))
    return [(str(blocks[i]), str(public[i])) for i in range(zones)]


def s3_service_name(reverse_dns_prefix: str, region: str) -> str:
    """com.amazonaws.<region>.s3 (cn.com.amazonaws in the China partition: getPartition's reverseDnsPrefix)."""
    return f"{reverse_dns_prefix}.{region}.s3"


def pick_zones(settings: AwsSettings, available: list[str]) -> list[str]:
    """The configured zones, or the region's first DEFAULT_ZONES (in name order, so that a rerun
    picks the same ones)."""
    return list(settings.availability_zones or sorted(available)[:DEFAULT_ZONES])


def zones_line(zones: list[str]) -> str:
    return f"availabilityZones: [{', '.join(zones)}]"


def zone_problems(configured: list[str], region: str, every: list[str], available: list[str]
                  ) -> tuple[list[str], list[str]]:
    """(problems, warnings) for configured zones against EC2's answer: a zone the account does not have in the
    region is refused here, not as a failed subnet create half-way through `pulumi up`; one that exists but is
    not `available` now (impaired, constrained) is a warning: an `up` during an AZ event must still run."""
    missing = [z for z in configured if z not in every]
    if missing:
        return [f"aws.availabilityZones: {', '.join(missing)}: no such Availability Zone in {region} for this "
                f"account (its zones: {', '.join(sorted(every)) or 'none'}); e.g. "
                f"{zones_line(sorted(available)[:DEFAULT_ZONES])}"], []
    down = [z for z in configured if z not in available]
    return [], ([f"aws.availabilityZones: {', '.join(down)} not in state `available` in {region} now: subnets, "
                 f"NAT gateways and nodes there may fail to come up until it is"] if down else [])


def deployed_zones(live: Any, invoke: pulumi.InvokeOptions) -> list[str]:
    """The zones the deployed cluster's subnets are in, in name order (the order pick_zones gave them)."""
    subnets = live.vpc_config.subnet_ids or []
    return sorted({aws.ec2.get_subnet(id=s, opts=invoke).availability_zone for s in subnets})


def network_zones(settings: AwsSettings, invoke: pulumi.InvokeOptions, live: Any = None, production: bool = False
                  ) -> tuple[list[str], str, list[str], list[str]]:
    """(zone of each private subnet, the field that sets them, problems, warnings), asked of EC2 before anything
    is created: they decide where subnets, NAT gateways, zonal pools and reservations go.

    Zones are never a live answer once the cluster exists: without aws.availabilityZones a deployed stack keeps
    the zones its cluster's subnets are in (`live`: versions_check.existing_cluster), so an AZ event that changes
    what getAvailabilityZones answers cannot re-plan subnets, NAT gateways and node groups. Only the first `pulumi
    up` picks the region's first three; production is told to write them down."""
    if settings.vpc_id:
        return [aws.ec2.get_subnet(id=subnet, opts=invoke).availability_zone
                for subnet in settings.subnet_ids], "aws.subnetIds", [], []
    field = "aws.availabilityZones"
    available = aws.get_availability_zones(
        state="available", region=settings.region,
        filters=[{"name": "opt-in-status", "values": ["opt-in-not-required"]}], opts=invoke).names
    if settings.availability_zones:
        every = aws.get_availability_zones(
            region=settings.region, filters=[{"name": "zone-type", "values": ["availability-zone"]}],
            opts=invoke).names
        problems, warnings = zone_problems(list(settings.availability_zones), settings.region, every, available)
        return list(settings.availability_zones), field, problems, warnings
    zones = deployed_zones(live, invoke) if live is not None else pick_zones(settings, available)
    where = "keeps the zones it runs in" if live is not None else "gets the region's first three"
    warnings = [f"{field}: not set; the cluster {where} ({', '.join(zones)}). Pin them in the stack file: "
                f"{zones_line(zones)}"] if production else []
    return zones, field, [], warnings


class AwsNetwork(pulumi.ComponentResource):
    """Private subnets for the cluster. Nothing is created for a given VPC: its subnets are used as they are."""

    facts: NetworkFacts

    def __init__(self, name: str, settings: AwsSettings, cluster_name: str, zones: list[str],
                 reverse_dns_prefix: str, opts: pulumi.ResourceOptions | None = None):
        super().__init__("vllm-platform:aws:Network", name, None, opts)
        if settings.vpc_id:
            self.facts = NetworkFacts(settings.vpc_id, list(settings.subnet_ids), zones, zones_field="aws.subnetIds")
            self.register_outputs({"vpcId": settings.vpc_id, "zones": zones})
            return
        child = pulumi.ResourceOptions(parent=self)
        layout = subnet_layout(settings.vpc_cidr, len(zones))
        cluster_tag = {f"kubernetes.io/cluster/{cluster_name}": "shared"}
        self.vpc = aws.ec2.Vpc(f"{name}-vpc", cidr_block=settings.vpc_cidr, enable_dns_hostnames=True,
                               enable_dns_support=True, tags={"Name": cluster_name}, opts=child)
        igw = aws.ec2.InternetGateway(f"{name}-igw", vpc_id=self.vpc.id, tags={"Name": cluster_name}, opts=child)
        public_rt = aws.ec2.RouteTable(f"{name}-public", vpc_id=self.vpc.id,
                                       routes=[{"cidr_block": "0.0.0.0/0", "gateway_id": igw.id}],
                                       tags={"Name": f"{cluster_name}-public"}, opts=child)
        private_ids, egress, private_rts = [], [], []
        for zone, (private_cidr, public_cidr) in zip(zones, layout):
            public = aws.ec2.Subnet(f"{name}-public-{zone}", vpc_id=self.vpc.id, cidr_block=public_cidr,
                                    availability_zone=zone, tags={"Name": f"{cluster_name}-public-{zone}",
                                                                  **PUBLIC_ELB_TAG, **cluster_tag}, opts=child)
            aws.ec2.RouteTableAssociation(f"{name}-public-{zone}", subnet_id=public.id,
                                          route_table_id=public_rt.id, opts=child)
            # One NAT per zone: a zone outage or a NAT failure must not cut the other zones off image pulls.
            eip = aws.ec2.Eip(f"{name}-nat-{zone}", domain="vpc", tags={"Name": f"{cluster_name}-nat-{zone}"},
                              opts=child)
            nat = aws.ec2.NatGateway(f"{name}-nat-{zone}", allocation_id=eip.id, subnet_id=public.id,
                                     tags={"Name": f"{cluster_name}-{zone}"},
                                     opts=pulumi.ResourceOptions(parent=self, depends_on=[igw]))
            private = aws.ec2.Subnet(f"{name}-private-{zone}", vpc_id=self.vpc.id, cidr_block=private_cidr,
                                     availability_zone=zone, tags={"Name": f"{cluster_name}-private-{zone}",
                                                                   **INTERNAL_ELB_TAG, **cluster_tag}, opts=child)
            rt = aws.ec2.RouteTable(f"{name}-private-{zone}", vpc_id=self.vpc.id,
                                    routes=[{"cidr_block": "0.0.0.0/0", "nat_gateway_id": nat.id}],
                                    tags={"Name": f"{cluster_name}-private-{zone}"}, opts=child)
            egress.append(aws.ec2.RouteTableAssociation(f"{name}-private-{zone}", subnet_id=private.id,
                                                        route_table_id=rt.id, opts=child))
            private_ids.append(private.id)
            private_rts.append(rt.id)
        # Image layers from ECR (stored in S3) and model downloads from S3 stay off the NAT gateways:
        # no per-GB NAT charge on a 10-20 GB image pulled by every new GPU node.
        self.s3_endpoint = aws.ec2.VpcEndpoint(
            f"{name}-s3", vpc_id=self.vpc.id, service_name=s3_service_name(reverse_dns_prefix, settings.region),
            vpc_endpoint_type="Gateway", route_table_ids=private_rts, tags={"Name": f"{cluster_name}-s3"},
            opts=child)
        self.facts = NetworkFacts(self.vpc.id, private_ids, zones, egress=egress)
        self.register_outputs({"vpcId": self.vpc.id, "zones": zones})
