"""One contract at each door: components take typed arguments of their own (only platform.py and the pure
builders it calls read StackConfig); validation happens once, before any resource, and names every problem's
field; a value the configuration accepts can never fail a mandatory policy later."""
from __future__ import annotations

import ast
import json
from pathlib import Path

import pulumi
import pytest

from components.config import ConfigError, parse
from components.planner import NoFeasibleTopology
from components.wiring import validated_plan
from policies.rules import MANDATORY, RULES_BY_NAME

ROOT = Path(__file__).resolve().parents[1]
EKS_CLUSTER = "aws:eks/cluster:Cluster"
GKE_CLUSTER = "gcp:container/cluster:Cluster"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"

EXISTING = {"cloud": "existing",
            "existing": {"gpuNodes": {"accelerator": "h100", "gpusPerNode": 8, "vcpu": 96, "ramGib": 1000},
                         "blockStorageClass": "fast-block"},
            "modelCache": {"storageClass": "nfs-client"}}
AWS = {"cloud": "aws", "aws": {"region": "us-east-1", "endpointPublicAccessCidrs": ["203.0.113.7/32"]}}
GCP = {"cloud": "gcp", "gcp": {"project": "ml-prod-123", "region": "us-central1", "zone": "us-central1-a",
                               "kubeconfigEndpoint": "dns"}}


def model(**kw) -> dict:
    return {"name": "chat", "model": "llama-3.1-8b", **kw}


def config_errors(values: dict) -> list[str]:
    try:
        parse(values, {"hfToken"})
    except ConfigError as e:
        return e.errors
    return []


def violations(rule: str, resource_type: str, props: dict) -> list[str]:
    return list(RULES_BY_NAME[rule].messages(resource_type, props))


def vllm_deployment(*flags: str, image: str = "vllm/vllm-openai:v0.31.0") -> dict:
    container = {"name": "vllm", "image": image, "command": ["vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct",
                                                              *flags]}
    return {"spec": {"template": {"spec": {"containers": [container]}}}}


# --- which mandatory policies a stack file can reach ------------------------------------------------------------

# Every mandatory rule of the pack is one or the other; a new mandatory rule fails this file until it is placed.
REACHED_BY_CONFIG = {
    "gpu-memory-utilization-range": "models[].gpuMemoryUtilization (config/bounds.py)",
    "cluster-endpoint-restricted": "aws.endpointPublicAccessCidrs, gcp.masterAuthorizedNetworks (config/bounds.py)",
    "image-tag-pinned": "serving.rayImage",
    "tp-within-node": "models[].tensorParallelSize against the GPUs per node: a plan refusal",
    "pp-needs-fast-fabric": "a replica spanning nodes without a fast fabric: a plan refusal",
    "lws-wide-ep-rdma": "models[].parallelism.all2allBackend deepep_* on a fabric without RDMA verbs: a plan "
                        "refusal (planner/wide_ep.py FABRIC_EP)",
    "gateway-auth-outside-dev": "gateway.enabled / gateway.auth outside dev (config/gateway.py check_gateway)",
    "no-scale-to-zero-in-production": "models[].replicas.min 0 in production (wiring.scale_to_zero_problems)",
    "latency-margin-in-production": "planning.latencyMargin below the calibration's on an estimated knee in "
                                    "production (planner/measured.py production_problems)",
}
BY_CONSTRUCTION = {  # no stack key reaches the property the rule reads; every shipped stack passes them
    "imdsv2-required": "cluster/aws/node_pools.py launch template: httpTokens required, hop limit fixed",
    "storage-encrypted": "EBS / EFS / Filestore built encrypted; no key for it",
    "gke-private-nodes": "cluster/gcp/node_pools.py: enable_private_nodes on every pool",
    "gke-workload-identity": "cluster/gcp: the workload identity pool, GKE_METADATA on every pool",
    "gpu-nodes-tainted": "cluster/pools.py GPU_TAINT on every GPU pool",
    "pdb-in-production": "serving/service.py: a PodDisruptionBudget per model, always",
    "gpu-requests-equal-limits": "serving/pods.py: GPU requests = limits",
    "shm-memory-backed": "serving/pods.py: /dev/shm as a memory emptyDir",
    "no-privileged-containers": "serving and cache pods run unprivileged (serving/k8s.py)",
    "no-added-capabilities": "serving/fabric.py: only IPC_LOCK, only beside an RDMA device",
    "vllm-startup-probe": "serving/probes.py: every budget >= MIN_BUDGET_S, the pack's MIN_STARTUP_BUDGET_S",
    "lws-gang-restart": "serving/lws.py RESTART_POLICY: every LeaderWorkerSet recreates its group; no key sets it",
    "lws-startup-leader-created": "serving/lws.py STARTUP_POLICY LeaderCreated; no key sets it",
    "pd-rdma-in-production": "planner/disagg.py production_problems: production P/D needs an RDMA fabric",
    "runtime-lora-endpoints-blocked": "serving/runtime_lora.py: the model's route answers the adapter endpoints 403",
    "hf-token-from-secret": "the token only travels as the hf-token Secret (platform.py)",
    "keda-target-scalable": "serving/autoscaling.py targets the Deployment it made",
    "keda-replica-bounds": "config Replicas._order (min <= max) and planner/disagg.py pool_bounds (each pool's max "
                           ">= its planned instances)",
    "pd-pools-autoscaled-in-production": "serving/service.py: every P/D Deployment gets its pool's ScaledObject",
    "objective-header-from-gateway": "gateway/priority.py: a pool with tiered objectives gets the Lua filter that "
                                     "drops both objective headers on every route to it",
    "vllm-current-cli": "planner/vllm_args.py: flags of the pinned vLLM",
}


