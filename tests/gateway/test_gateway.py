"""The inference gateway (components/gateway/, docs/gateway.md): every model of every shipped stack is reachable
through it, behind API keys outside dev, and the URL the stack exports is the route's."""
from __future__ import annotations

import pytest

from components.config.load import ConfigError, parse
from components.gateway import objects as o
from components.gateway.component import check_keys
from components.offline.runner import stack_names
from tests.support.crds import crd_validator, spec_errors
from tests.support.plans import planned

ROUTE = "kubernetes:gateway.networking.k8s.io/v1:HTTPRoute"
SECPOL = "kubernetes:gateway.envoyproxy.io/v1alpha1:SecurityPolicy"
BTP = "kubernetes:gateway.envoyproxy.io/v1alpha1:BackendTrafficPolicy"
RELEASE = "kubernetes:helm.sh/v3:Release"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
RAYSERVICE = "kubernetes:ray.io/v1:RayService"
NAMESPACE = "kubernetes:core/v1:Namespace"
NETPOL = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
AIGWROUTE = "kubernetes:aigateway.envoyproxy.io/v1beta1:AIGatewayRoute"


def _of(resources, type_token):
    return [r for r in resources if r.type == type_token]


def _environment(resources) -> str:
    return next(r.inputs["metadata"]["labels"]["vllm-platform/environment"] for r in _of(resources, NAMESPACE)
                if "vllm-platform/environment" in (r.inputs["metadata"].get("labels") or {}))


@pytest.mark.parametrize("stack", stack_names())
def test_every_model_is_reachable_through_the_gateway(stack):
    """route -> backend (InferencePool of the EPP release / Ray Serve Service) -> selector -> pods -> port."""
    plan = planned(stack)
    res = plan.resources
    routes = {r.inputs["metadata"]["name"]: r.inputs for r in _of(res, ROUTE)}
    topology = plan.exports["topology"]
    assert topology and set(routes) == set(topology), f"{stack}: routes {sorted(routes)} for {sorted(topology)}"
    for model, route in routes.items():
        [rule] = route["spec"]["rules"]
        assert rule["matches"] == [{"path": {"type": "PathPrefix", "value": f"/{model}/v1"}}]
        assert rule["filters"][0]["urlRewrite"]["path"]["replacePrefixMatch"] == "/v1"
        assert route["spec"]["parentRefs"][0]["name"] == "inference"
        [backend] = rule["backendRefs"]
        if backend["kind"] == "InferencePool":
            # the llm-d-router-gateway release named after the model creates the pool of that name
            epp = next(r for r in _of(res, RELEASE) if r.inputs.get("name") == backend["name"])
            assert epp.inputs["chart"].endswith("/llm-d-router-gateway")
            servers = epp.inputs["values"]["router"]["modelServers"]
            dep = next(r for r in _of(res, DEPLOYMENT) if r.inputs["metadata"]["name"] == model)
            pod = dep.inputs["spec"]["template"]
            assert servers["matchLabels"] and servers["matchLabels"].items() <= pod["metadata"]["labels"].items()
            ports = {p["containerPort"] for c in pod["spec"]["containers"] for p in c.get("ports", [])}
            assert [p["number"] for p in servers["targetPorts"]] == [8000] and 8000 in ports
        else:
            # KubeRay keeps the serveService name the RayService gives (the model's), not `<name>-serve-svc`
            assert backend == {"kind": "Service", "name": model, "port": 8000}
            ray = next(r for r in _of(res, RAYSERVICE) if r.inputs["metadata"]["name"] == model)
            assert ray.inputs["spec"]["serveService"]["metadata"]["name"] == model
            assert any(r.inputs["metadata"]["name"] == model for r in _of(res, RAYSERVICE))


@pytest.mark.parametrize("stack", stack_names())
def test_auth_is_on_for_every_route_outside_dev(stack):
    """Every HTTPRoute, the one AI Gateway generates for the shared URL (named as its AIGatewayRoute) included,
    has its limits, and outside dev its key check; every model's rule on the shared route has its own limits."""
    res = planned(stack).resources
    shared = {r.inputs["metadata"]["name"]: r.inputs["spec"] for r in _of(res, AIGWROUTE)}
    assert shared, f"{stack}: no shared route"
    routes = {r.inputs["metadata"]["name"] for r in _of(res, ROUTE)} | set(shared)
    refs = [t for r in _of(res, BTP) for t in r.inputs["spec"]["targetRefs"]]
    guarded = {t["name"] for r in _of(res, SECPOL) for t in r.inputs["spec"]["targetRefs"]
               if r.inputs["spec"].get("apiKeyAuth") and "sectionName" not in t}
    assert {t["name"] for t in refs if "sectionName" not in t} == routes
    assert {(t["name"], t["sectionName"]) for t in refs if "sectionName" in t} == {
        (name, rule["name"]) for name, spec in shared.items() for rule in spec["rules"]}
    if _environment(res) != "dev":
        assert guarded == routes, f"{stack}: routes without API keys: {sorted(routes - guarded)}"


