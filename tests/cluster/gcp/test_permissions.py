"""Issue 36: the deployer's least-privilege GCP roles, from what the GKE component creates and calls. The mocked
program is run and every resource type, function token and Compute Engine REST read it produces must be covered by
components/cluster/gcp/permissions.py, and required_roles(args) must hold the role each one needs."""
from __future__ import annotations

import pytest

from components.cluster.gcp import permissions, quotas
from components.cluster.gcp.permissions import (FUNCTIONS, REST_READS, grant_of_type, required_permissions,
                                                required_roles)
from components.config.load import parse
from components.offline import mocks, runner
from components.planning import plan_stack
from components.wiring import cluster_args
from tests.support.gcp import CASES, cluster_plan

GCS_MODEL = {**CASES["g2"][1], "source": {"kind": "gcs", "uri": "gs://weights-bucket/llama-3.1-8b",
                                         "serviceAccount": "weights-reader"}}
SHARED_VPC = {"network": "shared-vpc", "subnetwork": "gke-uc1", "podsRange": "gke-pods", "servicesRange": "gke-svc"}
VARIANTS = {
    "a3-high": CASES["a3-high"],  # multi-node: GPU NIC VPCs; prod
    "a3-ultra": CASES["a3-ultra"],  # a reservation: no quota read, a reservation read
    "g2": CASES["g2"],  # Filestore
    "g2-shared-vpc": ({"gcp": {**CASES["g2"][0]["gcp"], **SHARED_VPC}}, CASES["g2"][1]),  # no VPC created
}


def observed(monkeypatch, values: dict) -> tuple[set[str], set[str], set[str]]:
    """(resource types, function tokens, REST reads) one mocked `pulumi up` of the cluster produces."""
    types: set[str] = set()
    calls: set[str] = set()
    reads: set[str] = set()

    class Monitor(runner.RecordingMonitor):
        def RegisterResource(self, request):
            types.add(request.type)
            return super().RegisterResource(request)

    real_call, real_get = mocks.RecordingMocks.call, quotas.COMPUTE_GET

    def call(self, args):
        calls.add(args.token)
        return real_call(self, args)

    def get(url, token):
        reads.add("compute.regions.get" if "/regions/" in url else "compute.projects.get")
        return real_get(url, token)

    monkeypatch.setattr(runner, "RecordingMonitor", Monitor)
    monkeypatch.setattr(mocks.RecordingMocks, "call", call)
    monkeypatch.setattr(quotas, "COMPUTE_GET", get)
    cluster_plan(values)
    return types, calls, reads


def args_of(values: dict):
    cfg = parse(values, {"hfToken"})
    return cluster_args(cfg, plan_stack(cfg))


@pytest.mark.parametrize("case", sorted(VARIANTS))
def test_every_type_and_call_of_the_component_is_covered_and_in_the_role_list(monkeypatch, case):
    extra, model = VARIANTS[case]
    values = {"cloud": "gcp", **extra, "models": [model]}
    types, calls, reads = observed(monkeypatch, values)
    uncovered = sorted(t for t in types if grant_of_type(t) is None)
    assert uncovered == [], f"add these resource types to components/cluster/gcp/permissions.py: {uncovered}"
    gcp_calls = {c for c in calls if c.startswith("gcp:")}
    assert sorted(gcp_calls - set(FUNCTIONS)) == []
    assert reads == set(REST_READS)
    args = args_of(values)
    roles = set(required_roles(args))
    needed = {grant_of_type(t).role for t in types} | {FUNCTIONS[c].role for c in gcp_calls} | \
             {REST_READS[r].role for r in reads}
    assert needed - {""} <= roles
    # the pure prediction is what the program does, no more: every created GCP type, every call
    assert permissions.created_types(args) == {t for t in types if t.startswith("gcp:")}
    assert permissions.called_functions(args) == gcp_calls


def test_a_stack_reading_weights_from_gcs_needs_the_bucket_iam_grant(monkeypatch):
    values = {"cloud": "gcp", **CASES["g2"][0], "models": [GCS_MODEL]}
    types, calls, _ = observed(monkeypatch, values)
    assert "gcp:storage/bucketIAMMember:BucketIAMMember" in types
    assert "roles/storage.admin" in required_roles(args_of(values))


def test_the_role_list_of_the_filestore_stack_is_pinned():
    extra, model = CASES["g2"]
    assert required_roles(args_of({"cloud": "gcp", **extra, "models": [model]})) == [
        "roles/cloudquotas.viewer", "roles/compute.networkAdmin", "roles/compute.securityAdmin",
        "roles/compute.viewer", "roles/container.admin", "roles/file.editor", "roles/iam.serviceAccountAdmin",
        "roles/iam.serviceAccountUser", "roles/resourcemanager.projectIamAdmin",
        "roles/serviceusage.serviceUsageAdmin"]


def test_the_custom_role_holds_each_call_the_component_makes():
    extra, model = CASES["a3-ultra"]
    perms = required_permissions(args_of({"cloud": "gcp", **extra, "models": [model]}))
    for p in ("compute.reservations.get", "compute.regions.get", "compute.projects.get", "compute.zones.list",
              "iam.serviceAccounts.actAs", "container.clusters.create", "compute.firewalls.create"):
        assert p in perms
    assert "cloudquotas.quotas.get" not in perms  # a reservation's GPUs are not checked


def test_every_type_of_the_shipped_gke_stack_is_covered():
    """The whole program (add-ons, gateway, serving: Kubernetes objects and Helm releases through the GKE API)."""
    from tests.support.plans import planned
    types = {r.type for r in planned("prod-qwen72b-gcp").resources}
    assert any(t.startswith("kubernetes:helm.sh/") for t in types)
    assert sorted(t for t in types if grant_of_type(t) is None) == []