def test_every_mandatory_rule_is_placed_once():
    mandatory = {name for name, r in RULES_BY_NAME.items() if r.level == MANDATORY}
    assert not REACHED_BY_CONFIG.keys() & BY_CONSTRUCTION.keys()
    assert REACHED_BY_CONFIG.keys() | BY_CONSTRUCTION.keys() == mandatory


@pytest.mark.parametrize("value", [round(0.50 + i / 100, 2) for i in range(50)])
def test_gpu_memory_utilization_the_config_accepts_is_what_the_policy_accepts(value):
    errs = config_errors({**EXISTING, "models": [model(gpuMemoryUtilization=value)]})
    refused = violations("gpu-memory-utilization-range", DEPLOYMENT,
                         vllm_deployment("--gpu-memory-utilization", str(value)))
    assert bool(errs) == bool(refused), (value, errs, refused)
    if errs:
        (e,) = errs
        assert e.startswith(f"models[0].gpuMemoryUtilization: {value:g} is outside 0.80-0.95")
        assert "policy gpu-memory-utilization-range" in e


def test_the_bounds_at_both_ends_are_accepted_by_both():
    assert config_errors({**EXISTING, "models": [model(gpuMemoryUtilization=0.80),
                                                  model(name="b", gpuMemoryUtilization=0.95)]}) == []
    assert config_errors({**EXISTING, "models": [model(gpuMemoryUtilization=0.79)]}) == [
        "models[0].gpuMemoryUtilization: 0.79 is outside 0.80-0.95 (wastes KV-cache memory; policy "
        "gpu-memory-utilization-range); set it between 0.80 and 0.95 (0.90 is the default)"]


CIDR_LISTS = [["0.0.0.0/0"], ["203.0.113.7/32", "0.0.0.0/0"], ["203.0.113.7/32"], ["10.0.0.0/8"],
              ["198.51.100.0/24", "203.0.113.0/24"]]


@pytest.mark.parametrize("cidrs", CIDR_LISTS)
def test_eks_public_endpoint_the_config_accepts_is_what_the_policy_accepts(cidrs):
    errs = config_errors({**AWS, "aws": {**AWS["aws"], "endpointPublicAccessCidrs": cidrs}, "models": [model()]})
    refused = violations("cluster-endpoint-restricted", EKS_CLUSTER,
                         {"vpcConfig": {"endpointPublicAccess": True, "publicAccessCidrs": cidrs}})
    assert bool(errs) == bool(refused), (cidrs, errs, refused)
    if errs:
        assert errs == ["aws.endpointPublicAccessCidrs: 0.0.0.0/0 opens the Kubernetes API to the whole internet "
                        "(policy cluster-endpoint-restricted); list the CIDRs `pulumi up` runs from, e.g. "
                        "203.0.113.7/32"]


