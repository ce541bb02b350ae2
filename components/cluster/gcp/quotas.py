"""Compute Engine GPU quotas the GPU node pools draw on, read through the Cloud Quotas API before any node
pool is created.

GCE counts GPUs per region and model (on-demand and Spot apart), and every project also has a global cap
on GPUs of all models in all regions; a new project starts at 0 for both. With `gcp.reservation` nothing is
checked: a reservation holds its VMs' quota from the moment it is created (⚠ re-check:
cloud.google.com/compute/docs/instances/reservations-overview, "Quota"), so nodes that consume it draw none.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import pulumi
import pulumi_gcp as gcp

from ..pools import PoolSpec, Quota, QuotaNeed, api_error, quota_needs, quota_problem, quota_shortfall

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
    dims = [] if quota == ALL_REGIONS else [("region", region)]
    dims += list(quota.dimensions)
    flag = f" --dimensions={','.join(f'{k}={v}' for k, v in dims)}" if dims else ""
    return (f"`gcloud beta quotas preferences create --service={SERVICE} --quota-id={quota.code} "
            f"--preferred-value={need}{flag} --project={project} --email=YOUR_EMAIL` (console: IAM & Admin > "
            f"Quotas & System Limits, filter {quota.code})")


def quota_problems(needs: list[QuotaNeed], values: dict[Quota, float | None], project: str, region: str,
                   errors: dict[Quota, str] | None = None) -> list[str]:
    """Pure: a `gcp.region` line per quota below the need, with the quota preference to file; where the
    quota could not be read, why."""
    problems = []
    for need in needs:
        short = quota_shortfall(need, values)
        if short is None:
            continue
        q = need.quota
        if q in (errors or {}):
            problems.append(f"gcp.region: cannot read quota {q.code} of project {project}: {errors[q]}; the deployer "
                            f"needs cloudquotas.quotas.get (roles/cloudquotas.viewer), and the stack turns the Cloud "
                            f"Quotas API (cloudquotas.googleapis.com) on")
            continue
        where = f"project {project}" if q == ALL_REGIONS else f"{region} (project {project})"
        problems.append(quota_problem("gcp.region", where, need, short,
                                      preference_request(q, need.need, project, region)))
    return problems


def check_quotas(cfg: GcpClusterArgs, specs: list[PoolSpec], opts: pulumi.InvokeOptions) -> list[str]:
    """Ask Cloud Quotas (quotaInfos.get) for every quota the pools draw on."""
    g = cfg.gcp
    needs = gpu_quota_needs(specs, g.spot, bool(g.reservation))
    values: dict[Quota, float | None] = {}
    errors: dict[Quota, str] = {}
    for quota in sorted({q for n in needs for q in (n.quota, *n.alternatives)}, key=lambda q: (q.code, q.dimensions)):
        try:
            info = gcp.cloudquota.get_s_quota_info(parent=f"projects/{g.project}", service=SERVICE,
                                                   quota_id=quota.code, opts=opts)
        except Exception as e:  # the API off, no permission, or a quota id the project does not have
            values[quota], errors[quota] = None, api_error(e)
            continue
        region = "global" if quota == ALL_REGIONS else g.region
        values[quota] = quota_value(info.dimensions_infos, region, quota.dimensions)
    return quota_problems(needs, values, g.project, g.region, errors)
