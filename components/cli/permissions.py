"""What the principal that runs `pulumi up` / `preview` / `destroy` of a stack needs in its cloud account: the AWS
IAM policy (components/cluster/aws/permissions.py) or the GCP roles and a custom role's permissions
(components/cluster/gcp/permissions.py), computed from the stack's own plan. `plan` writes it beside the plan as
deployer-permissions.json; docs/clusters.md says how to use it."""
from __future__ import annotations

from typing import Any

FILE = "deployer-permissions.json"


def deployer_permissions(cfg: Any, topologies: dict) -> dict | None:
    """{cloud, ...} for an EKS / GKE stack; None for an existing cluster (the stack creates no cloud resource: its
    kubeconfig's Kubernetes RBAC is all it uses)."""
    from ..wiring import cluster_args
    if cfg.cloud == "aws":
        from ..cluster.aws.permissions import required_policy
        return {"cloud": "aws", "iamPolicy": required_policy(cluster_args(cfg, topologies))}
    if cfg.cloud == "gcp":
        from ..cluster.gcp.permissions import required_permissions, required_roles
        args = cluster_args(cfg, topologies)
        return {"cloud": "gcp", "roles": required_roles(args), "customRolePermissions": required_permissions(args)}
    return None
