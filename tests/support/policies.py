"""Policy rule fixtures: compliant serving objects to mutate, and the verdicts of one rule (the rules' own functions and the Pulumi pack)."""
from __future__ import annotations

import copy

from pulumi_policy import PolicyCustomTimeouts, PolicyResourceOptions, ResourceValidationArgs
from pulumi_policy.proxy import unknown_checking_proxy

from policies.pack import policies
from policies.rules import StackResource, evaluate_resources

POLICIES = {p.name: p for p in policies()}


DEPLOYMENT = "kubernetes:apps/v1:Deployment"


RAYSERVICE = "kubernetes:ray.io/v1:RayService"


_OPTS = PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0), [])


def pack_messages(rule: str, resource_type: str, props: dict) -> list[str]:
    """What the policy reports when the Pulumi engine hands it these inputs (wrapped like the SDK does)."""
    got: list[str] = []
    args = ResourceValidationArgs(resource_type, unknown_checking_proxy(copy.deepcopy(props)),
                                  f"urn:pulumi:test::vllm-platform::{resource_type}::r", "r", _OPTS, None)
    POLICIES[rule].validate(args, lambda message, urn=None: got.append(message))
    return got


def violations(rule: str, resource_type: str, props: dict) -> list[str]:
    """Messages of one rule for one resource; asserts that the pack and the offline plan agree."""
    from_pack = pack_messages(rule, resource_type, props)
    from_plan = [v.message for v in evaluate_resources([StackResource(resource_type, "r", props)]) if v.rule == rule]
    assert from_pack == from_plan
    return from_pack


def vllm_container(**overrides) -> dict:
    c = {
        "name": "vllm", "image": "vllm/vllm-openai:v0.31.0",
        "args": ["meta-llama/Llama-3.1-70B-Instruct", "--tensor-parallel-size", "4", "--pipeline-parallel-size", "1",
                 "--gpu-memory-utilization", "0.90", "--port", "8000"],
        "env": [{"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "HF_TOKEN"}}}],
        "resources": {"requests": {"cpu": "90", "nvidia.com/gpu": "4"}, "limits": {"cpu": "90", "nvidia.com/gpu": "4"}},
        "securityContext": {"privileged": False, "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
        "startupProbe": {"httpGet": {"path": "/health", "port": 8000}, "periodSeconds": 10, "failureThreshold": 90},
    }
    c.update(overrides)
    return c


def deployment(container: dict | None = None, pool: str = "gpu-p5-48xlarge", **spec) -> dict:
    pod = {"containers": [container or vllm_container()],
           "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "10Gi"}}],
           "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
               {"matchExpressions": [{"key": "vllm-platform/gpu-pool", "operator": "In", "values": [pool]}]}]}}}}
    pod.update(spec)
    labels = {"vllm-platform/model": "llama-70b", "vllm-platform/role": "server"}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "llama-70b", "namespace": "llm", "labels": labels},
            "spec": {"replicas": 2, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": pod}}}


def with_container(**overrides) -> dict:
    return deployment(vllm_container(**overrides))


def ray_service(worker: dict | None = None, engine_kwargs: str = "{tensor_parallel_size: 8, pipeline_parallel_size: 2, "
                "gpu_memory_utilization: 0.9}", pool: str = "gpu-p5-48xlarge", head: dict | None = None,
                runtime_env: str = "") -> dict:
    worker = worker or {"name": "ray-worker", "image": "rayproject/ray-llm:2.58.0-py312-cu130",
                        "resources": {"limits": {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32"},
                                      "requests": {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32"}}}
    selector = {"nodeSelector": {"vllm-platform/gpu-pool": pool}}
    serve = ("applications:\n- name: llm\n  import_path: ray.serve.llm:build_openai_app\n  args:\n    llm_configs:\n"
             f"    - model_loading_config: {{model_id: llama-405b}}\n      engine_kwargs: {engine_kwargs}\n{runtime_env}")
    return {"apiVersion": "ray.io/v1", "kind": "RayService",
            "metadata": {"name": "llama-405b", "namespace": "llm"},
            "spec": {"serveConfigV2": serve, "rayClusterConfig": {
                "headGroupSpec": {"template": {"metadata": {"labels": {"vllm-platform/model": "llama-405b"}},
                                               "spec": {"containers": [head or {"name": "ray-head",
                                                        "image": "rayproject/ray-llm:2.58.0-py312-cu130"}]}}},
                "workerGroupSpecs": [{"groupName": "gpu", "replicas": 2, "template": {
                    "metadata": {"labels": {"vllm-platform/model": "llama-405b", "vllm-platform/role": "ray-worker"}},
                    "spec": {"containers": [worker], **selector}}}]}}}

