"""gateway.tokenQuotas (docs/token-quotas.md) on the worked stack tests/stacks/Pulumi.token-quotas-aws.yaml: per-key
token budgets per minute, charged from each answer's usage (Envoy AI Gateway llmRequestCosts -> Envoy Gateway's
global rate limit on an in-cluster Redis), beside the per-key request limits; pinned literally."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
from pulumi.runtime import rpc

from components.cli import main
from components.config import ConfigError, parse
from components.gateway import GatewayArgs, ModelRoute
from components.gateway import quotas as q
from components.offline.runner import ROOT, plan_stack_offline
from policies.rules import ADVISORY, RULES_BY_NAME, StackResource, evaluate_plan, evaluate_resources
from tests.support.gateway import run_gateway
from tests.support.plans import by_type, manifests, planned
from tests.test_manifest_schemas import problems

STACK = ROOT / "tests" / "stacks" / "Pulumi.token-quotas-aws.yaml"
SECRET = "kubernetes:core/v1:Secret"
ROUTE = "kubernetes:gateway.networking.k8s.io/v1:HTTPRoute"
FILTER = "kubernetes:gateway.envoyproxy.io/v1alpha1:HTTPRouteFilter"
SECPOL = "kubernetes:gateway.envoyproxy.io/v1alpha1:SecurityPolicy"
RELEASE = "kubernetes:helm.sh/v3:Release"


@pytest.fixture(scope="module")
def objs():
    return manifests(planned(str(STACK)).resources)


def _obj(objs, kind: str, name: str, namespace: str | None = None) -> dict:
    (found,) = [o for o in objs.values() if o["kind"] == kind and o["metadata"]["name"] == name
                and (namespace is None or o["metadata"].get("namespace") == namespace)]
    return found


def _budget_rule(client: str, tokens: int) -> dict:
    return {"clientSelectors": [{"headers": [{"name": "x-vllm-platform-client", "type": "Exact", "value": client}]}],
            "cost": {"request": {"from": "Number", "number": 0},
                     "response": {"from": "Metadata", "metadata": {"key": "llm_total_token",
                                                                   "namespace": "io.envoy.ai_gateway"}}},
            "limit": {"requests": tokens, "unit": "Minute"}}


def test_the_models_policy_charges_each_answer_to_its_keys_budget_beside_the_request_limit(objs):
    spec = _obj(objs, "BackendTrafficPolicy", "llama-70b")["spec"]
    assert spec["rateLimit"]["global"] == {"rules": [_budget_rule("team-a", 200000), _budget_rule("team-b", 600000)]}
    # the per-key request limit stays, local in Envoy; no deprecated `type` (v1.9.0 takes both when it is unset)
    assert "type" not in spec["rateLimit"]
    assert spec["rateLimit"]["local"]["rules"][1] == {
        "clientSelectors": [{"headers": [{"name": "x-vllm-platform-client", "type": "Exact", "value": "team-b"}]}],
        "limit": {"requests": 10, "unit": "Second"}}
    # only the model's rule of the shared route: no per-model path
    assert spec["targetRefs"] == [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute",
                                   "name": "all-models.v1", "sectionName": "llama-70b"}]


def test_the_shared_route_writes_the_answers_total_tokens_into_the_metadata(objs):
    route = _obj(objs, "AIGatewayRoute", "all-models.v1")["spec"]
    assert route["llmRequestCosts"] == [{"metadataKey": "llm_total_token", "type": "TotalToken"}]
    # the route-wide policy (route-not-found, /v1/models) charges nothing
    assert "global" not in _obj(objs, "BackendTrafficPolicy", "all-models.v1")["spec"]["rateLimit"]


@pytest.mark.parametrize("counts,expected", [
    ("output", ("OutputToken", "llm_output_token")), ("input", ("InputToken", "llm_input_token"))])
def test_one_side_of_the_answer_is_counted_under_its_own_key(counts, expected):
    tq = q.TokenQuotas({"a": 5}, counts)
    assert q.llm_request_costs(tq) == [{"metadataKey": expected[1], "type": expected[0]}]
    assert q.token_rules(tq)[0]["cost"]["response"]["metadata"] == {"namespace": "io.envoy.ai_gateway",
                                                                    "key": expected[1]}


def test_envoy_gateway_runs_its_rate_limit_service_on_the_stacks_redis():
    release = next(r for r in by_type(planned(str(STACK)).resources, RELEASE) if r.name == "vllm-gateway-envoy-gateway")
    eg = release.inputs["values"]["config"]["envoyGateway"]
    assert eg["rateLimit"] == {"backend": {"type": "Redis", "redis": {
        "url": "ratelimit-redis.envoy-gateway-system.svc.cluster.local:6379"}}, "failClosed": False}
    spread = {"labelSelector": {"matchLabels": {"app.kubernetes.io/name": "envoy-ratelimit",
                                                "app.kubernetes.io/component": "ratelimit",
                                                "app.kubernetes.io/managed-by": "envoy-gateway"}},
              "matchLabelKeys": ["pod-template-hash"], "maxSkew": 1, "nodeTaintsPolicy": "Honor",
              "whenUnsatisfiable": "ScheduleAnyway"}
    assert eg["provider"] == {"type": "Kubernetes", "kubernetes": {
        "rateLimitDeployment": {
            "replicas": 2,  # production: as many as the Envoy proxies
            "container": {"env": [{"name": "REDIS_AUTH", "valueFrom": {"secretKeyRef": {"name": "ratelimit-redis",
                                                                                        "key": "password"}}}]},
            "pod": {"nodeSelector": {"vllm-platform/node-role": "system"},
                    # on different nodes and zones where they can be, never Pending for it
                    "topologySpreadConstraints": [{**spread, "topologyKey": "kubernetes.io/hostname"},
                                                  {**spread, "topologyKey": "topology.kubernetes.io/zone"}]}},
        # a drain of the node holding one leaves the other answering
        "rateLimitPDB": {"minAvailable": 1}}}
    # the Redis exists before the controller that starts the rate-limit pods against it
    assert {"kubernetes:apps/v1:Deployment::vllm-gateway-quota-store-deployment",
            "kubernetes:core/v1:Secret::vllm-gateway-quota-store-secret",
            "kubernetes:core/v1:Service::vllm-gateway-quota-store-service"} <= set(release.dependencies)


def test_the_controller_restarts_when_the_rate_limit_service_is_turned_on_or_off():
    """Envoy Gateway v1.9.0 answers 500 for every request of a route whose BackendTrafficPolicy has global rules
    while its config has no rate-limit service, and it reads a changed ConfigMap only after the kubelet's sync: the
    pod annotation rolls the controller, so the awaited release ends with the new config running, before the
    policies are applied (they depend on the release)."""
    resources = planned(str(STACK)).resources
    release = next(r for r in by_type(resources, RELEASE) if r.name == "vllm-gateway-envoy-gateway")
    assert release.inputs["values"]["deployment"] == {"pod": {"annotations": {
        "vllm-platform/global-rate-limit": "redis"}}}
    policy = next(r for r in resources if r.name == "vllm-gateway-llama-70b-limits")
    assert "kubernetes:helm.sh/v3:Release::vllm-gateway-envoy-gateway" in policy.dependencies
    # the release waits for the rollout (no skipAwait) and rolls back a failed one
    assert release.inputs.get("skipAwait") in (None, False) and release.inputs["atomic"] is True


def test_the_rate_limit_deployment_and_budget_fit_envoy_gateways_types():
    """Envoy Gateway decodes its config leniently (v1.9.0 internal/envoygateway/config/decoder.go: a
    UniversalDeserializer, no strict mode) and the Helm values check passes config.envoyGateway through, so a
    misspelt key would vanish unseen. rateLimitDeployment is a KubernetesDeploymentSpec and rateLimitPDB a
    KubernetesPodDisruptionBudgetSpec (api/v1alpha1/envoygateway_types.go), the types of EnvoyProxy's
    envoyDeployment and envoyPDB (envoyproxy_types.go): checked against the vendored EnvoyProxy CRD, strict."""
    from tests.test_manifest_schemas import crd_schemas
    release = next(r for r in by_type(planned(str(STACK)).resources, RELEASE) if r.name == "vllm-gateway-envoy-gateway")
    kubernetes = release.inputs["values"]["config"]["envoyGateway"]["provider"]["kubernetes"]
    assert set(kubernetes) == {"rateLimitDeployment", "rateLimitPDB"}  # the json names in envoygateway_types.go
    as_proxy = {"apiVersion": "gateway.envoyproxy.io/v1alpha1", "kind": "EnvoyProxy",
                "metadata": {"name": "x", "namespace": "envoy-gateway-system"},
                "spec": {"provider": {"type": "Kubernetes", "kubernetes": {
                    "envoyDeployment": kubernetes["rateLimitDeployment"], "envoyPDB": kubernetes["rateLimitPDB"]}}}}
    validator = crd_schemas("gateway.envoyproxy.io")[("gateway.envoyproxy.io/v1alpha1", "EnvoyProxy")]
    assert [e.message for e in validator.iter_errors(as_proxy)] == []
    misspelt = {**as_proxy, "spec": {"provider": {"type": "Kubernetes", "kubernetes": {
        "envoyDeployment": {**kubernetes["rateLimitDeployment"], "replica": 2}}}}}
    assert [e.message for e in validator.iter_errors(misspelt)] == [
        "Additional properties are not allowed ('replica' was unexpected)"]


def _single_proxy_values(cloud: str = "existing") -> dict:
    routes = [ModelRoute("chat", "llm", False, {"app": "chat"}, max_concurrency=8)]
    run = run_gateway(GatewayArgs(cloud=cloud, namespace="llm", routes=routes, clients=["a"], api_keys={"a": "k"},
                                  token_quotas=q.TokenQuotas({"a": 1000})))
    return run.named("gw-envoy-gateway").inputs["values"]


def test_one_rate_limit_pod_gets_no_budget_that_would_block_every_drain():
    kubernetes = _single_proxy_values()["config"]["envoyGateway"]["provider"]["kubernetes"]
    assert kubernetes == {"rateLimitDeployment": {"replicas": 1, "container": {"env": [
        {"name": "REDIS_AUTH", "valueFrom": {"secretKeyRef": {"name": "ratelimit-redis", "key": "password"}}}]}}}


def test_the_redis_is_one_in_memory_pod_only_the_rate_limit_pods_reach(objs):
    dep = _obj(objs, "Deployment", "ratelimit-redis", "envoy-gateway-system")["spec"]
    assert (dep["replicas"], dep["strategy"]) == (1, {"type": "Recreate"})
    pod = dep["template"]["spec"]
    (redis,) = pod["containers"]
    assert redis["image"] == ("redis:8.10.2-alpine@sha256:"
                              "72cedd9603038893af961e90ac5e1a1a0d8377d5e338dbdad8fe284ea25de18f")
    assert redis["command"] == ["redis-server", "/etc/redis/redis.conf"]  # the password never on a command line
    assert redis["resources"] == {"requests": {"cpu": "250m", "memory": "768Mi"},
                                  "limits": {"cpu": "250m", "memory": "768Mi"}}
    assert pod["volumes"] == [{"name": "config", "secret": {"secretName": "ratelimit-redis", "defaultMode": 288}},
                              {"name": "data", "emptyDir": {}}]
    assert pod["nodeSelector"] == {"vllm-platform/node-role": "system"}
    assert _obj(objs, "Service", "ratelimit-redis", "envoy-gateway-system")["spec"] == {
        "type": "ClusterIP", "selector": {"app.kubernetes.io/name": "ratelimit-redis",
                                          "app.kubernetes.io/component": "ratelimit-store"},
        "ports": [{"name": "redis", "port": 6379, "targetPort": "redis", "protocol": "TCP"}]}
    assert _obj(objs, "NetworkPolicy", "ratelimit-redis", "envoy-gateway-system")["spec"] == {
        "podSelector": {"matchLabels": {"app.kubernetes.io/name": "ratelimit-redis",
                                        "app.kubernetes.io/component": "ratelimit-store"}},
        "policyTypes": ["Ingress"],
        "ingress": [{"from": [{"podSelector": {"matchLabels": {
            "app.kubernetes.io/name": "envoy-ratelimit", "app.kubernetes.io/component": "ratelimit",
            "app.kubernetes.io/managed-by": "envoy-gateway"}}}],
            "ports": [{"port": 6379, "protocol": "TCP"}]}]}


def test_the_redis_password_is_a_pulumi_secret_and_only_in_its_config_file():
    resources = planned(str(STACK)).resources
    (secret,) = [r for r in by_type(resources, SECRET) if r.name == "vllm-gateway-quota-store-secret"]
    assert rpc.is_rpc_secret(secret.inputs["stringData"])
    data = secret.inputs["stringData"]["value"]
    assert set(data) == {"password", "redis.conf"}
    assert data["redis.conf"] == (f"requirepass {data['password']}\nport 6379\ndir /data\nsave \"\"\n"
                                  f"appendonly no\nmaxmemory 512mb\nmaxmemory-policy volatile-ttl\n")
    (password,) = [r for r in by_type(resources, "pulumi-python:dynamic:GeneratedPassword")
                   if r.name == "vllm-gateway-quota-store-password"]
    # alphanumeric by construction (no colon: envoyproxy/ratelimit reads "user:password" from REDIS_AUTH;
    # tests/test_passwords.py)
    assert password.inputs["length"] == 40
    dep = next(r for r in resources if r.name == "vllm-gateway-quota-store-deployment")
    assert "requirepass" not in str(dep.inputs) and data["password"] not in str(dep.inputs)


def test_every_object_the_stack_renders_validates(objs):
    bad = {name: problems(o, "1.35") for name, o in objs.items() if problems(o, "1.35")}
    assert not bad


def test_with_quotas_no_per_model_path_and_every_endpoint_is_the_shared_url(objs):
    assert not [o for o in objs.values() if o["kind"] == "HTTPRoute"]
    assert [o["metadata"]["name"] for o in objs.values() if o["kind"] == "SecurityPolicy"] == ["all-models.v1"]
    gw = planned(str(STACK)).exports["gateway"]
    assert gw["endpoints"] == {"llama-70b": "https://GATEWAY_ADDRESS/v1"}
    assert gw["url"] == "https://GATEWAY_ADDRESS/v1"


def _args(**kw) -> GatewayArgs:
    routes = [ModelRoute("llama-lora", "llm", False, {"app": "llama-lora"}, runtime_lora=True, max_concurrency=8,
                         max_total_tokens_per_s=100.0, max_output_tokens_per_s=20.0)]
    return GatewayArgs(cloud="aws", namespace="llm", routes=routes, clients=["a"], api_keys={"a": "k"}, **kw)


def test_runtime_lora_keeps_its_403_route_without_quotas():
    """The adapter endpoints' 403 filter belongs to the per-model route; the shared URL never reaches them."""
    without = run_gateway(_args())
    assert [r.name for r in by_type(without.resources, FILTER)] == ["gw-llama-lora-lora-admin"]
    assert [r.name for r in by_type(without.resources, ROUTE)] == ["gw-llama-lora-route"]


