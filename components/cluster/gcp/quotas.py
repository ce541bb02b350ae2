"""Compute Engine quotas a new GKE stack draws on, read before the first resource is registered
(component.py: the GPU quotas, the system pool's CPU family, the vCPUs of every region, Persistent Disk SSD), each
compared with what is free: the limit minus what the project already uses.

Where the figures come from (the provider's own identity throughout: gcp.organizations.get_client_config's token):
  - limits of the GPU quotas: Cloud Quotas (quotaInfos.get), which alone knows the per-GPU-family quota of H100,
    H100 Mega, H200 and B200 with its gpu_family dimension;
  - usage of every quota, and the limits of the CPU and disk quotas: Compute Engine regions.get and projects.get
    (`quotas[]`: metric, limit, usage), read over REST because pulumi-gcp 10.2 has no function that returns them
    (Cloud Quotas' QuotaInfo carries no usage). A metric the region does not list is a quota of 0, used by nothing.
Usage counts this stack's own nodes once they run, and no API separates them: the free figure is compared on the
first `pulumi up` (no GKE cluster of the stack's name yet, gcp.container.get_cluster answers not found), and the
limit alone on later runs, so that a running stack is never refused for the nodes it already has.

GCE counts GPUs per region and model (on-demand and Spot apart), and every project also has a global cap on GPUs
of all models in all regions; a new project starts at 0 for both. With `gcp.reservation` the GPUs are not checked:
a reservation holds its VMs' quota from the moment it is created (⚠ re-check:
cloud.google.com/compute/docs/instances/reservations-overview, "Quota"), so nodes that consume it draw none.
Not checked: IN_USE_ADDRESSES (every node is private; Cloud NAT's addresses are allocated by NAT as it needs them)
and Filestore's capacity quota (the Filestore API's own, file.googleapis.com; ⚠ a new project's BASIC_SSD quota
may be below the 2.5 TiB minimum instance: `gcloud beta quotas info list --service=file.googleapis.com`).
"""
from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

import pulumi
import pulumi_gcp as gcp

from ..pools import PoolSpec, Quota, QuotaNeed, api_error, checked_needs, quota_needs

if TYPE_CHECKING:
    from .args import GcpClusterArgs

SERVICE = "compute.googleapis.com"
# Quota ids per GKE accelerator (cloud.google.com/compute/resource-usage#gpu_quota and the Cloud Quotas
# console, 2026-12 ⚠ re-check): (on-demand, Spot). H100, H100 Mega, H200 and B200 have no per-model
# on-demand quota: they draw on "GPUs per GPU family" with a gpu_family dimension; Spot stays per model.
_FAMILY = "GPUS-PER-GPU-FAMILY-per-project-region"


def _family(gpu_family: str) -> Quota:
    return Quota(_FAMILY, "GPUs per GPU family", "GPUs", (("gpu_family", gpu_family),))


def _model(model: str, name: str, spot: bool = False) -> Quota:
    prefix = "PREEMPTIBLE-" if spot else ""
    return Quota(f"{prefix}NVIDIA-{model}-GPUS-per-project-region", f"{'Preemptible ' if spot else ''}{name}", "GPUs")


GPU_QUOTAS: dict[str, tuple[Quota, Quota]] = {
    "nvidia-l4": (_model("L4", "NVIDIA L4 GPUs"), _model("L4", "NVIDIA L4 GPUs", spot=True)),
    "nvidia-tesla-a100": (_model("A100", "NVIDIA A100 GPUs"), _model("A100", "NVIDIA A100 GPUs", spot=True)),
    "nvidia-a100-80gb": (_model("A100-80GB", "NVIDIA A100 80GB GPUs"),
                         _model("A100-80GB", "NVIDIA A100 80GB GPUs", spot=True)),
    "nvidia-h100-80gb": (_family("NVIDIA_H100"), _model("H100", "NVIDIA H100 GPUs", spot=True)),
    "nvidia-h100-mega-80gb": (_family("NVIDIA_H100_MEGA"), _model("H100-MEGA", "NVIDIA H100 MEGA GPUs", spot=True)),
    "nvidia-h200-141gb": (_family("NVIDIA_H200"), _model("H200", "NVIDIA H200 GPUs", spot=True)),
    "nvidia-b200": (_family("NVIDIA_B200"), _model("B200", "NVIDIA B200 GPUs", spot=True)),
}
# Every GPU of the project, any model, Spot included, in all regions; 0 on a new project.
ALL_REGIONS = Quota("GPUS-ALL-REGIONS-per-project", "GPUs (all regions)", "GPUs")


