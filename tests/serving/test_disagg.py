"""The worked P/D example (tests/stacks/Pulumi.pd-aws-p5.yaml, docs/disaggregation.md): what it renders, pinned
literally, and that every object and Helm value validates like a shipped stack's.

Since the class margins (dense 10 %) and the p90 default, the stack's own `disaggregation: auto` keeps it aggregated
(P/D 6 nodes vs 5, under the 10 % it must save), so the rendering tests plan a copy with `serving.disaggregation: on`
(the same 10 prefill + 2 decode TP 4 fleet on 6 x p5.48xlarge), and the choice test a copy whose shorter answers
make auto choose P/D."""
from __future__ import annotations

import copy
import dataclasses
import functools
import json
from pathlib import Path
from types import SimpleNamespace

import yaml

from components.gateway.disagg import pd_config
from components.serving.disagg import SIDECAR_ARGS, kv_transfer_config
from components.upstream.versions import PD_SIDECAR_IMAGE
from components.offline.runner import load_stack_yaml
from tests.support.plans import manifests, plan_config, planned
from tests.test_helm_values import _key, releases, unknown_keys
from tests.test_manifest_schemas import _plain, problems

STACK = Path(__file__).resolve().parents[1] / "stacks" / "Pulumi.pd-aws-p5.yaml"


def _values() -> dict:
    raw = load_stack_yaml(STACK)
    return copy.deepcopy({k.split(":", 1)[1]: v for k, v in raw.items()})


@functools.lru_cache(maxsize=None)
def _pd():
    """The worked stack with serving.disaggregation: on: auto no longer picks P/D for it (6 vs 5 nodes at the
    dense 10 % margin and p90), and these tests are about what a P/D fleet renders."""
    values = _values()
    values["serving"] = {**values["serving"], "disaggregation": "on"}
    resources, exports = plan_config(values, stack="pd-aws-p5")
    return SimpleNamespace(resources=resources, exports=exports)


@functools.lru_cache(maxsize=None)
def _pd_auto():
    """The worked stack (auto) with 100-token answers: decode-light, so P/D saves more than 10 % and auto picks it."""
    values = _values()
    (model,) = values["models"]
    values["models"] = [{**model, "sla": {**model["sla"], "outputTokens": 100}}]
    resources, exports = plan_config(values, stack="pd-aws-p5")
    return SimpleNamespace(resources=resources, exports=exports)


def _objects() -> dict[str, dict]:
    return manifests([dataclasses.replace(r, inputs=_plain(r.inputs)) for r in _pd().resources])


def _deployment(role: str) -> dict:
    return next(o for o in _objects().values() if o["kind"] == "Deployment"
                and o["metadata"]["name"] == f"llama-70b-{role}")


def _vllm(pod: dict) -> dict:
    return next(c for c in pod["containers"] if c["name"] == "vllm")


def _env(c: dict) -> dict:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in c["env"]}


def test_kv_transfer_config_literal():
    assert json.dumps(kv_transfer_config(), separators=(",", ":")) == \
        '{"kv_connector":"NixlConnector","kv_role":"kv_both"}'
    assert json.dumps(kv_transfer_config("LIBFABRIC"), separators=(",", ":")) == \
        '{"kv_connector":"NixlConnector","kv_role":"kv_both","kv_connector_extra_config":{"backends":["LIBFABRIC"]}}'


def test_sidecar_literal():
    assert SIDECAR_ARGS == ("--port=8000", "--model-server-port=8200", "--kv-connector=nixlv2", "--secure-proxy=false")
    assert PD_SIDECAR_IMAGE == "ghcr.io/llm-d/llm-d-router-disagg-sidecar:v0.10.0"


