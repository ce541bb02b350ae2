"""EKS: read access to the S3 buckets of models[].source for the prefetch Jobs' service accounts
(components/cluster/source_access.py): one IAM role per service account with the bucket policy, handed to
NAMESPACE/SA by an EKS Pod Identity association (pod_identity_role)."""
from __future__ import annotations

import hashlib

import pulumi
import pulumi_aws as aws

from ..source_access import BucketReader, s3_read_policy
from .iam import pod_identity_role


# IAM role names are at most 64 characters and Pulumi appends 8 to the resource name (`<name>-role-1a2b3c4`):
# a long service account name is cut and made unique with a hash of NAMESPACE/SA.
MAX_ROLE_RESOURCE = 56 - len("-role")


def role_name(name: str, namespace: str, account: str) -> str:
    full = f"{name}-weights-{account}"
    if len(full) <= MAX_ROLE_RESOURCE:
        return full
    digest = hashlib.sha256(f"{namespace}/{account}".encode()).hexdigest()[:8]
    return f"{full[:MAX_ROLE_RESOURCE - 9]}-{digest}"


def s3_readers(name: str, cluster: aws.eks.Cluster, partition: str, readers: tuple[BucketReader, ...],
               parent: pulumi.Resource, depends_on: list) -> list[aws.eks.PodIdentityAssociation]:
    """The Pod Identity associations (each after its role's policy) the prefetch Jobs wait for."""
    by_account: dict[tuple[str, str], list[BucketReader]] = {}
    for r in readers:
        if r.kind == "s3":
            by_account.setdefault((r.namespace, r.service_account), []).append(r)
    out = []
    for (namespace, account), rs in sorted(by_account.items()):
        _, association = pod_identity_role(
            role_name(name, namespace, account), cluster, namespace, account, s3_read_policy(partition, rs), parent,
            f"reads model weights ({', '.join(sorted({r.bucket for r in rs}))}) for {namespace}/{account} "
            f"(Pod Identity)", depends_on)
        out.append(association)
    return out