@pytest.mark.parametrize("cidrs", [*CIDR_LISTS, ["::/0"]])
def test_gke_authorized_networks_the_config_accepts_are_what_the_policy_accepts(cidrs):
    errs = config_errors({**GCP, "gcp": {**GCP["gcp"], "masterAuthorizedNetworks": cidrs}, "models": [model()]})
    refused = violations("cluster-endpoint-restricted", GKE_CLUSTER, {
        "privateClusterConfig": {"enablePrivateEndpoint": False},
        "masterAuthorizedNetworksConfig": {"cidrBlocks": [{"cidrBlock": c} for c in cidrs]}})
    assert bool(errs) == bool(refused), (cidrs, errs, refused)
    if errs:
        (e,) = errs
        assert e.startswith("gcp.masterAuthorizedNetworks: ") and "policy cluster-endpoint-restricted" in e


@pytest.mark.parametrize("image", [
    "rayproject/ray-llm:latest", "rayproject/ray-llm", "registry.example:5000/ray-llm",
    "registry.example:5000/ray-llm:2.49.0", "rayproject/ray-llm:2.49.0-py311-cu128",
    "rayproject/ray-llm@sha256:" + "a" * 64])
def test_ray_image_the_config_accepts_is_what_the_policy_accepts(image):
    errs = config_errors({**EXISTING, "serving": {"rayImage": image}, "models": [model()]})
    refused = violations("image-tag-pinned", DEPLOYMENT, vllm_deployment(image=image))
    assert bool(errs) == bool(refused), (image, errs, refused)
    if errs:
        assert errs == [f"serving.rayImage: {image!r} is not pinned; give a tag other than latest, or a digest"]


def test_tensor_parallel_beyond_a_node_is_a_plan_refusal_naming_the_model():
    cfg = parse({**EXISTING, "existing": {**EXISTING["existing"], "gpuNodes": {
        "accelerator": "h100", "gpusPerNode": 4, "vcpu": 96, "ramGib": 1000}},
        "models": [model(name="tp", model="llama-3.1-70b", tensorParallelSize=8)]}, {"hfToken"})
    with pytest.raises(NoFeasibleTopology) as e:
        validated_plan(cfg)
    assert e.value.message.startswith("models[0] (tp): ")
    assert "tp-gpus-per-node: TP 8 > 4 GPUs" in e.value.message


def test_a_replica_across_nodes_without_a_network_is_a_plan_refusal():
    # PP over Ethernet is planned when it meets the SLA (docs/capacity.md); nodes with no network are refused
    cfg = parse({**EXISTING, "existing": {**EXISTING["existing"], "gpuNodes": {
        "accelerator": "h100", "gpusPerNode": 8, "vcpu": 96, "ramGib": 1000, "fabric": "none"}},
        "addons": {"fabric": {"enabled": False}},
        "models": [model(name="big", model="llama-3.1-405b")]}, {"hfToken"})
    with pytest.raises(NoFeasibleTopology) as e:
        validated_plan(cfg)
    assert e.value.message.startswith("models[0] (big): Llama-3.1-405B bf16: bound by memory: ")
    assert ("\n  Llama-3.1-405B bf16 needs 754 GiB of weights; on h100 the most is 8 x 71.3 GiB per node and h100 "
            "nodes have no network between them for PP") in e.value.message
    assert "needs a network between them; existing-h100x8 has no network fabric" in str(e.value.refusals)


def test_the_schema_reports_its_problems_and_the_policy_bounds_at_once():
    errs = config_errors({**AWS, "aws": {**AWS["aws"], "endpointPublicAccessCidrs": ["0.0.0.0/0"]},
                          "namespace": "Bad_NS", "models": [model(gpuMemoryUtilization=0.6, colour="red")]})
    assert [e.split(":", 1)[0] for e in errs] == ["namespace", "aws.endpointPublicAccessCidrs",
                                                  "models[0].gpuMemoryUtilization", "models[0].colour"]


# --- one validation pass, before any resource -----------------------------------------------------------------

