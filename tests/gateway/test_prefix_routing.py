"""Precise prefix-cache routing (gateway.prefixRouting / models[].prefixRouting: precise; docs/prefix-routing.md): the
endpoint picker's plugin file, the vLLM flags on every model pod, the event port the NetworkPolicy opens to the
pickers, the plan's routing line and the refusals where it cannot work. Expectations are upstream's spellings
(llm-d-router v0.10.0, vLLM 0.31.0), written out here."""
from __future__ import annotations

import copy
import json

import pytest
import yaml

from components.config import ConfigError, parse
from components.gateway.objects import ModelRoute
from components.gateway.values import epp_values
from components.offline.runner import load_stack_yaml
from components.serving.network import lws_network_policy_spec, network_policy_spec
from components.wiring import validated_plan
from tests.support.plans import ROOT, by_type, planned

STACK = ROOT / "tests" / "stacks" / "Pulumi.routing-onprem.yaml"
RELEASE = "kubernetes:helm.sh/v3:Release"
NETPOL = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"

EVENTS = ('{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:5557",'
          '"topic":"kv@llama-70b@llama-70b"}')
PICKERS_DIAL_EVENTS = {"from": [{"podSelector": {"matchLabels": {"llm-d-router-gateway": "llama-70b-epp"}}}],
                       "ports": [{"port": 5557, "protocol": "TCP"}]}
PRECISE_PLUGINS = [
    {"type": "token-producer",
     "parameters": {"modelName": "llama-70b", "vllm": {"url": "http://llama-70b.llm.svc.cluster.local:8000",
                                                        "timeout": "1s"}}},
    {"type": "precise-prefix-cache-producer", "parameters": {
        "tokenProcessorConfig": {"blockSize": 16},
        "kvEventsConfig": {"topicFilter": "kv@", "discoverPods": True, "podDiscoveryConfig": {"socketPort": 5557}}}},
    {"type": "queue-scorer"}, {"type": "kv-cache-utilization-scorer"},
    {"type": "prefix-cache-scorer", "parameters": {"prefixMatchInfoProducerName": "precise-prefix-cache-producer"}},
]
DEFAULT_TAIL = [
    {"type": "metrics-data-source", "parameters": {"scheme": "http", "path": "/metrics", "insecureSkipVerify": True}},
    {"type": "core-metrics-extractor"}]
DATA_LAYER = {"sources": [
    {"pluginRef": "metrics-data-source", "extractors": [{"pluginRef": "core-metrics-extractor"}]},
    {"pluginRef": "endpoint-notification-source", "extractors": [{"pluginRef": "precise-prefix-cache-producer"}]}]}
CHART_WEIGHTS = [{"pluginRef": "queue-scorer", "weight": 2}, {"pluginRef": "kv-cache-utilization-scorer", "weight": 2},
                 {"pluginRef": "prefix-cache-scorer", "weight": 3}]


def stack_values(path=STACK) -> dict:
    return {k.split(":", 1)[1]: v for k, v in load_stack_yaml(path).items()}


def refusals(values: dict) -> list[str]:
    with pytest.raises(ConfigError) as e:
        validated_plan(parse(values, {"hfToken"}))
    return e.value.errors


def route(**kw) -> ModelRoute:
    return ModelRoute("llama-70b", "llm", False, {"vllm-platform/model": "llama-70b"}, 8000, **kw)


def picker_file(values: dict) -> tuple[str, dict]:
    epp = values["router"]["epp"]
    name = epp["pluginsConfigFile"]
    return name, yaml.safe_load(epp["pluginsCustomConfig"][name])


# the picker's plugin file

def test_a_precise_picker_indexes_the_pods_kv_events_and_keeps_the_charts_scorers():
    name, config = picker_file(epp_values(route(), {}, precise=True))
    assert name == "vllm-platform-precise-prefix.yaml"
    assert config["plugins"] == [*PRECISE_PLUGINS, *DEFAULT_TAIL, {"type": "endpoint-notification-source"}]
    assert config["dataLayer"] == DATA_LAYER
    assert config["schedulingProfiles"] == [{"name": "default", "plugins": CHART_WEIGHTS}]
    assert "featureGates" not in config and "flowControl" not in config


def test_an_approximate_picker_keeps_the_charts_default_file():
    epp = epp_values(route(), {})["router"]["epp"]
    assert "pluginsConfigFile" not in epp and "pluginsCustomConfig" not in epp


