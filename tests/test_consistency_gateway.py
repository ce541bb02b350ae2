"""Whole-plan: every served model is reachable through the gateway by both URLs, read as Kubernetes and the
gateway controllers will (tests/support/consistency.py): its own `/<model>/v1` HTTPRoute and the stack's shared
`/v1` AIGatewayRoute rule matching the body's model, each -> backend (InferencePool of the model's EPP release /
AIServiceBackend -> Backend -> the RayService's Serve Service) -> the pods it selects -> a port they declare;
and each route the keys and limits attach to exists under the name they target. On every plan of
tests/support/stacks.py (shipped stacks, variants, fabric test stacks)."""
from __future__ import annotations

import pytest

from tests.support.consistency import Plan, admitted, label_selector_matches, namespace_labels

# Envoy Gateway's proxy pods (v1.9.0 internal/infrastructure/kubernetes/proxy/resource.go envoyLabels)
ENVOY = {"app.kubernetes.io/name": "envoy", "app.kubernetes.io/component": "proxy",
         "app.kubernetes.io/managed-by": "envoy-gateway"}
SERVE_FQDN = "{model}.{ns}.svc.cluster.local"  # the Serve Service keeps the name the RayService gives it




def _by_name(p: Plan, kind: str) -> dict[str, dict]:
    return {o["metadata"]["name"]: o for o in p.kind(kind)}


def _envoy_admitted(p: Plan, t, port: int) -> None:
    """The NetworkPolicies selecting the backend pods let the gateway's Envoy pods in on the port."""
    policies = [np for np in p.kind("NetworkPolicy", t.namespace)
                if label_selector_matches(np["spec"]["podSelector"], t.labels)]
    ns_labels = namespace_labels(p, "envoy-gateway-system")
    assert not policies or any(admitted(np, ENVOY, "envoy-gateway-system", ns_labels, port) for np in policies), \
        f"{p.name}: no NetworkPolicy admits the gateway to {t.name}:{port}"


def _pool_pods(p: Plan, model: str, ns: str) -> list:
    """The InferencePool the llm-d-router-gateway release `model` renders (named after the release): its
    selector and target port, and the pod templates that selector picks in the pool's namespace."""
    rel = p.releases.get(model)
    assert rel and rel["chart"].endswith("/llm-d-router-gateway") and rel["namespace"] == ns, \
        f"{p.name}: no EPP release creates the InferencePool {model}"
    servers = rel["values"]["router"]["modelServers"]
    pods = [t for t in p.templates if t.namespace == ns
            and label_selector_matches({"matchLabels": servers["matchLabels"]}, t.labels)]
    # a Deployment's pods, or a LeaderWorkerSet's leaders (its workers serve no API)
    assert [t.name for t in pods] in ([model], [f"{model}/leader"]), f"{p.name}: pool {model} selects {[t.name for t in pods]}"
    for port in servers["targetPorts"]:
        assert pods[0].port(port["number"]), f"{p.name}: {model} pods do not serve {port}"
        _envoy_admitted(p, pods[0], port["number"])
    return pods


def _serve_port(p: Plan, model: str, ns: str, port: int) -> None:
    """A RayService named after the model whose Serve Service (KubeRay keeps the serveService name given) is
    `<model>` on `port`, served by its head pod."""
    ray = _by_name(p, "RayService").get(model)
    assert ray and ray["metadata"]["namespace"] == ns, f"{p.name}: no RayService {model} in {ns}"
    serve = ray["spec"]["serveService"]
    assert serve["metadata"]["name"] == model
    assert port in [x["port"] for x in serve["spec"]["ports"]]
    head = next(t for t in p.templates if t.name == f"{model}/head")
    assert head.port(port), f"{p.name}: the Ray head of {model} does not serve {port}"
    _envoy_admitted(p, head, port)


def test_every_model_is_reachable_by_its_own_path_and_by_the_shared_url(p):
    served = set(p.exports["topology"])
    gw = p.exports.get("gateway")
    if not gw:
        pytest.skip(f"{p.name}: no gateway")
    ns = p.cfg.namespace
    routes = _by_name(p, "HTTPRoute")
    shared = _by_name(p, "AIGatewayRoute")
    assert set(routes) == served and shared
    rules = {}
    for name, obj in shared.items():
        assert obj["metadata"]["namespace"] == ns
        assert obj["spec"]["parentRefs"] == [{"group": "gateway.networking.k8s.io", "kind": "Gateway",
                                              "name": "inference", "namespace": "envoy-gateway-system"}]
        for rule in obj["spec"]["rules"]:
            rules[rule["name"]] = rule
    assert set(rules) == served, f"{p.name}: shared rules {sorted(rules)} for {sorted(served)}"
    ai_backends, backends = _by_name(p, "AIServiceBackend"), _by_name(p, "Backend")
    for model in served:
        rule = rules[model]
        assert rule["matches"] == [{"headers": [{"type": "Exact", "name": "x-ai-eg-model", "value": model}]}]
        [own] = routes[model]["spec"]["rules"][0]["backendRefs"]
        [ref] = rule["backendRefs"]
        assert rule["timeouts"] == routes[model]["spec"]["rules"][0]["timeouts"]
        if own["kind"] == "InferencePool":
            assert ref == {"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": model}
            _pool_pods(p, model, ns)
        else:
            assert own == {"kind": "Service", "name": model, "port": 8000}
            _serve_port(p, model, ns, own["port"])
            assert ref == {"name": model}  # an AIServiceBackend (no group / kind)
            target = ai_backends[model]["spec"]["backendRef"]
            assert target == {"group": "gateway.envoyproxy.io", "kind": "Backend", "name": model}
            [endpoint] = backends[model]["spec"]["endpoints"]
            assert endpoint["fqdn"]["hostname"] == SERVE_FQDN.format(model=model, ns=ns)
            _serve_port(p, model, ns, endpoint["fqdn"]["port"])
    assert gw["url"] == p.exports["apiUrl"] and gw["url"].endswith("/v1")


def test_keys_and_limits_target_routes_that_exist(p):
    """A policy naming a route that does not exist is silently inert (Envoy Gateway reports it only in status):
    every targetRef must name an HTTPRoute of the plan or the one AI Gateway generates (the AIGatewayRoute's name),
    and a sectionName a rule of it."""
    if not p.exports.get("gateway"):
        pytest.skip(f"{p.name}: no gateway")
    shared = {n: {r["name"] for r in o["spec"]["rules"]} for n, o in _by_name(p, "AIGatewayRoute").items()}
    own = set(_by_name(p, "HTTPRoute"))
    for kind in ("SecurityPolicy", "BackendTrafficPolicy"):
        for pol in p.kind(kind):
            for ref in pol["spec"]["targetRefs"]:
                assert ref["kind"] == "HTTPRoute" and ref["name"] in own | set(shared), f"{p.name}: {kind} {ref}"
                if "sectionName" in ref:
                    assert ref["sectionName"] in shared.get(ref["name"], ()), f"{p.name}: {kind} {ref}"
