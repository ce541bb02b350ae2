"""A new GCP project has no GPU quota and few vCPUs: what every pool draws at its max node count (GPUs, the system
series' vCPUs, all vCPUs, SSD disk) is compared with what the project has free (limit minus usage, from Cloud Quotas
and Compute Engine's regions.get / projects.get) before the first resource, and a shortfall is refused with the
figures and the quota preference to file."""
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


def row(monkeypatch, metric: str, limit, usage, where: str = "us-central1"):
    """What Compute Engine's regions.get (or projects.get, where="global") lists for the metric."""
    monkeypatch.setitem(gcp_stubs.QUOTA_ROWS, (PROJECT, where, metric), None if limit is None else (limit, usage))


def test_h100_pools_are_refused_on_a_new_projects_gpu_family_quota_with_the_request(monkeypatch):
    # Llama-3.1-405B on a3-highgpu-8g: up to 2 replicas of 2 nodes of 8 H100s = 32 GPUs
    grant(monkeypatch, FAMILY, "0", family="NVIDIA_H100")
    row(monkeypatch, "NVIDIA_H100_GPUS", None, None)  # a new project: regions.get lists no H100 row
    assert ("gcp.region: quota GPUS-PER-GPU-FAMILY-per-project-region (GPUs per GPU family, gpu_family=NVIDIA_H100) "
            "in us-central1 (project my-proj-123): limit 0, in use 0, free 0 GPUs; the node pools (gpu-a3-highgpu-8g) "
            "need 32 GPUs at their max node counts. Raise the limit to 32: `gcloud beta quotas preferences create "
            "--service=compute.googleapis.com --quota-id=GPUS-PER-GPU-FAMILY-per-project-region --preferred-value=32 "
            "--dimensions=region=us-central1,gpu_family=NVIDIA_H100 --project=my-proj-123 --email=YOUR_EMAIL` "
            "(console: IAM & Admin > Quotas & System Limits, filter GPUS-PER-GPU-FAMILY-per-project-region); or "
            "lower the models' replicas.max") in refused(values("a3-high"))


def test_the_need_is_compared_with_the_limit_minus_what_the_project_already_uses(monkeypatch):
    # Llama-3.1-8B on g2-standard-8 (1 L4 each): up to 3 nodes; the project runs 8 L4s elsewhere already
    grant(monkeypatch, "NVIDIA-L4-GPUS-per-project-region", "11")
    row(monkeypatch, "NVIDIA_L4_GPUS", 11, 8)
    pools = [p for p in by_type(cluster_plan(values("g2"))[0], "gcp:container/nodePool:NodePool")
             if p.inputs["name"] == "gpu-g2-standard-8"]
    assert len(pools) == 1  # 11 - 8 = 3: exactly the need
    grant(monkeypatch, "NVIDIA-L4-GPUS-per-project-region", "10")
    message = refused(values("g2"))
    assert ("gcp.region: quota NVIDIA-L4-GPUS-per-project-region (NVIDIA L4 GPUs) in us-central1 (project "
            "my-proj-123): limit 10, in use 8, free 2 GPUs; the node pools (gpu-g2-standard-8) need 3 GPUs at their "
            "max node counts. Raise the limit to 11:") in message


def test_a_later_run_compares_the_limit_alone_since_the_usage_holds_the_stacks_own_nodes(monkeypatch):
    """Once the cluster exists its nodes are in the usage: limit 10 with 8 in use (this stack's among them) has
    room for the plan's 3, and a running stack is not refused for the nodes it has."""
    grant(monkeypatch, "NVIDIA-L4-GPUS-per-project-region", "10")
    row(monkeypatch, "NVIDIA_L4_GPUS", 10, 8)
    monkeypatch.setattr(gcp_stubs, "CLUSTERS", {(PROJECT, "us-central1", "vllm")})
    cluster_plan(values("g2"))
    grant(monkeypatch, "NVIDIA-L4-GPUS-per-project-region", "2")
    assert ("quota NVIDIA-L4-GPUS-per-project-region (NVIDIA L4 GPUs) in us-central1 (project my-proj-123): limit "
            "2 GPUs (in use 8, this stack's running nodes among them); the node pools (gpu-g2-standard-8) need 3 "
            "GPUs") in refused(values("g2"))