LORA_REFUSAL = ("gateway.tokenQuotas: llama-lora serves LoRA adapters (engine.lora), which clients reach by the "
                "adapter's name on the model's own URL /llama-lora/v1; token quotas count only the shared URL, whose "
                "routes match served model names, so with quotas every adapter request would get 404. Remove "
                "gateway.tokenQuotas, or engine.lora from llama-lora")


def test_quotas_beside_lora_adapters_are_refused_not_shipped_answering_404(tmp_path, capsys):
    """Adapters are named in the body on the model's own URL, which quotas remove; the shared route matches served
    model names only, so `"model": "support"` would get AI Gateway's route-not-found 404."""
    lora = ROOT / "tests" / "stacks" / "Pulumi.lora-runtime-aws.yaml"
    path = tmp_path / "Pulumi.lora-quotas.yaml"
    path.write_text(lora.read_text() + "  vllm-platform:gateway:\n    tokenQuotas:\n      tokensPerMinute: 1000\n")
    assert main(["plan", str(path), "--out", str(tmp_path / "out")]) == 2
    assert LORA_REFUSAL in capsys.readouterr().err
    # a configuration error of the stack (components/wiring.py plan_problems), reported beside the others before
    # the program builds anything: here with prod's plain-HTTP refusal, which stopped the plan before it was seen
    prod = tmp_path / "Pulumi.lora-quotas-prod.yaml"
    prod.write_text(path.read_text().replace("environment: dev", "environment: prod"))
    assert main(["plan", str(prod), "--out", str(tmp_path / "out-prod")]) == 2
    err = capsys.readouterr().err
    assert "invalid stack configuration:\n  gateway.tls.mode: none in prod" in err
    assert f"\n  {LORA_REFUSAL}\n" in err + "\n"
    # the gateway component keeps the check for GatewayArgs built without the stack's validation
    with pytest.raises(Exception) as e:
        run_gateway(_args(token_quotas=q.TokenQuotas({"a": 1000})))
    assert LORA_REFUSAL in str(e.value)