def test_decode_pods_run_the_sidecar_in_front_of_vllm():
    d = _deployment("decode")
    assert d["spec"]["selector"]["matchLabels"] == {"vllm-platform/model": "llama-70b", "vllm-platform/role": "server",
                                                    "llm-d.ai/role": "decode"}
    pod = d["spec"]["template"]["spec"]
    assert d["spec"]["template"]["metadata"]["labels"]["llm-d.ai/role"] == "decode"
    sidecar = pod["initContainers"][-1]
    assert (sidecar["name"], sidecar["image"], sidecar["restartPolicy"], sidecar["args"]) == (
        "routing-sidecar", "ghcr.io/llm-d/llm-d-router-disagg-sidecar:v0.10.0", "Always",
        ["--port=8000", "--model-server-port=8200", "--kv-connector=nixlv2", "--secure-proxy=false"])
    assert sidecar["ports"] == [{"name": "http", "containerPort": 8000, "protocol": "TCP"}]
    vllm = _vllm(pod)
    args = vllm["args"]
    assert args[args.index("--port") + 1] == "8200"
    assert args[args.index("--kv-transfer-config") + 1] == (
        '{"kv_connector":"NixlConnector","kv_role":"kv_both","kv_connector_extra_config":{"backends":["LIBFABRIC"]}}')
    assert [p["containerPort"] for p in vllm["ports"]] == [8200, 5600]
    assert vllm["readinessProbe"]["httpGet"]["port"] == "engine"
    env = _env(vllm)
    assert env["VLLM_NIXL_SIDE_CHANNEL_HOST"] == {"fieldRef": {"fieldPath": "status.podIP"}}
    assert (env["VLLM_NIXL_SIDE_CHANNEL_PORT"], env["FI_EFA_USE_HUGE_PAGE"], env["FI_EFA_FORK_SAFE"],
            env["FI_PROVIDER"]) == ("5600", "0", "1", "efa")
    assert vllm["image"] == "public.ecr.aws/deep-learning-containers/vllm:0.31.0-gpu-py312-cu130-ubuntu24.04-ec2"
    # TP 4 of a p5's 8 GPUs: half its 32 EFA interfaces; the sidecar's CPU and memory come out of vLLM's share
    limits = vllm["resources"]["limits"]
    assert (limits["vpc.amazonaws.com/efa"], limits["nvidia.com/gpu"], limits["cpu"]) == ("16", "4", "92")
    assert vllm["securityContext"]["capabilities"] == {"drop": ["ALL"], "add": ["IPC_LOCK"]}


def test_prefill_pods_serve_on_the_pool_port_without_a_sidecar():
    d = _deployment("prefill")
    pod = d["spec"]["template"]["spec"]
    assert d["spec"]["template"]["metadata"]["labels"]["llm-d.ai/role"] == "prefill"
    assert all(c["name"] != "routing-sidecar" for c in pod["initContainers"])
    vllm = _vllm(pod)
    assert vllm["args"][vllm["args"].index("--port") + 1] == "8000"
    assert [p["containerPort"] for p in vllm["ports"]] == [8000, 5600]
    assert _vllm(pod)["resources"]["limits"]["cpu"] == "93"


def test_pods_of_the_model_reach_each_other_and_each_pool_has_its_scaledobject():
    objs = _objects().values()
    netpol = next(o for o in objs if o["kind"] == "NetworkPolicy" and o["metadata"]["name"] == "llama-70b")
    assert netpol["spec"]["ingress"][0] == {"from": [{"podSelector": {"matchLabels": {
        "vllm-platform/model": "llama-70b", "vllm-platform/role": "server"}}}]}
    # issue 39 (docs/autoscaling.md): a ScaledObject per pool on its own Deployment; replicas.max 12 is the planned
    # 10 + 2, so both pools sit at their bounds (the plan warns NO HEADROOM); serving.autoscaling queue: no tails
    scaled = {o["metadata"]["name"]: o["spec"] for o in objs if o["kind"] == "ScaledObject"}
    assert {n: (s["scaleTargetRef"]["name"], s["minReplicaCount"], s["maxReplicaCount"]) for n, s in scaled.items()} \
        == {"llama-70b-prefill": ("llama-70b-prefill", 10, 10), "llama-70b-decode": ("llama-70b-decode", 2, 2)}
    assert [(t["name"], t["metadata"]["threshold"]) for t in scaled["llama-70b-prefill"]["triggers"]] == [
        ("waiting-requests", "1")]
    assert [(t["name"], t["metadata"]["threshold"]) for t in scaled["llama-70b-decode"]["triggers"]] == [
        ("in-flight-requests", "28"), ("waiting-requests", "3"), ("kv-cache-usage", "0.9")]
    monitor = next(o for o in objs if o["kind"] == "ServiceMonitor")
    assert monitor["spec"]["podTargetLabels"] == ["llm-d.ai/role"]


