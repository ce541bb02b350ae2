"""Every rule fires on the resources the shipped stacks really plan: each case takes one stack's planned
inputs (as `plan` hands them to the rules), breaks one property of one resource and expects exactly
that rule to report exactly that resource. A rule that reads a property name the components do not
write would pass every stack and fail here."""
from __future__ import annotations

import copy

import pytest
import yaml

from components.offline.render import sanitize
from tests.support.plans import planned
from policies.rules import StackResource, evaluate_resources


def stack_resources(stack: str) -> list[StackResource]:
    return [StackResource(r.type, r.name, sanitize(r.inputs)) for r in planned(stack).resources if r.custom]


def containers(props: dict, group: int | None = None) -> list[dict]:
    """A Deployment's containers, or those of a RayService worker group."""
    if group is None:
        return props["spec"]["template"]["spec"]["containers"]
    return props["spec"]["rayClusterConfig"]["workerGroupSpecs"][group]["template"]["spec"]["containers"]


def set_flag(args: list[str], flag: str, value: str) -> None:
    args[args.index(flag) + 1] = value


def engine_kwargs(props: dict, **values) -> None:
    serve = yaml.safe_load(props["spec"]["serveConfigV2"])
    serve["applications"][0]["args"]["llm_configs"][0]["engine_kwargs"].update(values)
    props["spec"]["serveConfigV2"] = yaml.safe_dump(serve)


def runtime_env(props: dict, env_vars: dict) -> None:
    serve = yaml.safe_load(props["spec"]["serveConfigV2"])
    serve["applications"][0]["args"]["llm_configs"][0].setdefault("runtime_env", {})["env_vars"] = env_vars
    props["spec"]["serveConfigV2"] = yaml.safe_dump(serve)


def drop_fabric(props: dict) -> None:
    for c in containers(props, 0):
        for key in ("limits", "requests"):
            c["resources"][key] = {k: v for k, v in c["resources"][key].items()
                                   if not k.startswith(("vpc.amazonaws.com/efa", "rdma/"))}
        c["securityContext"].get("capabilities", {}).pop("add", None)