def test_the_fleets_tokens_per_minute_at_max_replicas():
    assert _args(token_quotas=q.TokenQuotas({"a": 1}, "total")).token_fleets() == {"llama-lora": 6000}
    assert _args(token_quotas=q.TokenQuotas({"a": 1}, "output")).token_fleets() == {"llama-lora": 1200}
    assert _args(token_quotas=q.TokenQuotas({"a": 1}, "input")).token_fleets() == {"llama-lora": 4800}


def test_a_pd_fleets_total_tokens_follow_its_output_figure():
    """A P/D topology carries the aggregated shape's knee_total_tokens_per_s (planner/disagg.py chosen_topology):
    the total is the output figure x (prompt + output) / output."""
    from components.wiring import total_tokens_per_s
    pd = SimpleNamespace(knee_output_tokens_per_s=500.0, knee_total_tokens_per_s=9999.0, prompt_tokens=1024,
                         output_tokens=256)
    assert total_tokens_per_s(pd) == 2500.0


def test_the_plan_prints_the_budgets_their_cost_and_the_fleet(capsys):
    assert main(["plan", str(STACK)]) == 0
    out = capsys.readouterr().out
    assert ("  token quotas (total tokens/min per key and model, 429 beyond): team-a 200,000, team-b 600,000\n"
            "    counted on the shared URL only (no per-model paths) by Envoy Gateway's rate-limit service, counters "
            "on Redis ratelimit-redis.envoy-gateway-system.svc.cluster.local:6379 (in memory: a restart forgets the "
            "current minute; while it is down the budgets are not enforced, fail open)\n"
            "    added cost: no bill line, on the system nodes: Redis 1 pod 250m CPU / 768Mi, envoy-ratelimit 2 pod(s) "
            "100m CPU / 512Mi each\n"
            "    llama-70b: budgets sum 800,000/min, fleet at max replicas 1,579,200/min\n") in out
    assert "WARNING: gateway.tokenQuotas" not in out


