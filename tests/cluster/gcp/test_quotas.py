"""A new GCP project has no GPU quota: the plan's GPUs at every pool's max node count are checked against
Cloud Quotas before any node pool exists, and a shortfall is refused with the quota preference to file."""
from __future__ import annotations

from types import SimpleNamespace as NS

import pulumi
import pytest

from components.cluster.gcp.quotas import quota_value
from components.config import ConfigError
from components.offline import gcp_stubs
from tests.support.gcp import CASES, PROJECT, cluster_plan
from tests.support.plans import by_type

FAMILY = "GPUS-PER-GPU-FAMILY-per-project-region"


def values(case: str, **gcp) -> dict:
    extra, model = CASES[case]
    return {"cloud": "gcp", **extra, "gcp": {**extra["gcp"], **gcp}, "models": [model]}


def refused(config: dict) -> str:
    with pytest.raises(pulumi.RunError) as e:
        cluster_plan(config)
    assert isinstance(e.value.__cause__, ConfigError)  # printed without a traceback
    return str(e.value)


def grant(monkeypatch, quota: str, value: str, region: str = "us-central1", family: str | None = None):
    monkeypatch.setitem(gcp_stubs.QUOTAS, (PROJECT, quota, region, family), value)


def test_h100_pools_are_refused_on_a_new_projects_gpu_family_quota_with_the_request(monkeypatch):
    # Llama-3.1-405B on a3-highgpu-8g: up to 2 replicas of 2 nodes of 8 H100s = 32 GPUs
    grant(monkeypatch, FAMILY, "0", family="NVIDIA_H100")
    assert ("gcp.region: quota GPUS-PER-GPU-FAMILY-per-project-region (GPUs per GPU family, gpu_family=NVIDIA_H100) "
            "in us-central1 (project my-proj-123) is 0 GPUs; the GPU pools (gpu-a3-highgpu-8g) need 32 GPUs at "
            "their max node counts. Request 32: `gcloud beta quotas preferences create "
            "--service=compute.googleapis.com --quota-id=GPUS-PER-GPU-FAMILY-per-project-region --preferred-value=32 "
            "--dimensions=region=us-central1,gpu_family=NVIDIA_H100 --project=my-proj-123 --email=YOUR_EMAIL` "
            "(console: IAM & Admin > Quotas & System Limits, filter GPUS-PER-GPU-FAMILY-per-project-region); or "
            "lower the models' replicas.max") in refused(values("a3-high"))


def test_a_quota_of_exactly_the_need_passes_and_one_less_is_refused(monkeypatch):
    # Llama-3.1-8B on g2-standard-8 (1 L4 each): up to 3 nodes
    grant(monkeypatch, "NVIDIA-L4-GPUS-per-project-region", "3")
    pools = [p for p in by_type(cluster_plan(values("g2"))[0], "gcp:container/nodePool:NodePool")
             if p.inputs["name"] == "gpu-g2-standard-8"]
    assert len(pools) == 1
    grant(monkeypatch, "NVIDIA-L4-GPUS-per-project-region", "2")
    assert "quota NVIDIA-L4-GPUS-per-project-region (NVIDIA L4 GPUs) in us-central1 (project my-proj-123) is 2 GPUs; " \
           "the GPU pools (gpu-g2-standard-8) need 3 GPUs" in refused(values("g2"))


def test_the_all_regions_gpu_cap_of_a_new_project_is_checked_too(monkeypatch):
    grant(monkeypatch, "GPUS-ALL-REGIONS-per-project", "0", region="global")
    message = refused(values("g2"))
    assert ("gcp.region: quota GPUS-ALL-REGIONS-per-project (GPUs (all regions)) in project my-proj-123 is 0 GPUs; "
            "the GPU pools (gpu-g2-standard-8) need 3 GPUs") in message
    assert ("`gcloud beta quotas preferences create --service=compute.googleapis.com "
            "--quota-id=GPUS-ALL-REGIONS-per-project --preferred-value=3 --project=my-proj-123 --email=YOUR_EMAIL`"
            ) in message


def test_spot_pools_draw_on_the_preemptible_quota_or_else_the_standard_one(monkeypatch):
    grant(monkeypatch, "PREEMPTIBLE-NVIDIA-L4-GPUS-per-project-region", "0")
    cluster_plan(values("g2", spot=True))  # no preemptible quota: Spot VMs use the standard L4 quota
    grant(monkeypatch, "NVIDIA-L4-GPUS-per-project-region", "0")
    assert ("gcp.region: quota PREEMPTIBLE-NVIDIA-L4-GPUS-per-project-region (Preemptible NVIDIA L4 GPUs) in "
            "us-central1 (project my-proj-123) is 0 GPUs") in refused(values("g2", spot=True))


def test_a_pool_consuming_a_reservation_is_not_checked(monkeypatch):
    """A reservation holds its VMs' quota from its creation; nodes that consume it draw none."""
    grant(monkeypatch, "PREEMPTIBLE-NVIDIA-H200-GPUS-per-project-region", "0")
    grant(monkeypatch, "GPUS-ALL-REGIONS-per-project", "0", region="global")
    grant(monkeypatch, FAMILY, "0", family="NVIDIA_H200")
    cluster_plan(values("a3-ultra"))


def test_an_unreadable_quota_names_the_permission_and_the_api(monkeypatch):
    monkeypatch.setattr(gcp_stubs, "QUOTA_IDS_MISSING", {"NVIDIA-L4-GPUS-per-project-region"})
    assert ("gcp.region: cannot read quota NVIDIA-L4-GPUS-per-project-region of project my-proj-123: googleapi: "
            "Error 404: QuotaInfo projects/my-proj-123/locations/global/services/compute.googleapis.com/quotaInfos/"
            "NVIDIA-L4-GPUS-per-project-region not found, notFound; the deployer needs cloudquotas.quotas.get "
            "(roles/cloudquotas.viewer), and the stack turns the Cloud Quotas API (cloudquotas.googleapis.com) on"
            ) in refused(values("g2"))


def test_the_stack_turns_the_cloud_quotas_api_on():
    res, _ = cluster_plan(values("g2"))
    services = {r.inputs["service"] for r in by_type(res, "gcp:projects/service:Service")}
    assert "cloudquotas.googleapis.com" in services


def _info(dims: dict, value, locations=("us-central1", "us-east1")):
    return NS(dimensions=dims, details=[NS(value=value)], applicable_locations=list(locations))


def test_the_most_specific_dimensions_entry_gives_the_value():
    infos = [_info({}, "0"), _info({"gpu_family": "NVIDIA_H100"}, "8"),
             _info({"region": "us-central1", "gpu_family": "NVIDIA_H100"}, "16", ["us-central1"]),
             _info({"region": "us-central1", "gpu_family": "NVIDIA_H200"}, "64", ["us-central1"])]
    assert quota_value(infos, "us-central1", (("gpu_family", "NVIDIA_H100"),)) == 16
    assert quota_value(infos, "us-east1", (("gpu_family", "NVIDIA_H100"),)) == 8
    assert quota_value(infos, "us-east1", (("gpu_family", "NVIDIA_B200"),)) == 0
    assert quota_value(infos, "europe-west4", (("gpu_family", "NVIDIA_H100"),)) is None  # not applicable there
    assert quota_value([_info({}, None)], "us-central1", ()) is None  # never granted: Cloud Quotas says null
    assert quota_value([_info({}, "-1")], "us-central1", ()) == -1  # unlimited
