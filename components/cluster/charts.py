"""Where a Helm release gets its chart: the one function every helm.v3.Release of the stack calls (the add-ons,
the gateway's releases, the EKS Cluster Autoscaler), so a chart mirror (the stack's `charts` block,
components/config/charts.py; docs/addons.md "Charts from a mirror (air-gapped)") reaches all of them.

How pulumi-kubernetes' helm.v3.Release reads these inputs (provider/pkg/provider/helm_release.go, locateChart and
getChart): with repository_opts.repo it looks the chart name and version up in that repository's index.yaml; an
oci:// chart is pulled at `version` with the registry client (the login from repository_opts' username and password,
pulumi-kubernetes >= 4.27); without a repository, a chart that is a path on disk is loaded as it is, and `version`
is not consulted (Helm reads the version from the archive's Chart.yaml), so a local archive is given without one.
"""
from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Any, Literal

from ..upstream.versions import Chart


@dataclass(frozen=True)
class ChartMirror:
    """One place every chart is pulled from (components/wiring.py chart_mirror builds it from the stack's config)."""
    location: str                        # an http(s) repository URL, oci://registry/path, or an absolute directory
    kind: Literal["repo", "oci", "dir"]
    username: str | None = None
    password: Any = None                 # pulumi.Output[str], secret (chartMirrorPassword)
    ca_file: str | None = None


def chart_source(chart: Chart, mirror: ChartMirror | None = None) -> dict[str, Any]:
    """The `chart`, `version` and `repository_opts` arguments of a helm.v3.Release for one pinned chart.

    No mirror: the chart's own repository (an OCI chart by its full reference: Helm's --repo takes only HTTP
    repositories). A mirror: the same chart name and version from it; an OCI-published chart is looked up by
    its name (the reference's last path segment is the chart's name)."""
    if mirror is None:
        if chart.repo.startswith("oci://"):
            return {"chart": f"{chart.repo}/{chart.chart}", "version": chart.version}
        return {"chart": chart.chart, "version": chart.version, "repository_opts": {"repo": chart.repo}}
    if mirror.kind == "dir":  # what `helm pull` writes: <name>-<version>.tgz
        return {"chart": posixpath.join(mirror.location, f"{chart.chart}-{chart.version}.tgz")}
    login = {k: v for k, v in (("username", mirror.username), ("password", mirror.password),
                               ("caFile", mirror.ca_file)) if v is not None}
    if mirror.kind == "oci":
        return {"chart": f"{mirror.location}/{chart.chart}", "version": chart.version,
                **({"repository_opts": login} if login else {})}
    return {"chart": chart.chart, "version": chart.version, "repository_opts": {"repo": mirror.location, **login}}
