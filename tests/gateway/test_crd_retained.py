"""The gateway's CRDs (issue 36): cluster-wide, so a destroy of one stack must not delete every object of their kind
in the cluster (retainOnDelete); applied server-side (CustomResourceDefinitionPatch), so that a cluster that already
has one (an earlier `up` whose Helm made it, another stack, the vendor) does not fail the create with AlreadyExists
(pulumi-kubernetes >= 4.29), and a chart bump upgrades them; none of an API group the platform owns (GKE 1.34+
installs Gateway API and InferencePool itself)."""
from __future__ import annotations

from components.cluster.facts import GKE_PLATFORM_CRD_GROUPS
from components.gateway import GatewayArgs, ModelRoute
from tests.support.gateway import run_gateway

PATCH = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinitionPatch"
PLAIN = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
POOL_CRD = "inferencepools.inference.networking.k8s.io"


def _run(cloud="aws", **kw):
    return run_gateway(GatewayArgs(cloud=cloud, namespace="vllm", routes=[ModelRoute("m", "vllm", False, {"a": "m"})],
                                   api_keys={"default": "k"}, **kw))


def _crds(run) -> dict:
    assert not [r for r in run.resources if r.type == PLAIN], "a plain CRD create fails AlreadyExists on a cluster " \
                                                             "that has it"
    return {r.inputs["metadata"]["name"]: r for r in run.resources if r.type == PATCH}


def test_elsewhere_the_inferencepool_and_envoy_gateway_crds_are_applied_forced_and_retained():
    run = _run()
    crds = _crds(run)
    assert POOL_CRD in crds
    assert {"envoyproxies.gateway.envoyproxy.io", "securitypolicies.gateway.envoyproxy.io",
            "clienttrafficpolicies.gateway.envoyproxy.io", "httproutes.gateway.networking.k8s.io"} <= set(crds)
    for r in crds.values():
        assert r.inputs["metadata"]["annotations"]["pulumi.com/patchForce"] == "true", r.name
        assert r.name in run.retained, r.name
        assert r.inputs["spec"]["versions"], r.name
    # a destroy still deletes everything else, but the AI Gateway CRD release (an uninstall deletes its templated CRDs)
    assert run.retained == {r.name for r in crds.values()} | {"gw-ai-gateway-crds"}


def test_envoy_gateway_skips_its_crds_folder_and_waits_for_the_applied_ones():
    run = _run()
    eg = run.named("gw-envoy-gateway")
    assert eg.inputs["skipCrds"] is True
    assert {r.name for r in _crds(run).values()} <= run.deps["gw-envoy-gateway"]
    # the endpoint picker (it makes the InferencePool) after the pool's CRD
    assert f"gw-crd-{POOL_CRD}" in run.deps["gw-m-epp"]


def test_on_gke_no_crd_of_the_platforms_groups_is_created_or_patched():
    run = _run("gcp", platform_crd_groups=GKE_PLATFORM_CRD_GROUPS)
    crds = _crds(run)
    assert POOL_CRD not in crds
    assert not [n for n in crds if n.endswith(".gateway.networking.k8s.io")]
    assert "envoyproxies.gateway.envoyproxy.io" in crds  # Envoy Gateway's own still are
    assert not {n for n in run.deps["gw-m-epp"] if n.startswith("gw-crd-")}


def test_gke_owns_gateway_api_and_inferencepool():
    assert GKE_PLATFORM_CRD_GROUPS == {"gateway.networking.k8s.io", "inference.networking.k8s.io"}
