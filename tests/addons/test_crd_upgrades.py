"""Chart upgrades upgrade their CRDs (issue 36): Helm installs a chart's crds/ once and never upgrades them. KubeRay,
LWS, the AWS Load Balancer Controller and Envoy Gateway get skipCrds and their CRDs applied server-side by Pulumi
before the release (CustomResourceDefinitionPatch, forced, retained on destroy: created on a fresh cluster, taken
over where Helm made them, no AlreadyExists with pulumi-kubernetes >= 4.29); kube-prometheus-stack runs its own CRD
upgrade Job. On GKE nothing of the platform's Gateway API / InferencePool groups is applied."""
from __future__ import annotations

import functools

import pytest
import yaml

from components.upstream.crds import SCHEMAS
from tests.support.addons import RELEASE
from tests.support.stacks import plan, stack_raw

PATCH = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinitionPatch"


@functools.lru_cache(maxsize=None)
def _patches(stack: str) -> dict:
    return {r.inputs["metadata"]["name"]: r for r in plan(stack).resources if r.type == PATCH}


def _release(stack: str, chart: str):
    (r,) = [r for r in plan(stack).resources if r.type == RELEASE and r.name.endswith(f"-{chart}")]
    return r


def _names(*files: str) -> set[str]:
    return {d["metadata"]["name"] for f in files for d in yaml.safe_load_all((SCHEMAS / f).read_text())
            if d and d["kind"] == "CustomResourceDefinition"}


def test_eks_applies_every_crd_of_the_lb_controller_and_envoy_gateway_before_their_releases():
    stack = "prod-llama70b-aws"
    patches = _patches(stack)
    lbc = _names("aws-load-balancer-controller/crds.yaml", "aws-load-balancer-controller/gateway-crds.yaml")
    assert "targetgroupbindings.elbv2.k8s.aws" in lbc and len(lbc) == 7
    eg = _names("envoy-gateway/gatewayapi-crds.yaml") | {"envoyproxies.gateway.envoyproxy.io",
                                                          "clienttrafficpolicies.gateway.envoyproxy.io"}
    assert lbc | eg | {"inferencepools.inference.networking.k8s.io"} <= set(patches)
    for chart, names in (("aws-load-balancer-controller", lbc), ("envoy-gateway", eg)):
        release = _release(stack, chart)
        assert release.inputs["skipCrds"] is True, chart
        assert {f"{PATCH}::{patches[n].name}" for n in names} <= set(release.dependencies), chart
    for r in patches.values():
        assert r.inputs["metadata"]["annotations"]["pulumi.com/patchForce"] == "true"


def test_kuberay_and_lws_crds_are_applied_before_their_operators():
    from tests.support.plans import planned
    for stack, chart, names in (("prod-llama405b-onprem", "kuberay-operator",
                                 {"rayclusters.ray.io", "rayjobs.ray.io", "rayservices.ray.io", "raycronjobs.ray.io"}),):
        resources = planned(stack).resources
        patches = {r.inputs["metadata"]["name"]: r for r in resources if r.type == PATCH}
        (release,) = [r for r in resources if r.type == RELEASE and r.name.endswith(f"-{chart}")]
        assert names <= set(patches) and release.inputs["skipCrds"] is True
        assert {f"{PATCH}::{patches[n].name}" for n in names} <= set(release.dependencies)


def test_on_gke_the_platforms_gateway_api_and_inferencepool_crds_are_left_alone():
    patches = _patches("prod-qwen72b-gcp")
    assert "envoyproxies.gateway.envoyproxy.io" in patches
    groups = {r.inputs["spec"]["group"] for r in patches.values()}
    assert not groups & {"gateway.networking.k8s.io", "inference.networking.k8s.io"}, groups


def test_kube_prometheus_stack_upgrades_its_crds_with_its_own_job_on_pinned_images():
    values = plan("prod-llama70b-aws").values("kube-prometheus-stack")
    job = values["crds"]["upgradeJob"]
    assert job["enabled"] is True and job["forceConflicts"] is True
    assert job["image"]["busybox"]["tag"] not in ("", "latest")
    assert job["nodeSelector"] == values["prometheus"]["prometheusSpec"]["nodeSelector"]
    assert "skipCrds" not in _release("prod-llama70b-aws", "kube-prometheus-stack").inputs


@pytest.mark.full_crds
def test_a_plan_applies_every_vendored_crd_whole():
    """The suite's other plans carry the CRDs with open schemas (tests/conftest.py, for speed): here the program's
    CustomResourceDefinitionPatch specs are the vendored upstream documents, schema and all."""
    from components.upstream.crds import CHART_CRDS
    from tests.support.plans import plan_config
    resources, _ = plan_config(stack_raw("prod-llama70b-aws"), stack="prod-llama70b-aws")
    patches = {r.inputs["metadata"]["name"]: r for r in resources if r.type == PATCH}
    vendored = {d["metadata"]["name"]: d for f in {f for files in CHART_CRDS.values() for f in files}
                for d in yaml.safe_load_all((SCHEMAS / f).read_text()) if d and d["kind"] == "CustomResourceDefinition"}
    assert len(patches) == 36  # the LB controller's, Envoy Gateway's (Gateway API among them), LWS's, the pool's
    for name, r in patches.items():
        assert r.inputs["spec"] == vendored[name]["spec"], name
        assert "openAPIV3Schema" in r.inputs["spec"]["versions"][0]["schema"], name