def test_budgets_above_what_the_fleet_serves_are_a_warning(tmp_path):
    # the fleet serves 1,579,200/min at max (8 x TP 4 at 658 output tok/s x 1280/256 x 60, the dense class's 10 %
    # margin at p90; 4,003,200 under one 0.35 margin at TP 8), so team-b at 4,000,000 exceeds it
    text = STACK.read_text().replace("team-b: 600000", "team-b: 4000000")
    path = tmp_path / "Pulumi.token-quotas-over.yaml"
    path.write_text(text)
    result = plan_stack_offline(str(path))
    assert [w for w in result.warnings if w.startswith("gateway.tokenQuotas")] == [
        "gateway.tokenQuotas: the clients' budgets sum to 4,200,000 total tokens/min per model, more than llama-70b "
        "serves within its SLA at max replicas (1,579,200/min): with every key at its budget the model queues past "
        "its SLA; lower the budgets or raise models[].replicas.max"]


BASE = {"cloud": "aws", "environment": "dev", "models": [{"name": "chat", "model": "llama-3.1-8b"}],
        "aws": {"region": "us-east-1", "endpointPublicAccessCidrs": ["203.0.113.7/32"]}}


def _errors(gateway: dict) -> list[str]:
    with pytest.raises(ConfigError) as e:
        parse({**BASE, "gateway": gateway}, {"hfToken"})
    return e.value.errors