MANY_PROBLEMS = {
    "cloud": "aws", "cluster": {"kubernetesVersion": "1.20"},
    "aws": {"region": "us-east-1", "endpointPublicAccessCidrs": ["203.0.113.7/32"], "capacityType": "reservation",
            "capacityReservations": {"p5.48xlarge": "cr-0123456789abcdef0"}},
    "modelCache": {"loader": "runai-streamer"},
    "models": [model(name="small", accelerator="l4"), model(name="big", model="llama-3.1-405b", accelerator="a10g"),
               model(name="huge", model="llama-3.1-405b", accelerator="h100")],
}
EVERY_PROBLEM = [
    "cluster.kubernetesVersion: 1.20 has no pinned Cluster Autoscaler release; allowed: 1.33, 1.34, 1.35, 1.36",
    # small: the 8B model at its full 128K context on L4 is TP 2 on one g6.12xlarge (PP 2 over two g6.xlarge's
    # Ethernet would be cheaper, but PP over Ethernet is a last resort), so only huge is multi-node
    "aws.capacityReservations: no reservation for planned instance type g6.12xlarge (small); add `g6.12xlarge: cr-...`",
    "modelCache.loader: runai-streamer needs the runai-model-streamer package, which the vLLM image carries but the "
    "Ray Serve LLM image of multi-node model(s) huge does not; use auto or eager",
    "models[1] (big): no topology fits: Llama-3.1-405B bf16: bound by TPOT: ",
    "  Llama-3.1-405B bf16 needs 754 GiB of weights; on a10g",
]


def test_every_problem_of_every_layer_in_one_error():
    with pytest.raises(ConfigError) as e:
        validated_plan(parse(MANY_PROBLEMS, {"hfToken"}))
    text = "\n".join(e.value.errors)
    for line in EVERY_PROBLEM:
        assert line in text


def test_a_node_local_cache_without_nvme_is_refused_before_the_cluster_exists():
    cfg = parse({**EXISTING, "modelCache": {"kind": "nvme"}, "models": [model()]}, {"hfToken"})
    with pytest.raises(ConfigError) as e:
        validated_plan(cfg)
    assert e.value.errors == ["modelCache.kind: nvme needs local NVMe on the GPU nodes, and existing-h100x8 "
                              "(model chat) has none mounted; use kind rwx"]
    aws = parse({**AWS, "modelCache": {"kind": "nvme"}, "models": [model(instanceTypes=["g6e.xlarge"])]}, {"hfToken"})
    assert validated_plan(aws)["chat"].instance_type == "g6e.xlarge"  # 250 GB of instance-store NVMe


def test_every_refused_model_is_named_not_only_the_first():
    cfg = parse({**EXISTING, "models": [model(name="a", model="llama-3.1-405b", accelerator="h100"),
                                        model(name="ok"),
                                        model(name="b", model="deepseek-v3")]}, {"hfToken"})
    with pytest.raises(NoFeasibleTopology) as e:
        validated_plan(cfg)
    lines = [line for line in e.value.message.splitlines() if line.lstrip().startswith("models[")]
    assert [line.strip().split(":", 1)[0] for line in lines] == ["models[0] (a)", "models[2] (b)"]


class _Counting(pulumi.runtime.Mocks):
    def __init__(self):
        self.registered = []

    def new_resource(self, args):
        self.registered.append(args.typ)
        return args.name + "_id", args.inputs

    def call(self, args):
        return {}


def test_platform_refuses_before_registering_any_resource():
    from components import Platform, PlatformArgs

    mocks = _Counting()
    pulumi.runtime.set_mocks(mocks, project="vllm-platform", stack="contract", preview=False)
    with pytest.raises(pulumi.RunError) as e:
        Platform("x", PlatformArgs(config=MANY_PROBLEMS, hf_token="hf_x"))
    assert isinstance(e.value.__cause__, ConfigError)
    for line in EVERY_PROBLEM:
        assert line in str(e.value)
    assert mocks.registered == []


