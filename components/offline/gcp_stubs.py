"""What Google Cloud would answer for the GCP resources the stack creates (offline plan only).

Outputs shaped like the real provider's (ids, self links, endpoints, IPs); never our logic. The
project is the provider's default project, as the real provider would apply it.
"""
from __future__ import annotations

import hashlib

import grpc

from .mocks import _FAKE_CA, cloud_outputs, invoke

_API = "https://www.googleapis.com/compute/v1"
_provider = {"project": "offline-project"}

# The offline project's specific reservations: (project, zone, name) -> (machine type, VM count). A name it
# does not list is answered as GCE answers a reservation without instance properties (one made from an
# instance template): it exists in the zone asked, and says nothing the plan could check it against.
RESERVATIONS: dict[tuple[str, str, str], tuple[str, int]] = {
    ("my-proj-123", "us-central1-a", "h200-dense"): ("a3-ultragpu-8g", 4),
}
# Machine types the offline project's zones do not offer, as (zone, machine type); every other one is offered.
NOT_OFFERED: set[tuple[str, str]] = set()


def _n(name: str, mod: int) -> int:
    return int(hashlib.sha256(name.encode()).hexdigest()[:8], 16) % mod


def _project(inputs: dict) -> str:
    return inputs.get("project") or _provider["project"]


@cloud_outputs("pulumi:providers:gcp")
def _gcp_provider(name, inputs):
    if inputs.get("project"):
        _provider["project"] = inputs["project"]
    return {}


@cloud_outputs("gcp:projects/service:Service")
def _service(name, inputs):
    return {"id": f"{_project(inputs)}/{inputs['service']}", "project": _project(inputs)}


@cloud_outputs("gcp:serviceaccount/account:Account")
def _account(name, inputs):
    p = _project(inputs)
    email = f"{inputs['accountId']}@{p}.iam.gserviceaccount.com"
    return {"email": email, "member": f"serviceAccount:{email}", "project": p,
            "name": f"projects/{p}/serviceAccounts/{email}", "id": f"projects/{p}/serviceAccounts/{email}",
            "uniqueId": str(10**20 + _n(email, 10**19))}


@cloud_outputs("gcp:projects/iAMMember:IAMMember")
def _iam_member(name, inputs):
    return {"etag": f"BwY{_n(name, 10**6):06d}=", "id": f"{inputs['project']}/{inputs['role']}/{inputs['member']}"}


@cloud_outputs("gcp:compute/network:Network")
def _network(name, inputs):
    path = f"projects/{_project(inputs)}/global/networks/{inputs['name']}"
    return {"id": path, "selfLink": f"{_API}/{path}", "project": _project(inputs),
            "mtu": inputs.get("mtu", 1460), "numericId": str(10**18 + _n(path, 10**17))}


@cloud_outputs("gcp:compute/subnetwork:Subnetwork")
def _subnetwork(name, inputs):
    path = f"projects/{_project(inputs)}/regions/{inputs['region']}/subnetworks/{inputs['name']}"
    base = inputs["ipCidrRange"].split("/")[0].rsplit(".", 1)[0]
    return {"id": path, "selfLink": f"{_API}/{path}", "gatewayAddress": f"{base}.1", "project": _project(inputs)}


@cloud_outputs("gcp:compute/router:Router")
def _router(name, inputs):
    path = f"projects/{_project(inputs)}/regions/{inputs['region']}/routers/{inputs['name']}"
    return {"id": path, "selfLink": f"{_API}/{path}"}


@cloud_outputs("gcp:compute/routerNat:RouterNat")
def _router_nat(name, inputs):
    return {"id": f"{_project(inputs)}/{inputs['region']}/{inputs['router']}/{inputs['name']}"}


@cloud_outputs("gcp:compute/firewall:Firewall")
def _firewall(name, inputs):
    path = f"projects/{_project(inputs)}/global/firewalls/{inputs['name']}"
    return {"id": path, "selfLink": f"{_API}/{path}"}