def test_the_all_regions_gpu_cap_of_a_new_project_is_checked_too(monkeypatch):
    grant(monkeypatch, "GPUS-ALL-REGIONS-per-project", "0", region="global")
    message = refused(values("g2"))
    assert ("gcp.project: quota GPUS-ALL-REGIONS-per-project (GPUs (all regions)) in project my-proj-123: limit 0, "
            "in use 8, free 0 GPUs; the node pools (gpu-g2-standard-8) need 3 GPUs") in message
    assert ("`gcloud beta quotas preferences create --service=compute.googleapis.com "
            "--quota-id=GPUS-ALL-REGIONS-per-project --preferred-value=11 --project=my-proj-123 --email=YOUR_EMAIL`"
            ) in message


def test_spot_pools_draw_on_the_preemptible_quota_or_else_the_standard_one(monkeypatch):
    grant(monkeypatch, "PREEMPTIBLE-NVIDIA-L4-GPUS-per-project-region", "0")
    cluster_plan(values("g2", spot=True))  # no preemptible quota: Spot VMs use the standard L4 quota
    grant(monkeypatch, "NVIDIA-L4-GPUS-per-project-region", "0")
    assert ("gcp.region: quota PREEMPTIBLE-NVIDIA-L4-GPUS-per-project-region (Preemptible NVIDIA L4 GPUs) in "
            "us-central1 (project my-proj-123): limit 0, in use 0, free 0 GPUs") in refused(values("g2", spot=True))


def test_the_system_pools_cpu_family_quota_is_checked_with_its_usage(monkeypatch):
    # g2 (dev): one e2-standard-8 system node, up to 3 (min + 2): 24 vCPUs on CPUS
    row(monkeypatch, "CPUS", 40, 16)
    cluster_plan(values("g2"))  # 24 free: exactly the need
    row(monkeypatch, "CPUS", 39, 16)
    assert ("gcp.systemMachineType: quota CPUS-per-project-region (CPUS vCPUs) in us-central1 (project my-proj-123): "
            "limit 39, in use 16, free 23 vCPUs; the node pools (system) need 24 vCPUs at their max node counts. "
            "Raise the limit to 40:") in refused(values("g2"))
    row(monkeypatch, "N2_CPUS", 8, 0)
    assert ("gcp.systemMachineType: quota N2-CPUS-per-project-region (N2_CPUS vCPUs) in us-central1 (project "
            "my-proj-123): limit 8, in use 0, free 8 vCPUs; the node pools (system) need 48 vCPUs"
            ) in refused(values("g2", systemMachineType="n2-standard-16"))


def test_a_system_series_without_a_known_cpu_quota_is_refused_not_left_unchecked():
    assert ("gcp.systemMachineType: m3-megamem-64: no regional vCPU quota is known for its series"
            ) in refused(values("g2", systemMachineType="m3-megamem-64"))


def test_every_vcpu_counts_on_the_all_regions_cpu_quota_of_a_new_project(monkeypatch):
    # 3 system nodes x 8 vCPUs + 3 g2-standard-8 x 8 vCPUs = 48; a new project's CPUS_ALL_REGIONS is 32 or less
    row(monkeypatch, "CPUS_ALL_REGIONS", 32, 0, where="global")
    assert ("gcp.project: quota CPUS-ALL-REGIONS-per-project (vCPUs (all regions)) in project my-proj-123: limit 32, "
            "in use 0, free 32 vCPUs; the node pools (system, gpu-g2-standard-8) need 48 vCPUs at their max node "
            "counts. Raise the limit to 48: `gcloud beta quotas preferences create --service=compute.googleapis.com "
            "--quota-id=CPUS-ALL-REGIONS-per-project --preferred-value=48 --project=my-proj-123") in refused(values("g2"))


def test_pd_balanced_boot_disks_count_on_the_regions_ssd_quota(monkeypatch):
    # 3 system nodes x 100 GB + 3 GPU nodes x 200 GB of pd-balanced = 900 GB
    row(monkeypatch, "SSD_TOTAL_GB", 1000, 101)
    assert ("gcp.region: quota SSD-TOTAL-GB-per-project-region (Persistent Disk SSD (GB)) in us-central1 (project "
            "my-proj-123): limit 1000, in use 101, free 899 GB; the node pools (system, gpu-g2-standard-8) need 900 GB"
            ) in refused(values("g2"))


