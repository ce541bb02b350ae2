"""What the plan relies on the cluster for, checked on every shipped stack, its variants and the test-only
fabric stacks (tests/support/stacks.py), from the resources `pulumi up` would send, never from ClusterFacts:

- every volume claim (PersistentVolumeClaim objects, StatefulSet / ephemeral / prometheus-operator
  volumeClaimTemplates, Helm values that persist) names a StorageClass that the plan creates, with a
  provisioner the plan installs, or that the cluster kind guarantees: otherwise the claim may stay Pending
  while Helm reports success (Prometheus down, and KEDA's triggers and the SLA alerts with it);
- every stack that emits a NetworkPolicy runs on a CNI that enforces it;
- the project's own policy pack passes on every fabric family.
"""
from __future__ import annotations

import json
import shutil

import pytest

from components.cli import main
from components.offline.runner import ROOT
from policies.rules import MANDATORY, evaluate_plan
from tests.support.consistency import Plan, dig, quantity, walk
from tests.support.plans import planned
from tests.support.stacks import FABRIC_STACKS, stack_path

EKS_ADDON = "aws:eks/addon:Addon"
GKE_CLUSTER = "gcp:container/cluster:Cluster"
NO_PROVISIONER = "kubernetes.io/no-provisioner"  # binds only to statically provisioned PersistentVolumes
# CSI driver -> what installs it: an EKS add-on (addonName) or a GKE addonsConfig switch.
CSI_DRIVERS = {
    "ebs.csi.aws.com": (EKS_ADDON, "aws-ebs-csi-driver"),
    "efs.csi.aws.com": (EKS_ADDON, "aws-efs-csi-driver"),
    "pd.csi.storage.gke.io": (GKE_CLUSTER, "gcePersistentDiskCsiDriverConfig"),
    "filestore.csi.storage.gke.io": (GKE_CLUSTER, "gcpFilestoreCsiDriverConfig"),
}
# Classes GKE Standard creates on every cluster with the Compute Engine PD CSI driver
# (cloud.google.com/kubernetes-engine/docs/how-to/persistent-volumes/gce-pd-csi-driver). EKS creates none
# that binds: since 1.30 its gp2 class is not the default and its in-tree provisioner needs the EBS CSI driver.
GKE_PD_CLASSES = {"standard-rwo", "premium-rwo"}




def _installed(p: Plan, driver: str) -> bool:
    kind, name = CSI_DRIVERS.get(driver, (None, None))
    if kind == EKS_ADDON:
        return any(r.type == EKS_ADDON and r.inputs.get("addonName") == name for r in p.resources)
    if kind == GKE_CLUSTER:
        return any(r.type == GKE_CLUSTER and dig(r.inputs.get("addonsConfig") or {}, f"{name}.enabled") is True
                   for r in p.resources)
    return False


def usable_classes(p: Plan) -> dict[str, str]:
    """StorageClass name -> why a claim of it binds: created by the plan with a provisioner the plan
    installs (or static volumes of it), guaranteed by the cluster kind, or declared by an existing
    cluster's config (the user's word that the class exists)."""
    out: dict[str, str] = {}
    for sc in p.kind("StorageClass"):
        name, provisioner = sc["metadata"]["name"], sc["provisioner"]
        if provisioner == NO_PROVISIONER:
            static = [pv for pv in p.kind("PersistentVolume") if pv["spec"].get("storageClassName") == name]
            if static and all(_installed(p, pv["spec"]["csi"]["driver"]) for pv in static):
                out[name] = "static volumes"
        elif _installed(p, provisioner):
            out[name] = f"created, {provisioner}"
    if p.cfg.cloud == "gcp" and _installed(p, "pd.csi.storage.gke.io"):
        out.update({c: "GKE" for c in GKE_PD_CLASSES})
    if p.cfg.cloud == "existing":
        declared = (p.cfg.existing.block_storage_class, p.cfg.model_cache.storage_class,
                    p.cfg.addons.prometheus.storage_class)
        out.update({c: "existing cluster config" for c in declared if c})
    return out


def claims(p: Plan) -> list[tuple[str, dict]]:
    """(where, PersistentVolumeClaimSpec or Helm persistence block) of every claim the plan makes: PVC objects,
    volumeClaimTemplate(s) anywhere in an object or in Helm values, and Helm `persistence` blocks enabled."""
    out = [(f"PVC {c['metadata']['name']}", c["spec"]) for c in p.kind("PersistentVolumeClaim")]
    sources = [(f"{o['kind']} {o['metadata'].get('name')}", {k: v for k, v in o.items() if k != "_inputs"})
               for o in p.objects if o["kind"] != "CustomResourceDefinition"]  # a CRD's schema claims nothing
    sources += [(f"Helm release {name}", r.get("values") or {}) for name, r in p.releases.items()]
    for where, source in sources:
        for path, value in walk(source):
            key = path[-1] if path else None
            at = f"{where} {'.'.join(map(str, path))}"
            if key == "volumeClaimTemplate" and isinstance(value, dict):
                out.append((at, value.get("spec") or {}))
            elif key == "volumeClaimTemplates" and isinstance(value, list):
                out += [(f"{at}[{i}]", t.get("spec") or {}) for i, t in enumerate(value)]
            elif key == "persistence" and isinstance(value, dict) and value.get("enabled"):
                out.append((at, value))
    return out


def test_every_claim_names_a_class_that_binds(p):
    usable = usable_classes(p)
    found = claims(p)
    for where, spec in found:
        name = spec.get("storageClassName")
        assert name, (f"{p.name}: {where} names no StorageClass: it waits for a default class the cluster may not "
                      f"have (EKS has none) and stays Pending")
        assert name in usable, (f"{p.name}: {where} asks for StorageClass {name!r}, which the plan neither creates "
                                f"(with an installed provisioner) nor the cluster kind guarantees; usable: {usable}")
    assert found, f"{p.name}: no claim found (the model cache or Prometheus should claim a volume)"


