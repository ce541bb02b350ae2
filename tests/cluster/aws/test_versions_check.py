"""EKS's answers on the minor, an existing cluster's live version and the add-on builds, before any resource."""
from __future__ import annotations

from types import SimpleNamespace

import pulumi
import pytest

from components.cluster.aws.versions_check import cluster_version_problems
from components.config import ConfigError
from components.offline import aws_stubs as stubs
from tests.support.aws import CLUSTER, G6
from tests.support.plans import by_type, plan_config

NAME = "vllm"  # cluster.name default


def refused(values=G6) -> str:
    with pytest.raises(pulumi.RunError) as err:
        plan_config(values)
    assert isinstance(err.value.__cause__, ConfigError)  # printed without a traceback
    return str(err.value)


def test_refused_when_eks_does_not_offer_the_minor(monkeypatch):
    monkeypatch.delitem(stubs.EKS_VERSIONS, "1.35")
    assert "cluster.kubernetesVersion: 1.35: EKS does not offer Kubernetes 1.35 in this region (offered: none); " \
           "pick one of those" in refused()


def test_offered_minor_plans_the_cluster_at_it():
    assert by_type(plan_config(G6)[0], CLUSTER)[0].inputs["version"] == "1.35"


def test_an_existing_cluster_two_minors_behind_is_refused(monkeypatch):
    monkeypatch.setitem(stubs.EXISTING_CLUSTERS, NAME, {"version": "1.33", "tags": {}})
    assert 'cluster.kubernetesVersion: 1.35: EKS cluster vllm runs 1.33, and EKS upgrades one minor at a time; ' \
           'set cluster.kubernetesVersion: "1.34", `pulumi up`, and repeat up to 1.35 (UPGRADING.md)' in refused()


def test_an_existing_cluster_ahead_of_the_stack_is_refused(monkeypatch):
    """EKS upgraded a STANDARD cluster behind Pulumi's back: going back is a downgrade EKS refuses."""
    monkeypatch.setitem(stubs.EXISTING_CLUSTERS, NAME, {"version": "1.36", "tags": {}})
    assert 'cluster.kubernetesVersion: 1.35: EKS cluster vllm already runs 1.36 (EKS upgrades a STANDARD cluster ' \
           'itself at the end of standard support) and cannot be downgraded; set cluster.kubernetesVersion: "1.36"' \
           in refused()


def test_an_existing_cluster_one_minor_behind_upgrades(monkeypatch):
    monkeypatch.setitem(stubs.EXISTING_CLUSTERS, NAME, {"version": "1.34", "tags": {}})
    assert by_type(plan_config(G6)[0], CLUSTER)[0].inputs["version"] == "1.35"


def test_each_addon_is_installed_at_eks_newest_build_for_the_minor(monkeypatch):
    """No build is pinned in the repository: each add-on's is EKS's answer (getAddonVersion, mostRecent) for the
    cluster's minor, so a build EKS does not list is never asked for."""
    from components.offline.mocks import INVOKES
    asked = []
    real = INVOKES["aws:eks/getAddonVersion:getAddonVersion"]
    monkeypatch.setitem(INVOKES, "aws:eks/getAddonVersion:getAddonVersion",
                        lambda args: asked.append(dict(args)) or real(args))
    monkeypatch.setitem(stubs.ADDON_ANSWERS, ("coredns", "1.35"), "v1.14.9-eksbuild.7")
    res, _ = plan_config(G6)
    versions = {r.inputs["addonName"]: r.inputs["addonVersion"] for r in by_type(res, "aws:eks/addon:Addon")}
    assert versions["coredns"] == "v1.14.9-eksbuild.7"
    assert versions["kube-proxy"] == "v1.35.3-eksbuild.13"  # EKS's documented newest for 1.35 (the stub's table)
    assert {(a["addonName"], a["kubernetesVersion"], a.get("mostRecent")) for a in asked} == {
        (addon, "1.35", True) for addon in versions}


def test_a_136_stack_plans_with_136_builds():
    """1.36 ships before EKS upgrades 1.35 clusters at the end of its standard support (2027-03-27)."""
    res, _ = plan_config({**G6, "cluster": {"kubernetesVersion": "1.36"}})
    versions = {r.inputs["addonName"]: r.inputs["addonVersion"] for r in by_type(res, "aws:eks/addon:Addon")}
    assert versions["kube-proxy"] == "v1.36.0-eksbuild.14" and versions["coredns"] == "v1.14.3-eksbuild.3"
    assert by_type(res, CLUSTER)[0].inputs["version"] == "1.36"


def test_an_addon_eks_lists_no_build_of_is_refused(monkeypatch):
    """The stub answers getAddonVersion as EKS does for a minor it lists no build of (the provider's error)."""
    from components.offline.mocks import INVOKES
    monkeypatch.setitem(INVOKES, "aws:eks/getAddonVersion:getAddonVersion",
                        lambda args: stubs._addon_version({**args, "kubernetesVersion": "1.99"})
                        if args["addonName"] == "kube-proxy" else stubs._addon_version(args))
    assert "cluster.kubernetesVersion: 1.35: EKS lists no kube-proxy add-on build for Kubernetes 1.35 (" in refused()


def _entry(minor, status):
    return SimpleNamespace(cluster_version=minor, version_status=status, end_of_standard_support_date="2026-12-02T00:00:00Z",
                           end_of_extended_support_date="2027-12-02T00:00:00Z")


def test_extended_support_minor_under_a_standard_policy_is_refused():
    problems, _ = cluster_version_problems("1.34", "STANDARD", [_entry("1.34", "EXTENDED_SUPPORT")])
    assert problems == ['cluster.kubernetesVersion: 1.34: EKS standard support for 1.34 ended on 2026-12-02, and '
                        'aws.supportType STANDARD would have EKS upgrade the control plane behind Pulumi\'s back; '
                        'set cluster.kubernetesVersion: "1.35", or aws.supportType: EXTENDED']
    assert cluster_version_problems("1.34", "EXTENDED", [_entry("1.34", "EXTENDED_SUPPORT")]) == ([], [])


def test_unsupported_minor_is_refused():
    problems, _ = cluster_version_problems("1.34", "EXTENDED", [_entry("1.34", "UNSUPPORTED")])
    assert problems == ['cluster.kubernetesVersion: 1.34: EKS no longer supports 1.34 (end of extended support '
                        '2027-12-02); set cluster.kubernetesVersion: "1.35" or newer']


def test_plan_prints_the_end_of_support_warning_within_60_days(monkeypatch, capsys, tmp_path):
    from datetime import date

    from components import cli
    from components.upstream import kubernetes_support
    monkeypatch.setattr(kubernetes_support, "today", lambda: date(2027, 2, 10))
    assert cli.main(["plan", "prod-llama70b-aws", "--out", str(tmp_path / "plan")]) == 0
    assert "WARNING: cluster.kubernetesVersion: 1.35: EKS standard support ends on 2027-03-27, in 45 day(s); " \
           "upgrade to 1.36 before then (UPGRADING.md): EKS then upgrades the control plane itself " \
           "(aws.supportType STANDARD)\n" in capsys.readouterr().out
