"""Policy pack over whole stacks: the production PDB rule, every shipped stack against every
mandatory rule, and `plan` failing on a mandatory violation."""
from __future__ import annotations

import copy
import shutil

import pytest
import yaml
from pulumi_policy import PolicyCustomTimeouts, PolicyResource, PolicyResourceOptions, StackValidationArgs
from pulumi_policy.proxy import unknown_checking_proxy

from components.cli import EXIT_POLICY, main
from components.offline.runner import ROOT, stack_file, stack_names
from tests.support.plans import planned
from policies.rules import MANDATORY, StackResource, evaluate_plan, evaluate_resources
from tests.support.policies import DEPLOYMENT, POLICIES, RAYSERVICE, deployment, ray_service

NAMESPACE = "kubernetes:core/v1:Namespace"
PDB = "kubernetes:policy/v1:PodDisruptionBudget"


def namespace(env: str, name: str = "llm") -> StackResource:
    return StackResource(NAMESPACE, f"ns-{name}", {"metadata": {"name": name,
                                                                "labels": {"vllm-platform/environment": env}}})


def pdb(selector: dict | None, ns: str = "llm") -> StackResource:
    return StackResource(PDB, "pdb", {"metadata": {"name": "llama", "namespace": ns},
                                      "spec": {"maxUnavailable": 1, "selector": selector}})


SERVER = {"matchLabels": {"vllm-platform/model": "llama-70b", "vllm-platform/role": "server"}}


def pdb_messages(resources: list[StackResource]) -> list[str]:
    return [f"{v.resource}: {v.message.split('; fix:')[0]}" for v in evaluate_resources(resources)
            if v.rule == "pdb-in-production"]


def pack_stack_messages(resources: list[StackResource]) -> list[tuple[str, str]]:
    """The stack policy as the engine runs it: PolicyResources with proxied props and URNs."""
    opts = PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0), [])
    args = StackValidationArgs([PolicyResource(r.type, unknown_checking_proxy(copy.deepcopy(r.props)),
                                               f"urn:{r.name}", r.name, opts, None, None, [], {}) for r in resources])
    got: list[tuple[str, str]] = []
    POLICIES["pdb-in-production"].validate(args, lambda message, urn=None: got.append((urn, message.split("; fix:")[0])))
    return got


def test_production_serving_workload_without_pdb_is_reported_by_both_callers():
    stack = [namespace("prod"), StackResource(DEPLOYMENT, "llama", deployment())]
    assert pdb_messages(stack) == [
        f"llama ({DEPLOYMENT}): Deployment llama-70b in namespace llm has no PodDisruptionBudget"]
    assert pack_stack_messages(stack) == [("urn:llama", "Deployment llama-70b in namespace llm has no "
                                                        "PodDisruptionBudget")]
    assert pdb_messages(stack + [pdb(SERVER)]) == []
    assert pack_stack_messages(stack + [pdb(SERVER)]) == []


def test_pdb_must_select_the_workloads_pods_in_its_namespace():
    stack = [namespace("prod"), StackResource(DEPLOYMENT, "llama", deployment())]
    other_model = {"matchLabels": {"vllm-platform/model": "qwen-72b"}}
    assert len(pdb_messages(stack + [pdb(other_model)])) == 1
    assert len(pdb_messages(stack + [pdb(SERVER, ns="other")])) == 1
    assert len(pdb_messages(stack + [pdb(None)])) == 1  # no selector selects nothing
    expressions = {"matchExpressions": [{"key": "vllm-platform/model", "operator": "In", "values": ["llama-70b"]},
                                        {"key": "canary", "operator": "DoesNotExist"}]}
    assert pdb_messages(stack + [pdb(expressions)]) == []


def test_pdb_is_not_required_outside_production():
    assert pdb_messages([namespace("dev"), StackResource(DEPLOYMENT, "llama", deployment())]) == []
    assert pdb_messages([namespace("staging"), StackResource(DEPLOYMENT, "llama", deployment())]) == []
    # A namespace the stack does not create: the workload's own label decides.
    labelled = deployment()
    labelled["metadata"]["labels"]["vllm-platform/environment"] = "prod"
    assert len(pdb_messages([StackResource(DEPLOYMENT, "llama", labelled)])) == 1


def test_a_non_serving_workload_needs_no_pdb():
    job = StackResource("kubernetes:batch/v1:Job", "prefetch", {"metadata": {"name": "p", "namespace": "llm"}, "spec": {
        "template": {"spec": {"containers": [{"name": "dl", "image": "python:3.12.8"}]}}}})
    assert pdb_messages([namespace("prod"), job]) == []