def test_config_errors_name_the_field_and_the_fix():
    assert _errors({"auth": "none", "tokenQuotas": {"tokensPerMinute": 1000}}) == [
        "gateway.tokenQuotas: needs gateway.auth: apiKeys (it is none): a budget belongs to an API key's client, "
        "and without keys there is no client"]
    assert _errors({"clients": ["a", "b"], "tokenQuotas": {"tokensPerMinute": 1000, "clients": {"c": 5}}}) == [
        "gateway.tokenQuotas.clients: c: not in gateway.clients (a, b); a budget is set per client name"]
    assert _errors({"tokenQuotas": {"tokensPerMinute": 0}}) == [
        "gateway.tokenQuotas.tokensPerMinute: 0: a budget is 1..4294967295 tokens per minute (the rate limit's "
        "largest count); without a budget remove gateway.tokenQuotas"]
    assert _errors({"tokenQuotas": {"tokensPerMinute": 4294967296}})[0].startswith(
        "gateway.tokenQuotas.tokensPerMinute: 4294967296: a budget is 1..4294967295")
    assert _errors({"clients": ["a"], "tokenQuotas": {"tokensPerMinute": 10, "clients": {"a": 0}}}) == [
        "gateway.tokenQuotas.clients: a: a budget is 1..4294967295 tokens per minute (to stop a client, remove it "
        "from gateway.clients)"]
    assert _errors({"install": False, "hostname": "team.example.com", "tokenQuotas": {"tokensPerMinute": 10}}) == [
        "gateway.tokenQuotas: needs gateway.install: true: the rate-limit service and its Redis come with the "
        "stack's own Envoy Gateway install, which a cluster stack's Gateway (gateway.install: false) runs without; "
        "remove tokenQuotas or install the gateway in this stack"]
    # the largest budget is accepted
    parse({**BASE, "gateway": {"tokenQuotas": {"tokensPerMinute": 4294967295}}}, {"hfToken"})


