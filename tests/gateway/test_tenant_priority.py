"""Tenant priority (docs/tenant-priority.md) on the worked stack tests/stacks/Pulumi.tenants-onprem.yaml: clients
chat (interactive) and batch (batch) on one model, beside per-key token quotas. Pinned literally: the objectives the
endpoint picker looks up, the header the gateway sets from the key (never the caller's), the picker's flow control."""
from __future__ import annotations

import re

import pytest
import yaml

from components.config import ConfigError, parse
from components.gateway import GatewayArgs, ModelRoute
from components.gateway import priority as pr
from components.gateway import quotas as q
from components.gateway.values import epp_values
from components.offline.runner import ROOT
from components.outputs import gateway_lines
from tests.support.gateway import run_gateway
from tests.support.plans import manifests, planned

STACK = ROOT / "tests" / "stacks" / "Pulumi.tenants-onprem.yaml"
EEP = "kubernetes:gateway.envoyproxy.io/v1alpha1:EnvoyExtensionPolicy"


@pytest.fixture(scope="module")
def objs():
    return manifests(planned(str(STACK)).resources)


def _of(objs, kind: str) -> list[dict]:
    return [o for o in objs.values() if o["kind"] == kind]


def _epp_config(values: dict) -> dict:
    epp = values["router"]["epp"]
    return yaml.safe_load(epp["pluginsCustomConfig"][epp["pluginsConfigFile"]])


# ---- the objects ---------------------------------------------------------------------------------------------------

def test_one_objective_per_client_on_the_models_pool_with_its_tiers_priority(objs):
    got = {o["metadata"]["name"]: (o["apiVersion"], o["metadata"]["namespace"], o["spec"])
           for o in _of(objs, "InferenceObjective")}
    pool = {"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": "llama-70b"}
    assert got == {"llama-70b.chat": ("llm-d.ai/v1alpha2", "llm", {"priority": 10, "poolRef": pool}),
                   "llama-70b.batch": ("llm-d.ai/v1alpha2", "llm", {"priority": -10, "poolRef": pool})}


def test_the_objective_crd_is_the_pinned_pickers_and_applied_before_the_picker():
    """The picker discovers the CRD once at start (controller_config.go): its release waits for the CRD."""
    routes = [ModelRoute("chat", "llm", False, {"app": "chat"})]
    run = run_gateway(GatewayArgs(cloud="existing", namespace="llm", routes=routes, clients=["a", "b"],
                                  api_keys={"a": "k1", "b": "k2"}, priorities={"a": 10, "b": -10}))
    crd = "gw-crd-inferenceobjectives.llm-d.ai"
    assert crd in run.deps["gw-chat-epp"]
    assert crd in run.retained  # cluster-wide: a destroy leaves it, as the pool's
    assert crd in run.deps["gw-chat.objective.a"]
    # the model's routes wait for the policy that sets the header, as for its key check
    assert "gw-chat-priority" in run.deps["gw-chat-route"]
    # without priorities: no CRD, no objectives, no policy
    plain = run_gateway(GatewayArgs(cloud="existing", namespace="llm", routes=routes, clients=["a"],
                                    api_keys={"a": "k1"}))
    names = {r.name for r in plain.resources}
    assert not {crd, "gw-chat.objective.a", "gw-chat-priority"} & names


def test_multi_node_models_get_no_objective_nor_policy():
    """Ray Serve has no endpoint picker: nothing would read them."""
    routes = [ModelRoute("big", "llm", True)]
    run = run_gateway(GatewayArgs(cloud="existing", namespace="llm", routes=routes, clients=["a"],
                                  api_keys={"a": "k1"}, priorities={"a": 10}))
    kinds = {r.type.rsplit(":", 1)[-1] for r in run.resources}
    assert not {"InferenceObjective", "EnvoyExtensionPolicy"} & kinds
    assert "gw-crd-inferenceobjectives.llm-d.ai" not in {r.name for r in run.resources}


# ---- the header: from the key, never the caller ----------------------------------------------------------------------

