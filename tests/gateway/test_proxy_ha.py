"""Production's Envoy proxies survive a node drain (SRE review of issue 12, must-fix 2): two replicas, a
PodDisruptionBudget keeping one, spread across nodes (and zones on AWS / GCP), valid against the vendored
EnvoyProxy CRD (envoyproxy/gateway v1.9.0)."""
from __future__ import annotations

import pytest

from components.gateway import objects as o
from tests.support.crds import crd_validator, spec_errors
from tests.support.plans import planned

ENVOY_PROXY = "kubernetes:gateway.envoyproxy.io/v1alpha1:EnvoyProxy"
OWNER = {"app.kubernetes.io/name": "envoy", "app.kubernetes.io/component": "proxy",
         "app.kubernetes.io/managed-by": "envoy-gateway", "gateway.envoyproxy.io/owning-gateway-name": "inference",
         "gateway.envoyproxy.io/owning-gateway-namespace": "envoy-gateway-system"}


def _proxy(stack: str) -> dict:
    [proxy] = [r for r in planned(stack).resources if r.type == ENVOY_PROXY]
    return proxy.inputs["spec"]


@pytest.mark.parametrize("stack, zones", [("prod-llama70b-aws", True), ("prod-qwen72b-gcp", True),
                                          ("prod-llama405b-onprem", False)])
def test_production_runs_two_spread_proxies_with_a_disruption_budget(stack, zones):
    spec = _proxy(stack)
    k8s = spec["provider"]["kubernetes"]
    assert k8s["envoyDeployment"]["replicas"] == 2
    assert k8s["envoyPDB"] == {"minAvailable": 1}
    spread = k8s["envoyDeployment"]["pod"]["topologySpreadConstraints"]
    by_key = {c["topologyKey"]: c for c in spread}
    assert by_key["kubernetes.io/hostname"]["whenUnsatisfiable"] == "DoNotSchedule"
    assert by_key["kubernetes.io/hostname"]["labelSelector"] == {"matchLabels": OWNER}
    assert by_key["kubernetes.io/hostname"]["nodeTaintsPolicy"] == "Honor"
    assert ("topology.kubernetes.io/zone" in by_key) is zones
    if zones:
        assert by_key["topology.kubernetes.io/zone"]["whenUnsatisfiable"] == "ScheduleAnyway"
    proxies = crd_validator("envoy-gateway/gateway.envoyproxy.io_envoyproxies.yaml", "v1alpha1")
    assert not spec_errors(proxies, spec), spec_errors(proxies, spec)


def test_dev_keeps_one_proxy_without_a_budget():
    k8s = _proxy("dev")["provider"]["kubernetes"]
    assert "envoyPDB" not in k8s and k8s.get("envoyDeployment", {}).get("replicas", 1) == 1


def test_the_crd_check_bites_on_a_misspelt_budget():
    proxies = crd_validator("envoy-gateway/gateway.envoyproxy.io_envoyproxies.yaml", "v1alpha1")
    spec = o.envoy_proxy_spec({}, [], replicas=2, zones=True)
    spec["provider"]["kubernetes"]["envoyPDB"] = {"minAvailble": 1}
    assert spec_errors(proxies, spec)
