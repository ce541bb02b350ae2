"""What GKE says about the stack's Kubernetes minor, asked before the cluster is created.

gcp.container.get_engine_versions (projects.locations.getServerConfig) in the cluster's region. The data source
exposes the region's valid control-plane versions and, per release channel, its default, newest and auto-upgrade
target version (not the channel's full list), so the check is:
  - no valid master version of the minor in the region: refused (GKE would refuse the cluster);
  - the minor is newer than the channel's newest: refused (the channel does not carry it yet);
  - the channel's auto-upgrade target is a newer minor: a warning (GKE moves the cluster there in its next
    maintenance window, so the stack's minor is a floor, not what runs).
It runs once the Kubernetes Engine API is on (a fresh project has it off), inside an apply whose result is the
cluster's min_master_version: the cluster is never created before the answer. On the very first preview the
API resource is unknown and the check runs during `pulumi up`.

A GKE cluster's live version is not looked up: gcp.container.get_cluster fails for a cluster that does not exist
(the first `pulumi up`) and pulumi-gcp has no list of clusters to ask first. GKE itself upgrades a control plane
one minor at a time; UPGRADING.md says how to move a deployed stack.
"""
from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from ...upstream.kubernetes_support import FIELD, minor_tuple, support_warning, today
from ...upstream.versions import GKE_RELEASE_CHANNEL
from .node_pools import CapacityError


def _minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def engine_version_problems(minor: str, channel: str, location: str, answer) -> tuple[list[str], list[str]]:
    """(problems, warnings) from a get_engine_versions result."""
    valid = list(answer.valid_master_versions or [])
    offered = sorted({_minor(v) for v in valid}, key=minor_tuple)
    if minor not in offered:
        return [f"{FIELD}: {minor}: GKE offers no {minor} control plane in {location} (offered: "
                f"{', '.join(offered) or 'none'}); pick one of those"], []
    latest = (answer.release_channel_latest_version or {}).get(channel)
    if latest and minor_tuple(minor) > minor_tuple(latest):
        return [f"{FIELD}: {minor}: the {channel} release channel's newest version in {location} is {latest}; "
                f"set {FIELD}: \"{_minor(latest)}\" or an older offered minor, or a faster gcp.releaseChannel"], []
    warnings = []
    target = (answer.release_channel_upgrade_target_version or {}).get(channel)
    if target and minor_tuple(target) > minor_tuple(minor):
        warnings.append(f"{FIELD}: {minor}: GKE's {channel} channel auto-upgrades clusters to {target}; this one "
                        f"moves there in its next maintenance window (set {FIELD}: \"{_minor(target)}\" to match)")
    return [], warnings


def checked_version(cfg, container_api: pulumi.Resource, parent: pulumi.Resource) -> pulumi.Output[str]:
    """cluster.kubernetesVersion once GKE has confirmed it (the cluster's min_master_version); a
    CapacityError (the plan's bad-input error, a RunError to `pulumi up`) when GKE would refuse it."""
    minor, g = cfg.cluster.kubernetes_version, cfg.gcp
    channel = g.release_channel or GKE_RELEASE_CHANNEL

    def check(_):
        answer = gcp.container.get_engine_versions(location=g.region, project=g.project,
                                                   opts=pulumi.InvokeOptions(parent=parent))
        problems, warnings = engine_version_problems(minor, channel, g.region, answer)
        if problems:
            raise CapacityError(problems)
        if (w := support_warning("gcp", minor, today(), channel == "EXTENDED")):
            warnings.append(w)
        for warning in warnings:
            pulumi.log.warn(warning, resource=parent)
        return minor
    return container_api.id.apply(check)