def _run_lua(script: str, headers: dict[str, str]) -> dict[str, str]:
    """Executes the policy's script on a request's headers: exactly the statements it is written in (an unknown
    statement fails the test rather than being skipped)."""
    h = dict(headers)
    env: dict[str, str | None] = {}
    lines = [ln.strip() for ln in script.strip().splitlines()]
    assert lines[0] == "function envoy_on_request(request_handle)" and lines[-1] == "end"
    skipping = False
    for ln in lines[1:-1]:
        if ln == "end":
            skipping = False
            continue
        if skipping:
            continue
        if ln == "local h = request_handle:headers()":
            continue
        if m := re.fullmatch(r'h:remove\("([a-z-]+)"\)', ln):
            h.pop(m[1], None)
        elif m := re.fullmatch(r'local (\w+) = h:get\("([a-z-]+)"\)', ln):
            env[m[1]] = h.get(m[2])
        elif m := re.fullmatch(r'if (\w+) ~= nil and \1 ~= "" then', ln):
            skipping = not env.get(m[1])
        elif m := re.fullmatch(r'h:replace\("([a-z-]+)", "([a-z0-9-]+)" \.\. "\." \.\. (\w+)\)', ln):
            h[m[1]] = f"{m[2]}.{env[m[3]]}"
        elif m := re.fullmatch(r'h:replace\("([a-z-]+)", (\w+)\)', ln):
            h[m[1]] = str(env[m[2]])
        else:
            raise AssertionError(f"unexpected Lua statement: {ln}")
    return h


SPOOF = {"x-llm-d-inference-objective": "llama-70b.chat", "x-gateway-inference-objective": "llama-70b.chat",
         "x-llm-d-inference-fairness-id": "chat", "x-gateway-inference-fairness-id": "chat",
         # the picker also takes a model rewrite (another model or adapter in the pool) and SLOs from headers
         "x-llm-d-model-name-rewrite": "other", "x-gateway-model-name-rewrite": "other",
         "x-llm-d-slo-ttft-ms": "1", "x-slo-ttft-ms": "1", "x-llm-d-slo-tpot-ms": "1", "x-slo-tpot-ms": "1"}


def test_a_batch_key_cannot_claim_the_interactive_objective(objs):
    (policy,) = _of(objs, "EnvoyExtensionPolicy")
    [lua] = policy["spec"]["lua"]
    assert lua["type"] == "Inline"
    # batch's key, with every header the picker reads set to chat's values
    out = _run_lua(lua["inline"], {"x-vllm-platform-client": "batch", **SPOOF, "content-type": "application/json"})
    assert out == {"x-vllm-platform-client": "batch", "content-type": "application/json",
                   "x-llm-d-inference-objective": "llama-70b.batch", "x-llm-d-inference-fairness-id": "batch"}
    # no client identity (no key check ran): every caller-sent copy dropped, the request stays at priority 0
    assert _run_lua(lua["inline"], dict(SPOOF)) == {}


def test_the_client_header_the_script_trusts_is_the_one_the_key_check_sets_on_the_same_route(objs):
    (policy,) = _of(objs, "EnvoyExtensionPolicy")
    assert policy["metadata"] == {"name": "llama-70b-priority", "namespace": "llm", "labels": {
        "app.kubernetes.io/part-of": "vllm-platform", "app.kubernetes.io/managed-by": "pulumi"}}
    # with token quotas every model is on the shared URL only: the model's rule there
    assert policy["spec"]["targetRefs"] == [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute",
                                             "name": "all-models.v1", "sectionName": "llama-70b"}]
    (auth,) = [o for o in _of(objs, "SecurityPolicy") if o["metadata"]["name"] == "all-models.v1"]
    assert auth["spec"]["apiKeyAuth"]["forwardClientIDHeader"] == "x-vllm-platform-client"
    assert auth["spec"]["targetRefs"][0]["name"] == "all-models.v1"


def test_without_quotas_the_policy_covers_the_models_own_path_too():
    args = GatewayArgs(cloud="existing", namespace="llm", routes=[ModelRoute("chat", "llm", False, {"app": "c"})],
                       clients=["a"], api_keys={"a": "k"}, priorities={"a": 10})
    spec = run_gateway(args).named("gw-chat-priority").inputs["spec"]
    assert spec["targetRefs"] == [
        {"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": "chat"},
        {"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": "all-models.v1", "sectionName": "chat"}]
    assert '"chat" .. "." .. client' in spec["lua"][0]["inline"]


# ---- the picker's flow control -------------------------------------------------------------------------------------

