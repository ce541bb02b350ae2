"""Who may read a weights source's bucket (models[].source kind s3 / gcs): pure, cloud-neutral facts.

The prefetch Job runs as `source.serviceAccount`; the platform creates that Kubernetes ServiceAccount in the
stack's namespace (components/cache/component.py) and the cluster component grants it read access to the bucket:
- EKS (components/cluster/aws/source_access.py): an IAM role with `s3_read_policy` and an EKS Pod Identity
  association for NAMESPACE/SA (no annotation on the ServiceAccount, none of IRSA's OIDC trust).
- GKE (components/cluster/gcp/source_access.py): the Kubernetes ServiceAccount itself as an IAM principal of
  Workload Identity Federation for GKE (`gke_principal`), bound on the bucket to GCS_READER_ROLES.
- An existing cluster: the ServiceAccount is created, the binding is yours (docs/engine.md).
An S3 bucket on GKE or a GCS bucket on EKS has no identity path here and is refused (`cross_cloud_problems`).
"""
from __future__ import annotations

import json
from dataclasses import dataclass

# The Run:ai model streamer's GCS pull (run-ai/runai-model-streamer py/runai_model_streamer_gcs/files/files.py,
# list_files and pull_files) opens the bucket with `gcs.get_bucket()`, which needs storage.buckets.get; roles/storage.objectViewer grants storage.objects.get
# and storage.objects.list only, roles/storage.legacyBucketReader adds storage.buckets.get
# (cloud.google.com/storage/docs/access-control/iam-roles, 2026-12).
GCS_READER_ROLES = ("roles/storage.objectViewer", "roles/storage.legacyBucketReader")
# Which bucket scheme each cloud's cluster component can grant a pod access to.
GRANTABLE = {"aws": "s3", "gcp": "gcs"}


@dataclass(frozen=True)
class BucketReader:
    """One Kubernetes service account that must read one bucket prefix."""
    namespace: str
    service_account: str
    kind: str  # s3 | gcs
    bucket: str
    prefix: str = ""  # "" : the whole bucket


def split_uri(uri: str) -> tuple[str, str]:
    """s3://bucket/a/b/ -> ("bucket", "a/b/")."""
    rest = uri.split("://", 1)[1]
    bucket, _, prefix = rest.partition("/")
    return bucket, prefix


def bucket_readers(namespace: str, sources) -> tuple[BucketReader, ...]:
    """The distinct (service account, bucket, prefix) of `sources` (WeightsSource values) that read a bucket."""
    out: dict[tuple, BucketReader] = {}
    for src in sources:
        if src.kind not in ("s3", "gcs"):
            continue
        bucket, prefix = split_uri(src.uri)
        r = BucketReader(namespace, src.service_account, src.kind, bucket, prefix)
        out.setdefault((r.service_account, r.kind, r.bucket, r.prefix), r)
    return tuple(sorted(out.values(), key=lambda r: (r.service_account, r.kind, r.bucket, r.prefix)))


def service_accounts(sources) -> tuple[str, ...]:
    """The Kubernetes ServiceAccounts the prefetch Jobs run as (created by the model cache)."""
    return tuple(sorted({s.service_account for s in sources if s.service_account}))


def s3_read_policy(partition: str, readers: list[BucketReader]) -> str:
    """List the buckets and read the objects under each prefix (what `pull_files` calls: ListObjectsV2 and
    GetObject; docs.aws.amazon.com/service-authorization/latest/reference/list_amazons3.html)."""
    buckets = sorted({r.bucket for r in readers})
    objects = sorted({f"arn:{partition}:s3:::{r.bucket}/{r.prefix}*" for r in readers})
    return json.dumps({"Version": "2012-10-17", "Statement": [
        {"Sid": "ListWeights", "Effect": "Allow", "Action": ["s3:ListBucket"],
         "Resource": [f"arn:{partition}:s3:::{b}" for b in buckets]},
        {"Sid": "ReadWeights", "Effect": "Allow", "Action": ["s3:GetObject"], "Resource": objects}]})


def gke_principal(project_number: str, project: str, namespace: str, service_account: str) -> str:
    """A Kubernetes ServiceAccount as an IAM principal of Workload Identity Federation for GKE (the cluster's
    workload pool PROJECT.svc.id.goog, components/cluster/gcp/control_plane.py workload_pool;
    cloud.google.com/kubernetes-engine/docs/concepts/workload-identity, "IAM principal identifiers")."""
    return (f"principal://iam.googleapis.com/projects/{project_number}/locations/global/workloadIdentityPools/"
            f"{project}.svc.id.goog/subject/ns/{namespace}/sa/{service_account}")


def cross_cloud_problems(models: list, cloud: str) -> list[str]:
    """`models[i].source.kind` lines for a bucket the cluster's cloud cannot grant access to (ModelDeployments)."""
    allowed = GRANTABLE.get(cloud)
    if allowed is None:  # an existing cluster: the operator binds the identity (docs/engine.md)
        return []
    other = {"s3": "an S3 bucket", "gcs": "a GCS bucket"}
    return [f"models[{i}].source.kind: {d.source.kind} ({d.name}): {other[d.source.kind]} cannot be read from a "
            f"{cloud.upper().replace('GCP', 'GKE').replace('AWS', 'EKS')} cluster with the platform's workload "
            f"identity (no keys in the stack); use kind {allowed}, or copy the weights to a PVC (kind pvc)"
            for i, d in enumerate(models) if d.source.kind in ("s3", "gcs") and d.source.kind != allowed]
