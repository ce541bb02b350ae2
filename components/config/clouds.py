"""Where the fleet runs: the AWS, GCP and existing-cluster blocks, and cluster settings."""
from __future__ import annotations

import ipaddress
import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from ..catalog import ACCELERATORS, INSTANCE_TYPES
from ..catalog.aws_regions import AWS_REGIONS, closest_regions
from . import bounds, gcp_regions
from .base import DNS_LABEL, _Base, cidr_blocks, field_error

# A Kubernetes object name (RFC 1123 subdomain): StorageClass names.
DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"


def _unique(values: list[str] | None, allowed: str) -> list[str] | None:
    """A repeated zone or subnet would register two resources under one name (or two EFS mount
    targets in one zone, which AWS refuses): say so at the edge instead."""
    repeated = sorted({x for x in values or [] if values.count(x) > 1})
    if repeated:
        raise ValueError(f"{', '.join(repeated)} listed more than once; {allowed}")
    return values


class AwsSettings(_Base):
    """EKS in one region: private subnets across Availability Zones; GPU pools whose replicas span
    nodes (EFA) go into the first zone's subnet (EFA does not cross zones)."""
    region: str = Field(pattern=r"^[a-z]{2}(-[a-z]+)+-\d$")
    vpc_id: str | None = Field(None, pattern=r"^vpc-[0-9a-f]{8,17}$",
                               description="existing VPC (with subnetIds); default: create one with NAT")
    subnet_ids: list[str] | None = Field(
        None, min_length=2, description="private subnets of vpcId, one per zone, routed to a NAT; the first "
                                        "hosts multi-node (EFA) GPU pools")
    vpc_cidr: str = Field("10.0.0.0/16", description="CIDR of the VPC this stack creates")
    availability_zones: list[str] | None = Field(
        None, min_length=2, max_length=6, description="zones of the VPC this stack creates, checked against the "
                                                      "account's; the first hosts EFA pools. Default: the zones "
                                                      "the deployed cluster runs in, or on the first `pulumi up` "
                                                      "the region's first three (production: pin them)")
    endpoint_public_access_cidrs: list[str] = Field(
        default_factory=list, description="CIDRs that may reach the public API endpoint (where `pulumi up` runs "
                                          "from outside the VPC); empty: no public endpoint")
    deployer_cidrs: list[str] = Field(
        default_factory=list, description="CIDRs that reach the private API endpoint from inside the VPC or over "
                                          "peering / Transit Gateway / VPN: one inbound 443 rule each on the "
                                          "cluster security group")
    deployer_security_group_ids: list[str] = Field(
        default_factory=list, description="security groups of runners inside the VPC (e.g. a self-hosted CI "
                                          "runner): one inbound 443 rule each on the cluster security group")
    bootstrapped: bool = Field(
        False, description="the VPC this stack creates exists (a first `pulumi up` ran over the public endpoint) "
                           "and a runner / peering now reaches it: allows deployerSecurityGroupIds and a "
                           "private-only endpoint with it")
    admin_role_arns: list[str] = Field(default_factory=list,
                                       description="IAM roles/users given cluster-admin access entries")
    viewer_role_arns: list[str] = Field(
        default_factory=list, description="IAM roles/users given read-only access entries (AmazonEKSViewPolicy), "
                                          "e.g. the CI identity that runs `pulumi preview`; they also read Secrets "
                                          "cluster-wide (Kubernetes group vllm-platform-preview), which a preview "
                                          "of Helm releases and Secrets needs")
    support_type: Literal["STANDARD", "EXTENDED"] = Field(
        "STANDARD", description="EKS upgrade policy: STANDARD upgrades the control plane at the end of standard "
                                "support; EXTENDED keeps the minor 12 more months at the extended-support price")
    deletion_protection: bool | None = Field(
        None, description="refuse to delete the EKS cluster until this is switched off; default: on in prod")
    node_auto_repair: bool = Field(
        True, description="EKS node auto repair on GPU node groups, with the EKS node monitoring agent that "
                          "reports GPU (XID / DCGM) faults as node conditions")
    placement_group: str | None = Field(
        None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.+=@-]*$", max_length=255,
        description="an existing cluster placement group for multi-node (EFA) GPU pools, e.g. the one an "
                    "On-Demand Capacity Reservation was created in; default: the stack creates one "
                    "(on-demand / spot only)")
    capacity_type: Literal["onDemand", "spot", "reservation", "capacityBlock"] = Field(
        "onDemand", description="how GPU nodes are bought; reservation / capacityBlock need capacityReservations")
    capacity_reservations: dict[str, str] = Field(
        default_factory=dict, description="planned instance type -> On-Demand Capacity Reservation or "
                                          "Capacity Block id (cr-...); its zone (read from EC2) must be one of "
                                          "the cluster's")
    system_instance_type: str = Field("m7i.2xlarge", pattern=r"^[a-z][a-z0-9-]*\.[a-z0-9]+$",
                                      description="on-demand nodes for operators, Prometheus and Ray heads")
    system_nodes: int = Field(2, ge=1, le=10, description="system nodes in all (2+ keeps operators available): the "
                                                        "minimum of the per-zone system groups, spread over the "
                                                        "zones (2 over 3: 1, 1, 0), each may grow one above it")

    @field_validator("region")
    @classmethod
    def _region(cls, v):
        if v not in AWS_REGIONS:
            raise ValueError(f"{v} is not an AWS region (components/catalog/data/aws_regions.csv, from botocore's "
                             f"endpoint data); closest: {', '.join(closest_regions(v))}")
        return v

    @field_validator("subnet_ids")
    @classmethod
    def _subnet_ids(cls, v):
        bad = [s for s in v or [] if not re.fullmatch(r"subnet-[0-9a-f]{8,17}", s)]
        if bad:
            raise ValueError(f"not a subnet id: {', '.join(bad)}; e.g. subnet-0123456789abcdef0")
        return _unique(v, "list each subnet once, one per zone")

    @field_validator("availability_zones")
    @classmethod
    def _zones(cls, v):
        return _unique(v, "list each zone once")

    @field_validator("vpc_cidr", "endpoint_public_access_cidrs", "deployer_cidrs")
    @classmethod
    def _cidrs(cls, v):
        return cidr_blocks(v, ipv4_only=True)

    @field_validator("endpoint_public_access_cidrs")
    @classmethod
    def _not_open(cls, v):
        problem = bounds.open_cidrs_problem(v, "list the CIDRs `pulumi up` runs from, e.g. 203.0.113.7/32")
        if problem:
            raise ValueError(problem)
        return v

    @field_validator("deployer_security_group_ids")
    @classmethod
    def _security_groups(cls, v):
        bad = [g for g in v if not re.fullmatch(r"sg-[0-9a-f]{8,17}", g)]
        if bad:
            raise ValueError(f"not a security group id: {', '.join(bad)}; e.g. sg-0123456789abcdef0")
        return _unique(v, "list each security group once")

    @field_validator("admin_role_arns", "viewer_role_arns")
    @classmethod
    def _arns(cls, v):
        bad = [a for a in v if not re.fullmatch(r"arn:aws[-a-z]*:iam::\d{12}:(role|user)/[\w+=,.@/-]+", a)]
        if bad:
            raise ValueError(f"not an IAM role or user ARN: {', '.join(bad)}; "
                             f"e.g. arn:aws:iam::123456789012:role/platform-admin")
        return v

    @field_validator("capacity_reservations")
    @classmethod
    def _reservations(cls, v):
        for itype, rid in v.items():
            if itype not in INSTANCE_TYPES or INSTANCE_TYPES[itype].cloud != "aws":
                raise ValueError(f"{itype!r} is not an AWS instance type of the catalog")
            if not re.fullmatch(r"cr-[0-9a-f]{8,17}", rid):
                raise ValueError(f"{itype}: {rid!r} is not a capacity reservation id; e.g. cr-0123456789abcdef0")
        return v

    @model_validator(mode="after")
    def _vpc_and_capacity(self):
        if bool(self.vpc_id) != bool(self.subnet_ids):
            missing = "subnetIds" if self.vpc_id else "vpcId"
            raise field_error(missing, "missing: an existing VPC needs both vpcId and subnetIds")
        if self.vpc_id and self.availability_zones:
            raise field_error("availabilityZones", "given with vpcId; the zones are those of subnetIds, remove it")
        bad = [z for z in self.availability_zones or [] if not re.fullmatch(re.escape(self.region) + r"[a-z]", z)]
        if bad:
            raise field_error("availabilityZones", f"{', '.join(bad)} not in region {self.region}")
        if not 16 <= int(self.vpc_cidr.split("/")[1]) <= 20:
            raise field_error("vpcCidr", f"{self.vpc_cidr}: use a /16 to /20 (pods take VPC addresses)")
        if self.vpc_id and self.bootstrapped:
            raise field_error("bootstrapped", "only for a VPC this stack creates; with vpcId, remove it")
        if not self.vpc_id and not self.bootstrapped and self.deployer_security_group_ids:
            raise field_error("deployerSecurityGroupIds", "given while this stack creates the VPC: no security "
                                                          "group can be in a VPC that does not exist yet. First run "
                                                          "over endpointPublicAccessCidrs; once a runner in the new "
                                                          "VPC has its group, add it here with `bootstrapped: true`")
        reserved = self.capacity_type in ("reservation", "capacityBlock")
        if reserved and not self.capacity_reservations:
            raise field_error("capacityReservations", f"missing: capacityType {self.capacity_type} needs the "
                                                      f"reservation id per planned instance type")
        if self.capacity_reservations and not reserved:
            raise field_error("capacityType", f"is {self.capacity_type} but capacityReservations is set; use "
                                              f"reservation or capacityBlock, or remove capacityReservations")
        return self