BANDS = [{"priority": 10, "fairnessPolicyRef": "round-robin-fairness-policy"},
         {"priority": 0, "fairnessPolicyRef": "round-robin-fairness-policy"},
         {"priority": -10, "fairnessPolicyRef": "round-robin-fairness-policy"}]


def test_the_picker_runs_flow_control_with_the_tenants_bands(objs):
    (release,) = [r for r in planned(str(STACK)).resources if r.name == "vllm-gateway-llama-70b-epp"]
    config = _epp_config(release.inputs["values"])
    assert config["featureGates"] == ["flowControl"]
    assert config["flowControl"] == {"defaultRequestTTL": "60s", "priorityBands": BANDS}
    assert {"type": "round-robin-fairness-policy"} in config["plugins"]
    # the scorers are the chart's defaults, untouched
    assert [p["pluginRef"] for p in config["schedulingProfiles"][0]["plugins"]] == [
        "queue-scorer", "kv-cache-utilization-scorer", "prefix-cache-scorer"]


def test_scale_to_zero_keeps_its_queue_ttl_and_one_gate():
    r = ModelRoute("m", "llm", False, {"app": "m"}, cold_start_s=300, first_request_s=900)
    plain = _epp_config(epp_values(r, {}))
    config = _epp_config(epp_values(r, {}, priorities={"a": 10, "b": 0}))
    assert config["featureGates"] == ["flowControl"]
    assert config["flowControl"]["defaultRequestTTL"] == plain["flowControl"]["defaultRequestTTL"] != "60s"
    assert config["flowControl"]["priorityBands"] == [BANDS[0], BANDS[1]]


def test_pd_and_lora_pickers_get_the_bands_too():
    pd = _epp_config(epp_values(ModelRoute("m", "llm", False, {"app": "m"}, disaggregated=True), {},
                                priorities={"a": -10}))
    assert pd["flowControl"]["priorityBands"] == [BANDS[1], BANDS[2]]
    assert [p["name"] for p in pd["schedulingProfiles"]] == ["prefill", "decode"]
    lora = epp_values(ModelRoute("m", "llm", False, {"app": "m"}, lora=True), {}, priorities={"a": 10})
    assert lora["router"]["epp"]["pluginsConfigFile"] == "vllm-platform-flow-control.yaml"
    assert {"type": "lora-affinity-scorer"} in _epp_config(lora)["plugins"]


def test_without_priorities_a_warm_model_runs_the_charts_default_picker():
    epp = epp_values(ModelRoute("m", "llm", False, {"app": "m"}), {})["router"]["epp"]
    assert "pluginsConfigFile" not in epp and "pluginsCustomConfig" not in epp


# ---- config and plan -----------------------------------------------------------------------------------------------

def _cfg(**gateway) -> dict:
    return {"cloud": "existing", "environment": gateway.pop("environment", "prod"),
            "existing": {"gpuNodes": {"accelerator": "l4", "gpusPerNode": 1, "vcpu": 16, "ramGib": 64},
                         "blockStorageClass": "standard", "networkPolicyEnforced": True},
            "modelCache": {"kind": "rwx", "storageClass": "nfs"},
            "models": [{"name": "m", "model": "llama-3.1-8b"}],
            "gateway": {"tls": {"mode": "secret", "secretName": "t"}, **gateway}}


def test_the_list_of_names_stays_valid_and_means_no_priority():
    gw = parse(_cfg(clients=["a", "b"]), secrets={"hfToken"}).gateway
    assert gw.client_names == ["a", "b"] and gw.tenant_priorities is None


def test_a_client_without_a_tier_beside_tiered_ones_is_standard():
    gw = parse(_cfg(clients=[{"name": "chat", "priority": "interactive"}, "ops", {"name": "nightly",
                                                                                "priority": "batch"}]),
               secrets={"hfToken"}).gateway
    assert gw.client_names == ["chat", "ops", "nightly"]
    assert gw.tenant_priorities == {"chat": 10, "ops": 0, "nightly": -10}


TIERS = "one of interactive (+10), standard (0), batch (-10) (docs/tenant-priority.md)"