def gpu_quota_needs(specs: list[PoolSpec], spot: bool, reserved: bool) -> list[QuotaNeed]:
    """GPUs per quota at the pools' max node counts. A Spot VM draws on the standard quota of its model
    where the project has no preemptible quota (⚠ re-check: cloud.google.com/compute/docs/instances/spot,
    "Quotas"), so for Spot that quota is an alternative."""
    if reserved:
        return []

    def draws(spec: PoolSpec):
        on_demand, preemptible = GPU_QUOTAS[spec.instance.gke_accelerator]
        model = (preemptible, spec.instance.gpus, (on_demand,)) if spot else (on_demand, spec.instance.gpus, ())
        return [model, (ALL_REGIONS, spec.instance.gpus, ())]
    return quota_needs(specs, draws)


def quota_value(dimensions_infos, region: str, dimensions: tuple[tuple[str, str], ...]) -> float | None:
    """The value in effect for `region` and the quota's own dimensions, from a QuotaInfo's dimensionsInfos:
    the most specific entry that matches (an entry without a dimension applies to every value of it not
    named elsewhere). None for no entry or an unset value; -1 is unlimited."""
    wanted = {"region": region, **dict(dimensions)}
    best, best_keys = None, -1
    for info in dimensions_infos or []:
        dims = dict(info.dimensions or {})
        if any(wanted.get(k) != v for k, v in dims.items()):
            continue
        locations = list(info.applicable_locations or [])
        if locations and region not in locations and "global" not in locations:
            continue
        if len(dims) > best_keys:
            best, best_keys = info, len(dims)
    details = list(best.details or []) if best is not None else []
    if not details or details[0].value in (None, ""):
        return None
    return float(details[0].value)


def preference_request(quota: Quota, need: int, project: str, region: str) -> str:
    dims = [] if project_scoped(quota) else [("region", region)]
    dims += list(quota.dimensions)
    flag = f" --dimensions={','.join(f'{k}={v}' for k, v in dims)}" if dims else ""
    return (f"`gcloud beta quotas preferences create --service={SERVICE} --quota-id={quota.code} "
            f"--preferred-value={need}{flag} --project={project} --email=YOUR_EMAIL` (console: IAM & Admin > "
            f"Quotas & System Limits, filter {quota.code})")


# --- CPUs and disks, and the Compute Engine metric that counts each quota's usage ------------------------

# The regional vCPU quota each general-purpose series draws on (cloud.google.com/compute/resource-usage, "CPU
# quota", read 2026-12 ⚠ re-check: E2 and N1 count on CPUS, the other series on their own). The system pool's
# series must be listed: a series not here is refused at plan time rather than left unchecked.
CPU_METRICS = {"e2": "CPUS", "n1": "CPUS", "n2": "N2_CPUS", "n2d": "N2D_CPUS", "n4": "N4_CPUS", "c2": "C2_CPUS",
               "c2d": "C2D_CPUS", "c3": "C3_CPUS", "c3d": "C3D_CPUS", "c4": "C4_CPUS", "t2d": "T2D_CPUS"}
