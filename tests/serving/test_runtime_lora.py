"""engine.lora.runtimeUpdates (docs/lora.md), on the worked stack tests/stacks/Pulumi.lora-runtime-aws.yaml: the pod
turns vLLM's adapter endpoints on, the gateway answers them 403 and never forwards them, the endpoint picker scores
pods on the request's adapter, and the production rule refuses a route that would forward them."""
import dataclasses
import json

import pytest
import yaml

from components.cli import main
from components.offline.render import sanitize
from components.offline.runner import ROOT
from policies.rules import MANDATORY, RULES_BY_NAME, StackResource, evaluate_resources
from tests.support.plans import planned
from tests.test_manifest_schemas import problems

STACK = ROOT / "tests" / "stacks" / "Pulumi.lora-runtime-aws.yaml"
ROUTE = "kubernetes:gateway.networking.k8s.io/v1:HTTPRoute"
NS = "kubernetes:core/v1:Namespace"
RULE = "runtime-lora-endpoints-blocked"


@pytest.fixture(scope="module")
def plan(tmp_path_factory):
    out = tmp_path_factory.mktemp("lora-runtime")
    assert main(["plan", str(STACK), "--out", str(out)]) == 0
    return out


def _manifest(plan, name: str) -> dict:
    return yaml.safe_load((plan / "manifests" / name).read_text())


def test_the_pod_turns_runtime_updates_on_with_the_slots_planned(plan):
    dep = _manifest(plan, "deployment_llm_llama-lora.yaml")
    vllm = next(c for c in dep["spec"]["template"]["spec"]["containers"] if c["name"] == "vllm")
    assert {"name": "VLLM_ALLOW_RUNTIME_LORA_UPDATING", "value": "true"} in vllm["env"]
    args = vllm["args"]
    i = args.index("--enable-lora")
    assert args[i:i + 9] == ["--enable-lora", "--max-loras", "4", "--max-lora-rank", "16", "--max-cpu-loras", "8",
                             "--lora-modules", "support=/models/adapters/support"]


def test_the_plan_says_what_the_slots_cost_and_where_adapters_load(capsys):
    main(["plan", str(STACK)])
    out = capsys.readouterr().out
    assert ("  engine: LoRA 4 x rank 16, 1 adapter(s), runtime load/unload (inside the cluster; the gateway answers "
            "the endpoints 403); memory: LoRA slots 0.31 GiB/GPU, ~2,560 tokens less KV cache per replica") in out


def test_the_route_answers_the_adapter_endpoints_itself(plan):
    route = _manifest(plan, "httproute_llm_llama-lora.yaml")
    assert route["spec"]["rules"][0] == {
        "matches": [{"path": {"type": "PathPrefix", "value": "/llama-lora/v1/load_lora_adapter"}},
                    {"path": {"type": "PathPrefix", "value": "/llama-lora/v1/unload_lora_adapter"}}],
        "filters": [{"type": "ExtensionRef", "extensionRef": {
            "group": "gateway.envoyproxy.io", "kind": "HTTPRouteFilter", "name": "llama-lora-lora-admin"}}]}
    flt = _manifest(plan, "httproutefilter_llm_llama-lora-lora-admin.yaml")
    assert flt["spec"] == {"directResponse": {"statusCode": 403, "contentType": "application/json", "body": {
        "type": "Inline", "inline": '{"error": "adapters are loaded and unloaded inside the cluster, not through the '
                                    'gateway (docs/lora.md)"}'}}}
    assert problems(flt, "1.35") == [] and problems(route, "1.35") == []  # the vendored v1.9.0 / v1.6.1 CRDs


def test_the_picker_scores_pods_on_the_requests_adapter(plan):
    release = yaml.safe_load((plan / "helm" / "vllm-gateway-llama-lora-epp.yaml").read_text())
    epp = release["values"]["router"]["epp"]
    assert epp["pluginsConfigFile"] == "vllm-platform-lora.yaml"
    config = yaml.safe_load(epp["pluginsCustomConfig"]["vllm-platform-lora.yaml"])
    assert {"type": "lora-affinity-scorer"} in config["plugins"]
    assert config["schedulingProfiles"][0]["plugins"] == [
        {"pluginRef": "queue-scorer", "weight": 2}, {"pluginRef": "kv-cache-utilization-scorer", "weight": 2},
        {"pluginRef": "prefix-cache-scorer", "weight": 3}, {"pluginRef": "lora-affinity-scorer", "weight": 1}]
    assert "featureGates" not in config  # flow control stays a scale-to-zero model's