@pytest.mark.parametrize("gateway, error", [
    ({"clients": [{"name": "chat", "priority": "urgent"}]},
     f"gateway.clients[0].priority: 'urgent' for client chat: not a tier; {TIERS}"),
    ({"clients": ["a", {"name": "chat", "priority": 10}]},
     f"gateway.clients[1].priority: 10 for client chat: not a tier; {TIERS}"),
    ({"clients": [{"name": "chat", "prio": "batch"}]}, "gateway.clients[0].prio: unknown key; allowed: name, priority"),
    ({"environment": "dev", "auth": "none", "clients": [{"name": "chat", "priority": "batch"}]},
     "gateway.clients: a priority needs auth: apiKeys (it is none): the gateway knows a request's client, and so its "
     "tier, only from its API key; remove the priorities or set auth: apiKeys"),
    ({"clients": ["chat", {"name": "chat", "priority": "batch"}]}, "gateway.clients: duplicate client names"),
])
def test_bad_priorities_are_config_errors_naming_the_field(gateway, error):
    with pytest.raises(ConfigError) as e:
        parse(_cfg(**gateway), secrets={"hfToken"})
    assert error in e.value.errors, e.value.errors


def test_the_plan_lists_each_client_with_its_priority():
    lines = gateway_lines(planned(str(STACK)).exports["gateway"])
    assert "  tenant priority (served first under saturation, highest first): chat interactive (+10), " \
           "batch batch (-10)" in lines
    assert ("    per model an InferenceObjective per client and flow control with bands +10, 0, -10 (round robin "
            "between clients of a band; a request queued over 60s is shed with 429): llama-70b") in lines


def test_priorities_work_beside_the_token_quotas_of_the_same_clients(objs):
    """Same identity: the budgets select on the header the objectives are named from."""
    (btp,) = [o for o in _of(objs, "BackendTrafficPolicy") if o["metadata"]["name"] == "llama-70b"]
    budgets = {r["clientSelectors"][0]["headers"][0]["value"]: r["limit"]["requests"]
               for r in btp["spec"]["rateLimit"]["global"]["rules"]}
    assert budgets == {"chat": 300000, "batch": 1200000}
    assert {r["clientSelectors"][0]["headers"][0]["name"] for r in btp["spec"]["rateLimit"]["global"]["rules"]} \
        == {"x-vllm-platform-client"}
    assert {o["metadata"]["name"] for o in _of(objs, "InferenceObjective")} == {"llama-70b.chat", "llama-70b.batch"}


def test_objective_names_never_collide_across_models_and_clients():
    """Model and client are DNS labels (no dot): `<model>.<client>` is one pair's name only."""
    assert pr.objective_name("a-b", "c") != pr.objective_name("a", "b-c")
    assert pr.objective_name("llama-70b", "chat") == "llama-70b.chat"


def test_quota_and_priority_args_compose():
    routes = [ModelRoute("chat", "llm", False, {"app": "chat"}, max_concurrency=8)]
    run = run_gateway(GatewayArgs(cloud="existing", namespace="llm", routes=routes, clients=["a", "b"],
                                  api_keys={"a": "k1", "b": "k2"}, token_quotas=q.TokenQuotas({"a": 10, "b": 20}),
                                  priorities={"a": 10, "b": -10}))
    assert run.named("gw-chat-priority").inputs["spec"]["targetRefs"] == [
        {"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": "all-models.v1", "sectionName": "chat"}]


def parse_stack_version() -> str:
    from components.config.schema import ClusterSettings
    return ClusterSettings().kubernetes_version


def test_every_object_of_the_worked_stack_validates_against_the_vendored_crds():
    """tests/test_manifest_schemas.py covers stacks/; this is the worked stack's share, the objective and the
    extension policy included (strict: a misspelt field is an error, not a pruned one)."""
    from tests.test_manifest_schemas import objects, problems
    version = "1.35"  # ClusterSettings' default kubernetesVersion (the stack sets none)
    assert parse_stack_version() == version
    objs = objects(str(STACK))
    bad = {name: p for name, o in objs.items() if (p := problems(o, version))}
    assert not bad, bad
    (objective,) = [o for o in objs.values() if o["metadata"]["name"] == "llama-70b.chat"]
    assert problems({**objective, "spec": {**objective["spec"], "priorty": 1}}, version)
    (policy,) = [o for o in objs.values() if o["kind"] == "EnvoyExtensionPolicy"]
    assert problems({**policy, "spec": {**policy["spec"], "lua": [{"type": "Inlined", "inline": "x"}]}}, version)


