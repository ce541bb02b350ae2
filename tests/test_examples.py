"""The organisation split shipped as examples: a cluster stack (cluster, GPU pools, add-ons) and a
workloads stack that serves a model on it through a StackReference. Both run here under the offline
mocks, the workloads stack reading the cluster stack's real outputs."""
from __future__ import annotations

import json

import pytest
import yaml

from components.offline.mocks import CLOUD_OUTPUTS
from components.offline.runner import OFFLINE_SECRET, ROOT, load_stack_yaml, run_program

EXAMPLES = ROOT / "examples"


def run_example(name: str, extra: dict[str, str] | None = None, secrets: list[str] = ()):
    raw = load_stack_yaml(EXAMPLES / name / "Pulumi.prod.yaml")
    config = {k: v if isinstance(v, str) else json.dumps(v) for k, v in raw.items()}
    config.update(extra or {})
    return run_program(config, list(secrets), "prod", program=EXAMPLES / name / "__main__.py")


@pytest.fixture(scope="module")
def cluster_stack():
    return run_example("cluster-stack")


def test_each_example_is_a_pulumi_project_on_the_library():
    for name, project in (("cluster-stack", "vllm-cluster"), ("workloads-stack", "vllm-workloads")):
        meta = yaml.safe_load((EXAMPLES / name / "Pulumi.yaml").read_text())
        assert meta["name"] == project and meta["runtime"]["name"] == "python"
        assert "-e ../.." in (EXAMPLES / name / "requirements.txt").read_text().splitlines()


def test_the_cluster_stack_builds_cluster_and_add_ons_but_no_model(cluster_stack):
    resources, out = cluster_stack
    types = {r.type for r in resources}
    assert {"aws:eks/cluster:Cluster", "vllm-platform:addons:ClusterAddons", "kubernetes:helm.sh/v3:Release"} <= types
    assert not {"kubernetes:apps/v1:Deployment", "vllm-platform:serving:VllmService"} & types
    # no hfToken in its stack file: a cluster stack holds no model secrets
    assert "vllm-platform:hfToken" not in load_stack_yaml(EXAMPLES / "cluster-stack" / "Pulumi.prod.yaml")
    assert out["gpuNodes"] == {"p5.48xlarge": {
        "accelerator": "h100", "gpusPerNode": 8, "vcpu": 192, "ramGib": 2048,
        "nodeSelector": {"vllm-platform/gpu-pool": "gpu-p5-48xlarge"},
        "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}], "pricePerNodeHour": 55.04}}
    assert out["storageClass"] == "efs-model-cache"
    assert out["prometheusUrl"] == "http://kube-prometheus-stack-prometheus.monitoring.svc:9090"
    assert out["clusterName"] == "llm-shared" and "--cluster-name\n      - llm-shared" in out["kubeconfig"]
    provider = [r for r in resources if r.type == "pulumi:providers:aws"]
    assert [p.inputs["region"] for p in provider] == ["us-east-1"]  # from aws:region


def test_the_workloads_stack_serves_a_model_on_the_cluster_stacks_cluster(cluster_stack):
    _, cluster_out = cluster_stack
    refs = []

    def stack_reference(name, inputs):
        refs.append(inputs["name"])
        return {"outputs": cluster_out, "secretOutputNames": ["kubeconfig"]}

    CLOUD_OUTPUTS["pulumi:pulumi:StackReference"] = stack_reference
    try:
        resources, out = run_example("workloads-stack", {"vllm-workloads:hfToken": OFFLINE_SECRET,
                                                         "vllm-workloads:gatewayApiKeys": '{"default": "k"}'},
                                     ["vllm-workloads:hfToken", "vllm-workloads:gatewayApiKeys"])
    finally:
        del CLOUD_OUTPUTS["pulumi:pulumi:StackReference"]
    assert refs == ["acme/vllm-cluster/prod"]
    assert out["endpoint"] == "http://llama-70b.team-a.svc.cluster.local:8000/v1"
    assert out["topology"]["instance_type"] == "existing-h100x8"
    # the cluster stack's add-ons and gateway are used: the only chart here is the model's endpoint picker
    assert [r.inputs["chart"].rsplit("/", 1)[-1] for r in resources
            if r.type == "kubernetes:helm.sh/v3:Release"] == ["llm-d-router-gateway"]
    [provider] = [r for r in resources if r.type == "pulumi:providers:kubernetes"]
    secret_sig = "4dabf18193072939515e22adb298388d"  # Pulumi's marker of a secret value on the wire
    assert provider.inputs["kubeconfig"] == {secret_sig: "1b47061264138c4ac30d75fd1eb44270",
                                             "value": cluster_out["kubeconfig"]}
    [deployment] = [r for r in resources if r.type == "kubernetes:apps/v1:Deployment"]
    pod = deployment.inputs["spec"]["template"]["spec"]
    [term] = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert term == {"matchExpressions": [{"key": "vllm-platform/gpu-pool", "operator": "In",
                                          "values": ["gpu-p5-48xlarge"]}]}  # the cluster stack's pool
    assert pod["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Equal", "value": "present",
                                   "effect": "NoSchedule"}]
    [scaler] = [r for r in resources if r.inputs.get("kind") == "ScaledObject"]
    assert "http://kube-prometheus-stack-prometheus.monitoring.svc:9090" in json.dumps(scaler.inputs)


def test_the_esc_environment_example_is_valid_yaml_with_oidc_logins():
    env = yaml.safe_load((EXAMPLES / "esc" / "vllm-platform-prod.yaml").read_text())
    values = env["values"]
    assert values["aws"]["login"]["fn::open::aws-login"]["oidc"]["roleArn"].startswith("arn:aws:iam::")
    assert values["pulumiConfig"]["aws:region"] == "us-east-1"
    assert "fn::secret" in json.dumps(values["pulumiConfig"]["vllm-workloads:hfToken"])
    assert values["environmentVariables"]["AWS_ACCESS_KEY_ID"] == "${aws.login.accessKeyId}"
