"""models[].source s3 / gcs: the prefetch Job's ServiceAccount exists, and the cloud grants it the bucket
(EKS Pod Identity role, GKE Workload Identity principal), before the Job's first pod; a bucket the cluster's
cloud cannot grant is refused by field name."""
import json
import re

import kubernetes_validate
import pytest

from components.config import ConfigError, parse
from components.offline.runner import ROOT
from components.wiring import validated_plan
from tests.support.plans import by_type, manifests, one, plan_config, planned

ENGINE_AWS = str(ROOT / "tests" / "stacks" / "Pulumi.engine-aws.yaml")
SA = "kubernetes:core/v1:ServiceAccount"
JOB = "kubernetes:batch/v1:Job"
ASSOCIATION = "aws:eks/podIdentityAssociation:PodIdentityAssociation"
BUCKET_MEMBER = "gcp:storage/bucketIAMMember:BucketIAMMember"
GCP = {"cloud": "gcp", "namespace": "serving",
       "gcp": {"project": "ml-prod-123", "region": "us-central1", "zone": "us-central1-a",
               "kubeconfigEndpoint": "dns"},
       "modelCache": {"kind": "rwx", "sizeGib": 200}}
QWEN = {"name": "chat", "model": "qwen3-32b", "accelerator": "h100", "maxModelLen": 8192}


def plain(value):
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def valid(obj: dict) -> dict:
    kubernetes_validate.validate(plain(obj), "1.34", strict=True)
    return obj


def test_eks_creates_the_service_account_and_its_s3_role_before_the_prefetch_job():
    resources = planned(ENGINE_AWS).resources
    sa = one(resources, SA)
    assert sa.inputs["metadata"]["name"] == "model-reader" and sa.inputs["metadata"]["namespace"] == "llm"
    assert sa.inputs["automountServiceAccountToken"] is False
    objs = {f"{o['kind']}/{o['metadata']['name']}": o for o in manifests(resources).values()}
    valid(objs["ServiceAccount/model-reader"])
    valid(objs["Job/prefetch-qwen-tools"])
    association = one(resources, ASSOCIATION, "vllm-cluster-weights-model-reader-identity")
    assert (association.inputs["namespace"], association.inputs["serviceAccount"]) == ("llm", "model-reader")
    policy = json.loads(one(resources, "aws:iam/rolePolicy:RolePolicy",
                            "vllm-cluster-weights-model-reader-role-policy").inputs["policy"])
    assert policy["Statement"] == [
        {"Sid": "ListWeights", "Effect": "Allow", "Action": ["s3:ListBucket"],
         "Resource": ["arn:aws:s3:::example-models"]},
        {"Sid": "ReadWeights", "Effect": "Allow", "Action": ["s3:GetObject"],
         "Resource": ["arn:aws:s3:::example-models/qwen3-32b/*"]}]
    job = one(resources, JOB)
    assert job.inputs["spec"]["template"]["spec"]["serviceAccountName"] == "model-reader"
    assert f"{SA}::vllm-cache-sa-model-reader" in job.dependencies
    assert f"{ASSOCIATION}::vllm-cluster-weights-model-reader-identity" in job.dependencies


def test_gke_binds_the_workload_identity_principal_to_the_bucket_with_both_read_roles():
    resources, _ = plan_config({**GCP, "models": [{**QWEN, "source": {
        "kind": "gcs", "uri": "gs://team-weights/qwen3-32b", "serviceAccount": "weights-reader"}}]})
    members = by_type(resources, BUCKET_MEMBER)
    assert sorted(m.inputs["role"] for m in members) == ["roles/storage.legacyBucketReader",
                                                         "roles/storage.objectViewer"]
    for m in members:
        assert m.inputs["bucket"] == "team-weights"
        assert re.fullmatch(r"principal://iam\.googleapis\.com/projects/\d{12}/locations/global/"
                            r"workloadIdentityPools/ml-prod-123\.svc\.id\.goog/subject/ns/serving/sa/weights-reader",
                            m.inputs["member"]), m.inputs["member"]
    sa = one(resources, SA)
    assert sa.inputs["metadata"] == {**sa.inputs["metadata"], "name": "weights-reader", "namespace": "serving"}
    job = one(resources, JOB)
    assert f"{SA}::vllm-cache-sa-weights-reader" in job.dependencies
    assert {f"{BUCKET_MEMBER}::{m.name}" for m in members} <= set(job.dependencies)
    valid({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": sa.inputs["metadata"],
           "automountServiceAccountToken": sa.inputs["automountServiceAccountToken"]})


@pytest.mark.parametrize("cloud, kind, uri", [("gcp", "s3", "s3://team-weights/qwen"),
                                              ("aws", "gcs", "gs://team-weights/qwen")])
def test_a_bucket_of_the_other_cloud_is_refused_by_field(cloud, kind, uri):
    base = GCP if cloud == "gcp" else {"cloud": "aws", "aws": {"region": "us-east-1"},
                                       "modelCache": {"kind": "rwx"}}
    cfg = parse({**base, "models": [{**QWEN, "source": {"kind": kind, "uri": uri, "serviceAccount": "reader"}}]},
                {"hfToken"})
    with pytest.raises(ConfigError) as e:
        validated_plan(cfg)
    line = next(x for x in e.value.errors if x.startswith("models[0].source.kind"))
    assert f"use kind {'gcs' if cloud == 'gcp' else 's3'}" in line and "pvc" in line


def test_existing_cluster_gets_the_service_account_and_no_cloud_iam():
    resources, _ = plan_config({
        "cloud": "existing", "namespace": "llm",
        "existing": {"gpuNodes": {"accelerator": "h100", "gpusPerNode": 8, "vcpu": 96, "ramGib": 1000},
                     "blockStorageClass": "fast-block"},
        "modelCache": {"storageClass": "nfs-client"},
        "models": [{**QWEN, "source": {"kind": "s3", "uri": "s3://team-weights/qwen", "serviceAccount": "reader"}}]})
    assert one(resources, SA).inputs["metadata"]["name"] == "reader"
    assert not [r for r in resources if r.type.startswith(("aws:", "gcp:")) and "weights" in r.name]


def test_docs_name_both_gcs_roles_the_streamer_needs():
    text = (ROOT / "docs" / "engine.md").read_text()
    assert "`roles/storage.objectViewer` and\n    `roles/storage.legacyBucketReader`" in text


def test_a_long_service_account_keeps_the_iam_role_name_within_64_characters():
    from components.cluster.aws.source_access import role_name
    long = role_name("vllm-cluster", "llm", "weights-reader-for-the-finance-team-fine-tunes-" + "x" * 16)
    assert len(long) + len("-role") + 8 <= 64 and long.startswith("vllm-cluster-weights-weights-reader")
    assert role_name("vllm-cluster", "llm", "model-reader") == "vllm-cluster-weights-model-reader"