# ---- policy objective-header-from-gateway --------------------------------------------------------------------------

def _policy_stack(script: str | None, section: str | None = "m", priorities=(10, -10)):
    from policies.rules import StackResource
    res = [StackResource("kubernetes:core/v1:Namespace", "ns", {"metadata": {
               "name": "llm", "labels": {"vllm-platform/environment": "prod"}}}),
           StackResource("kubernetes:aigateway.envoyproxy.io/v1beta1:AIGatewayRoute", "route", {
               "metadata": {"name": "all-models.v1", "namespace": "llm"},
               "spec": {"rules": [{"name": "m", "backendRefs": [
                   {"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": "m"}]}]}})]
    res += [StackResource("kubernetes:llm-d.ai/v1alpha2:InferenceObjective", f"o{i}", {
                "metadata": {"name": f"m.c{i}", "namespace": "llm"},
                "spec": {"priority": p, "poolRef": {"name": "m"}}}) for i, p in enumerate(priorities)]
    if script is not None:
        ref = {"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": "all-models.v1"}
        if section:
            ref["sectionName"] = section
        res.append(StackResource(EEP, "eep", {"metadata": {"name": "m-priority", "namespace": "llm"},
                                              "spec": {"targetRefs": [ref], "lua": [{"type": "Inline",
                                                                                     "inline": script}]}}))
    return res


def _flagged(resources) -> list[str]:
    from policies.rules import evaluate_resources
    return [v.message for v in evaluate_resources(resources) if v.rule == "objective-header-from-gateway"]


def test_the_policy_refuses_a_pool_whose_priorities_a_caller_could_choose(objs):
    from policies.rules import MANDATORY, RULES_BY_NAME, evaluate_plan
    assert RULES_BY_NAME["objective-header-from-gateway"].level == MANDATORY
    assert not [v for v in evaluate_plan(planned(str(STACK))) if v.rule == "objective-header-from-gateway"]
    script = pr.lua_script("m")
    assert _flagged(_policy_stack(script)) == []
    assert _flagged(_policy_stack(script, section=None)) == []  # the whole route
    assert _flagged(_policy_stack(None)) == [
        "rule m of AIGatewayRoute llm/all-models.v1 sends to InferencePool m, whose objectives have different "
        "priorities, without removing a caller's objective header; fix: keep the platform's tenant priority "
        "(gateway.clients[].priority: the stack makes the policy <model>-priority), or attach your own Lua "
        "EnvoyExtensionPolicy removing both headers to the route"]
    # a script that drops only the current header name leaves the deprecated alias to the caller
    assert _flagged(_policy_stack(script.replace('  h:remove("x-gateway-inference-objective")\n', "")))
    assert _flagged(_policy_stack(script, section="other"))
    # one priority for every objective: nothing to choose
    assert _flagged(_policy_stack(None, priorities=(0, 0))) == []


# --- a changed picker config rolls the pickers ---------------------------------------------------------------------

def test_a_change_inside_the_pickers_config_file_rolls_the_pickers():
    """The picker reads its config file (and looks for the InferenceObjective CRD) only at start, and a P/D or
    scale-to-zero model keeps its file's name when tiers are turned on: the pod template must change with the file's
    content (EPP_CONFIG_ANNOTATION), or the running pickers never get the bands."""
    from components.gateway.objects import ModelRoute
    from components.gateway.values import EPP_CONFIG_ANNOTATION, epp_values

    def annotation(route, priorities=None):
        epp = epp_values(route, {}, priorities=priorities)["router"]["epp"]
        return epp.get("podAnnotations", {}).get(EPP_CONFIG_ANNOTATION)

    for route in (ModelRoute("m", "llm", False, {"a": "m"}, disaggregated=True),
                  ModelRoute("m", "llm", False, {"a": "m"}, cold_start_s=400)):
        before = annotation(route)
        tiers = annotation(route, {"chat": 10, "bulk": -10})
        assert before and tiers and before != tiers, route
        assert annotation(route, {"chat": 10}) not in (before, tiers)  # a tier edit rolls them too
        assert annotation(route) == before  # same config, same template: no roll on a re-run
    # the chart's default config (no file of ours): nothing added, the template as the chart makes it
    assert annotation(ModelRoute("m", "llm", False, {"a": "m"})) is None
