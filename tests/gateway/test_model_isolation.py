"""One model without GPUs must not block every model (issue 36): a stockout for one model (quota is not capacity)
fails that model's Deployment await (bounded: its create timeout) alone. So no model's picker or route, and not the
shared AIGatewayRoute, may depend (directly or through anything else) on another model's serving workload; the
shared route waits for no model's Deployment at all, only for the objects it names to exist."""
from __future__ import annotations

import copy
import functools

from components.offline.runner import load_stack_yaml, stack_file
from tests.support.plans import plan_config

DEPLOYMENT = "kubernetes:apps/v1:Deployment"


@functools.lru_cache(maxsize=None)
def _two_models():
    raw = {k.split(":", 1)[1]: v for k, v in load_stack_yaml(stack_file("dev")).items()
           if k.startswith("vllm-platform:")}
    [first] = raw["models"]
    second = {**copy.deepcopy(first), "name": "llama-8b-b"}
    resources, _ = plan_config({**raw, "models": [first, second]})
    return resources


def _closure(resources, name: str) -> set[str]:
    """Every resource `name` waits for, directly or through others (names)."""
    by_key = {f"{r.type}::{r.name}": r for r in resources}
    (start,) = [r for r in resources if r.name == name]
    seen: set[str] = set()
    todo = list(start.dependencies)
    while todo:
        key = todo.pop()
        if key in seen or key not in by_key:
            continue
        seen.add(key)
        todo.extend(by_key[key].dependencies)
    return {k.split("::", 1)[1] for k in seen}


def test_a_models_picker_and_route_wait_for_nothing_of_the_other_models_workload():
    resources = _two_models()
    deployments = {r.name for r in resources if r.type == DEPLOYMENT}
    assert deployments == {"vllm-llama-8b-deployment", "vllm-llama-8b-b-deployment"}
    for own, other in (("llama-8b", "llama-8b-b"), ("llama-8b-b", "llama-8b")):
        for mine in (f"vllm-gateway-{own}-epp", f"vllm-gateway-{own}-route"):
            waits = _closure(resources, mine)
            assert not {n for n in waits if n.startswith(f"vllm-{other}-")}, (mine, sorted(waits))
            assert f"vllm-{own}-deployment" not in waits, (mine, "a route exists before its pods are Ready")


def test_the_shared_route_waits_for_no_models_deployment_but_for_what_it_routes_to():
    resources = _two_models()
    [shared] = [r for r in resources if r.type.endswith(":AIGatewayRoute")]
    waits = _closure(resources, shared.name)
    assert not {n for n in waits if n.endswith("-deployment")}, sorted(waits)
    # the objects it names exist first: both pickers (their InferencePools), the Gateway, its key check
    assert {"vllm-gateway-llama-8b-epp", "vllm-gateway-llama-8b-b-epp", "vllm-gateway-gateway"} <= waits
