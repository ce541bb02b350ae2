"""Policy pack, Kubernetes workload rules: each rule reports a violating resource and passes a
compliant one, through both callers (the Pulumi policy, as `pulumi preview` runs it, and the
offline plan's evaluate_resources), which must agree word for word."""
from __future__ import annotations


import pytest
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE

from policies.rules import MANDATORY, RULES, RULES_BY_NAME, STACK_RULES, StackResource, evaluate_resources
from tests.support.policies import DEPLOYMENT, POLICIES, RAYSERVICE, deployment, pack_messages, ray_service, violations, vllm_container, with_container

SCALEDOBJECT = "kubernetes:keda.sh/v1alpha1:ScaledObject"
CONFIGMAP = "kubernetes:core/v1:ConfigMap"


def test_compliant_deployment_passes_every_rule():
    assert evaluate_resources([StackResource(DEPLOYMENT, "r", deployment())]) == []


def test_pack_has_at_least_15_rules_each_with_level_and_one_line_remedy():
    assert len(RULES) + len(STACK_RULES) >= 15
    assert len(POLICIES) == len(RULES_BY_NAME) == len(RULES) + len(STACK_RULES)
    for r in [*RULES, *STACK_RULES]:
        assert r.level in ("mandatory", "advisory"), r.name
        assert r.remedy and "\n" not in r.remedy and r.description, r.name
        assert POLICIES[r.name].enforcement_level.value == r.level
        assert POLICIES[r.name].remediation_steps == r.remedy


def test_the_docs_name_every_rule_at_its_level():
    """docs/policies.md's table lists every rule of the pack (`| `name` | level |`) and the page's count is the
    pack's."""
    import re
    from components.offline.runner import ROOT
    text = (ROOT / "docs" / "policies.md").read_text()
    rows = dict(re.findall(r"^\| `([a-z0-9-]+)` \| (mandatory|advisory) \|", text, re.M))
    assert rows == {r.name: r.level for r in [*RULES, *STACK_RULES]}
    assert f"holds {len(RULES_BY_NAME)} rules" in text


def test_violation_message_carries_the_remedy_and_the_level():
    [v] = evaluate_resources([StackResource(DEPLOYMENT, "llama", with_container(image="vllm/vllm-openai:latest"))])
    assert (v.level, v.rule, v.resource) == (MANDATORY, "image-tag-pinned", f"llama ({DEPLOYMENT})")
    assert v.message == ("template container vllm: image vllm/vllm-openai:latest uses the latest tag; "
                         "fix: " + RULES_BY_NAME["image-tag-pinned"].remedy)


def test_gpu_requests_equal_limits():
    res = lambda req, lim: {"requests": {"nvidia.com/gpu": req}, "limits": {"nvidia.com/gpu": lim}}  # noqa: E731
    assert violations("gpu-requests-equal-limits", DEPLOYMENT, with_container(resources=res("4", 4))) == []
    [m] = violations("gpu-requests-equal-limits", DEPLOYMENT, with_container(resources=res("4", "8")))
    assert m.startswith("template container vllm: nvidia.com/gpu request 4 differs from limit 8;")
    [m] = violations("gpu-requests-equal-limits", DEPLOYMENT,
                     with_container(resources={"requests": {"nvidia.com/gpu": "4"}}))
    assert "requests 4 nvidia.com/gpu but sets no limit" in m
    only_limit = with_container(resources={"limits": {"nvidia.com/gpu": "4"}})  # request defaults to the limit
    assert violations("gpu-requests-equal-limits", DEPLOYMENT, only_limit) == []


def test_shm_memory_backed():
    [m] = violations("shm-memory-backed", DEPLOYMENT, with_container(volumeMounts=[]))
    assert "container vllm: nothing is mounted at /dev/shm" in m
    on_disk = deployment(volumes=[{"name": "dshm", "emptyDir": {}}])
    [m] = violations("shm-memory-backed", DEPLOYMENT, on_disk)
    assert "/dev/shm is volume 'dshm', not an emptyDir with medium Memory" in m
    # A container that does not run vLLM (a sidecar) needs no shm.
    sidecar = {"name": "exporter", "image": "prom/node-exporter:v1.9.1"}
    assert violations("shm-memory-backed", DEPLOYMENT, deployment(containers=[vllm_container(), sidecar])) == []