@pytest.mark.parametrize("stack", stack_names())
def test_the_exported_url_is_the_routes_path(stack):
    plan = planned(stack)
    gw = plan.exports["gateway"]
    for r in _of(plan.resources, ROUTE):
        model = r.inputs["metadata"]["name"]
        path = r.inputs["spec"]["rules"][0]["matches"][0]["path"]["value"]
        # plain HTTP only in dev: the shipped prod stacks terminate TLS (ACM / a Secret)
        scheme = "http" if _environment(plan.resources) == "dev" else "https"
        assert gw["endpoints"][model] == f"{scheme}://GATEWAY_ADDRESS{path}"


def test_network_policy_admits_the_gateway_proxies_on_the_api_port():
    res = planned("dev").resources
    pol = next(r for r in _of(res, NETPOL) if r.inputs["metadata"]["name"] == "llama-8b")
    api = pol.inputs["spec"]["ingress"][0]
    assert api["ports"] == [{"port": 8000, "protocol": "TCP"}]
    assert {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "envoy-gateway-system"}},
            "podSelector": {"matchLabels": {"app.kubernetes.io/name": "envoy", "app.kubernetes.io/component": "proxy",
                                            "app.kubernetes.io/managed-by": "envoy-gateway"}}} in api["from"]


def test_rate_limits_are_per_client_and_the_size_limit_is_set():
    spec = o.backend_traffic_policy_spec("m", ["team-a", "team-b"], 5, 32, 4, auth=True)
    assert spec["rateLimit"]["local"]["rules"][1] == {
        "clientSelectors": [{"headers": [{"name": "x-vllm-platform-client", "type": "Exact", "value": "team-b"}]}],
        "limit": {"requests": 5, "unit": "Second"}}
    assert spec["requestBuffer"] == {"limit": "4Mi"}
    assert spec["circuitBreaker"] == {"maxParallelRequests": 32, "maxPendingRequests": 32}
    assert "circuitBreaker" not in o.backend_traffic_policy_spec("m", ["a"], 5, None, 4, auth=True)


def test_the_key_is_read_from_the_openai_authorization_header():
    spec = o.security_policy_spec("m", "gateway-api-keys", "vllm")
    assert spec["apiKeyAuth"]["extractFrom"] == [{"headers": ["authorization", "x-api-key"]}]
    assert spec["apiKeyAuth"]["forwardClientIDHeader"] == "x-vllm-platform-client"
    assert spec["apiKeyAuth"]["sanitize"] is True


def test_aws_gets_an_ip_target_nlb_and_acm_terminates_tls_on_443():
    ann = o.lb_annotations("aws", "internal", "acm", "arn:aws:acm:us-east-1:123456789012:certificate/abc")
    assert ann == {"service.beta.kubernetes.io/aws-load-balancer-type": "external",
                   "service.beta.kubernetes.io/aws-load-balancer-nlb-target-type": "ip",
                   "service.beta.kubernetes.io/aws-load-balancer-scheme": "internal",
                   "service.beta.kubernetes.io/aws-load-balancer-ssl-cert":
                       "arn:aws:acm:us-east-1:123456789012:certificate/abc",
                   "service.beta.kubernetes.io/aws-load-balancer-ssl-ports": "443"}
    assert o.lb_annotations("gcp", "internal", "none", None) == {"networking.gke.io/load-balancer-type": "Internal"}
    assert o.lb_annotations("gcp", "internet-facing", "none", None) == {}


def _cfg(**gateway) -> dict:
    return {"cloud": "existing", "environment": gateway.pop("environment", "prod"),
            "existing": {"gpuNodes": {"accelerator": "l4", "gpusPerNode": 1, "vcpu": 16, "ramGib": 64},
                         "blockStorageClass": "standard", "networkPolicyEnforced": True},
            "modelCache": {"kind": "rwx", "storageClass": "nfs"},
            "models": [{"name": "m", "model": "llama-3.1-8b"}], "gateway": gateway}


