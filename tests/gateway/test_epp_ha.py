"""Production's endpoint pickers survive a drain (SRE review of issue 12, must-fix 3): Envoy AI Gateway v1.1.0 calls
the picker fail-closed whatever the pool says, so a lone picker's restart fails every request to its model; two
leader-elected pickers per model, spread, and a pool that says FailClose (what happens)."""
from __future__ import annotations

import pytest

from tests.support.crds import crd_validator, spec_errors
from tests.support.plans import planned

RELEASE = "kubernetes:helm.sh/v3:Release"


def _epps(stack: str) -> dict[str, dict]:
    return {r.inputs["name"]: r.inputs["values"]["router"] for r in planned(stack).resources
            if r.type == RELEASE and r.inputs["chart"].endswith("/llm-d-router-gateway")}


@pytest.mark.parametrize("stack, zones", [("prod-llama70b-aws", True), ("prod-qwen72b-gcp", True)])
def test_production_runs_two_pickers_per_model_on_different_nodes(stack, zones):
    epps = _epps(stack)
    assert epps
    for model, router in epps.items():
        # above 1 the chart adds --ha-enable-leader-election (routerlib v0.10.0 templates/_deployment.yaml)
        assert router["epp"]["replicas"] == 2
        terms = router["epp"]["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
        keys = {t["podAffinityTerm"]["topologyKey"]: t for t in terms}
        assert keys["kubernetes.io/hostname"]["podAffinityTerm"]["labelSelector"] == {
            "matchLabels": {"llm-d-router-gateway": f"{model}-epp"}}
        assert ("topology.kubernetes.io/zone" in keys) is zones
        # still on the system nodes
        assert "nodeAffinity" in router["epp"]["affinity"]


def test_dev_keeps_one_picker():
    for router in _epps("dev").values():
        assert router["epp"]["replicas"] == 1 and "podAntiAffinity" not in router["epp"]["affinity"]


@pytest.mark.parametrize("stack", ["dev", "prod-llama70b-aws"])
def test_the_pool_says_it_fails_closed(stack):
    """Envoy AI Gateway v1.1.0 internal/extensionserver/inferencepool.go: FailureModeAllow false, never the pool's
    failureMode; the chart's default FailOpen would promise a fallback that does not exist."""
    pools = crd_validator("gateway-api-inference-extension/inference.networking.k8s.io_inferencepools.yaml", "v1")
    for model, router in _epps(stack).items():
        assert router["inferencePool"]["failureMode"] == "FailClose"
        ref = {"name": f"{model}-epp", "port": {"number": 9002}, "failureMode": "FailClose"}
        spec = {"selector": {"matchLabels": router["modelServers"]["matchLabels"]},
                "targetPorts": [{"number": 8000}], "endpointPickerRef": ref}
        assert not spec_errors(pools, spec)