@cloud_outputs("gcp:container/cluster:Cluster")
def _cluster(name, inputs):
    p, loc = _project(inputs), inputs["location"]
    path = f"projects/{p}/locations/{loc}/clusters/{inputs['name']}"
    version = f"{inputs.get('minMasterVersion', '1.35')}.8-gke.1036000"
    pcc = inputs.get("privateClusterConfig") or {}
    public = f"34.{_n(path, 200) + 20}.{_n(path + 'b', 250)}.{_n(path + 'c', 250) + 2}"
    private = f"10.0.{_n(path, 15)}.{_n(path + 'p', 250) + 2}"  # an address of the node subnet (PSC)
    return {"id": path, "selfLink": f"https://container.googleapis.com/v1/{path}",
            # GKE reports the internal address as the IP endpoint once the public one is off.
            "endpoint": private if pcc.get("enablePrivateEndpoint") else public,
            "privateClusterConfig": {**pcc, "privateEndpoint": private, "publicEndpoint": public},
            "masterAuth": {**(inputs.get("masterAuth") or {}), "clusterCaCertificate": _FAKE_CA,
                           "clientCertificateConfig": {"issueClientCertificate": False}},
            "masterVersion": version, "operation": None, "project": p,
            # Every cluster has a DNS endpoint (gke-<uid>-<project number>.<location>.gke.goog).
            "controlPlaneEndpointsConfig": {
                "dnsEndpointConfig": {
                    "allowExternalTraffic": False,
                    **((inputs.get("controlPlaneEndpointsConfig") or {}).get("dnsEndpointConfig") or {}),
                    "endpoint": f"gke-{_n(path, 16**8):08x}{_n(path + 'u', 16**8):08x}-"
                                f"{10**11 + _n(p, 10**11)}.{loc}.gke.goog"},
                "ipEndpointsConfig": {"enabled": True}},
            "labelFingerprint": f"{_n(path, 16**8):08x}"}


@cloud_outputs("gcp:container/nodePool:NodePool")
def _node_pool(name, inputs):
    cluster = inputs["cluster"]  # projects/P/locations/L/clusters/C
    zone = (inputs.get("nodeLocations") or [f"{inputs['location']}-a"])[0]
    group = f"gke-{cluster.rsplit('/', 1)[-1]}-{inputs['name']}-{_n(cluster + inputs['name'], 16**8):08x}-grp"
    mig = f"{_API}/projects/{cluster.split('/')[1]}/zones/{zone}/instanceGroupManagers/{group}"
    return {"id": f"{cluster}/nodePools/{inputs['name']}", "instanceGroupUrls": [mig],
            "managedInstanceGroupUrls": [mig.replace("instanceGroupManagers", "instanceGroups")],
            "version": "1.35.8-gke.1036000"}


@cloud_outputs("gcp:filestore/instance:Instance")
def _filestore(name, inputs):
    p = _project(inputs)
    path = f"projects/{p}/locations/{inputs['location']}/instances/{inputs['name']}"
    # DIRECT_PEERING instances get an address in a /29 Google reserves out of the VPC's free space.
    networks = [{**n, "ipAddresses": [f"10.{_n(path, 200) + 40}.{_n(path + 'x', 250)}.2"],
                 "reservedIpRange": f"10.{_n(path, 200) + 40}.{_n(path + 'x', 250)}.0/29"}
                for n in inputs.get("networks") or []]
    return {"id": path, "networks": networks, "createTime": "2026-01-01T00:00:00Z", "project": p}


class _DataSourceError(grpc.RpcError):
    """How the engine answers an invoke the provider failed: a gRPC error whose details carry the API's."""

    def __init__(self, tok: str, message: str):
        super().__init__(message)
        self._details = f"invocation of {tok} returned an error: {message}"

    def code(self):
        return grpc.StatusCode.UNKNOWN

    def details(self):
        return self._details


def _guest_cpus(machine_type: str) -> int:
    """vCPUs as GCE lists them: the size suffix of a predefined general-purpose type (e2-standard-8: 8), the
    catalog's figure for a GPU machine type (a3-highgpu-8g: 208, from GCE's machine-type pages)."""
    from ..catalog import INSTANCE_TYPES
    if machine_type in INSTANCE_TYPES:
        return INSTANCE_TYPES[machine_type].vcpu
    size = machine_type.rsplit("-", 1)[-1]
    return int(size) if size.isdigit() else 2


@invoke("gcp:compute/getMachineTypes:getMachineTypes")
def _machine_types(args):
    """machineTypes.list in a zone with a `name = "..."` filter: the type if the zone offers it."""
    p, zone = _project(args), args["zone"]
    name = args.get("filter", "").split("=", 1)[-1].strip().strip('"')
    offered = [] if (zone, name) in NOT_OFFERED else [{
        "name": name, "id": str(_n(name, 10**10)), "description": name, "guestCpus": _guest_cpus(name),
        "memoryMb": 0,
        "isSharedCpus": False, "maximumPersistentDisks": 128, "maximumPersistentDisksSizeGb": "263168",
        "accelerators": [], "bundledLocalSsds": [], "deprecateds": [],
        "selfLink": f"{_API}/projects/{p}/zones/{zone}/machineTypes/{name}"}]
    return {"id": f"projects/{p}/zones/{zone}", "project": p, "zone": zone, "filter": args.get("filter"),
            "machineTypes": offered}