def test_shm_ray_container_is_left_to_kuberay_but_extra_gpu_containers_are_not():
    # KubeRay mounts a Memory emptyDir at /dev/shm in the Ray container (index 0) itself.
    assert violations("shm-memory-backed", RAYSERVICE, ray_service()) == []
    svc = ray_service()
    extra = {"name": "engine-2", "image": "rayproject/ray-llm:2.58.0-py312-cu130",
             "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    svc["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]["template"]["spec"]["containers"].append(extra)
    [m] = violations("shm-memory-backed", RAYSERVICE, svc)
    assert "worker[0] container engine-2: nothing is mounted at /dev/shm" in m
    # KubeRay keeps a /dev/shm mount the Ray container already has, so a disk-backed one is reported.
    svc = ray_service()
    worker = svc["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]["template"]["spec"]
    worker["containers"][0]["volumeMounts"] = [{"name": "shm", "mountPath": "/dev/shm"}]
    worker["volumes"] = [{"name": "shm", "emptyDir": {}}]
    [m] = violations("shm-memory-backed", RAYSERVICE, svc)
    assert "worker[0] container ray-worker: /dev/shm is volume 'shm', not an emptyDir with medium Memory" in m


def test_no_privileged_containers():
    [m] = violations("no-privileged-containers", DEPLOYMENT,
                     with_container(securityContext={"privileged": True}))
    assert "container vllm: securityContext.privileged is true" in m
    [m] = violations("no-privileged-containers", DEPLOYMENT, deployment(hostIPC=True))
    assert m.startswith("template: hostIPC is true;")
    init = {"name": "setup", "image": "busybox:1.37", "securityContext": {"privileged": True}}
    [m] = violations("no-privileged-containers", "kubernetes:batch/v1:Job",
                     {"spec": {"template": {"spec": {"containers": [], "initContainers": [init]}}}})
    assert "container setup: securityContext.privileged is true" in m


GIB_INSTALLER = "us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib:v1.1.0"
GIB_PINNED = GIB_INSTALLER + "@sha256:" + "ab" * 32


def node_agent(namespace: str = "kube-system", image: str = GIB_PINNED, name: str = "nccl-rdma-installer",
               extra: list | None = None, **pod) -> dict:
    installer = {"name": "install", "image": image, "securityContext": {"privileged": True}}
    return {"metadata": {"name": name, "namespace": namespace}, "spec": {"template": {"spec": {
        "hostPID": True, "hostNetwork": True, "containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10"}],
        "initContainers": [installer, *(extra or [])], **pod}}}}


def test_the_one_privileged_node_agent_is_the_gib_installer_daemonset_pinned_by_digest():
    daemonset = "kubernetes:apps/v1:DaemonSet"
    assert violations("no-privileged-containers", daemonset, node_agent()) == []
    # anything else about it and both the privileged container and hostPID are reported
    assert len(violations("no-privileged-containers", daemonset, node_agent(namespace="llm"))) == 2
    assert len(violations("no-privileged-containers", DEPLOYMENT, node_agent())) == 2
    assert len(violations("no-privileged-containers", daemonset, node_agent(name="nccl-tcpx-installer"))) == 2
    # the tag alone (movable), another tag or a truncated digest is not the pinned image
    for image in (GIB_INSTALLER, GIB_PINNED[:-1], GIB_PINNED.replace("v1.1.0", "v1.0.3"), GIB_INSTALLER + "-evil",
                  "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpx/nccl-plugin-gpudirecttcpx-dev:v3.1.9",
                  "gcr.io/gke-release/nri-device-injector@sha256:" + "0" * 64):
        [_, m] = violations("no-privileged-containers", daemonset, node_agent(image=image))
        assert "container install: securityContext.privileged is true" in m, image
    # a second privileged container on another image (the upstream's alpine sysctl step) is not admitted
    shell = {"name": "disable-log-martian", "image": "alpine:3.20", "securityContext": {"privileged": True}}
    assert len(violations("no-privileged-containers", daemonset, node_agent(extra=[shell]))) == 3
    assert len(violations("no-privileged-containers", daemonset, node_agent(hostIPC=True))) == 3