# --- policy token-quotas-fail-open ---------------------------------------------------------------------------

RULE = "token-quotas-fail-open"


def test_production_budgets_failing_open_are_an_advisory():
    assert RULES_BY_NAME[RULE].level == ADVISORY
    (v,) = [v for v in evaluate_plan(planned(str(STACK))) if v.rule == RULE]
    assert v.level == ADVISORY and v.resource == ("vllm-gateway-llama-70b-limits "
                                                  "(kubernetes:gateway.envoyproxy.io/v1alpha1:BackendTrafficPolicy)")
    assert v.message.startswith("BackendTrafficPolicy llm/llama-70b charges token budgets in production while the "
                                "rate-limit service fails open (rateLimit.failClosed false); fix: alert on the "
                                "rate-limit service and its Redis")


def _stack(env: str, fail_closed: bool | None, response_from: str = "Metadata") -> list[StackResource]:
    rate_limit = {"backend": {"type": "Redis", "redis": {"url": "r:6379"}}}
    if fail_closed is not None:
        rate_limit["failClosed"] = fail_closed
    rule = {"limit": {"requests": 5, "unit": "Minute"}, "cost": {"response": {"from": response_from}}}
    return [StackResource("kubernetes:core/v1:Namespace", "ns", {"metadata": {
                "name": "llm", "labels": {"vllm-platform/environment": env}}}),
            StackResource(RELEASE, "eg", {"chart": "oci://docker.io/envoyproxy/gateway-helm", "values": {
                "config": {"envoyGateway": {"rateLimit": rate_limit}}}}),
            StackResource("kubernetes:gateway.envoyproxy.io/v1alpha1:BackendTrafficPolicy", "btp", {
                "metadata": {"name": "m", "namespace": "llm"}, "spec": {"rateLimit": {"global": {"rules": [rule]}}}})]


def _advised(resources) -> int:
    return len([v for v in evaluate_resources(resources) if v.rule == RULE])


def test_the_advisory_is_production_only_and_silent_when_failing_closed_or_not_charging_tokens():
    assert _advised(_stack("prod", None)) == 1  # unset: Envoy Gateway's default, open
    assert _advised(_stack("prod", False)) == 1
    assert _advised(_stack("prod", True)) == 0
    assert _advised(_stack("staging", False)) == 0
    assert _advised(_stack("prod", False, response_from="Number")) == 0
    # no Envoy Gateway release of the stack's own: the rate-limit service is unknown here
    assert _advised([r for r in _stack("prod", False) if r.type != RELEASE]) == 0


def test_without_quotas_nothing_changes_on_the_gateway():
    objs = manifests(planned(str(ROOT / "tests" / "stacks" / "Pulumi.lora-runtime-aws.yaml")).resources)
    assert not [o for o in objs.values() if o["metadata"]["name"] == "ratelimit-redis"]
    assert all("global" not in o["spec"]["rateLimit"] for o in objs.values() if o["kind"] == "BackendTrafficPolicy")
    assert all("llmRequestCosts" not in o["spec"] for o in objs.values() if o["kind"] == "AIGatewayRoute")
    (release,) = [r for r in by_type(planned(str(ROOT / "tests" / "stacks" / "Pulumi.lora-runtime-aws.yaml")).resources,
                                     RELEASE) if r.name == "vllm-gateway-envoy-gateway"]
    eg = release.inputs["values"]["config"]["envoyGateway"]
    assert "rateLimit" not in eg and eg["provider"] == {"type": "Kubernetes"}
    assert "deployment" not in release.inputs["values"]  # no annotation: the controller is not rolled
