"""Kubernetes minors out of standard support: the dates table, config refusal on a given day, the 60-day warning."""
from __future__ import annotations

from datetime import date

import pytest

from components.upstream import kubernetes_support
from components.config import ConfigError
from components.config.load import parse
from components.config.schema import ClusterSettings
from tests.support.aws import G6
from tests.support.gcp import CASES, GCP

TODAY = date(2026, 12, 4)  # the day issue 24 was filed against
GKE = {"cloud": "gcp", "gcp": GCP, "models": [CASES["g2"][1]]}


def refusal(values, on=TODAY) -> list[str]:
    with pytest.raises(ConfigError) as e:
        parse(values, secrets={"hfToken"}, today=on)
    return e.value.errors


def with_version(values, minor, **block):
    cloud = values["cloud"]
    return {**values, "cluster": {"kubernetesVersion": minor}, cloud: {**values[cloud], **block}}


def test_eks_134_is_refused_after_its_end_of_standard_support():
    assert refusal(with_version(G6, "1.34")) == [
        'cluster.kubernetesVersion: 1.34: EKS standard support for 1.34 ended on 2026-12-02; set '
        'cluster.kubernetesVersion: "1.35" (a deployed cluster moves one minor per `pulumi up`, UPGRADING.md), '
        'or aws.supportType: EXTENDED (12 more months at the extended-support price)']


def test_gke_133_and_134_are_refused():
    assert refusal(with_version(GKE, "1.33")) == [
        'cluster.kubernetesVersion: 1.33: GKE standard support for 1.33 ended on 2026-08-03; set '
        'cluster.kubernetesVersion: "1.35" (a deployed cluster moves one minor per `pulumi up`, UPGRADING.md), '
        'or gcp.releaseChannel: EXTENDED (GKE\'s extended support, at its price)']
    (line,) = refusal(with_version(GKE, "1.34"))
    assert line.startswith("cluster.kubernetesVersion: 1.34: GKE standard support for 1.34 ended on 2026-10-01; ")


def test_the_end_date_itself_is_out_of_support_and_the_day_before_is_not():
    assert parse(with_version(G6, "1.34"), secrets={"hfToken"}, today=date(2026, 12, 1)).cluster.kubernetes_version == "1.34"
    assert refusal(with_version(G6, "1.34"), on=date(2026, 12, 2))


def test_extended_support_opt_in_keeps_an_ended_minor():
    assert parse(with_version(G6, "1.34", supportType="EXTENDED"), secrets={"hfToken"}, today=TODAY)
    assert parse(with_version(GKE, "1.34", releaseChannel="EXTENDED"), secrets={"hfToken"}, today=TODAY)


def test_today_defaults_to_kubernetes_support_today(monkeypatch):
    monkeypatch.setattr(kubernetes_support, "today", lambda: date(2027, 3, 27))
    (line,) = refusal(with_version(G6, "1.35"), on=None)
    assert line.startswith("cluster.kubernetesVersion: 1.35: EKS standard support for 1.35 ended on 2027-03-27; ")


def test_existing_clusters_are_not_judged():
    values = {"cloud": "existing", "cluster": {"kubernetesVersion": "1.20"},
              "existing": {"gpuNodes": {"accelerator": "l4", "gpusPerNode": 1, "vcpu": 8, "ramGib": 32},
                           "blockStorageClass": "standard"},
              "modelCache": {"kind": "nvme"}, "models": [dict(G6["models"][0])]}
    values["models"][0].pop("instanceTypes")
    assert parse(values, secrets={"hfToken"}, today=TODAY).cluster.kubernetes_version == "1.20"


def test_warning_within_60_days_and_not_before():
    assert kubernetes_support.support_warning("aws", "1.35", date(2027, 1, 26)) == (
        "cluster.kubernetesVersion: 1.35: EKS standard support ends on 2027-03-27, in 60 day(s); upgrade to 1.36 "
        "before then (UPGRADING.md): EKS then upgrades the control plane itself (aws.supportType STANDARD)")
    assert kubernetes_support.support_warning("aws", "1.35", date(2027, 1, 25)) is None
    assert kubernetes_support.support_warning("gcp", "1.36", date(2027, 5, 1)) == (
        "cluster.kubernetesVersion: 1.36: GKE standard support ends on 2027-05-26 (an estimate, "
        "components/upstream/kubernetes_support.py), in 25 day(s); upgrade to 1.37 before then (UPGRADING.md): the release "
        "channel then upgrades the cluster in its maintenance window")


def test_default_minor_is_135():
    assert ClusterSettings().kubernetes_version == "1.35"


def test_the_default_minor_is_in_standard_support_today_on_both_clouds():
    """On the real clock: fails the day a shipped default goes out of support, which is the point."""
    for cloud in ("aws", "gcp"):
        assert kubernetes_support.support_problem(cloud, ClusterSettings().kubernetes_version, date.today()) is None