def test_the_exception_names_the_image_components_pin():
    """Bumping the pinned gIB installer means re-reviewing the exception (policies/rules/workloads.py)."""
    from components.upstream.versions import GKE_NCCL_RDMA_INSTALLER_IMAGE
    from policies.rules.workloads import PRIVILEGED_NODE_AGENT
    assert PRIVILEGED_NODE_AGENT.image == GKE_NCCL_RDMA_INSTALLER_IMAGE == GIB_INSTALLER


def test_no_added_capabilities_allows_ipc_lock_only_beside_an_rdma_device():
    ptrace = {"privileged": False, "capabilities": {"add": ["SYS_PTRACE"], "drop": ["ALL"]}}
    [m] = violations("no-added-capabilities", DEPLOYMENT, with_container(securityContext=ptrace))
    assert "container vllm: adds capability SYS_PTRACE" in m
    ipc_lock = {"capabilities": {"add": ["IPC_LOCK"]}}
    [m] = violations("no-added-capabilities", DEPLOYMENT, with_container(securityContext=ipc_lock))
    assert "adds capability IPC_LOCK" in m
    rdma = {"limits": {"nvidia.com/gpu": "8", "rdma/rdma_shared_device_a": "1"}}
    assert violations("no-added-capabilities", DEPLOYMENT,
                      with_container(securityContext=ipc_lock, resources=rdma)) == []


@pytest.mark.parametrize("image, expected", [
    ("vllm/vllm-openai", "image vllm/vllm-openai has no tag (pulls latest)"),
    ("vllm/vllm-openai:latest", "image vllm/vllm-openai:latest uses the latest tag"),
    ("registry.local:5000/vllm-openai", "image registry.local:5000/vllm-openai has no tag (pulls latest)"),
    ("registry.local:5000/vllm-openai:v0.31.0", None),
    ("vllm/vllm-openai@sha256:" + "0" * 64, None),
])
def test_image_tag_pinned(image, expected):
    got = violations("image-tag-pinned", DEPLOYMENT, with_container(image=image))
    assert [m.split("; fix:")[0] for m in got] == ([f"template container vllm: {expected}"] if expected else [])


def test_vllm_startup_probe():
    [m] = violations("vllm-startup-probe", DEPLOYMENT, with_container(startupProbe=None))
    assert "container vllm: no startupProbe" in m
    short = {"httpGet": {"path": "/health", "port": 8000}}  # defaults: 3 x 10 s
    [m] = violations("vllm-startup-probe", DEPLOYMENT, with_container(startupProbe=short))
    assert "startupProbe gives up after 30 s (< 300 s)" in m
    # `vllm serve` in a shell script counts; a helper that only uses the image does not.
    shell = with_container(image="python:3.12.8", command=["/bin/sh", "-c"], args=["exec vllm serve m --port 8000"],
                           startupProbe=None)
    assert len(violations("vllm-startup-probe", DEPLOYMENT, shell)) == 1
    helper = with_container(command=["/bin/sh", "-c", "until [ -f /models/.ready ]; do sleep 5; done"],
                            startupProbe=None)
    assert violations("vllm-startup-probe", DEPLOYMENT, helper) == []


def test_hf_token_from_secret_never_echoes_the_token():
    token = "hf_" + "A1b2C3d4" * 5
    [m] = violations("hf-token-from-secret", DEPLOYMENT, with_container(env=[{"name": "HF_TOKEN", "value": token}]))
    assert "container vllm: HF_TOKEN is set from a literal value" in m and token not in m
    from_cm = [{"name": "HUGGING_FACE_HUB_TOKEN", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "t"}}}]
    [m] = violations("hf-token-from-secret", DEPLOYMENT, with_container(env=from_cm))
    assert "HUGGING_FACE_HUB_TOKEN is read from a ConfigMap" in m
    [m] = violations("hf-token-from-secret", DEPLOYMENT, with_container(env=[{"name": "HFT", "value": token}]))
    assert "HFT holds what looks like a Hugging Face token" in m and token not in m
    args = vllm_container()["args"] + ["--hf-token", token]
    [m] = violations("hf-token-from-secret", DEPLOYMENT, with_container(args=args))
    assert "passes --hf-token on the command line" in m and token not in m
    [m] = violations("hf-token-from-secret", CONFIGMAP, {"data": {"HF_TOKEN": token}})
    assert m.startswith("ConfigMap data key HF_TOKEN holds the token in clear text")
    [m] = violations("hf-token-from-secret", CONFIGMAP, {"data": {"env.sh": f"export T={token}"}})
    assert m.startswith("ConfigMap data key env.sh holds what looks like a Hugging Face token") and token not in m
    assert violations("hf-token-from-secret", CONFIGMAP, {"data": {"HF_HOME": "/models/hf"}}) == []


