"""What AWS would answer for the AWS resources the stack creates (offline plan only).

Outputs shaped like the real provider's (ids with their prefixes, ARNs, the EKS endpoint and CA,
names the engine would auto-generate); never our logic. The region is the provider's, as the real
provider would apply it; the account is a documentation account id.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from ..catalog.tables import read_table
from .gcp_stubs import _DataSourceError  # how the engine answers a failed invoke (a gRPC error)
from .mocks import _FAKE_CA, cloud_outputs, invoke

ACCOUNT = "123456789012"
_provider = {"region": "us-east-1"}


def _hex(name: str, n: int = 17) -> str:
    return hashlib.sha256(name.encode()).hexdigest()[:n]


def _region(inputs: dict) -> str:
    return inputs.get("region") or _provider["region"]


def _arn(inputs: dict, service: str, resource: str, regional: bool = True) -> str:
    return f"arn:aws:{service}:{_region(inputs) if regional else ''}:{ACCOUNT}:{resource}"


def _auto(name: str, inputs: dict, key: str = "name") -> str:
    """The physical name Pulumi auto-names a resource with when the program gives none."""
    return inputs.get(key) or f"{name}-{_hex(name, 7)}"


@cloud_outputs("pulumi:providers:aws")
def _aws_provider(name, inputs):
    if inputs.get("region"):
        _provider["region"] = inputs["region"]
    return {}


@invoke("aws:index/getPartition:getPartition")
def _partition(args):
    return {"id": "aws", "partition": "aws", "dnsSuffix": "amazonaws.com", "reverseDnsPrefix": "com.amazonaws"}


# Who runs the offline `pulumi up`: an assumed role, as a deployer usually is (STS returns the session ARN,
# without the role's path; the user id is the role's unique id and the session name). Tests change it.
CALLER = {"role": "platform-deployer", "session": "offline-plan"}


@invoke("aws:index/getCallerIdentity:getCallerIdentity")
def _caller(args):
    return {"id": ACCOUNT, "accountId": ACCOUNT,
            "arn": f"arn:aws:sts::{ACCOUNT}:assumed-role/{CALLER['role']}/{CALLER['session']}",
            "userId": f"AROA{_hex(CALLER['role']).upper()}:{CALLER['session']}"}


@invoke("aws:iam/getSessionContext:getSessionContext")
def _session_context(args):
    """An assumed-role ARN resolves to its role's ARN (the offline roles have no path); any other ARN passes
    through as issuer_arn, as the real data source does."""
    arn = args["arn"]
    parts = arn.split(":", 5)
    if parts[2] != "sts" or not parts[5].startswith("assumed-role/"):
        return {"id": arn, "arn": arn, "issuerArn": arn, "issuerId": "", "issuerName": "", "sessionName": ""}
    _, role, session = parts[5].split("/", 2)
    return {"id": arn, "arn": arn, "issuerArn": f"arn:{parts[1]}:iam::{parts[4]}:role/{role}",
            "issuerId": f"AROA{_hex(role).upper()}", "issuerName": role, "sessionName": session}


# EKS clusters that already exist in the region ({name: {"version": minor, "tags": {...}, "zones": [...]}}); the
# offline plan is an empty account. Tests add one to plan a later `pulumi up` of a deployed stack. Its private
# subnets are in "zones" (default: the region's a, b, c, where a stack without availabilityZones created them).
EXISTING_CLUSTERS: dict[str, dict] = {}
# Subnets the offline account has, id -> zone (a deployed cluster's, above); getSubnet answers these first.
SUBNET_ZONES: dict[str, str] = {}


@invoke("aws:eks/getClusters:getClusters")
def _clusters(args):
    return {"id": _region(args), "names": sorted(EXISTING_CLUSTERS), "region": _region(args)}


@invoke("aws:eks/getCluster:getCluster")
def _get_cluster(args):
    name = args["name"]
    if name not in EXISTING_CLUSTERS:
        raise _DataSourceError("aws:eks/getCluster:getCluster", f"reading EKS Cluster ({name}): couldn't find resource")
    cluster = EXISTING_CLUSTERS[name]
    zones = cluster.get("zones") or [f"{_region(args)}{z}" for z in "abc"]
    subnets = [f"subnet-{_hex(name + zone)}" for zone in zones]
    SUBNET_ZONES.update(zip(subnets, zones))
    return {"id": name, "name": name, "arn": _arn(args, "eks", f"cluster/{name}"), "status": "ACTIVE",
            "vpcConfig": {"subnetIds": subnets, "vpcId": f"vpc-{_hex(name + 'vpc')}", "securityGroupIds": [],
                          "clusterSecurityGroupId": f"sg-{_hex(name + 'cluster')}", "endpointPrivateAccess": True,
                          "endpointPublicAccess": False, "publicAccessCidrs": [],
                          "controlPlaneEgressMode": "AWS_MANAGED"},
            "version": cluster["version"], "tags": dict(cluster.get("tags") or {}), "region": _region(args),
            "accessConfigs": [{"authenticationMode": "API", "bootstrapClusterCreatorAdminPermissions": True}]}


# Node groups of the EXISTING_CLUSTERS ({cluster: {node group name: desired size, or its scaling config
# {"minSize", "desiredSize", "maxSize"}}}): what Cluster Autoscaler (or a Capacity Block's scheduled action) has
# scaled each to since `pulumi up` created it.
EXISTING_NODE_GROUPS: dict[str, dict[str, int | dict[str, int]]] = {}


@invoke("aws:eks/getNodeGroups:getNodeGroups")
def _node_groups(args):
    name = args["clusterName"]
    if name not in EXISTING_CLUSTERS:
        raise _DataSourceError("aws:eks/getNodeGroups:getNodeGroups", f"listing EKS Node Groups ({name}): "
                               "ResourceNotFoundException: No cluster found")
    return {"id": name, "clusterName": name, "names": sorted(EXISTING_NODE_GROUPS.get(name, {})),
            "region": _region(args)}


@invoke("aws:eks/getNodeGroup:getNodeGroup")
def _get_node_group(args):
    cluster, group = args["clusterName"], args["nodeGroupName"]
    live = EXISTING_NODE_GROUPS.get(cluster, {})[group]
    if isinstance(live, int):
        live = {"desiredSize": live, "minSize": 0, "maxSize": max(live, 1)}
    return {"id": f"{cluster}:{group}", "clusterName": cluster, "nodeGroupName": group, "status": "ACTIVE",
            "scalingConfigs": [dict(live)],
            "region": _region(args)}


# Zones of the offline account that exist but are not `available` now (an AZ event); tests add some.
IMPAIRED_ZONES: set[str] = set()


@invoke("aws:index/getAvailabilityZones:getAvailabilityZones")
def _zones(args):
    """Six zones a-f in any region (us-east-1's count); with state `available`, not the IMPAIRED_ZONES."""
    region = _region(args)
    names = [f"{region}{z}" for z in "abcdef"
             if args.get("state") != "available" or f"{region}{z}" not in IMPAIRED_ZONES]
    return {"id": region, "names": names, "zoneIds": [f"use1-az{i + 1}" for i in range(len(names))],
            "groupNames": [region] * len(names), "state": args.get("state")}


def _ec2(prefix: str, kind: str):
    def outputs(name, inputs):
        rid = f"{prefix}-{_hex(name)}"
        return {"id": rid, "arn": _arn(inputs, "ec2", f"{kind}/{rid}"), "ownerId": ACCOUNT}
    return outputs


for _token, _prefix, _kind in [
    ("aws:ec2/vpc:Vpc", "vpc", "vpc"), ("aws:ec2/internetGateway:InternetGateway", "igw", "internet-gateway"),
    ("aws:ec2/routeTable:RouteTable", "rtb", "route-table"), ("aws:ec2/natGateway:NatGateway", "nat", "natgateway"),
    ("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", "sgr", "security-group-rule"),
    ("aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule", "sgr", "security-group-rule"),
    ("aws:ec2/vpcEndpoint:VpcEndpoint", "vpce", "vpc-endpoint"),
]:
    cloud_outputs(_token)(_ec2(_prefix, _kind))


@cloud_outputs("aws:ec2/subnet:Subnet")
def _subnet(name, inputs):
    rid = f"subnet-{_hex(name)}"
    return {"id": rid, "arn": _arn(inputs, "ec2", f"subnet/{rid}"), "ownerId": ACCOUNT,
            "availabilityZoneId": f"use1-az{'abcdef'.index(inputs['availabilityZone'][-1]) + 1}"}


@cloud_outputs("aws:ec2/eip:Eip")
def _eip(name, inputs):
    n = int(_hex(name, 4), 16)
    return {"id": f"eipalloc-{_hex(name)}", "allocationId": f"eipalloc-{_hex(name)}",
            "publicIp": f"203.0.113.{n % 254 + 1}", "domain": inputs.get("domain", "vpc")}


@cloud_outputs("aws:ec2/securityGroup:SecurityGroup")
def _security_group(name, inputs):
    rid = f"sg-{_hex(name)}"
    return {"id": rid, "arn": _arn(inputs, "ec2", f"security-group/{rid}"), "ownerId": ACCOUNT,
            "name": _auto(name, inputs)}


@cloud_outputs("aws:ec2/placementGroup:PlacementGroup")
def _placement_group(name, inputs):
    pg = _auto(name, inputs)
    pid = f"pg-{_hex(name)}"
    return {"id": pg, "name": pg, "placementGroupId": pid, "arn": _arn(inputs, "ec2", f"placement-group/{pg}")}


@cloud_outputs("aws:ec2/launchTemplate:LaunchTemplate")
def _launch_template(name, inputs):
    rid = f"lt-{_hex(name)}"
    return {"id": rid, "arn": _arn(inputs, "ec2", f"launch-template/{rid}"), "name": _auto(name, inputs),
            "latestVersion": 1, "defaultVersion": 1}


@cloud_outputs("aws:kms/key:Key")
def _kms_key(name, inputs):
    h = _hex(name, 32)
    key_id = f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"
    return {"id": key_id, "keyId": key_id, "arn": _arn(inputs, "kms", f"key/{key_id}")}


@cloud_outputs("aws:kms/alias:Alias")
def _kms_alias(name, inputs):
    return {"id": inputs["name"], "arn": _arn(inputs, "kms", inputs["name"]), "targetKeyArn": ""}


@cloud_outputs("aws:cloudwatch/logGroup:LogGroup")
def _log_group(name, inputs):
    return {"id": inputs["name"], "arn": _arn(inputs, "logs", f"log-group:{inputs['name']}")}


@cloud_outputs("aws:iam/role:Role")
def _role(name, inputs):
    role = _auto(name, inputs)
    return {"id": role, "name": role, "arn": f"arn:aws:iam::{ACCOUNT}:role/{role}",
            "uniqueId": f"AROA{_hex(name, 17).upper()}"}


@cloud_outputs("aws:iam/rolePolicy:RolePolicy")
def _role_policy(name, inputs):
    policy = _auto(name, inputs)
    return {"id": f"{inputs['role']}:{policy}", "name": policy}


@cloud_outputs("aws:eks/cluster:Cluster")
def _cluster(name, inputs):
    cluster = _auto(name, inputs)
    region = _region(inputs)
    endpoint_id = _hex(name, 32).upper()
    return {
        "id": cluster, "name": cluster, "arn": _arn(inputs, "eks", f"cluster/{cluster}"),
        "endpoint": f"https://{endpoint_id}.gr7.{region}.eks.amazonaws.com",
        "certificateAuthority": {"data": _FAKE_CA}, "status": "ACTIVE", "platformVersion": "eks.12",
        "clusterId": _hex(cluster, 32),
        "identities": [{"oidcs": [{"issuer": f"https://oidc.eks.{region}.amazonaws.com/id/{endpoint_id}"}]}],
        "vpcConfig": {**(inputs.get("vpcConfig") or {}), "clusterSecurityGroupId": f"sg-{_hex(name + 'cluster')}",
                      "vpcId": f"vpc-{_hex(name + 'vpc')}"},
    }


@cloud_outputs("aws:eks/nodeGroup:NodeGroup")
def _node_group(name, inputs):
    group = _auto(name, inputs, "nodeGroupName")
    uid = _hex(group, 32)
    uid = f"{uid[:8]}-{uid[8:12]}-{uid[12:16]}-{uid[16:20]}-{uid[20:]}"
    return {"id": f"{inputs['clusterName']}:{group}", "nodeGroupName": group, "status": "ACTIVE",
            "arn": _arn(inputs, "eks", f"nodegroup/{inputs['clusterName']}/{group}/{uid}"),
            "resources": [{"autoscalingGroups": [{"name": f"eks-{group}-{uid}"}]}]}


@cloud_outputs("aws:eks/addon:Addon")
def _addon(name, inputs):
    return {"id": f"{inputs['clusterName']}:{inputs['addonName']}",
            "arn": _arn(inputs, "eks", f"addon/{inputs['clusterName']}/{inputs['addonName']}/{_hex(name, 8)}")}


@cloud_outputs("aws:eks/accessEntry:AccessEntry")
def _access_entry(name, inputs):
    return {"id": f"{inputs['clusterName']}:{inputs['principalArn']}",
            "accessEntryArn": _arn(inputs, "eks", f"access-entry/{inputs['clusterName']}/{_hex(name, 8)}")}


@cloud_outputs("aws:eks/podIdentityAssociation:PodIdentityAssociation")
def _pod_identity(name, inputs):
    aid = f"a-{_hex(name)}"
    return {"id": aid, "associationId": aid,
            "associationArn": _arn(inputs, "eks", f"podidentityassociation/{inputs['clusterName']}/{aid}")}


@cloud_outputs("aws:efs/fileSystem:FileSystem")
def _file_system(name, inputs):
    fid = f"fs-{_hex(name)}"
    return {"id": fid, "arn": _arn(inputs, "elasticfilesystem", f"file-system/{fid}"),
            "dnsName": f"{fid}.efs.{_region(inputs)}.amazonaws.com", "ownerId": ACCOUNT,
            "creationToken": _auto(name, inputs, "creationToken")}


@cloud_outputs("aws:efs/mountTarget:MountTarget")
def _mount_target(name, inputs):
    n = int(_hex(name, 4), 16)
    return {"id": f"fsmt-{_hex(name)}", "ipAddress": f"10.0.{n % 192}.{n % 250 + 4}",
            "networkInterfaceId": f"eni-{_hex(name + 'eni')}"}


@invoke("aws:ec2/getSubnet:getSubnet")
def _get_subnet(args):
    """A given subnet's zone: the region's zones in turn, by the subnet id (stable for a given id)."""
    sid = args["id"]
    zone = SUBNET_ZONES.get(sid) or f"{_region(args)}{'abc'[int(_hex(sid, 4), 16) % 3]}"
    return {"id": sid, "availabilityZone": zone, "vpcId": f"vpc-{_hex(sid + 'vpc')}", "state": "available",
            "arn": _arn(args, "ec2", f"subnet/{sid}"), "ownerId": ACCOUNT}


# Instance types EC2 does not offer in a zone ({zone: {type, ...}}); every other type is offered everywhere.
# Offline plans answer from here; tests add entries to show what happens where a type is missing.
NOT_OFFERED: dict[str, set[str]] = {}


@invoke("aws:ec2/getInstanceTypeOfferings:getInstanceTypeOfferings")
def _instance_type_offerings(args):
    filters = {f["name"]: f["values"] for f in args.get("filters") or []}
    types, zones = filters.get("instance-type", []), filters.get("location", [])
    pairs = [(t, z) for t in types for z in zones if t not in NOT_OFFERED.get(z, set())]
    return {"id": _region(args), "instanceTypes": [t for t, _ in pairs], "locations": [z for _, z in pairs],
            "locationTypes": [args.get("locationType", "availability-zone")] * len(pairs)}


# Capacity reservations the offline plan knows (documentation ids; a real plan reads the account's).
# capacity-block: a Capacity Block for ML (dates from EC2: blocks start and end at 11:30 UTC) of six p5 nodes, what
# the 405B stacks may grow to; default: an ODCR.
RESERVATIONS: dict[str, dict] = {
    "cr-0123456789abcdef0": {"reservationType": "capacity-block", "instanceType": "p5.48xlarge",
                             "availabilityZone": "us-east-1b", "instanceCount": 6,
                             "startDate": "2027-03-01T11:30:00Z", "endDate": "2027-03-15T11:30:00Z"},
    "cr-0fedcba9876543210": {"reservationType": "default", "instanceType": "p5.48xlarge",
                             "availabilityZone": "us-east-1c", "instanceCount": 4, "placementGroupArn": ""},
}


def _reservation(rid: str) -> dict:
    if rid not in RESERVATIONS:
        raise ValueError(f"InvalidCapacityReservationId.NotFound: the capacity reservation {rid} does not exist "
                         f"(offline plan: add it to components/offline/aws_stubs.py RESERVATIONS)")
    r = RESERVATIONS[rid]
    return {"id": rid, "capacityReservationId": rid, "arn": f"arn:aws:ec2:us-east-1:{ACCOUNT}:capacity-reservation/{rid}",
            "ownerId": ACCOUNT, "state": "active", "instancePlatform": "Linux/UNIX", "tenancy": "default", **r}


@invoke("aws:ec2/getCapacityBlockReservation:getCapacityBlockReservation")
def _capacity_block(args):
    found = _reservation(args["id"])
    if found["reservationType"] != "capacity-block":
        raise ValueError(f"no Capacity Block reservation matches id {args['id']} (it is an On-Demand Capacity "
                         f"Reservation)")
    return found


@invoke("aws:cloudcontrol/getResource:getResource")
def _cloud_control(args):
    """Cloud Control's read of an AWS::EC2::CapacityReservation: its CloudFormation properties as JSON."""
    if args["typeName"] != "AWS::EC2::CapacityReservation":
        raise ValueError(f"offline plan: no Cloud Control answer for {args['typeName']}")
    r = _reservation(args["identifier"])
    props = {"Id": r["id"], "AvailabilityZone": r["availabilityZone"], "InstanceType": r["instanceType"],
             "InstanceCount": r["instanceCount"], "InstancePlatform": r["instancePlatform"], "Tenancy": r["tenancy"],
             "InstanceMatchCriteria": "targeted", "TotalInstanceCount": r["instanceCount"]}
    if r.get("placementGroupArn"):
        props["PlacementGroupArn"] = r["placementGroupArn"]
    return {"id": r["id"], "identifier": r["id"], "typeName": args["typeName"], "properties": json.dumps(props)}


@cloud_outputs("aws:autoscaling/schedule:Schedule")
def _schedule(name, inputs):
    return {"id": inputs["scheduledActionName"],
            "arn": _arn(inputs, "autoscaling", f"scheduledUpdateGroupAction:{_hex(name, 8)}:autoScalingGroupName/"
                                               f"{inputs['autoscalingGroupName']}:scheduledActionName/"
                                               f"{inputs['scheduledActionName']}")}


# Service Quotas values the offline account has, (service code, quota code) -> value. A quota not listed
# answers a generous value (an account that has been granted GPU quota), so offline plans pass; tests
# set an entry to 0.0 to show the refusal a new account gets.
QUOTAS: dict[tuple[str, str], float] = {}
GENEROUS_QUOTA = 10_000.0  # a placeholder: the plan neither compares it nor prints it as the account's quota


def _placeholder(quota) -> bool:
    """Whether only GENEROUS_QUOTA answers this EC2 quota (the offline account lists no value for it): the quota check
    then says it was not checked offline instead of comparing the placeholder (cluster/pools.py checked_needs)."""
    return ("ec2", quota.code) not in QUOTAS


def _install_quota_placeholder():
    from ..cluster import pools
    pools.OFFLINE_PLACEHOLDER["aws"] = _placeholder


_install_quota_placeholder()


@invoke("aws:servicequotas/getServiceQuota:getServiceQuota")
def _service_quota(args):
    service, code = args["serviceCode"], args["quotaCode"]
    region = _region(args)
    return {"id": f"{service}/{code}", "serviceCode": service, "quotaCode": code, "region": region,
            "arn": f"arn:aws:servicequotas:{region}:{ACCOUNT}:{service}/{code}", "adjustable": True,
            "globalQuota": False, "quotaName": code, "serviceName": "Amazon Elastic Compute Cloud (Amazon EC2)",
            "defaultValue": 0.0, "value": float(QUOTAS.get((service, code), GENEROUS_QUOTA)), "usageMetrics": []}
# EKS's release calendar as DescribeClusterVersions answers it (docs.aws.amazon.com/eks/latest/userguide/
# kubernetes-versions.html; the dates components/upstream/kubernetes_support.py cites): release, end of standard, end of
# extended support, patch (⚠ the patch releases are illustrative, no describe-cluster-versions output was at
# hand; nothing reads them). EKS derives each version's status from these dates; the offline plan does the same on
# kubernetes_support.today(). Tests remove a minor to show what happens where EKS does not offer it.
EKS_VERSIONS: dict[str, tuple[str, str, str, str]] = {
    "1.33": ("2025-05-29", "2026-07-29", "2027-07-29", "1.33.5"),
    "1.34": ("2025-10-02", "2026-12-02", "2027-12-02", "1.34.2"),
    "1.35": ("2026-01-28", "2027-03-27", "2028-03-27", "1.35.0"),
    # ⚠ dates inferred as components/upstream/kubernetes_support.py's 1.36 row (no calendar row at hand); that EKS
    # offers 1.36 is read from its add-on pages, which list 1.36 builds (data/eks_addon_versions.csv)
    "1.36": ("2026-05-28", "2027-07-28", "2028-07-28", "1.36.0"),
}
@dataclass(frozen=True)
class AddonBuild:
    addon: str
    minor: str  # a Kubernetes minor, or * for an add-on not tied to one
    version: str
    source: str


# getAddonVersion's answers: EKS's newest build per add-on and minor, vendored from EKS's documentation with the
# source of each row (data/eks_addon_versions.csv). Tests set ADDON_ANSWERS[(addon, minor)] to another answer.
ADDON_BUILDS: dict[tuple[str, str], AddonBuild] = {
    (b.addon, b.minor): b for b in read_table("eks_addon_versions.csv", AddonBuild, key=("addon", "minor"),
                                              folder=Path(__file__).resolve().parent / "data")}
ADDON_ANSWERS: dict[tuple[str, str], str] = {}


def _status(release: str, standard_end: str, extended_end: str) -> str:
    from ..upstream.kubernetes_support import today
    on = today().isoformat()
    return "STANDARD_SUPPORT" if on < standard_end else "EXTENDED_SUPPORT" if on < extended_end else "UNSUPPORTED"


@invoke("aws:eks/getClusterVersions:getClusterVersions")
def _cluster_versions(args):
    """DescribeClusterVersions (the provider formats the API's timestamps as RFC 3339)."""
    only = args.get("clusterVersionsOnlies") or list(EKS_VERSIONS)
    newest_standard = max((m for m, d in EKS_VERSIONS.items() if _status(*d[:3]) == "STANDARD_SUPPORT"),
                          key=lambda m: tuple(map(int, m.split("."))), default=None)
    out = []
    for minor in only:
        if minor not in EKS_VERSIONS:
            continue
        release, standard_end, extended_end, patch = EKS_VERSIONS[minor]
        status = _status(release, standard_end, extended_end)
        if status == "UNSUPPORTED" and not args.get("includeAll"):
            continue
        out.append({"clusterType": "eks", "clusterVersion": minor, "controlPlaneComponentConfigs": [],
                    "controlPlaneScalingTiers": [], "defaultPlatformVersion": "eks.5",
                    "defaultVersion": minor == newest_standard, "releaseDate": f"{release}T00:00:00Z",
                    "endOfStandardSupportDate": f"{standard_end}T00:00:00Z",
                    "endOfExtendedSupportDate": f"{extended_end}T00:00:00Z", "kubernetesPatchVersion": patch,
                    "versionStatus": status})
    return {"id": _region(args), "region": _region(args), "clusterType": args.get("clusterType"),
            "clusterVersionsOnlies": args.get("clusterVersionsOnlies"), "includeAll": args.get("includeAll"),
            "clusterVersions": out}


@invoke("aws:eks/getAddonVersion:getAddonVersion")
def _addon_version(args):
    """DescribeAddonVersions for one add-on and minor: the newest build (the stub answers the same without
    mostRecent); the provider's error where EKS lists none (a minor EKS does not offer)."""
    addon, minor = args["addonName"], args["kubernetesVersion"]
    build = ADDON_ANSWERS.get((addon, minor)) or next(
        (b.version for key in ((addon, minor), (addon, "*")) if (b := ADDON_BUILDS.get(key))), None)
    if minor not in EKS_VERSIONS or build is None:
        raise _DataSourceError("aws:eks/getAddonVersion:getAddonVersion",
                               f"reading EKS Add-On version info ({addon}, {minor}): empty result")
    return {"id": addon, "addonName": addon, "kubernetesVersion": minor, "mostRecent": args.get("mostRecent"),
            "region": _region(args), "version": build}