# Zones GCE reports as DOWN (compute.zones.list status); every other zone of the region is UP.
ZONES_DOWN: set[str] = set()


@invoke("gcp:compute/getZones:getZones")
def _zones(args):
    """zones.list of a region, filtered by status, from Google Cloud's published list of the region's zones."""
    from ..config.gcp_regions import zones
    p, region, status = _project(args), args.get("region"), args.get("status")
    names = [z for z in zones(region) if (z in ZONES_DOWN) == (status == "DOWN") or not status]
    return {"id": f"projects/{p}/regions/{region}", "project": p, "region": region, "status": status,
            "names": names}


@invoke("gcp:compute/getReservation:getReservation")
def _reservation(args):
    p, zone, name = _project(args), args["zone"], args["name"]
    path = f"projects/{p}/zones/{zone}/reservations/{name}"
    known = {(rp, rn): (rz, held) for (rp, rz, rn), held in RESERVATIONS.items()}
    if (p, name) in known and known[(p, name)][0] != zone:
        raise _DataSourceError("gcp:compute/getReservation:getReservation",
                               f"googleapi: Error 404: The resource '{path}' was not found, notFound")
    held = known.get((p, name), (zone, None))[1]
    specific = [] if held is None else [{
        "count": held[1], "inUseCount": 0, "assuredCount": held[1], "sourceInstanceTemplate": "",
        "instanceProperties": [{"machineType": held[0], "guestAccelerators": [], "localSsds": [],
                                "minCpuPlatform": "", "maintenanceInterval": "", "locationHint": ""}]}]
    return {"id": path, "name": name, "project": p, "zone": zone, "status": "READY",
            "specificReservationRequired": True, "specificReservations": specific,
            "selfLink": f"{_API}/{path}"}


__all__: list[str] = []


@invoke("gcp:organizations/getProject:getProject")
def _get_project(args):
    """projects.get: the project's number is made up (12 digits from its id), like GCP's."""
    p = args.get("projectId") or _provider["project"]
    return {"id": f"projects/{p}", "projectId": p, "number": str(10**11 + _n(p, 9 * 10**11)), "name": p}


@cloud_outputs("gcp:storage/bucketIAMMember:BucketIAMMember")
def _bucket_iam_member(name, inputs):
    return {"etag": f"CAE{_n(name, 10**6):06d}=", "id": f"b/{inputs['bucket']}/{inputs['role']}/{inputs['member']}"}


# Cloud Quotas values of the offline project: (project, quota id, region or "global", gpu_family or None) ->
# value. A quota not listed answers a generous value (a project granted GPU quota), so offline plans pass;
# tests set an entry to "0" to show the refusal a new project gets. QUOTA_IDS_MISSING: quota ids the project
# does not have (quotaInfos.get answers 404).
QUOTAS: dict[tuple[str, str, str, str | None], str] = {}
QUOTA_IDS_MISSING: set[str] = set()
GENEROUS_QUOTA = "10000"  # a placeholder: the plan neither compares it nor prints it as the project's quota


@invoke("gcp:cloudquota/getSQuotaInfo:getSQuotaInfo")
def _quota_info(args):
    """quotaInfos.get: one entry for every region (dimensions {} or the gpu_family dimension) at the generous
    value, and one per QUOTAS entry, as Cloud Quotas lists a region granted its own value."""
    parent, qid = args["parent"], args["quotaId"]
    name = f"{parent}/locations/global/services/{args['service']}/quotaInfos/{qid}"
    if qid in QUOTA_IDS_MISSING:
        raise _DataSourceError("gcp:cloudquota/getSQuotaInfo:getSQuotaInfo",
                               f"googleapi: Error 404: QuotaInfo {name} not found, notFound")
    project = parent.split("/", 1)[1]
    per_project = qid.endswith("-per-project")
    base = ["global"] if per_project else ["us-central1", "us-east1", "us-east4", "us-east5", "us-west1",
                                           "europe-west4", "asia-southeast1"]
    infos = [{"dimensions": {}, "details": [{"value": GENEROUS_QUOTA}], "applicableLocations": base}]
    for (p, q, region, family), value in QUOTAS.items():
        if (p, q) == (project, qid):
            dims = {**({} if per_project else {"region": region}), **({"gpu_family": family} if family else {})}
            info = {"dimensions": dims, "details": [{"value": value}], "applicableLocations": [region]}
            infos = [info] if per_project else [*infos, info]  # a project-wide quota has one value
    return {"id": name, "name": name, "parent": parent, "service": args["service"], "quotaId": qid,
            "metric": f"compute.googleapis.com/{qid.split('-per-')[0].lower().replace('-', '_')}",
            "metricDisplayName": qid, "metricUnit": "1", "quotaDisplayName": qid, "containerType": "PROJECT",
            "dimensions": [] if per_project else ["region"], "dimensionsInfos": infos, "isConcurrent": False,
            "isFixed": False, "isPrecise": True, "refreshInterval": "", "quotaIncreaseEligibilities": [],
            "serviceRequestQuotaUri": ""}