@pytest.mark.parametrize("gateway, field, text", [
    ({"auth": "none"}, "gateway.auth", "only dev may serve without API keys"),
    ({"enabled": False}, "gateway.enabled", "outside dev every model is served through"),
    ({"tls": {"mode": "secret"}}, "gateway.tls.secretName", "missing"),
    ({"tls": {"mode": "acm", "certificateArn": "arn:aws:acm:x"}}, "gateway.tls.certificateArn", "not an ACM"),
    ({"clients": ["Team_A"]}, "gateway.clients", "DNS label"),
    ({"scheme": "internet-facing"}, "gateway.tls.mode", "clear text"),
    ({"sourceRanges": ["10.0.0.1/8"]}, "gateway.sourceRanges", "CIDR"),
])
def test_bad_gateway_settings_name_their_field(gateway, field, text):
    with pytest.raises(ConfigError) as e:
        parse(_cfg(**gateway), secrets={"hfToken"})
    assert any(err.startswith(field) and text in err for err in e.value.errors), e.value.errors


def test_acm_is_refused_off_aws():
    cfg = _cfg(tls={"mode": "acm", "certificateArn": "arn:aws:acm:us-east-1:123456789012:certificate/ab-12"})
    with pytest.raises(ConfigError) as e:
        parse(cfg, secrets={"hfToken"})
    assert any(err.startswith("gateway.tls.mode") and "AWS certificate" in err for err in e.value.errors)


def test_dev_may_run_without_keys():
    assert parse(_cfg(environment="dev", auth="none"), secrets={"hfToken"}).gateway.auth == "none"


def test_keys_must_match_the_clients():
    assert check_keys({"a": "k1", "b": "k2"}, ["a", "b"]) == {"a": "k1", "b": "k2"}
    import pulumi
    with pytest.raises(pulumi.RunError, match="no key for client"):
        check_keys({"a": "k1"}, ["a", "b"])
    with pytest.raises(pulumi.RunError, match="which gateway.clients does not list"):
        check_keys({"a": "k1", "z": "k2"}, ["a"])
    with pytest.raises(pulumi.RunError, match="share one key"):
        check_keys({"a": "k", "b": "k"}, ["a", "b"])


def test_the_epp_reads_vllm_metrics_that_vllm_exports():
    from components.metrics import EPP_PENDING_REQUESTS, EPP_READS_VLLM, VLLM_METRICS
    assert EPP_READS_VLLM == ("vllm:num_requests_waiting", "vllm:num_requests_running", "vllm:kv_cache_usage_perc",
                              "vllm:lora_requests_info", "vllm:cache_config_info")
    assert set(EPP_READS_VLLM) <= VLLM_METRICS
    assert EPP_PENDING_REQUESTS == "llm_d_epp_flow_control_queue_size"


def test_multi_node_models_use_ray_serves_prefix_cache_router():
    plan = planned("prod-llama405b-aws")
    ray = next(r for r in plan.resources if r.type == RAYSERVICE)
    import yaml
    [app] = yaml.safe_load(ray.inputs["spec"]["serveConfigV2"])["applications"]
    [llm] = app["args"]["llm_configs"]
    assert llm["deployment_config"]["request_router_config"] == {
        "request_router_class": "ray.serve.llm.request_router.PrefixCacheAffinityRouter"}


def test_without_a_gateway_vllm_reads_its_key_from_the_secret_never_from_args():
    from components.offline.runner import load_stack_yaml, stack_file
    from tests.support.plans import plan_config
    raw = {k.split(":", 1)[1]: v for k, v in load_stack_yaml(stack_file("dev")).items()
           if k.startswith("vllm-platform:")}
    resources, exports = plan_config({**raw, "gateway": {"enabled": False, "clients": ["team-a", "team-b"]}})
    assert not _of(resources, ROUTE) and "gateway" not in exports
    [dep] = _of(resources, DEPLOYMENT)
    [vllm] = [c for c in dep.inputs["spec"]["template"]["spec"]["containers"] if c["name"] == "vllm"]
    assert {"name": "VLLM_API_KEY", "valueFrom": {"secretKeyRef": {"name": "gateway-api-keys", "key": "team-a"}}} \
        in vllm["env"]
    assert not any("api-key" in str(a) for a in vllm["args"])
    [secret] = [r for r in resources if r.type == "kubernetes:core/v1:Secret"
                and r.inputs["metadata"]["name"] == "gateway-api-keys"]
    assert secret.inputs["metadata"]["namespace"] == "vllm"