def test_without_runtime_updates_nothing_changes_on_the_route():
    from components.offline.render import manifests
    objs = manifests(planned(str(ROOT / "tests" / "stacks" / "Pulumi.engine-aws.yaml")).resources)
    assert not [n for n, o in objs.items() if o["kind"] == "HTTPRouteFilter"]
    route = next(o for o in objs.values() if o["kind"] == "HTTPRoute" and o["metadata"]["name"] == "qwen-tools")
    assert len(route["spec"]["rules"]) == 1
    dep = next(o for o in objs.values() if o["kind"] == "Deployment" and o["metadata"]["name"] == "qwen-tools")
    env = [e["name"] for c in dep["spec"]["template"]["spec"]["containers"] for e in c.get("env", [])]
    assert "VLLM_ALLOW_RUNTIME_LORA_UPDATING" not in env


def _as_prod(resources) -> list[StackResource]:
    out = []
    for r in resources:
        if not r.custom:
            continue
        props = sanitize(r.inputs)
        if r.type == NS and props.get("metadata", {}).get("name") == "llm":
            props = json.loads(json.dumps(props))
            props["metadata"]["labels"]["vllm-platform/environment"] = "prod"
        out.append(StackResource(r.type, r.name, props))
    return out


def _violations(resources) -> list[str]:
    return [v.message for v in evaluate_resources(resources) if v.rule == RULE]


def test_the_rule_is_mandatory():
    assert RULES_BY_NAME[RULE].level == MANDATORY


def test_the_platforms_route_passes_in_production_and_a_forwarding_one_is_refused():
    resources = _as_prod(planned(str(STACK)).resources)
    assert not _violations(resources)
    stripped = []
    for r in resources:
        if r.type == ROUTE and r.props["metadata"]["name"] == "llama-lora":
            props = json.loads(json.dumps(r.props))
            props["spec"]["rules"] = props["spec"]["rules"][1:]
            r = dataclasses.replace(r, props=props)
        stripped.append(r)
    assert [m.split("; fix:")[0] for m in _violations(stripped)] == [
        "HTTPRoute llm/llama-lora forwards /llama-lora/v1/load_lora_adapter to a vLLM server that loads LoRA adapters "
        "at run time",
        "HTTPRoute llm/llama-lora forwards /llama-lora/v1/unload_lora_adapter to a vLLM server that loads LoRA "
        "adapters at run time"]


def _route(rules: list) -> StackResource:
    return StackResource(ROUTE, "r", {"metadata": {"name": "m", "namespace": "llm"}, "spec": {"rules": rules}})


def _server(env_value: str | None) -> StackResource:
    env = [] if env_value is None else [{"name": "VLLM_ALLOW_RUNTIME_LORA_UPDATING", "value": env_value}]
    c = {"name": "vllm", "image": "vllm/vllm-openai", "args": ["m", "--port", "8000"], "env": env,
         "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    return StackResource("kubernetes:apps/v1:Deployment", "d", {"metadata": {"name": "m", "namespace": "llm"},
                         "spec": {"template": {"metadata": {"labels": {}}, "spec": {"containers": [c]}}}})


NS_PROD = StackResource(NS, "ns", {"metadata": {"name": "llm", "labels": {"vllm-platform/environment": "prod"}}})
CATCH_ALL = {"matches": [{"path": {"type": "PathPrefix", "value": "/"}}], "backendRefs": [{"name": "m"}]}


def test_a_catch_all_route_without_a_rewrite_reaches_vllms_own_paths():
    [load, unload] = _violations([NS_PROD, _server("1"), _route([CATCH_ALL])])
    assert "forwards /v1/load_lora_adapter" in load and "forwards /v1/unload_lora_adapter" in unload
    blocked = {"matches": [{"path": {"type": "Exact", "value": "/v1/load_lora_adapter"}},
                           {"path": {"type": "PathPrefix", "value": "/v1/unload_lora_adapter"}}]}
    assert not _violations([NS_PROD, _server("TRUE"), _route([blocked, CATCH_ALL])])


def test_only_servers_that_turn_the_endpoints_on_and_only_outside_dev():
    assert not _violations([NS_PROD, _server(None), _route([CATCH_ALL])])
    assert not _violations([NS_PROD, _server("0"), _route([CATCH_ALL])])
    dev = StackResource(NS, "ns", {"metadata": {"name": "llm", "labels": {"vllm-platform/environment": "dev"}}})
    assert not _violations([dev, _server("true"), _route([CATCH_ALL])])


def test_a_multi_node_replica_refuses_runtime_updates():
    from components.planning import ray_engine_problem
    from components.config.engine import Engine

    class Dep:
        engine = Engine.model_validate({"lora": {"runtimeUpdates": True}})
        extra_args: dict = {}

    class T:
        multi_node = True
    assert ray_engine_problem(Dep, T) == ("a multi-node replica (Ray Serve LLM) cannot take engine.lora.runtimeUpdates "
                                          "(Serve LLM has no /v1/load_lora_adapter; docs/lora.md)")