# projects.locations.getServerConfig as the GKE release notes listed it (docs.cloud.google.com/kubernetes-engine/
# docs/release-notes-regular and -nochannel, 2026-09-17 / 2026-09-23: REGULAR's default 1.35.8-gke.1036000, the
# no-channel default 1.35.8-gke.1225000, 1.34.11-gke.1209000 still available then; 1.34 has since left standard
# support, 2026-10-01, so it is not offered here). ⚠ Only those builds are sourced: the channels' newest and
# upgrade targets are set to them, not read. Tests remove a minor to show what happens where GKE does not offer it.
GKE_VALID_MASTER_VERSIONS: list[str] = ["1.35.8-gke.1225000", "1.35.8-gke.1036000"]
GKE_CHANNELS: dict[str, dict[str, str]] = {  # channel -> default / latest / upgrade target
    c: {"default": "1.35.8-gke.1036000", "latest": "1.35.8-gke.1225000", "target": "1.35.8-gke.1036000"}
    for c in ("RAPID", "REGULAR", "STABLE", "EXTENDED")}


@invoke("gcp:container/getEngineVersions:getEngineVersions")
def _engine_versions(args):
    p, loc = _project(args), args.get("location")
    prefix = args.get("versionPrefix") or ""
    valid = [v for v in GKE_VALID_MASTER_VERSIONS if v.startswith(prefix)]
    return {"id": f"projects/{p}/locations/{loc}", "project": p, "location": loc, "versionPrefix": args.get("versionPrefix"),
            "defaultClusterVersion": "1.35.8-gke.1225000", "latestMasterVersion": valid[0] if valid else "",
            "latestNodeVersion": valid[0] if valid else "", "validMasterVersions": valid, "validNodeVersions": valid,
            "releaseChannelDefaultVersion": {c: v["default"] for c, v in GKE_CHANNELS.items()},
            "releaseChannelLatestVersion": {c: v["latest"] for c, v in GKE_CHANNELS.items()},
            "releaseChannelUpgradeTargetVersion": {c: v["target"] for c, v in GKE_CHANNELS.items()}}


# --- Compute Engine quotas with their usage (regions.get / projects.get `quotas[]`) --------------------------
# What the offline project's regions and project list: (project, region or "global", metric) -> (limit, usage).
# The defaults are those of a project granted GPU quota that already runs a little of everything (usage below
# every limit, never 0 everywhere, so a check that ignored usage would be caught); tests set a row to show a
# refusal. A metric a region does not list is a quota the project does not have (limit 0).
REGION_ROWS: dict[str, tuple[float, float]] = {
    "CPUS": (2400, 24), "E2_CPUS": (2400, 0), "N2_CPUS": (2400, 16), "N2D_CPUS": (2400, 0), "N4_CPUS": (1200, 0),
    "C2_CPUS": (1200, 0), "C2D_CPUS": (1200, 0), "C3_CPUS": (1200, 0), "C3D_CPUS": (1200, 0), "C4_CPUS": (1200, 0),
    "T2D_CPUS": (1200, 0), "SSD_TOTAL_GB": (81920, 1200), "DISKS_TOTAL_GB": (102400, 500),
    "IN_USE_ADDRESSES": (575, 3), "INSTANCES": (6000, 7),
    **{f"{p}NVIDIA_{m}_GPUS": (1024, 8 if m == "L4" and not p else 0)
       for p in ("", "PREEMPTIBLE_", "COMMITTED_")
       for m in ("L4", "A100", "A100_80GB", "H100", "H100_MEGA", "H200", "B200")},
}
PROJECT_ROWS: dict[str, tuple[float, float]] = {"CPUS_ALL_REGIONS": (20000, 40), "GPUS_ALL_REGIONS": (4096, 8)}
# (project, region or "global", metric) -> (limit, usage), over the defaults; None removes the row.
QUOTA_ROWS: dict[tuple[str, str, str], tuple[float, float] | None] = {}
# Projects whose Compute Engine API is off (regions.get answers 403 SERVICE_DISABLED).
COMPUTE_API_OFF: set[str] = set()
# Clusters GKE has (project, location, name): a later `pulumi up`; none: the first.
CLUSTERS: set[tuple[str, str, str]] = set()
CLUSTER_READ_ERROR = ""  # what getCluster fails with for every cluster (a 403, an outage); '' for none