def test_plan_exits_2_with_every_problem_and_no_traceback(tmp_path, capsys):
    from components.cli import main

    stack = tmp_path / "Pulumi.many.yaml"
    stack.write_text(json.dumps({"config": {f"vllm-platform:{k}": v for k, v in MANY_PROBLEMS.items()}}))
    assert main(["plan", str(stack), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    for line in EVERY_PROBLEM:
        assert line in err
    assert "Traceback" not in err


# --- typed arguments of their own ------------------------------------------------------------------------------

# The modules that may name StackConfig in code: the schema and its loader, the top of the program (Platform and
# the pure builders it calls), the library's edge that parses a config dict, and the provider's entry point.
READS_STACK_CONFIG = {"config/__init__.py", "config/load.py", "config/schema.py", "platform.py", "planning.py",
                      "costs/bill.py", "wiring.py", "library.py", "providers.py", "__init__.py"}


def _names_stack_config(path: Path) -> bool:
    """Whether the module's code (not its docstrings) names StackConfig: an import, a name, an attribute."""
    return any(isinstance(node, ast.Name) and node.id == "StackConfig" or
               isinstance(node, ast.alias) and node.name == "StackConfig" or
               isinstance(node, ast.Attribute) and node.attr == "StackConfig"
               for node in ast.walk(ast.parse(path.read_text())))


def test_no_component_reads_stack_config():
    components = ROOT / "components"
    readers = {str(p.relative_to(components)) for p in components.rglob("*.py") if _names_stack_config(p)}
    assert readers <= READS_STACK_CONFIG, sorted(readers - READS_STACK_CONFIG)
    for module in ("cache/component.py", "serving/service.py", "cluster/existing.py", "cluster/aws/component.py",
                   "cluster/gcp/component.py", "cluster/gcp/node_pools.py", "outputs.py"):
        assert module not in readers


def test_the_components_take_their_own_argument_classes():
    import inspect

    from components.cache.component import ModelCache, ModelCacheArgs
    from components.cluster.aws.component import AwsClusterArgs, AwsGpuCluster
    from components.cluster.existing import ExistingCluster, ExistingClusterArgs
    from components.cluster.gcp.component import GcpClusterArgs, GcpGpuCluster
    from components.gateway import GatewayArgs, InferenceGateway
    from components.serving.service import ServingArgs, VllmService

    for component, args in ((AwsGpuCluster, AwsClusterArgs), (GcpGpuCluster, GcpClusterArgs),
                            (ExistingCluster, ExistingClusterArgs), (ModelCache, ModelCacheArgs),
                            (VllmService, ServingArgs), (InferenceGateway, GatewayArgs)):
        (param,) = [p for p in inspect.signature(component.__init__).parameters.values() if p.name == "args"]
        assert param.annotation in (args, args.__name__), component


def test_wiring_builds_each_components_arguments_from_one_config():
    from components.cluster.aws.component import AwsClusterArgs
    from components.cluster.gcp.component import GcpClusterArgs
    from components.planning import plan_stack
    from components.wiring import cache_args, cluster_args, serving_args

    # TPOT 120 ms (was the default 100): under the 35 % planning margin one L4 holds 2 users at 100 ms, so the
    # default 16 users would need 8 g6.xlarge replicas, over replicas.max 4
    cfg = parse({**AWS, "environment": "prod", "namespace": "llm",
                 "models": [model(revision="0" * 40, instanceTypes=["g6.xlarge"], maxModelLen=8192,
                                  replicas={"min": 2, "max": 4}, sla={"tpotMs": 120})]},
                {"hfToken"})
    topologies = plan_stack(cfg)
    aws = cluster_args(cfg, topologies, provider_config={"profile": "prod"})
    assert isinstance(aws, AwsClusterArgs) and aws.production and aws.provider_config == {"profile": "prod"}
    assert [p.name for p in aws.pools] == ["gpu-g6-xlarge"] and aws.pool_models == {"gpu-g6-xlarge": "llama-3.1-8b"}
    cache = cache_args(cfg, topologies)
    assert (cache.namespace, cache.revisions) == ("llm", {"meta-llama/Llama-3.1-8B-Instruct": "0" * 40})
    serving = serving_args(cfg)
    assert (serving.namespace, serving.production) == ("llm", True)
    assert (serving.gateway, serving.api_key_client) == (True, None)  # the gateway checks the keys
    dev = serving_args(parse({**AWS, "gateway": {"enabled": False, "clients": ["team-a", "team-b"]},
                              "models": [model()]}, {"hfToken"}))
    assert (dev.gateway, dev.api_key_client) == (False, "team-a")  # no gateway: vLLM checks team-a's key
    gcp_cfg = parse({**GCP, "models": [model()]}, {"hfToken"})
    gcp = cluster_args(gcp_cfg, plan_stack(gcp_cfg))
    assert isinstance(gcp, GcpClusterArgs) and gcp.cache_gib == 30 and not gcp.production