# Every vCPU of the project, any series, GPU machines included, in all regions (a new project: 32 or fewer).
ALL_CPUS = Quota("CPUS-ALL-REGIONS-per-project", "vCPUs (all regions)", "vCPUs")
# pd-balanced and pd-ssd disks, boot disks included, in the region (resource-usage, "Disk quota" ⚠ re-check).
SSD = Quota("SSD-TOTAL-GB-per-project-region", "Persistent Disk SSD (GB)", "GB")
SSD_DISK_TYPES = ("pd-balanced", "pd-ssd")


def cpu_quota(machine_type: str) -> Quota | None:
    metric = CPU_METRICS.get(machine_type.split("-", 1)[0])
    if metric is None:
        return None
    return Quota(f"{metric.replace('_', '-')}-per-project-region", f"{metric} vCPUs", "vCPUs")


def usage_metric(q: Quota) -> str:
    """The regions.get / projects.get metric counting the quota's usage: its id without the scope suffix, with
    underscores; the per-family GPU quota counts as its family's metric (NVIDIA_H100 -> NVIDIA_H100_GPUS)."""
    family = dict(q.dimensions).get("gpu_family")
    if family:
        return f"{family}_GPUS"
    return q.code.split("-per-project")[0].replace("-", "_")


def project_scoped(q: Quota) -> bool:
    return q.code.endswith("-per-project")


@dataclass(frozen=True)
class PoolNodes:
    """What one node pool draws at its max node count (node_pools.py fills it from the GCE machine types)."""
    pool: str
    machine_type: str
    max_nodes: int
    vcpus: int
    boot_disk_type: str
    boot_disk_gb: int
    system: bool = False


def node_needs(nodes: list[PoolNodes]) -> tuple[list[QuotaNeed], list[str]]:
    """(needs, problems): the system pool's vCPUs on its series' quota, every pool's vCPUs on the all-regions
    quota, the pd-balanced / pd-ssd boot disks on SSD_TOTAL_GB."""
    totals: dict[Quota, tuple[int, tuple[str, ...]]] = {}
    problems = []

    def add(q: Quota, amount: int, pool: str):
        need, pools = totals.get(q, (0, ()))
        totals[q] = (need + amount, pools if pool in pools else (*pools, pool))
    for n in nodes:
        if n.system:
            family = cpu_quota(n.machine_type)
            if family is None:
                problems.append(f"gcp.systemMachineType: {n.machine_type}: no regional vCPU quota is known for its "
                                f"series (components/cluster/gcp/quotas.py CPU_METRICS: "
                                f"{', '.join(sorted(CPU_METRICS))}); pick a machine type of one of them")
            else:
                add(family, n.vcpus * n.max_nodes, n.pool)
        add(ALL_CPUS, n.vcpus * n.max_nodes, n.pool)
        if n.boot_disk_type in SSD_DISK_TYPES:
            add(SSD, n.boot_disk_gb * n.max_nodes, n.pool)
    return [QuotaNeed(q, need, pools) for q, (need, pools) in totals.items() if need > 0], problems


# --- the comparison ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Reading:
    """A quota's limit (None: unreadable or never granted, counted as 0; below 0: unlimited) and usage."""
    limit: float | None
    usage: float


def _fix(q: Quota) -> str:
    if q == ALL_CPUS:
        return "or lower the models' replicas.max / gcp.systemNodes"
    if q == SSD:
        return "or lower the models' replicas.max / gcp.systemNodes"
    if q.unit == "vCPUs":
        return "or pick a smaller gcp.systemMachineType / fewer gcp.systemNodes"
    return "or lower the models' replicas.max"


def _field(q: Quota) -> str:
    if q.unit == "vCPUs" and q != ALL_CPUS:
        return "gcp.systemMachineType"
    return "gcp.project" if project_scoped(q) else "gcp.region"