class GcpSettings(_Base):
    """GKE Standard in one project: a regional control plane, GPU nodes in one zone (GPUDirect / RDMA
    networks and compact placement are zonal)."""
    project: str = Field(pattern=r"^[a-z][-a-z0-9]{4,28}[a-z0-9]$")
    region: str = Field(pattern=r"^[a-z]+-[a-z]+\d+$", description="a Google Cloud region "
                                                                    "(components/config/gcp_regions.py)")
    zone: str = Field(pattern=r"^[a-z]+-[a-z]+\d+-[a-z]$", description="a zone of `region`")
    network: str | None = Field(None, description="existing VPC name; default: create one (with Cloud NAT)")
    subnetwork: str | None = Field(None, description="existing subnet in `region` of `network`")
    pods_range: str | None = Field(None, description="secondary range name of `subnetwork` for pods")
    services_range: str | None = Field(None, description="secondary range name of `subnetwork` for services")
    dns_endpoint: bool = Field(
        True, description="reach the control plane through its DNS-based endpoint (*.gke.goog): from anywhere "
                          "Google APIs answer, each request authorised by IAM container.clusters.connect; Pulumi's "
                          "kubeconfig uses it unless masterAuthorizedNetworks opens the IP endpoint. The way in "
                          "for the first `pulumi up` of a private cluster")
    kubeconfig_endpoint: Literal["ip", "dns"] = Field(
        "ip", description="the endpoint Pulumi's kubeconfig names, chosen once: ip (the cluster's IP endpoint "
                          "with its CA; what every earlier release used) or dns (the *.gke.goog DNS endpoint, "
                          "needs dnsEndpoint: true). Changing it later gives the Kubernetes provider another "
                          "server, and it replaces every Kubernetes object of the stack")
    master_authorized_networks: list[str] = Field(
        default_factory=list, description="CIDRs that may reach the control plane's IP endpoint; empty "
                                          "(default): no public IP endpoint, as privateEndpoint")
    private_endpoint: bool = Field(False, description="IP endpoint on an internal address only (reached from the "
                                                      "VPC, VPN / Interconnect ranges in masterAuthorizedNetworks)")
    release_channel: Literal["RAPID", "REGULAR", "STABLE", "EXTENDED"] | None = Field(
        None, description="default: components/upstream/versions.py GKE_RELEASE_CHANNEL")
    system_machine_type: str = Field("e2-standard-8", pattern=r"^[a-z0-9]+-[a-z0-9-]+$",
                                     description="nodes for operators, Prometheus and the Ray heads")
    system_nodes: int | None = Field(None, ge=1, le=10, description="the system pool's minimum node count (2+ keeps "
                                                                  "operators available through a node upgrade); "
                                                                  "default: 2 in production, 1 otherwise")
    filestore_tier: Literal["BASIC_HDD", "BASIC_SSD", "ZONAL", "REGIONAL", "ENTERPRISE"] = Field(
        "BASIC_SSD", description="RWX model cache tier; read throughput per tier in "
                                 "components/cluster/gcp/storage.py")
    spot: bool = Field(False, description="GPU nodes as Spot VMs (preemptible at 30 s notice)")
    reservation: str | None = Field(
        None, pattern=r"^(projects/[a-z][-a-z0-9]{4,28}[a-z0-9]/reservations/)?[a-z]([-a-z0-9]{0,61}[a-z0-9])?$",
        description="consume this specific reservation for the GPU nodes (NAME or "
                    "projects/PROJECT/reservations/NAME for a shared one)")
    deletion_protection: bool | None = Field(
        None, description="protect the GKE cluster and the Filestore cache from deletion (GKE / Filestore deletion "
                          "protection and Pulumi's `protect`); default: on in prod. Set false and `pulumi up` "
                          "before `pulumi destroy`")

    @field_validator("master_authorized_networks")
    @classmethod
    def _cidrs(cls, v):
        problem = bounds.open_cidrs_problem(v, "list the CIDRs `pulumi up` runs from, or leave it empty and "
                                               "deploy through the DNS endpoint")
        if problem:
            raise ValueError(problem)
        return cidr_blocks(v)

    @field_validator("region")
    @classmethod
    def _known_region(cls, v):
        problem = gcp_regions.region_problem(v)
        if problem:
            raise ValueError(problem)
        return v

    @model_validator(mode="after")
    def _zone_in_region(self):
        if not self.zone.startswith(self.region + "-"):
            raise field_error("zone", f"{self.zone} is not in region {self.region}; its zones: "
                                      f"{', '.join(gcp_regions.zones(self.region))}")
        if problem := gcp_regions.zone_problem(self.region, self.zone):
            raise field_error("zone", problem)
        if self.subnetwork and not self.network:
            raise field_error("network", "missing: `subnetwork` is set, so name its VPC in `network`")
        if self.network and not (self.subnetwork and self.pods_range and self.services_range):
            raise field_error("subnetwork", "an existing `network` needs `subnetwork`, `podsRange` and "
                                            "`servicesRange` (the subnet and its secondary range names)")
        if self.spot and self.reservation:
            raise field_error("spot", "Spot VMs cannot consume a reservation; set `spot` or `reservation`")
        self._reachable()
        return self

    def _reachable(self):
        """Refuse control-plane settings that no `pulumi up` can ever get through (control_plane.py)."""
        public = [c for c in self.master_authorized_networks if ipaddress.ip_network(c).is_global]
        if self.private_endpoint and public:
            # GKE: "... is not a reserved network, which is required for private endpoints"
            raise field_error("masterAuthorizedNetworks", f"{', '.join(public)} are public addresses, but with "
                                                          f"privateEndpoint: true only internal ranges can reach the "
                                                          f"IP endpoint (GKE refuses them); list VPN / Interconnect "
                                                          f"ranges, or use dnsEndpoint: true to deploy from outside")
        no_public_ip = self.private_endpoint or not self.master_authorized_networks
        why = "privateEndpoint: true" if self.private_endpoint else "masterAuthorizedNetworks is empty"
        if self.kubeconfig_endpoint == "dns" and not self.dns_endpoint:
            raise field_error("kubeconfigEndpoint", "dns, but gcp.dnsEndpoint is false: the DNS endpoint takes no "
                                                    "traffic from outside the VPC; set gcp.dnsEndpoint: true, or "
                                                    "gcp.kubeconfigEndpoint: ip")
        if self.kubeconfig_endpoint == "ip" and no_public_ip and not self.network:
            fix = ("set gcp.kubeconfigEndpoint: dns (recommended: IAM-gated, reachable from anywhere; chosen "
                   "once, a later change replaces every Kubernetes object)" if self.dns_endpoint else
                   "set gcp.kubeconfigEndpoint: dns with gcp.dnsEndpoint: true (recommended)")
            raise field_error("kubeconfigEndpoint", f"ip, but {why} and the stack creates its VPC "
                                                    f"(gcp.network unset): nothing outside it can reach the IP "
                                                    f"endpoint on the first `pulumi up`; {fix}, or "
                                                    f"gcp.privateEndpoint: false with the deployer's egress CIDRs "
                                                    f"in gcp.masterAuthorizedNetworks, or an existing gcp.network "
                                                    f"you reach over VPN / Interconnect")