def test_hf_token_in_a_ray_runtime_env():
    literal = "      runtime_env: {env_vars: {HF_TOKEN: hf_secretsecretsecretsecretsecret00}}\n"
    [m] = violations("hf-token-from-secret", RAYSERVICE, ray_service(runtime_env=literal))
    assert "serveConfigV2 applications[0].args.llm_configs[0].runtime_env.env_vars.HF_TOKEN is a literal" in m
    assert "hf_secret" not in m
    reference = "      runtime_env: {env_vars: {HF_TOKEN: '${HF_TOKEN}'}}\n"
    assert violations("hf-token-from-secret", RAYSERVICE, ray_service(runtime_env=reference)) == []


@pytest.mark.parametrize("ref, expected", [
    ({"name": "llama-70b"}, None),  # KEDA's default kind is apps/v1 Deployment
    ({"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "name": "l"}, None),
    ({"apiVersion": "ray.io/v1", "kind": "RayCluster", "name": "r"},
     "scaleTargetRef ray.io/v1 RayCluster r has no scale subresource"),
    ({"apiVersion": "ray.io/v1", "kind": "RayService", "name": "r"},
     "scaleTargetRef ray.io/v1 RayService r has no scale subresource"),
    ({"apiVersion": "ray.io/v1", "kind": "Deployment", "name": "d"},
     "scaleTargetRef ray.io/v1 Deployment: Deployment is served by apps/v1"),
])
def test_keda_target_scalable(ref, expected):
    got = violations("keda-target-scalable", SCALEDOBJECT, {"spec": {"scaleTargetRef": ref}})
    assert [m.split("; fix:")[0] for m in got] == ([expected] if expected else [])


def test_vllm_current_cli():
    args = vllm_container()["args"] + ["--speculative-model", "m-small", "--config=/etc/vllm.yaml"]
    got = violations("vllm-current-cli", DEPLOYMENT, with_container(args=args))
    assert [m.split("; fix:")[0] for m in got] == [
        "template container vllm: --speculative-model is removed; use --speculative-config with JSON",
        "template container vllm: --config=/etc/vllm.yaml is not read by vLLM 0.31; write --config FILE"]
    old = with_container(command=["python3", "-m", "vllm.entrypoints.openai.api_server"], args=["m"])
    [m] = violations("vllm-current-cli", DEPLOYMENT, old)
    assert "runs the deprecated vllm.entrypoints.openai.api_server" in m
    ok = vllm_container()["args"] + ["--config", "/etc/vllm.yaml", "--speculative-config", '{"method": "eagle3"}']
    assert violations("vllm-current-cli", DEPLOYMENT, with_container(args=ok)) == []


def test_nccl_debug_is_advisory():
    noisy = vllm_container()["env"] + [{"name": "NCCL_DEBUG", "value": "INFO"}]
    [v] = evaluate_resources([StackResource(DEPLOYMENT, "r", with_container(env=noisy))])
    assert (v.rule, v.level) == ("nccl-debug-quiet", "advisory")
    quiet = vllm_container()["env"] + [{"name": "NCCL_DEBUG", "value": "WARN"}]
    assert violations("nccl-debug-quiet", DEPLOYMENT, with_container(env=quiet)) == []


def test_unknown_values_during_preview_are_not_reported():
    # The engine marks values it cannot know yet; a rule neither reports nor crashes on them.
    props = with_container(image=UNKNOWN_STRING_VALUE)
    assert pack_messages("image-tag-pinned", DEPLOYMENT, props) == []
    assert violations("image-tag-pinned", DEPLOYMENT, with_container(image="[unknown]")) == []
    eks = {"vpcConfig": {"subnetIds": ["s"], "publicAccessCidrs": UNKNOWN_STRING_VALUE}}
    assert pack_messages("cluster-endpoint-restricted", "aws:eks/cluster:Cluster", eks) == []


def test_a_rule_ignores_types_it_does_not_target():
    assert pack_messages("keda-target-scalable", DEPLOYMENT, {"spec": {"scaleTargetRef": {"kind": "RayCluster"}}}) == []