def test_ray_service_pdb_may_select_kuberay_pod_labels():
    stack = [namespace("prod"), StackResource(RAYSERVICE, "llama-405b", ray_service())]
    assert len(pdb_messages(stack)) == 1
    workers = {"matchLabels": {"vllm-platform/model": "llama-405b", "ray.io/node-type": "worker"}}
    assert pdb_messages(stack + [pdb(workers)]) == []


@pytest.mark.parametrize("stack", stack_names())
def test_shipped_stack_passes_every_mandatory_rule(stack):
    result = planned(stack)
    mandatory = [f"{v.rule}: {v.resource}: {v.message}" for v in evaluate_plan(result) if v.level == MANDATORY]
    assert mandatory == []
    # The rules really looked at this stack's workloads.
    workloads = [r for r in result.resources if r.type in (DEPLOYMENT, RAYSERVICE)]
    assert workloads, f"{stack} plans no vLLM workload"


def test_plan_prints_verdicts_and_exits_non_zero_on_a_mandatory_violation(tmp_path, capsys, monkeypatch):
    # The schema refuses 0.96 itself (config/bounds.py, tests/test_contract.py); widen its bound here so that
    # the value reaches the pack, whose copy of the bound (policies/rules/facts.py) still refuses it.
    monkeypatch.setattr("components.config.bounds.GPU_MEMORY_UTILIZATION_RANGE", (0.5, 0.99))
    raw = yaml.safe_load(stack_file("dev").read_text())
    raw["config"]["vllm-platform:models"][0]["gpuMemoryUtilization"] = 0.96
    path = tmp_path / "Pulumi.policy-violation.yaml"
    path.write_text(yaml.safe_dump(raw))
    try:
        code = main(["plan", str(path)])
    finally:
        shutil.rmtree(ROOT / "build" / "policy-violation", ignore_errors=True)
    out = capsys.readouterr().out
    assert code == EXIT_POLICY == 4  # the exit code README and the CI plan step document
    assert ("policy mandatory: gpu-memory-utilization-range: vllm-llama-8b-deployment "
            "(kubernetes:apps/v1:Deployment): container vllm: gpu-memory-utilization 0.96 is outside 0.80-0.95") in out


# --- single replica in production (advisory) ----------------------------------------------------------------

SCALEDOBJECT = "kubernetes:keda.sh/v1alpha1:ScaledObject"


def scaled_object(min_count: int | None, target: str = "llama-70b", ns: str = "llm") -> StackResource:
    spec = {"scaleTargetRef": {"name": target}, "maxReplicaCount": 4}
    if min_count is not None:
        spec["minReplicaCount"] = min_count
    return StackResource(SCALEDOBJECT, "so", {"metadata": {"name": target, "namespace": ns}, "spec": spec})


def single_replica_messages(resources: list[StackResource]) -> list[str]:
    return [v.message.split("; fix:")[0] for v in evaluate_resources(resources)
            if v.rule == "single-replica-in-production"]


def test_a_production_model_that_may_shrink_to_one_replica_is_reported():
    dep = StackResource(DEPLOYMENT, "llama", deployment())  # spec.replicas 2
    assert single_replica_messages([namespace("prod"), dep]) == []
    # KEDA owns the replica count where a ScaledObject targets the Deployment (its default minimum is 0)
    assert single_replica_messages([namespace("prod"), dep, scaled_object(1)]) == [
        "Deployment llama-70b in production may run a single replica (minimum 1)"]
    assert single_replica_messages([namespace("prod"), dep, scaled_object(None)]) == [
        "Deployment llama-70b in production may run a single replica (minimum 0)"]
    assert single_replica_messages([namespace("prod"), dep, scaled_object(2)]) == []
    assert single_replica_messages([namespace("staging"), dep, scaled_object(1)]) == []
    # Serve LLM's autoscaling min_replicas, default 1
    ray = StackResource(RAYSERVICE, "ray", ray_service())
    assert single_replica_messages([namespace("prod"), ray]) == [
        "RayService llama-405b model llama-405b in production may run a single replica (minimum 1)"]
    from policies.rules import RULES_BY_NAME
    assert RULES_BY_NAME["single-replica-in-production"].level != MANDATORY


def test_shipped_single_replica_production_stacks_are_reported():
    got = {s: [v.message.split("; fix:")[0] for v in evaluate_plan(planned(s)) if v.rule == "single-replica-in-production"]
           for s in stack_names()}
    assert got == {
        # the fp8 405B stack sets replicas.min 2 (two whole-node replicas), so it is not reported
        "dev": [], "prod-llama70b-aws": [], "prod-qwen72b-gcp": [], "prod-llama405b-fp8-h200-aws": [],
        "prod-llama405b-aws": ["RayService llama-405b model llama-405b in production may run a single replica "
                               "(minimum 1)"],
        "prod-llama405b-onprem": ["RayService llama-405b model llama-405b in production may run a single "
                                  "replica (minimum 1)"]}