class NodeTaint(_Base):
    key: str = Field(pattern=r"^([a-z0-9.-]+/)?[A-Za-z0-9_.-]+$")
    value: str = ""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] = "NoSchedule"


class GpuNodes(_Base):
    """The GPU nodes of a cluster we attach to, described so that the planner can size for them."""
    accelerator: str
    gpus_per_node: int = Field(ge=1, le=16)
    vcpu: int = Field(ge=2)
    ram_gib: float = Field(ge=8)
    fabric: Literal["none", "infiniband", "roce"] = "none"
    network_gbps: float = Field(400, gt=0, description="fabric bandwidth per node")
    node_selector: dict[str, str] = Field(default_factory=dict, description="labels that pick the GPU nodes")
    taints: list[NodeTaint] = Field(
        default_factory=lambda: [NodeTaint(key="nvidia.com/gpu", value="present", effect="NoSchedule")],
        description="taints the GPU nodes carry (serving pods and GPU DaemonSets tolerate them)")
    rdma_resource: str = Field(
        "rdma/rdma_shared_device_a", pattern=r"^[a-z0-9.-]+/[a-zA-Z0-9_.-]+$",
        description="(infiniband / roce) extended resource of the RDMA shared device plugin serving pods request")
    price_per_node_hour: float = Field(0.0, ge=0, description="for cost ranking; 0 = rank by GPU count")

    @field_validator("accelerator")
    @classmethod
    def _known(cls, v):
        if v not in ACCELERATORS:
            raise ValueError(f"unknown accelerator {v!r}; allowed: {', '.join(ACCELERATORS)}")
        return v



