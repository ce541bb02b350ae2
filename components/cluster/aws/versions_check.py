"""What EKS says about the stack's Kubernetes minor and pinned add-on builds, asked before any resource.

Three questions, each an invoke that is safe on the very first `pulumi up` (none needs anything of the stack's):
  1. aws.eks.get_cluster_versions (DescribeClusterVersions, include_all so that an UNSUPPORTED minor is
     answered rather than left out): does EKS offer the minor, and in which support state?
  2. aws.eks.get_clusters (ListClusters) and, only when the name is listed, aws.eks.get_cluster
     (DescribeCluster; it fails for a cluster that does not exist, so it is never asked blind): the live
     version of an existing cluster of this name, so that an upgrade moves one minor and never down. Live
     state, not Pulumi state: EKS may have upgraded a STANDARD cluster at the end of standard support.
  3. aws.eks.get_addon_version per installed add-on (addon_versions): EKS's newest build for the minor, which the
     add-on is installed at; nothing is pinned, so no build EKS does not list is ever asked for.
"""
from __future__ import annotations

from datetime import date

import pulumi
import pulumi_aws as aws

from ...upstream.kubernetes_support import FIELD, minor_tuple, next_minor, support_warning

def _date(value: str | None) -> str:
    return (value or "")[:10]


def cluster_version_problems(minor: str, support_type: str, versions: list) -> tuple[list[str], list[str]]:
    """(problems, warnings) from get_cluster_versions' cluster_versions for `minor`."""
    entry = next((v for v in versions if v.cluster_version == minor), None)
    if entry is None:
        offered = sorted({v.cluster_version for v in versions if v.version_status != "UNSUPPORTED"},
                         key=minor_tuple)
        return [f"{FIELD}: {minor}: EKS does not offer Kubernetes {minor} in this region (offered: "
                f"{', '.join(offered) or 'none'}); pick one of those"], []
    status = entry.version_status
    if status == "UNSUPPORTED":
        return [f"{FIELD}: {minor}: EKS no longer supports {minor} (end of extended support "
                f"{_date(entry.end_of_extended_support_date)}); set {FIELD}: \"{next_minor(minor)}\" or newer"], []
    if status == "EXTENDED_SUPPORT" and support_type != "EXTENDED":
        return [f"{FIELD}: {minor}: EKS standard support for {minor} ended on "
                f"{_date(entry.end_of_standard_support_date)}, and aws.supportType STANDARD would have EKS "
                f"upgrade the control plane behind Pulumi's back; set {FIELD}: \"{next_minor(minor)}\", or "
                f"aws.supportType: EXTENDED"], []
    return [], []


def live_version_problems(minor: str, live: str, cluster_name: str) -> list[str]:
    """An existing cluster moves one minor per `pulumi up` and never down (EKS UpdateClusterVersion)."""
    if live == minor:
        return []
    if minor_tuple(live) > minor_tuple(minor):
        return [f"{FIELD}: {minor}: EKS cluster {cluster_name} already runs {live} (EKS upgrades a STANDARD "
                f"cluster itself at the end of standard support) and cannot be downgraded; set {FIELD}: "
                f"\"{live}\""]
    if minor_tuple(minor) != minor_tuple(next_minor(live)):
        return [f"{FIELD}: {minor}: EKS cluster {cluster_name} runs {live}, and EKS upgrades one minor at a time; "
                f"set {FIELD}: \"{next_minor(live)}\", `pulumi up`, and repeat up to {minor} (UPGRADING.md)"]
    return []


def existing_cluster(cluster_name: str, invoke: pulumi.InvokeOptions) -> aws.eks.GetClusterResult | None:
    """The EKS cluster of the stack's name as it is now (ListClusters, then DescribeCluster only when listed:
    getCluster fails for a name that does not exist); None before the first `pulumi up`. Read once per run: the
    version checks, the cluster creator and the node groups' live sizes all start from it."""
    if cluster_name not in (aws.eks.get_clusters(opts=invoke).names or []):
        return None
    return aws.eks.get_cluster(name=cluster_name, opts=invoke)


def eks_version_checks(cluster_name: str, minor: str, support_type: str, invoke: pulumi.InvokeOptions, on: date,
                       live: aws.eks.GetClusterResult | None = None) -> tuple[list[str], list[str]]:
    """(problems, warnings) for the stack's minor; `live`: existing_cluster()."""
    versions = aws.eks.get_cluster_versions(cluster_type="eks", cluster_versions_onlies=[minor], include_all=True,
                                            opts=invoke).cluster_versions or []
    problems, warnings = cluster_version_problems(minor, support_type, versions)
    if problems:
        return problems, warnings
    if live is not None:
        problems += live_version_problems(minor, ".".join(live.version.split(".")[:2]), cluster_name)
    if (w := support_warning("aws", minor, on, support_type == "EXTENDED")):
        warnings.append(w)
    return problems, warnings


def addon_versions(addons: list[str], minor: str, invoke: pulumi.InvokeOptions) -> tuple[dict[str, str], list[str]]:
    """({add-on: build}, problems): EKS's newest build of each add-on for the cluster's minor
    (DescribeAddonVersions through aws.eks.get_addon_version, most_recent). A new build EKS publishes is picked up by
    the next `pulumi up`, which shows it as an in-place update of the add-on."""
    versions, problems = {}, []
    for addon in addons:
        try:
            versions[addon] = aws.eks.get_addon_version(addon_name=addon, kubernetes_version=minor, most_recent=True,
                                                        opts=invoke).version
        except Exception as e:  # the provider's error: EKS lists no build of it for this minor
            problems.append(f"{FIELD}: {minor}: EKS lists no {addon} add-on build for Kubernetes {minor} ({e}); "
                            f"pick a minor EKS offers it for")
    return versions, problems