def test_a_refusal_comes_before_the_first_resource_is_registered(monkeypatch):
    """The check gates everything: no API, VPC, NAT, service account, cluster or Filestore instance exists when
    the quota says no."""
    from components.offline import runner
    registered: list[str] = []

    class Monitor(runner.RecordingMonitor):
        def RegisterResource(self, request):
            registered.append(request.type)
            return super().RegisterResource(request)

    monkeypatch.setattr(runner, "RecordingMonitor", Monitor)
    row(monkeypatch, "CPUS", 8, 0)
    refused(values("g2"))
    created = [t for t in registered if t.startswith("gcp:") or t.startswith("kubernetes:")]
    assert created == [] and "vllm-platform:cluster:GcpGpuCluster" in registered


def test_a_project_with_the_compute_api_off_is_told_to_turn_the_apis_on_first(monkeypatch):
    monkeypatch.setattr(gcp_stubs, "COMPUTE_API_OFF", {PROJECT})
    message = refused(values("g2"))
    assert ("gcp.project: cannot read the Compute Engine quotas of us-central1 in project my-proj-123 (regions.get, "
            "projects.get): 403: Compute Engine API has not been used in project my-proj-123") in message
    assert ("turn the APIs on first: `gcloud services enable compute.googleapis.com cloudquotas.googleapis.com "
            "container.googleapis.com --project=my-proj-123`, then run again") in message


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
            "(roles/cloudquotas.viewer), and the Cloud Quotas API (cloudquotas.googleapis.com) on"
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


def test_the_rest_transport_sends_the_token_and_reports_googles_own_message(monkeypatch):
    """What `pulumi up` runs (the offline plan swaps the transport): a Bearer GET, Google's error message kept."""
    import io
    import json
    import urllib.error
    from components.cluster.gcp import quotas
    seen = {}

    def refuse(request, timeout):
        seen["auth"], seen["url"] = request.get_header("Authorization"), request.full_url
        body = json.dumps({"error": {"code": 403, "message": "Required 'compute.regions.get' permission for "
                                                             "'projects/p/regions/us-central1'"}}).encode()
        raise urllib.error.HTTPError(request.full_url, 403, "Forbidden", {}, io.BytesIO(body))

    monkeypatch.setattr(quotas.urllib.request, "urlopen", refuse)
    with pytest.raises(RuntimeError) as e:
        quotas._http_get(f"{quotas.COMPUTE_API}/projects/p/regions/us-central1", "tok")
    assert str(e.value) == "403: Required 'compute.regions.get' permission for 'projects/p/regions/us-central1'"
    assert seen == {"auth": "Bearer tok", "url": "https://compute.googleapis.com/compute/v1/projects/p/regions/us-central1"}


def test_only_not_found_means_a_first_run_a_403_is_refused_naming_the_permission(monkeypatch):
    """A running stack whose deployer lacks container.clusters.get (or meets an outage) is not taken for a first
    run: that would compare its own nodes against what is free and refuse it for them."""
    grant(monkeypatch, "NVIDIA-L4-GPUS-per-project-region", "10")
    row(monkeypatch, "NVIDIA_L4_GPUS", 10, 8)
    monkeypatch.setattr(gcp_stubs, "CLUSTERS", {(PROJECT, "us-central1", "vllm")})
    monkeypatch.setattr(gcp_stubs, "CLUSTER_READ_ERROR", "googleapi: Error 403: Required \"container.clusters.get\" "
                        "permission(s) for \"projects/my-proj-123/locations/us-central1/clusters/vllm\"., forbidden")
    message = refused(values("g2"))
    assert ("gcp.project: cannot tell whether GKE cluster vllm exists in us-central1 (project my-proj-123), so the "
            "quotas cannot be compared: googleapi: Error 403: Required \"container.clusters.get\"") in message
    assert "the deployer needs container.clusters.get (roles/container.clusterViewer" in message
    assert "free 2 GPUs" not in message  # not compared as a first run


def test_the_providers_not_found_answer_is_a_first_run():
    from components.cluster.gcp.quotas import is_not_found
    assert is_not_found("projects/p/locations/us-central1/clusters/vllm not found")
    # as the engine hands it to the program: the bridge's multierror inside the invoke's failure
    assert is_not_found("invoke of gcp:container/getCluster:getCluster failed: invocation of gcp:container/getCluster:"
                        "getCluster returned an error: invoking gcp:container/getCluster:getCluster: 1 error "
                        "occurred:\n\t* projects/p/locations/us-central1/clusters/vllm not found\n\n")
    assert not is_not_found("googleapi: Error 403: Required \"container.clusters.get\" permission(s), forbidden")
    assert not is_not_found("Post \"https://container.googleapis.com/v1/...\": dial tcp: i/o timeout")