def test_precise_composes_with_flow_control_and_the_lora_scorer():
    name, config = picker_file(epp_values(route(cold_start_s=400, lora=True), {}, precise=True))
    assert name == "vllm-platform-flow-control.yaml"
    assert config["featureGates"] == ["flowControl"]
    assert config["flowControl"] == {"defaultRequestTTL": "270s"}
    assert config["plugins"][:5] == PRECISE_PLUGINS
    assert config["plugins"][5] == {"type": "lora-affinity-scorer"}
    assert config["schedulingProfiles"][0]["plugins"] == [*CHART_WEIGHTS,
                                                          {"pluginRef": "lora-affinity-scorer", "weight": 1}]
    name, config = picker_file(epp_values(route(lora=True), {}))
    assert name == "vllm-platform-lora.yaml"  # approximate LoRA file as before
    assert [p["type"] for p in config["plugins"]][:4] == ["queue-scorer", "kv-cache-utilization-scorer",
                                                         "prefix-cache-scorer", "lora-affinity-scorer"]
    assert "dataLayer" not in config


# the pods' NetworkPolicy

def test_the_pickers_may_dial_the_event_port_and_nobody_else():
    spec = network_policy_spec("llama-70b", False, [], kv_events_port=5557)
    assert spec["ingress"][-1] == PICKERS_DIAL_EVENTS
    assert [r for r in spec["ingress"] if {"port": 5557, "protocol": "TCP"} in r.get("ports", [])] == [
        PICKERS_DIAL_EVENTS]
    lws = lws_network_policy_spec("llama-70b", [], kv_events_port=5557)
    assert lws["ingress"][-1] == PICKERS_DIAL_EVENTS
    assert "5557" not in json.dumps(network_policy_spec("llama-70b", False, []))
    assert "5557" not in json.dumps(lws_network_policy_spec("llama-70b", []))


# the vLLM flags

def test_every_precise_model_pod_publishes_its_events_and_serves_the_render_endpoints():
    args = validated_plan(parse(stack_values(), {"hfToken"}))["llama-70b"].engine.to_cli()
    at = args.index("--kv-events-config")
    assert args[at + 1] == EVENTS
    assert "--enable-scale-out" in args


def test_an_approximate_model_gets_neither_flag():
    values = stack_values()
    values["models"][0]["prefixRouting"] = "approximate"
    args = validated_plan(parse(values, {"hfToken"}))["llama-70b"].engine.to_cli()
    assert "--kv-events-config" not in args and "--enable-scale-out" not in args


# refusals

def test_precise_without_the_prefix_cache_is_refused():
    values = stack_values()
    values["models"][0]["engine"] = {"prefixCaching": False}
    assert refusals(values) == [
        "gateway.prefixRouting: precise for llama-70b, whose prefix cache is off (models[0].engine.prefixCaching: "
        "false): vLLM then caches no prefix and publishes no block events, so there is nothing to route on; remove "
        "engine.prefixCaching or set models[0].prefixRouting: approximate"]


def test_precise_for_a_pd_model_is_refused():
    values = stack_values()
    values["serving"]["disaggregation"] = "on"  # the shape of tests/stacks/Pulumi.pd-onprem.yaml
    values["existing"]["gpuNodes"].update(fabric="infiniband", networkGbps=3200)
    values["models"][0]["sla"].update(ttftMs=5000, promptTokens=16000)
    values["models"][0]["replicas"]["max"] = 6
    (problem,) = refusals(values)
    assert problem.startswith("gateway.prefixRouting: precise for llama-70b, served as prefill and decode instances "
                              "(serving.disaggregation), whose picker decides with the approximate prefix index")


def test_precise_for_a_ray_multi_node_model_is_refused_naming_the_model_field():
    values = stack_values(ROOT / "stacks" / "Pulumi.prod-llama405b-onprem.yaml")  # serving.multiNode: rayservice
    values["models"][0]["prefixRouting"] = "precise"
    (problem,) = refusals(values)
    assert problem.startswith("models[0].prefixRouting: precise for llama-405b, planned as a multi-node RayService "
                              "(serving.multiNode: rayservice")
    assert "there is no endpoint picker for its events to reach" in problem
    assert problem.endswith("or remove models[0].prefixRouting")


def test_precise_for_a_wide_ep_model_is_refused():
    values = stack_values(ROOT / "tests" / "stacks" / "Pulumi.wide-ep-onprem.yaml")
    values["models"][0]["prefixRouting"] = "precise"
    (problem,) = refusals(values)
    assert problem.startswith("models[0].prefixRouting: precise for deepseek-v3, planned as wide-EP "
                              "(models[0].parallelism.mode: wide-ep, DP 16): vLLM publishes each DP rank's KV events "
                              "on its own port")
    assert problem.endswith("it would index about 1/16 of the cache; remove models[0].prefixRouting")


