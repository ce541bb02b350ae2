"""`plan` writes what the principal running `pulumi up` needs in the cloud account beside the plan
(components/cli/permissions.py): the EKS stack's IAM policy, the GKE stack's roles; none for an existing cluster."""
from __future__ import annotations

import json

from components.cli.commands import _deployer_permissions, main


def test_the_eks_stack_gets_an_iam_policy_that_creates_the_cluster_and_its_node_groups():
    from components.offline.runner import plan_stack_offline
    topology = plan_stack_offline("prod-llama70b-aws").exports["topology"]
    perms = _deployer_permissions("prod-llama70b-aws", topology)
    assert perms["cloud"] == "aws" and perms["iamPolicy"]["Version"] == "2012-10-17"
    actions = {a for s in perms["iamPolicy"]["Statement"] for a in s["Action"]}
    assert {"eks:CreateCluster", "eks:CreateNodegroup", "eks:DeleteCluster", "iam:PassRole"} <= actions
    assert not any(a.endswith(":*") or a == "*" for a in actions)  # least privilege: no wildcard action


def test_the_gke_stack_gets_its_roles_and_a_custom_role_alternative():
    from components.offline.runner import plan_stack_offline
    topology = plan_stack_offline("prod-qwen72b-gcp").exports["topology"]
    perms = _deployer_permissions("prod-qwen72b-gcp", topology)
    assert perms["cloud"] == "gcp"
    assert {"roles/container.admin", "roles/file.editor", "roles/iam.serviceAccountUser"} <= set(perms["roles"])
    assert "roles/owner" not in perms["roles"] and "roles/editor" not in perms["roles"]
    assert "container.clusters.create" in perms["customRolePermissions"]


def test_plan_writes_the_file_beside_the_plan(tmp_path, capsys):
    assert main(["plan", "prod-qwen72b-gcp", "--out", str(tmp_path / "p")]) == 0
    written = json.loads((tmp_path / "p" / "deployer-permissions.json").read_text())
    assert "roles/container.admin" in written["roles"]
    assert "deployer-permissions.json (the deployer IAM)" in capsys.readouterr().out
