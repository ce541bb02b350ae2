"""End of standard support per cloud and Kubernetes minor, and what the stack says about a minor on a given day.

Pure (no Pulumi). Config validation (config/schema.py) refuses a minor whose standard support has ended and the
cloud checks (cluster/aws/versions_check.py, cluster/gcp/versions_check.py) warn when it ends within WARN_DAYS;
both ask the cloud as well before anything is created, because these dates are a copy and the cloud's are the truth.
"""
from __future__ import annotations

from datetime import date

# End of standard support (the first day a minor is no longer in standard support).
#   aws: docs.aws.amazon.com/eks/latest/userguide/kubernetes-versions.html, "Amazon EKS Kubernetes release
#        calendar" (awsdocs/amazon-eks-user-guide latest/ug/versioning/kubernetes-versions.adoc at 0138560:
#        1.33 July 29, 2026; 1.34 December 2, 2026); 1.35: March 27, 2027 as endoflife.date/amazon-eks and
#        aws-samples sample-apex-skills cluster-lifecycle.md ("last verified 2026-04-24") list the calendar.
#        (re-read 2026-12-06: endoflife.date/amazon-eks lists 1.35's end of standard support as 27 Mar 2027.) EKS
#        offers 1.36: its add-on pages list 1.36 builds (docs.aws.amazon.com/ja_jp/eks/latest/userguide/
#        managing-kube-proxy.md and managing-coredns.md, read 2026-12-06), and its version page's example minor is
#        1.36 (de_de/id_id/it_it kubernetes-versions.md). ⚠ 1.36's end date is still inferred, not read: no
#        calendar row was at hand. Upstream 1.36 was released 2026-04-22
#        (kubernetes.io/releases/1.36); EKS released 1.33 / 1.34 36 days after upstream, so EKS 1.36 ~2026-05-28,
#        plus EKS's 14 months of standard support (kubernetes-versions.adoc) = 2027-07-28 (the early estimate).
#   gcp: cloud.google.com/kubernetes-engine/docs/release-schedule, "End of standard support", as
#        endoflife.date/api/v1/products/google-kubernetes-engine (generated 2026-04-10) lists it ("Maintenance
#        Support" end): 1.33 2026-08-03, 1.34 2026-10-01, 1.35 2027-04-11. ⚠ 1.36 is inferred: upstream
#        2026-04-22 + GKE's shortest recent lag to the Regular channel (1.34: 34 days) = ~2026-05-26, plus the
#        shortest recent standard-support span (1.34: 12 months) = 2027-05-26.
END_OF_STANDARD_SUPPORT: dict[str, dict[str, date]] = {
    "aws": {"1.33": date(2026, 7, 29), "1.34": date(2026, 12, 2), "1.35": date(2027, 3, 27),
            "1.36": date(2027, 7, 28)},
    "gcp": {"1.33": date(2026, 8, 3), "1.34": date(2026, 10, 1), "1.35": date(2027, 4, 11),
            "1.36": date(2027, 5, 26)},
}
INFERRED = {("aws", "1.36"), ("gcp", "1.36")}  # dates above that no calendar confirmed
WARN_DAYS = 60  # EKS announces an end of standard support at least 60 days ahead (kubernetes-versions.adoc FAQ)
FIELD = "cluster.kubernetesVersion"
CLOUD_NAMES = {"aws": "EKS", "gcp": "GKE"}


def today() -> date:
    """The day the checks judge by; tests replace it (or pass `today` to config.load.parse)."""
    return date.today()


def minor_tuple(version: str) -> tuple[int, int]:
    """'1.35' or '1.35.8-gke.1036000' -> (1, 35)."""
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


def next_minor(minor: str) -> str:
    major, m = minor_tuple(minor)
    return f"{major}.{m + 1}"


def supported_minors(cloud: str, on: date) -> list[str]:
    return sorted((m for m, end in END_OF_STANDARD_SUPPORT.get(cloud, {}).items() if end > on), key=minor_tuple)


def _extended_hint(cloud: str) -> str:
    return ("aws.supportType: EXTENDED (12 more months at the extended-support price)" if cloud == "aws"
            else "gcp.releaseChannel: EXTENDED (GKE's extended support, at its price)")


def support_problem(cloud: str, minor: str, on: date, extended: bool = False) -> str | None:
    """A `cluster.kubernetesVersion: ...` line when standard support of `minor` on `cloud` has ended by `on`
    and the stack has not opted in to extended support; None otherwise (also for a minor the table lacks:
    the cloud check answers for it)."""
    end = END_OF_STANDARD_SUPPORT.get(cloud, {}).get(minor)
    if end is None or on < end or extended:
        return None
    newer = [m for m in supported_minors(cloud, on) if minor_tuple(m) > minor_tuple(minor)]
    fix = (f"set {FIELD}: \"{newer[0]}\"" if newer else "set a newer minor") + \
        f" (a deployed cluster moves one minor per `pulumi up`, UPGRADING.md), or {_extended_hint(cloud)}"
    return (f"{FIELD}: {minor}: {CLOUD_NAMES[cloud]} standard support for {minor} ended on {end.isoformat()}; "
            f"{fix}")


def support_warning(cloud: str, minor: str, on: date, extended: bool = False) -> str | None:
    """A warning when standard support of `minor` ends within WARN_DAYS of `on`, or has ended and the stack
    runs on extended support."""
    end = END_OF_STANDARD_SUPPORT.get(cloud, {}).get(minor)
    if end is None:
        return None
    name, inferred = CLOUD_NAMES[cloud], " (an estimate, components/upstream/kubernetes_support.py)" if (cloud, minor) in INFERRED else ""
    if on >= end:
        return (f"{FIELD}: {minor}: {name} standard support ended on {end.isoformat()}; the cluster runs on "
                f"extended support (billed per cluster hour) until you upgrade") if extended else None
    days = (end - on).days
    if days > WARN_DAYS:
        return None
    then = ("the cluster then runs on extended support, billed per cluster hour" if extended
            else "EKS then upgrades the control plane itself (aws.supportType STANDARD)" if cloud == "aws"
            else "the release channel then upgrades the cluster in its maintenance window")
    return (f"{FIELD}: {minor}: {name} standard support ends on {end.isoformat()}{inferred}, in {days} day(s); "
            f"upgrade to {next_minor(minor)} before then (UPGRADING.md): {then}")