def test_precise_without_the_gateway_is_refused():
    values = stack_values()
    values.update(environment="dev", gateway={"enabled": False, "prefixRouting": "precise"})
    assert refusals(values) == [
        "gateway.prefixRouting: precise needs the gateway (gateway.enabled is false): the endpoint picker is what "
        "reads llama-70b's KV-cache events and routes on them; enable the gateway or set models[0].prefixRouting: "
        "approximate"]


def test_the_flags_precise_sets_are_refused_in_extra_args():
    values = stack_values()
    values["models"][0]["extraArgs"] = {"--enable-scale-out": True}
    assert refusals(values) == [
        "models[0].extraArgs: --enable-scale-out: set by the platform with prefixRouting precise (the render endpoint "
        "the endpoint picker tokenizes with); remove it"]
    values["models"][0]["extraArgs"] = {"--kv-events-config": {"enable_kv_cache_events": True}}
    with pytest.raises(ConfigError) as e:
        parse(values, {"hfToken"})
    assert any("--kv-events-config: set by the platform; use gateway.prefixRouting (precise)" in x
               for x in e.value.errors)


def test_a_bad_value_names_the_field():
    values = stack_values()
    values["gateway"]["prefixRouting"] = "exact"
    with pytest.raises(ConfigError) as e:
        parse(values, {"hfToken"})
    assert any(x.startswith("gateway.prefixRouting") and "approximate" in x for x in e.value.errors)


# the worked stack, planned

@pytest.fixture(scope="module")
def plan():
    return planned(str(STACK))


def test_the_worked_stacks_picker_pods_and_policy_agree(plan):
    resources = plan.resources
    (release,) = [r for r in by_type(resources, RELEASE) if r.inputs["chart"].endswith("/llm-d-router-gateway")]
    values = release.inputs["values"]
    assert values["router"]["epp"]["replicas"] == 2  # production: two leader-elected pickers, each dials every pod
    name, config = picker_file(values)
    assert config["plugins"][:5] == PRECISE_PLUGINS
    (deployment,) = [d for d in by_type(resources, DEPLOYMENT) if d.inputs["metadata"]["name"] == "llama-70b"]
    (container,) = [c for c in deployment.inputs["spec"]["template"]["spec"]["containers"] if "args" in c]
    assert container["args"][container["args"].index("--kv-events-config") + 1] == EVENTS
    (netpol,) = [n for n in by_type(resources, NETPOL) if n.inputs["metadata"]["name"] == "llama-70b"]
    assert PICKERS_DIAL_EVENTS in netpol.inputs["spec"]["ingress"]


def test_the_plan_says_which_scorer_each_model_routes_with(plan):
    from components.outputs import gateway_lines
    gw = plan.exports["gateway"]
    assert gw["prefixRouting"] == {"llama-70b": "precise prefix-cache scorer (vLLM KV-cache events on port 5557, "
                                                "token ids from the model's render endpoint)"}
    assert ("  routing llama-70b: precise prefix-cache scorer (vLLM KV-cache events on port 5557, token ids from "
            "the model's render endpoint)") in gateway_lines(gw)


def test_only_the_models_own_pickers_reach_the_event_port(plan):
    from tests.support.consistency import admitted
    (netpol,) = [n for n in by_type(plan.resources, NETPOL) if n.inputs["metadata"]["name"] == "llama-70b"]
    policy = {"metadata": {"namespace": "llm"}, "spec": netpol.inputs["spec"]}
    own = {"kubernetes.io/metadata.name": "llm"}
    # the chart's EPP pod label (llm-d-router v0.10.0 routerlib _helpers.tpl selectorLabels: <release>-epp)
    assert admitted(policy, {"llm-d-router-gateway": "llama-70b-epp"}, "llm", own, 5557)
    assert not admitted(policy, {"llm-d-router-gateway": "other-epp"}, "llm", own, 5557)
    assert not admitted(policy, {}, "llm", own, 5557)  # the namespace may call the API port, not the events
    assert not admitted(policy, {"llm-d-router-gateway": "llama-70b-epp"}, "gateway",
                        {"kubernetes.io/metadata.name": "gateway"}, 5557)
    assert admitted(policy, {}, "llm", own, 8000)  # the pickers' render calls: the API port