def test_epp_runs_the_pd_profile():
    (values,) = [v for name, chart, _, v in releases(_pd().resources) if chart == "llm-d-router-gateway"]
    epp = values["router"]["epp"]
    assert epp["pluginsConfigFile"] == "vllm-platform-pd.yaml"
    config = yaml.safe_load(epp["pluginsCustomConfig"]["vllm-platform-pd.yaml"])
    assert config == yaml.safe_load(pd_config())
    assert {p["type"]: p.get("parameters") for p in config["plugins"]}["disagg-profile-handler"] == {
        "deciders": {"prefill": "prefix-based-pd-decider"}}
    assert {p["type"]: p.get("parameters") for p in config["plugins"]}["prefix-based-pd-decider"] == {
        "nonCachedTokens": 16}
    assert [(s["name"], s["plugins"][0]["pluginRef"]) for s in config["schedulingProfiles"]] == [
        ("prefill", "prefill-filter"), ("decode", "decode-filter")]
    assert values["router"]["modelServers"]["matchLabels"] == {"vllm-platform/model": "llama-70b",
                                                               "vllm-platform/role": "server"}


def test_the_plan_prints_the_choice_and_its_cost():
    from components.planner import Topology
    from components.cli.summary import summary
    t = Topology.from_dict(_pd_auto().exports["topology"]["llama-70b"])
    line = next(x for x in summary(t).splitlines() if "P/D:" in x)
    assert line == (
        "  P/D: 6 prefill + 2 decode instances (TP 8 on 8 x p5.48xlarge, $440.32/h), $/M tok at the declared load "
        "$342.4711 vs aggregated $470.8978 (11 replica(s), $605.44/h): chosen because it is 27% cheaper at the "
        "declared load: decode runs without prefill chunks beside it")
    # the worked stack itself (auto, 300-token answers) stays aggregated, and says why
    t = Topology.from_dict(planned(str(STACK)).exports["topology"]["llama-70b"])
    line = next(x for x in summary(t).splitlines() if "P/D:" in x)
    assert not t.disaggregated and line.endswith(
        ": not chosen because it saves less than 10% at the declared load (6 vs 5 node(s))")


def test_objects_and_helm_values_validate():
    version = "1.35"  # the stack's cluster.kubernetesVersion
    bad = {n: p for n, o in _objects().items() if (p := problems(o, version))}
    assert not bad, bad
    rel = [f"{n}: {bad}" for n, chart, v, values in releases(_pd().resources)
           for bad in unknown_keys(values, _key(chart, v))]
    assert not rel, rel


def test_the_pool_gets_efa():
    """A P/D pool gets the fabric a multi-node one would (cluster/pools.py): EFA on its nodes, though every
    instance fits one node."""
    from components.cluster.pools import gpu_pool_specs
    from components.planner import Topology
    t = Topology.from_dict(_pd().exports["topology"]["llama-70b"])
    (spec,) = gpu_pool_specs({"llama-70b": t})
    # 10 prefill + 2 decode TP 4 instances, two per p5.48xlarge: 6 nodes
    assert (t.nodes_per_replica, spec.multi_node, spec.fabric, t.nodes, spec.max_nodes) == (1, True, "efa", 6, 6)