def _rows(project: str, where: str, defaults: dict) -> list[dict]:
    rows = dict(defaults)
    for (p, w, metric), row in QUOTA_ROWS.items():
        if (p, w) == (project, where):
            if row is None:
                rows.pop(metric, None)
            else:
                rows[metric] = row
    return [{"metric": m, "limit": float(lim), "usage": float(use)} for m, (lim, use) in sorted(rows.items())]


def _compute_get(url: str, token: str) -> dict:
    """regions.get and projects.get as Compute Engine answers them (only the fields the check reads, and names)."""
    assert token == _TOKEN, "the quota reads must use the provider's token"
    path = url.split("/compute/v1/", 1)[1].split("/")  # projects/P[/regions/R]
    project = path[1]
    if project in COMPUTE_API_OFF:
        raise RuntimeError(f"403: Compute Engine API has not been used in project {project} before or it is "
                           f"disabled. Enable it by visiting https://console.developers.google.com/apis/api/"
                           f"compute.googleapis.com/overview?project={project} then retry. (SERVICE_DISABLED)")
    if len(path) == 4:
        return {"kind": "compute#region", "name": path[3], "status": "UP",
                "quotas": _rows(project, path[3], REGION_ROWS)}
    return {"kind": "compute#project", "name": project, "quotas": _rows(project, "global", PROJECT_ROWS)}


_TOKEN = "ya29.offline-access-token"


@invoke("gcp:organizations/getClientConfig:getClientConfig")
def _client_config(args):
    p = _provider["project"]
    return {"id": f"projects/{p}/regions//zones/", "project": p, "region": "", "zone": "", "accessToken": _TOKEN,
            "defaultLabels": {}}


@invoke("gcp:container/getCluster:getCluster")
def _get_cluster(args):
    p, loc, name = _project(args), args.get("location"), args.get("name")
    # terraform-provider-google's data source answers "<id> not found"; the bridge wraps the provider's errors in a
    # multierror ("invoking T: 1 error occurred:\n\t* ...\n\n")
    tok = "gcp:container/getCluster:getCluster"
    if CLUSTER_READ_ERROR:
        raise _DataSourceError(tok, f"invoking {tok}: 1 error occurred:\n\t* {CLUSTER_READ_ERROR}\n\n")
    if (p, loc, name) not in CLUSTERS:
        raise _DataSourceError(tok, f"invoking {tok}: 1 error occurred:\n\t* projects/{p}/locations/{loc}/clusters/"
                                    f"{name} not found\n\n")
    return {"id": f"projects/{p}/locations/{loc}/clusters/{name}", "name": name, "location": loc, "project": p}


def _placeholder(quota) -> bool:
    """Whether only placeholders answer this quota: no QUOTAS value (Cloud Quotas' limit), no QUOTA_ROWS row
    (Compute Engine's limit and usage, over the REGION_ROWS / PROJECT_ROWS defaults) and no 404 (QUOTA_IDS_MISSING)
    for it. The quota check then says it was not checked offline instead of comparing a placeholder
    (cluster/pools.py checked_needs)."""
    from ..cluster.gcp.quotas import usage_metric
    if quota.code in QUOTA_IDS_MISSING or any(q == quota.code for (_, q, _, _) in QUOTAS):
        return False
    return not any(metric == usage_metric(quota) for (_, _, metric) in QUOTA_ROWS)


def _install_compute_transport():
    from ..cluster import pools
    from ..cluster.gcp import quotas
    quotas.COMPUTE_GET = _compute_get
    pools.OFFLINE_PLACEHOLDER["gcp"] = _placeholder


_install_compute_transport()
