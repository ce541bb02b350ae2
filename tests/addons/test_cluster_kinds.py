"""Each cloud's cluster component reports its kind of cluster in ClusterFacts, and the add-ons it gets follow:
read back from whole plans of the shipped and fabric stacks, with the values a platform engineer would check."""
from __future__ import annotations

import pytest

from tests.support.stacks import plan

GKE_QUOTA = "kubernetes:core/v1:ResourceQuota"


def test_eks_gpu_nodes_keep_their_ami_toolkit_and_get_the_operators_device_plugin():
    p = plan("prod-llama70b-aws")
    gpu = p.values("gpu-operator")
    assert (gpu["driver"]["enabled"], gpu["toolkit"]["enabled"], gpu["devicePlugin"]["enabled"]) == (False, False, True)
    assert "cdi" not in gpu and "hostPaths" not in gpu
    assert not [r for r in p.resources if r.type == GKE_QUOTA]
    kps = p.values("kube-prometheus-stack")
    assert kps["coreDns"] == {"enabled": True} and kps["kubeDns"] == {"enabled": False}
    for hidden in ("kubeEtcd", "kubeScheduler", "kubeControllerManager", "kubeProxy"):
        assert kps[hidden] == {"enabled": False}


def test_gke_gpu_nodes_keep_gkes_device_plugin_and_get_the_toolkit_with_cdi():
    p = plan("prod-qwen72b-gcp")
    gpu = p.values("gpu-operator")
    assert (gpu["driver"]["enabled"], gpu["toolkit"]["enabled"], gpu["devicePlugin"]["enabled"]) == (False, True, False)
    assert gpu["cdi"] == {"enabled": True}
    assert gpu["hostPaths"] == {"driverInstallDir": "/home/kubernetes/bin/nvidia"}
    assert gpu["toolkit"]["installDir"] == "/home/kubernetes/bin/nvidia"
    (quota,) = [r for r in p.resources if r.type == GKE_QUOTA]
    assert quota.inputs["metadata"]["namespace"] == "gpu-operator"
    kps = p.values("kube-prometheus-stack")
    assert kps["kubeDns"] == {"enabled": True} and kps["coreDns"] == {"enabled": False}
    assert kps["kubeEtcd"] == {"enabled": False}


def _kube_system_daemonsets(name: str) -> dict[str, dict]:
    return {d["metadata"]["name"]: d for d in plan(name).kind("DaemonSet", "kube-system")}


@pytest.mark.parametrize("stack", ["fabric-gke-a3-high", "fabric-gke-a3-mega", "prod-qwen72b-gcp+multinode"])
def test_a3_high_and_mega_get_no_nccl_plugin_for_nccl_to_pick_up(stack):
    """Serving runs NCCL sockets over the GPU NICs: no TCPX(O) plugin installer, no NRI device injector, nothing
    privileged; the GPU NICs still reach the pods through GKE multi-networking."""
    p = plan(stack)
    assert _kube_system_daemonsets(stack) == {}
    for t in p.templates:
        assert not [c for c in t.containers + (t.spec.get("initContainers") or [])
                    if (c.get("securityContext") or {}).get("privileged")], f"{stack}: {t.name} runs privileged"
    assert [t for t in p.templates if "networking.gke.io/interfaces" in t.annotations], stack


@pytest.mark.parametrize("stack", ["fabric-gke-a3-ultra", "fabric-gke-a4"])
def test_a3_ultra_and_a4_get_the_gib_installer_on_their_gpu_pool_only(stack):
    (name, ds), = _kube_system_daemonsets(stack).items()
    assert name == "nccl-rdma-installer"
    terms = ds["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    machine = {"fabric-gke-a3-ultra": "a3-ultragpu-8g", "fabric-gke-a4": "a4-highgpu-8g"}[stack]
    assert terms == [{"matchExpressions": [{"key": "vllm-platform/gpu-pool", "operator": "In",
                                            "values": [f"gpu-{machine}"]}]}]


@pytest.mark.parametrize("stack", ["fabric-aws-p4d", "fabric-aws-p5", "fabric-aws-p5en", "fabric-aws-p6-b200"])
def test_efa_pools_get_the_efa_device_plugin(stack):
    assert "aws-efa-k8s-device-plugin" in plan(stack).releases
    assert "aws-efa-k8s-device-plugin" not in plan("prod-llama405b-fp8-h200-aws").releases  # one node per replica


@pytest.mark.parametrize("stack", ["fabric-onprem-infiniband", "fabric-onprem-roce"])
def test_infiniband_and_roce_get_the_network_operator(stack):
    p = plan(stack)
    assert "network-operator" in p.releases and len(p.kind("NicClusterPolicy")) == 1
    assert ("ipoib" in p.kind("NicClusterPolicy")[0]["spec"]["secondaryNetwork"]) is stack.endswith("infiniband")


def test_a_gpudirect_rdma_stack_without_the_gib_installer_digest_is_refused(tmp_path, capsys):
    """The gIB installer runs privileged on the GPU nodes: the stack must pin it by digest (no made-up pin)."""
    from components.cli import main
    from components.offline.runner import ROOT
    text = (ROOT / "tests" / "stacks" / "Pulumi.fabric-gke-a4.yaml").read_text()
    start = text.index("  vllm-platform:addons:\n")
    stack = tmp_path / "Pulumi.a4-no-digest.yaml"
    stack.write_text(text[:start] + text[text.index("  vllm-platform:modelCache:\n"):])
    assert main(["plan", str(stack), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "addons.fabric.gibInstallerDigest: missing; the GPUDirect-RDMA pools need the gIB NCCL installer" in err
    assert "gcloud artifacts docker images describe us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/" \
           "nccl-plugin-gib:v1.1.0 --format='value(image_summary.digest)'" in err


def test_the_gib_installer_runs_the_digest_the_stack_pins():
    p = plan("fabric-gke-a4")
    (ds,) = [r for r in p.resources if r.type == "kubernetes:apps/v1:DaemonSet" and "nccl-rdma-installer" in r.name]
    images = {c["image"] for c in ds.inputs["spec"]["template"]["spec"]["initContainers"]
              + ds.inputs["spec"]["template"]["spec"]["containers"]}
    assert "us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib:v1.1.0@sha256:" \
           "9f91c1c04d38a32f1ca3bd74ba82d10f147a5877095ae9f558dabdab8e8d283e" in images
