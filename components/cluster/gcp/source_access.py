"""GKE: read access to the GCS buckets of models[].source for the prefetch Jobs' service accounts
(components/cluster/source_access.py): the Kubernetes ServiceAccount as a Workload Identity Federation principal,
bound on each bucket to GCS_READER_ROLES (no Google service account, no key)."""
from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from ..source_access import GCS_READER_ROLES, BucketReader, gke_principal


def gcs_readers(name: str, project: str, readers: tuple[BucketReader, ...], parent: pulumi.Resource,
                depends_on: list) -> list[gcp.storage.BucketIAMMember]:
    """One BucketIAMMember per (bucket, service account, role); `depends_on`: the cluster (its workload pool
    must exist before the principal is known to IAM)."""
    gcs = sorted({(r.bucket, r.namespace, r.service_account) for r in readers if r.kind == "gcs"})
    if not gcs:
        return []
    number = gcp.organizations.get_project_output(
        project_id=project, opts=pulumi.InvokeOutputOptions(parent=parent)).number
    opts = pulumi.ResourceOptions(parent=parent, depends_on=depends_on)
    return [gcp.storage.BucketIAMMember(
        f"{name}-weights-{bucket}-{account}-{role.rsplit('.', 1)[-1].lower()}", bucket=bucket, role=role,
        member=number.apply(lambda n, ns=ns, sa=account: gke_principal(n, project, ns, sa)), opts=opts)
        for bucket, ns, account in gcs for role in GCS_READER_ROLES]
