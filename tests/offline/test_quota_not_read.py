"""The offline plan has no account: a quota its stubs do not list is answered with a placeholder (10000 vCPUs on
AWS, "10000" and Compute Engine's default rows on GCP) so that the plan goes on. That placeholder is no figure of the
account's: the plan says the quota was not checked offline and what the pools need of it, and never compares or prints
it as the quota (issue 38: a 5000-user stack was refused offline with "quota L-417A185B ... is 10000 vCPUs"). A real run
installs no placeholder, so there every quota is read, compared and printed as the cloud answers it."""
from __future__ import annotations

import pulumi
import pytest
import yaml

from components.cli import main
from components.cluster import pools
from components.config import ConfigError
from components.offline import aws_stubs
from components.offline.runner import ROOT

AWS_NOTE = ("note: quota: not checked offline (a real `pulumi preview` reads the account's Service Quotas): "
            "L-417A185B (Running On-Demand P instances) in us-east-1: the node pools (gpu-p5-48xlarge) need 38400 "
            "vCPUs at their max node counts")


def busy_stack(tmp_path):
    """prod-llama70b-aws at 5000 concurrent users and replicas.max 200: up to 200 p5.48xlarge, 38400 vCPUs of the
    P-instance quota, more than the offline placeholder (10000)."""
    doc = yaml.safe_load((ROOT / "stacks" / "Pulumi.prod-llama70b-aws.yaml").read_text())
    model = doc["config"]["vllm-platform:models"][0]
    model["sla"]["concurrency"] = 5000
    model["replicas"]["max"] = 200
    path = tmp_path / "Pulumi.busy.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_the_offline_plan_says_the_aws_quota_is_not_read_instead_of_the_placeholder(tmp_path, capsys):
    code = main(["plan", str(busy_stack(tmp_path)), "--out", str(tmp_path / "out")])
    out, err = capsys.readouterr()
    assert code == 0, err  # not refused on a figure no account gave
    assert AWS_NOTE + "\n" in out
    assert "10000" not in out + err and "10,000" not in out + err


def test_a_real_run_compares_and_prints_the_quota_it_reads(tmp_path, monkeypatch, capsys):
    """Without the offline stubs' placeholder hook (a real run), the quota the API answers is compared and printed:
    here the stub's answer stands for the account's."""
    monkeypatch.setattr(pools, "OFFLINE_PLACEHOLDER", {})
    monkeypatch.setattr(aws_stubs, "GENEROUS_QUOTA", 30000.0)
    code = main(["plan", str(busy_stack(tmp_path)), "--out", str(tmp_path / "out")])
    out, err = capsys.readouterr()
    assert code == 2
    assert ("aws.region: quota L-417A185B (Running On-Demand P instances) in us-east-1 is 30000 vCPUs; the GPU pools "
            "(gpu-p5-48xlarge) need 38400 vCPUs at their max node counts. Request 38400:") in err
    assert "not checked offline" not in out + err


def test_a_quota_the_offline_account_lists_is_still_compared(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(aws_stubs.QUOTAS, ("ec2", "L-417A185B"), 38399.0)
    assert main(["plan", str(busy_stack(tmp_path)), "--out", str(tmp_path / "out")]) == 2
    out, err = capsys.readouterr()
    assert "quota L-417A185B (Running On-Demand P instances) in us-east-1 is 38399 vCPUs" in err
    assert "not checked offline" not in out


def test_the_offline_gcp_plan_lists_each_quota_it_did_not_read(tmp_path, capsys):
    assert main(["plan", "prod-qwen72b-gcp", "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    note = next(line for line in out.splitlines() if line.startswith("note: quota: "))
    assert note.startswith("note: quota: not checked offline (a real `pulumi preview` reads the project's Cloud "
                           "Quotas and Compute Engine quotas): ")
    for quota in ("GPUS-PER-GPU-FAMILY-per-project-region (GPUs per GPU family, gpu_family=NVIDIA_H100) in "
                  "us-central1 (project my-gcp-project): the node pools (gpu-a3-highgpu-8g) need 24 GPUs at their "
                  "max node counts",
                  "GPUS-ALL-REGIONS-per-project (GPUs (all regions)) in project my-gcp-project: the node pools "
                  "(gpu-a3-highgpu-8g) need 24 GPUs",
                  "CPUS-ALL-REGIONS-per-project (vCPUs (all regions)) in project my-gcp-project: the node pools "
                  "(system, gpu-a3-highgpu-8g) need 656 vCPUs"):
        assert quota in note
    assert "10000" not in out and "limit " not in note


def test_a_gcp_real_run_still_refuses_on_the_limit_it_reads(monkeypatch):
    """No placeholder hook (a real run): Cloud Quotas' answer is compared and printed."""
    from components.offline import gcp_stubs
    from tests.support.gcp import CASES, cluster_plan
    monkeypatch.setattr(pools, "OFFLINE_PLACEHOLDER", {})
    monkeypatch.setattr(gcp_stubs, "GENEROUS_QUOTA", "2")
    extra, model = CASES["g2"]
    with pytest.raises(pulumi.RunError) as e:
        cluster_plan({"cloud": "gcp", **extra, "models": [model]})
    assert isinstance(e.value.__cause__, ConfigError)
    assert "quota NVIDIA-L4-GPUS-per-project-region (NVIDIA L4 GPUs) in us-central1 (project my-proj-123): limit 2" \
        in str(e.value)