def headroom_problem(need: QuotaNeed, readings: dict[Quota, Reading], project: str, region: str,
                     fresh: bool) -> str | None:
    """None when the quota (or an alternative: Spot's standard quota) has room for the need: its limit minus its
    usage on a first run, its limit on a later one (module docstring). Else the refusal, with the figures."""
    for q in (need.quota, *need.alternatives):
        r = readings.get(q)
        if r is not None and r.limit is not None and (r.limit < 0 or r.limit - (r.usage if fresh else 0) >= need.need):
            return None
    q = need.quota
    r = readings.get(q) or Reading(None, 0)
    limit = r.limit or 0
    where = f"project {project}" if project_scoped(q) else f"{region} (project {project})"
    dims = "".join(f", {k}={v}" for k, v in q.dimensions)
    if fresh:
        state = f"limit {limit:g}, in use {r.usage:g}, free {max(limit - r.usage, 0):g} {q.unit}"
        wanted = int(r.usage) + need.need
    else:
        state = f"limit {limit:g} {q.unit} (in use {r.usage:g}, this stack's running nodes among them)"
        wanted = need.need
    request = preference_request(q, wanted, project, region)
    return (f"{_field(q)}: quota {q.code} ({q.name}{dims}) in {where}: {state}; the node pools "
            f"({', '.join(need.pools)}) need {need.need} {q.unit} at their max node counts. Raise the limit to "
            f"{wanted}: {request}; {_fix(q)}")


def quota_problems(needs: list[QuotaNeed], readings: dict[Quota, Reading], project: str, region: str,
                   fresh: bool, errors: dict[Quota, str] | None = None) -> list[str]:
    """Pure: one line per quota without room for what the pools need; where a GPU quota could not be read, why."""
    problems = []
    for need in needs:
        line = headroom_problem(need, readings, project, region, fresh)
        if line is None:
            continue
        q = need.quota
        if q in (errors or {}):
            problems.append(f"gcp.region: cannot read quota {q.code} of project {project}: {errors[q]}; the deployer "
                            f"needs cloudquotas.quotas.get (roles/cloudquotas.viewer), and the Cloud Quotas API "
                            f"(cloudquotas.googleapis.com) on: {ENABLE_APIS_HINT.format(project=project)}")
            continue
        problems.append(line)
    return problems


# --- reading them --------------------------------------------------------------------------------------

COMPUTE_API = "https://compute.googleapis.com/compute/v1"
# The APIs the checks read, on before the first `pulumi up` (the stack turns them on too, but only after the
# checks: a new project cannot be granted GPU quota without the Compute Engine API on anyway).
ENABLE_APIS_HINT = ("`gcloud services enable compute.googleapis.com cloudquotas.googleapis.com "
                    "container.googleapis.com --project={project}`, then run again")


def _http_get(url: str, token: str) -> dict:
    """GET a Compute Engine resource as the provider's identity; the API's own message on failure."""
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return json.loads(answer.read())
    except urllib.error.HTTPError as e:
        try:
            message = json.loads(e.read())["error"]["message"]
        except Exception:  # not Google's JSON error body
            message = e.reason
        raise RuntimeError(f"{e.code}: {message}") from None


# The transport of the two reads; the offline plan answers them as Compute Engine would (components/offline).
COMPUTE_GET: Callable[[str, str], dict] = _http_get


def compute_usage(project: str, region: str, opts: pulumi.InvokeOptions) -> tuple[dict[str, Reading], str | None]:
    """{metric: (limit, usage)} of the region (regions.get) and the project (projects.get), or why not."""
    try:
        token = gcp.organizations.get_client_config(opts=opts).access_token
        rows = [*COMPUTE_GET(f"{COMPUTE_API}/projects/{project}/regions/{region}", token).get("quotas", []),
                *COMPUTE_GET(f"{COMPUTE_API}/projects/{project}", token).get("quotas", [])]
    except Exception as e:
        return {}, api_error(e)
    return {r["metric"]: Reading(float(r.get("limit", 0)), float(r.get("usage", 0))) for r in rows}, None


