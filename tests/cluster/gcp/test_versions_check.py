"""GKE's answer on the stack's minor (getServerConfig), checked before the cluster is created."""
from __future__ import annotations

import logging

import pulumi
import pytest

from components.config import ConfigError
from components.offline import gcp_stubs as stubs
from tests.support.gcp import CASES, CLUSTER, GCP, cluster_plan
from tests.support.plans import by_type

G2 = {"cloud": "gcp", "gcp": GCP, "models": [CASES["g2"][1]]}


def refused(values=G2) -> str:
    with pytest.raises(pulumi.RunError) as e:
        cluster_plan(values)
    assert isinstance(e.value.__cause__, ConfigError)
    return str(e.value)


def test_offered_minor_is_the_clusters_min_master_version():
    assert by_type(cluster_plan(G2)[0], CLUSTER)[0].inputs["minMasterVersion"] == "1.35"


def test_refused_when_gke_offers_no_such_control_plane(monkeypatch):
    monkeypatch.setattr(stubs, "GKE_VALID_MASTER_VERSIONS", ["1.34.11-gke.1209000"])
    assert "cluster.kubernetesVersion: 1.35: GKE offers no 1.35 control plane in us-central1 (offered: 1.34); " \
           "pick one of those" in refused()


def test_refused_when_newer_than_the_channel_carries(monkeypatch):
    monkeypatch.setitem(stubs.GKE_CHANNELS, "REGULAR", {"default": "1.34.11-gke.1209000",
                                                        "latest": "1.34.11-gke.1209000",
                                                        "target": "1.34.11-gke.1209000"})
    assert 'cluster.kubernetesVersion: 1.35: the REGULAR release channel\'s newest version in us-central1 is ' \
           '1.34.11-gke.1209000; set cluster.kubernetesVersion: "1.34" or an older offered minor, or a faster ' \
           'gcp.releaseChannel' in refused()


def test_warns_when_the_channel_will_upgrade_the_cluster(monkeypatch, caplog):
    monkeypatch.setitem(stubs.GKE_CHANNELS, "REGULAR", {"default": "1.36.3-gke.1000000",
                                                        "latest": "1.36.3-gke.1000000",
                                                        "target": "1.36.3-gke.1000000"})
    with caplog.at_level(logging.WARNING):
        cluster_plan(G2)
    assert 'cluster.kubernetesVersion: 1.35: GKE\'s REGULAR channel auto-upgrades clusters to 1.36.3-gke.1000000; ' \
           'this one moves there in its next maintenance window (set cluster.kubernetesVersion: "1.36" to match)' \
           in caplog.text