def test_specs_no_shipped_stack_reaches_validate_against_their_crds():
    """TLS from a Secret with a hostname, ACM on the NLB, no auth (dev): the CRDs accept each."""
    gateways = crd_validator("gateway-api/gateway.networking.k8s.io_gateways.yaml", "v1")
    assert not spec_errors(gateways, o.gateway_spec("secret", "api-tls", "llm.example.com"))
    assert not spec_errors(gateways, o.gateway_spec("acm", None, None))
    routes = crd_validator("gateway-api/gateway.networking.k8s.io_httproutes.yaml", "v1")
    r = o.ModelRoute("m", "llm", False, {"a": "b"})
    assert not spec_errors(routes, o.http_route_spec(r, 600, "llm.example.com"))
    btp = crd_validator("envoy-gateway/gateway.envoyproxy.io_backendtrafficpolicies.yaml", "v1alpha1")
    assert not spec_errors(btp, o.backend_traffic_policy_spec("m", [], 5, 8, 1, auth=False))
    proxy = crd_validator("envoy-gateway/gateway.envoyproxy.io_envoyproxies.yaml", "v1alpha1")
    acm = o.lb_annotations("aws", "internet-facing", "acm", "arn:aws:acm:us-east-1:123456789012:certificate/ab")
    assert not spec_errors(proxy, o.envoy_proxy_spec(acm, ["203.0.113.0/24"]))
    # and the check bites: a misspelt field is refused
    assert spec_errors(btp, {**o.backend_traffic_policy_spec("m", [], 5, 8, 1, auth=False), "rateLimits": {}})


def test_urls_follow_tls_and_hostname():
    r = o.ModelRoute("qwen", "llm", False)
    assert o.url("llm.example.com", "secret", r) == "https://llm.example.com/qwen/v1"
    assert o.url("GATEWAY_ADDRESS", "none", r) == "http://GATEWAY_ADDRESS/qwen/v1"
    assert o.gateway_spec("acm", None, None)["listeners"][0]["port"] == 443
    assert o.gateway_spec("acm", None, None)["listeners"][0]["protocol"] == "HTTP"


def test_a_stack_on_a_shared_gateway_makes_only_its_models_objects():
    """gateway.install: false (a workloads stack on a cluster stack's gateway): no controllers, no Gateway;
    the model's pool and picker, route, policies and key Secret still."""
    from components.offline.runner import load_stack_yaml, stack_file
    from tests.support.plans import plan_config
    raw = {k.split(":", 1)[1]: v for k, v in load_stack_yaml(stack_file("dev")).items()
           if k.startswith("vllm-platform:")}
    resources, exports = plan_config({**raw, "gateway": {"install": False}})
    charts = sorted(r.inputs["chart"].rsplit("/", 1)[-1] for r in _of(resources, RELEASE))
    assert "gateway-helm" not in charts and "llm-d-router-gateway" in charts
    assert not [r for r in resources if r.type.endswith(":Gateway") or r.type.endswith("CustomResourceDefinition")]
    assert len(_of(resources, ROUTE)) == len(_of(resources, SECPOL)) == 1
    assert exports["gateway"]["endpoints"] == {"llama-8b": "http://GATEWAY_ADDRESS/llama-8b/v1"}
    # no shared URL without a hostname of its own there (another stack's catch-all would check the key)
    assert not _of(resources, AIGWROUTE) and exports["gateway"]["url"] is None and "apiUrl" not in exports


@pytest.mark.parametrize("stack", ["dev", "prod-llama70b-aws", "prod-qwen72b-gcp"])
def test_the_pool_the_epp_chart_renders_validates_against_the_gaie_crd(stack):
    """The llm-d-router-gateway chart (v0.10.0 routerlib templates/_inferencepool.yaml) renders the InferencePool
    from our values: name = release, selector.matchLabels, targetPorts, appProtocol http (protocol http),
    endpointPickerRef {name: <release>-epp, port: epp.extProcPort (9002 default), failureMode}."""
    pools = crd_validator("gateway-api-inference-extension/inference.networking.k8s.io_inferencepools.yaml", "v1")
    releases = [r for r in _of(planned(stack).resources, RELEASE) if r.inputs["chart"].endswith("/llm-d-router-gateway")]
    assert releases
    for rel in releases:
        router = rel.inputs["values"]["router"]
        spec = {"selector": {"matchLabels": router["modelServers"]["matchLabels"]},
                "targetPorts": [{"number": p["number"]} for p in router["modelServers"]["targetPorts"]],
                "appProtocol": {"http": "http", "grpc": "kubernetes.io/h2c"}[router["modelServers"]["protocol"]],
                "endpointPickerRef": {"name": f"{rel.inputs['name']}-epp",
                                      "port": {"number": router["epp"].get("extProcPort", 9002)},
                                      "failureMode": router["inferencePool"]["failureMode"]}}
        assert not spec_errors(pools, spec), spec_errors(pools, spec)
        assert router["epp"]["image"]["tag"] == "v0.10.0"  # never the chart's moving `main`