def test_prometheus_keeps_its_data_on_a_claimed_volume(p):
    """An emptyDir Prometheus loses the SLA history (and KEDA's scaling signal) on every reschedule."""
    if "kube-prometheus-stack" not in p.releases:
        return
    spec = dig(p.values("kube-prometheus-stack"), "prometheus.prometheusSpec.storageSpec.volumeClaimTemplate.spec")
    assert spec and spec["accessModes"] == ["ReadWriteOnce"], f"{p.name}: Prometheus has no volume claim"
    assert quantity(spec["resources"]["requests"]["storage"]) == p.cfg.addons.prometheus.storage_gib


def test_static_volumes_hold_their_claims(p):
    classes = {c["metadata"]["name"]: c["provisioner"] for c in p.kind("StorageClass")}
    for pvc in p.kind("PersistentVolumeClaim"):
        spec, name = pvc["spec"], pvc["metadata"]["name"]
        if classes.get(spec.get("storageClassName")) != NO_PROVISIONER:
            continue
        volumes = [v for v in p.kind("PersistentVolume") if v["spec"]["storageClassName"] == spec["storageClassName"]]
        assert any(quantity(spec["resources"]["requests"]["storage"]) <= quantity(pv["spec"]["capacity"]["storage"])
                   and set(spec["accessModes"]) <= set(pv["spec"]["accessModes"]) for pv in volumes), \
            f"{p.name}: PVC {name} fits no PersistentVolume of its class"
    for pv in p.kind("PersistentVolume"):
        for fs in (r for r in p.resources if r.type == "gcp:filestore/instance:Instance"):
            # Filestore counts capacityGb in GiB (file.googleapis.com FileShareConfig.capacity_gb)
            assert quantity(pv["spec"]["capacity"]["storage"]) <= fs.inputs["fileShares"]["capacityGb"], \
                f"{p.name}: PV {pv['metadata']['name']} is larger than the Filestore share"
    claimed = {(c["metadata"]["namespace"], c["metadata"]["name"]) for c in p.kind("PersistentVolumeClaim")}
    for t in p.templates:
        for v in t.spec.get("volumes") or []:
            if "persistentVolumeClaim" in v:
                assert (t.namespace, v["persistentVolumeClaim"]["claimName"]) in claimed, f"{p.name}: {t.name}"


# --- NetworkPolicy ------------------------------------------------------------------------------------------

def enforces_network_policy(p: Plan) -> str | None:
    """Why the cluster's CNI enforces NetworkPolicy, read from the resources that configure it; None if not."""
    for r in p.resources:
        if r.type == EKS_ADDON and r.inputs.get("addonName") == "vpc-cni":
            # docs.aws.amazon.com/eks/latest/userguide/cni-network-policy-configure.html
            config = json.loads(r.inputs.get("configurationValues") or "{}")
            if str(config.get("enableNetworkPolicy")).lower() == "true":
                return "EKS VPC CNI enableNetworkPolicy"
        if r.type == GKE_CLUSTER:
            if r.inputs.get("datapathProvider") == "ADVANCED_DATAPATH":
                return "GKE Dataplane V2"
            if (r.inputs.get("networkPolicy") or {}).get("enabled") is True:
                return "GKE network policy enforcement (Calico)"
    if p.cfg.cloud == "existing" and p.cfg.existing.network_policy_enforced:
        return "existing.networkPolicyEnforced"
    return None


def test_network_policies_run_on_a_cni_that_enforces_them(p):
    policies = p.kind("NetworkPolicy")
    assert policies, f"{p.name}: serving emits no NetworkPolicy"
    if p.cfg.production or p.cfg.cloud != "existing":
        # A cloud cluster is ours to configure; an existing production cluster must say so (config refuses
        # otherwise); an existing dev/staging cluster only gets a warning.
        assert enforces_network_policy(p), (f"{p.name}: {len(policies)} NetworkPolicy object(s) on a cluster whose "
                                            f"CNI does not enforce them: the tenant isolation does nothing")


# --- the policy pack on every fabric family ------------------------------------------------------------------

@pytest.mark.parametrize("stack", FABRIC_STACKS)
def test_fabric_stack_passes_every_mandatory_rule(stack):
    result = planned(str(stack_path(stack)))
    mandatory = [f"{v.rule}: {v.resource}: {v.message}" for v in evaluate_plan(result) if v.level == MANDATORY]
    assert mandatory == []
    assert any(t["nodes_per_replica"] > 1 for t in result.exports["topology"].values()), \
        f"{stack}: no replica spans nodes, so the fabric is not exercised"


@pytest.mark.parametrize("stack", FABRIC_STACKS)
def test_fabric_stack_plans_with_exit_0(stack, capsys):
    """What a reviewer runs: `python -m components plan tests/stacks/Pulumi.<stack>.yaml`."""
    try:
        code = main(["plan", str(stack_path(stack))])
    finally:
        shutil.rmtree(ROOT / "build" / stack, ignore_errors=True)
    out = capsys.readouterr().out
    assert code == 0, out[-2000:]
    assert "policy pack: 0 mandatory violation(s)" in out


def test_every_fabric_family_has_a_stack():
    assert set(FABRIC_STACKS) == {
        "fabric-aws-p4d", "fabric-aws-p5", "fabric-aws-p5en", "fabric-aws-p6-b200",
        "fabric-gke-a3-high", "fabric-gke-a3-mega", "fabric-gke-a3-ultra", "fabric-gke-a4",
        "fabric-onprem-infiniband", "fabric-onprem-roce"}