# How the provider says a cluster is absent: terraform-provider-google's data source clears the id on a 404 and
# answers "<projects/P/locations/L/clusters/N> not found" (datasourceContainerClusterRead); a 403, a quota or a
# network error is anything else, and must not read as "no cluster" (that would compare a running stack's nodes
# against what is free and refuse it for them).
# The engine's message wraps the bridge's multierror ("invoking T: 1 error occurred:\n\t* <id> not found\n\n"), so
# every line is looked at, not the first.
def is_not_found(message: str) -> bool:
    return any(line.rstrip().endswith(" not found") or "Error 404" in line for line in message.splitlines())


def cluster_exists(cfg: GcpClusterArgs, opts: pulumi.InvokeOptions) -> bool | str:
    """Whether GKE has a cluster of the stack's name in its region (not the first `pulumi up`); the API's message
    when it could not tell."""
    try:
        gcp.container.get_cluster(name=cfg.cluster.name, location=cfg.gcp.region, project=cfg.gcp.project, opts=opts)
    except Exception as e:
        if is_not_found(str(e)):
            return False
        items = [line.strip()[2:] for line in str(e).splitlines() if line.strip().startswith("* ")]
        return "; ".join(items) or api_error(e)  # the multierror's items: the API's own words
    return True


def cluster_unknown(cfg: GcpClusterArgs, message: str) -> str:
    return (f"gcp.project: cannot tell whether GKE cluster {cfg.cluster.name} exists in {cfg.gcp.region} (project "
            f"{cfg.gcp.project}), so the quotas cannot be compared: {message}; the deployer needs "
            f"container.clusters.get (roles/container.clusterViewer, in roles/container.admin), and the Kubernetes "
            f"Engine API on: {ENABLE_APIS_HINT.format(project=cfg.gcp.project)}")


def check_quotas(cfg: GcpClusterArgs, specs: list[PoolSpec], nodes: list[PoolNodes],
                 opts: pulumi.InvokeOptions) -> list[str]:
    """Read every quota the pools draw on, compare what is free with what they need at their max node counts."""
    g = cfg.gcp
    gpu_needs = gpu_quota_needs(specs, g.spot, bool(g.reservation))
    other_needs, problems = node_needs(nodes)
    usage, failed = compute_usage(g.project, g.region, opts)
    if failed:
        disabled = "SERVICE_DISABLED" in failed or "has not been used" in failed or "is disabled" in failed
        return problems + [f"gcp.project: cannot read the Compute Engine quotas of {g.region} in project {g.project} "
                           f"(regions.get, projects.get): {failed}; " +
                           (f"turn the APIs on first: {ENABLE_APIS_HINT.format(project=g.project)}" if disabled else
                            "the deployer needs compute.regions.get and compute.projects.get (roles/compute.viewer)")]
    readings: dict[Quota, Reading] = {}
    errors: dict[Quota, str] = {}
    for need in other_needs:
        row = usage.get(usage_metric(need.quota))
        readings[need.quota] = row or Reading(None, 0)
    for quota in sorted({q for n in gpu_needs for q in (n.quota, *n.alternatives)},
                        key=lambda q: (q.code, q.dimensions)):
        used = (usage.get(usage_metric(quota)) or Reading(None, 0)).usage
        try:
            info = gcp.cloudquota.get_s_quota_info(parent=f"projects/{g.project}", service=SERVICE,
                                                   quota_id=quota.code, opts=opts)
        except Exception as e:  # the API off, no permission, or a quota id the project does not have
            readings[quota], errors[quota] = Reading(None, used), api_error(e)
            continue
        region = "global" if quota == ALL_REGIONS else g.region
        readings[quota] = Reading(quota_value(info.dimensions_infos, region, quota.dimensions), used)
    exists = cluster_exists(cfg, opts)
    if isinstance(exists, str):
        return problems + [cluster_unknown(cfg, exists)]
    # the offline plan compares only what its project lists (pools.checked_needs); a real run every quota
    where = lambda q: f"project {g.project}" if project_scoped(q) else f"{g.region} (project {g.project})"  # noqa: E731
    needs = checked_needs("gcp", [*gpu_needs, *other_needs], where)
    return problems + quota_problems(needs, readings, g.project, g.region, not exists, errors)