class ExistingSettings(_Base):
    """A cluster we attach to. What a cloud cluster component knows about its own cluster (which class a
    volume claim binds to, whether NetworkPolicy is enforced) the user states here."""
    context: str | None = Field(None, description="kubeconfig context (ambient kubeconfig when no `kubeconfig` secret)")
    gpu_nodes: GpuNodes
    block_storage_class: str | None = Field(
        None, pattern=DNS_SUBDOMAIN,
        description="a ReadWriteOnce StorageClass the cluster has (Ceph RBD, Longhorn, local-path, a SAN CSI "
                    "driver): Prometheus' volume claims it; required while the stack installs Prometheus "
                    "without addons.prometheus.storageClass. Never left to a default class the cluster may lack")
    network_policy_enforced: bool = Field(
        False, description="true once you have checked that the cluster's CNI enforces NetworkPolicy (Calico, "
                           "Cilium, Antrea, ...; flannel and the plain bridge plugins do not): serving's tenant "
                           "isolation is a NetworkPolicy. Required in production; elsewhere a warning")


class ClusterSettings(_Base):
    name: str = Field("vllm", pattern=DNS_LABEL)
    # The newest minor both clouds carry in standard support with pinned EKS add-ons: 1.34 left it on
    # 2026-12-02 (EKS) / 2026-10-01 (GKE); dates and sources in components/upstream/kubernetes_support.py.
    kubernetes_version: str = Field("1.35", pattern=r"^1\.\d{2}$")