def shm_on_disk(props: dict) -> None:
    spec = props["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]["template"]["spec"]
    [shm] = [v for v in spec["volumes"] if v["name"] == "dshm"]
    shm["emptyDir"] = {}


DEPLOYMENT = "kubernetes:apps/v1:Deployment"
RAYSERVICE = "kubernetes:ray.io/v1:RayService"
ROOT_EBS = ("blockDeviceMappings", 0, "ebs")


def put(path: tuple, value):
    def mutate(props: dict) -> None:
        obj = props
        for key in path[:-1]:
            obj = obj[key]
        obj[path[-1]] = value
    return mutate


def drop(path: tuple):
    def mutate(props: dict) -> None:
        obj = props
        for key in path[:-1]:
            obj = obj[key]
        del obj[path[-1]]
    return mutate


# (stack, resource type, resource name contains, mutation, rule, text of its message)
CASES = [
    ("prod-llama70b-aws", DEPLOYMENT, "", lambda p: containers(p)[0]["resources"]["requests"].update(
        {"nvidia.com/gpu": "2"}), "gpu-requests-equal-limits", "nvidia.com/gpu request 2 differs from limit"),
    ("prod-llama70b-aws", DEPLOYMENT, "", lambda p: containers(p)[0].update(volumeMounts=[
        m for m in containers(p)[0]["volumeMounts"] if m["mountPath"] != "/dev/shm"]),
     "shm-memory-backed", "container vllm: nothing is mounted at /dev/shm"),
    ("prod-qwen72b-gcp", DEPLOYMENT, "", lambda p: containers(p)[0]["securityContext"].update(privileged=True),
     "no-privileged-containers", "container vllm: securityContext.privileged is true"),
    ("prod-qwen72b-gcp", DEPLOYMENT, "", lambda p: containers(p)[0]["securityContext"]["capabilities"].update(
        add=["SYS_PTRACE"]), "no-added-capabilities", "adds capability SYS_PTRACE"),
    ("dev", DEPLOYMENT, "", lambda p: containers(p)[0].update(image="vllm/vllm-openai:latest"),
     "image-tag-pinned", "uses the latest tag"),
    ("dev", DEPLOYMENT, "", lambda p: containers(p)[0].pop("startupProbe"), "vllm-startup-probe",
     "container vllm: no startupProbe"),
    ("prod-llama405b-fp8-h200-aws", DEPLOYMENT, "", lambda p: containers(p)[0]["env"].append(
        {"name": "HUGGING_FACE_HUB_TOKEN", "value": "x"}), "hf-token-from-secret",
     "HUGGING_FACE_HUB_TOKEN is set from a literal value"),
    ("prod-llama405b-fp8-h200-aws", DEPLOYMENT, "", lambda p: set_flag(containers(p)[0]["args"],
                                                                       "--tensor-parallel-size", "16"),
     "tp-within-node", "tensor-parallel-size 16 > 8 GPUs per node (p5en.48xlarge has 8 GPUs per node)"),
    ("prod-llama70b-aws", DEPLOYMENT, "", lambda p: set_flag(containers(p)[0]["args"], "--gpu-memory-utilization",
                                                             "0.97"),
     "gpu-memory-utilization-range", "gpu-memory-utilization 0.97 is outside 0.80-0.95"),
    ("prod-llama70b-aws", DEPLOYMENT, "", lambda p: containers(p)[0]["args"].append("--config=/etc/v.yaml"),
     "vllm-current-cli", "--config=/etc/v.yaml is not read by vLLM 0.31"),
    ("prod-qwen72b-gcp", "kubernetes:keda.sh/v1alpha1:ScaledObject", "", lambda p: p["spec"]["scaleTargetRef"].update(
        apiVersion="ray.io/v1", kind="RayService"), "keda-target-scalable", "RayService qwen-72b has no scale"),
    ("prod-llama405b-aws", RAYSERVICE, "", lambda p: containers(p, 0)[0]["resources"]["limits"].update(
        {"nvidia.com/gpu": "4"}), "gpu-requests-equal-limits", "worker[0] container ray-worker: nvidia.com/gpu "
                                                               "request 8 differs from limit 4"),
    ("prod-llama405b-aws", RAYSERVICE, "", shm_on_disk, "shm-memory-backed",
     "worker[0] container ray-worker: /dev/shm is volume 'dshm', not an emptyDir with medium Memory"),
    ("prod-llama405b-aws", RAYSERVICE, "", lambda p: engine_kwargs(p, tensor_parallel_size=16), "tp-within-node",
     "tensor-parallel-size 16 > 8 GPUs per node (p5.48xlarge has 8 GPUs per node)"),
    ("prod-llama405b-onprem", RAYSERVICE, "", lambda p: engine_kwargs(p, gpu_memory_utilization=0.7),
     "gpu-memory-utilization-range", "gpu-memory-utilization 0.7 is outside 0.80-0.95"),
    ("prod-llama405b-aws", RAYSERVICE, "", drop_fabric, "pp-needs-fast-fabric",
     "pipeline-parallel-size 2 spans nodes, but the GPU pods attach no fabric"),
    ("prod-llama405b-onprem", RAYSERVICE, "", drop_fabric, "pp-needs-fast-fabric",
     "pipeline-parallel-size 2 spans nodes, but the GPU pods attach no fabric"),
    ("prod-llama405b-onprem", RAYSERVICE, "", lambda p: runtime_env(p, {"HF_TOKEN": "hf_x"}), "hf-token-from-secret",
     "runtime_env.env_vars.HF_TOKEN is a literal value"),
    ("prod-llama70b-aws", "aws:eks/cluster:Cluster", "", drop(("vpcConfig", "publicAccessCidrs")),
     "cluster-endpoint-restricted", "public endpoint on and publicAccessCidrs unset"),
    ("prod-llama405b-aws", "aws:ec2/launchTemplate:LaunchTemplate", "gpu", put(("metadataOptions", "httpTokens"),
                                                                                "optional"),
     "imdsv2-required", "metadataOptions.httpTokens is 'optional'"),
    ("prod-llama405b-aws", "aws:ec2/launchTemplate:LaunchTemplate", "system", put((*ROOT_EBS, "encrypted"), "false"),
     "storage-encrypted", "blockDeviceMappings[0] (/dev/xvda): ebs.encrypted is not true"),
    ("prod-llama70b-aws", "aws:efs/fileSystem:FileSystem", "", drop(("encrypted",)), "storage-encrypted",
     "encrypted is not true"),
    ("prod-llama70b-aws", "aws:eks/nodeGroup:NodeGroup", "gpu", drop(("taints",)), "gpu-nodes-tainted",
     "GPU node pool without a nvidia.com/gpu NoSchedule/NoExecute taint"),
    ("prod-qwen72b-gcp", "gcp:container/cluster:Cluster", "", drop(("masterAuthorizedNetworksConfig",)),
     "cluster-endpoint-restricted", "public endpoint with no masterAuthorizedNetworksConfig accepts any address"),
    ("prod-qwen72b-gcp", "gcp:container/cluster:Cluster", "", put(("masterAuthorizedNetworksConfig",
                                                                   "gcpPublicCidrsAccessEnabled"), True),
     "cluster-endpoint-restricted", "gcpPublicCidrsAccessEnabled admits every Google Cloud public IP"),
    ("prod-qwen72b-gcp", "gcp:container/cluster:Cluster", "", put(("privateClusterConfig", "enablePrivateNodes"),
                                                                  False),
     "gke-private-nodes", "privateClusterConfig.enablePrivateNodes is not true"),
    ("prod-qwen72b-gcp", "gcp:container/cluster:Cluster", "", drop(("workloadIdentityConfig",)),
     "gke-workload-identity", "workloadIdentityConfig.workloadPool is unset"),
    ("prod-qwen72b-gcp", "gcp:container/nodePool:NodePool", "gpu", drop(("nodeConfig", "taints")),
     "gpu-nodes-tainted", "GPU node pool without a nvidia.com/gpu NoSchedule/NoExecute taint"),
    ("prod-qwen72b-gcp", "gcp:container/nodePool:NodePool", "gpu", put(("networkConfig", "enablePrivateNodes"),
                                                                       False),
     "gke-private-nodes", "networkConfig.enablePrivateNodes is false"),
    ("prod-qwen72b-gcp", "gcp:container/nodePool:NodePool", "system", put(
        ("nodeConfig", "workloadMetadataConfig", "mode"), "GCE_METADATA"),
     "gke-workload-identity", "nodeConfig.workloadMetadataConfig.mode is 'GCE_METADATA'"),
]


@pytest.mark.parametrize("stack, resource_type, name, mutate, rule, message", CASES,
                         ids=[f"{c[4]}-{c[0]}-{c[1].rsplit(':', 1)[-1]}" for c in CASES])
def test_rule_fires_on_a_broken_planned_resource(stack, resource_type, name, mutate, rule, message):
    resources = stack_resources(stack)
    [i] = [i for i, r in enumerate(resources) if r.type == resource_type and name in r.name]
    target = resources[i]
    props = copy.deepcopy(target.props)
    mutate(props)
    # what the shipped plan already reports (advisories such as a single production replica) is not news
    before = {(v.rule, v.resource) for v in evaluate_resources(list(resources))}
    resources[i] = StackResource(target.type, target.name, props)
    got = [(v.rule, v.resource, v.message.split("; fix:")[0]) for v in evaluate_resources(resources)
           if (v.rule, v.resource) not in before]
    assert [(r, res) for r, res, _ in got] == [(rule, f"{target.name} ({resource_type})")], got
    assert message in got[0][2]


@pytest.mark.parametrize("stack", ["prod-llama70b-aws", "prod-llama405b-onprem"])
def test_pdb_rule_fires_when_a_production_stack_loses_its_pdb(stack):
    before = {(v.rule, v.resource) for v in evaluate_resources(stack_resources(stack))}
    resources = [r for r in stack_resources(stack) if r.type != "kubernetes:policy/v1:PodDisruptionBudget"]
    got = [(v.rule, v.message.split("; fix:")[0]) for v in evaluate_resources(resources)
           if (v.rule, v.resource) not in before]
    assert len(got) == 1 and got[0][0] == "pdb-in-production", got
    assert got[0][1].endswith("in namespace llm has no PodDisruptionBudget")
