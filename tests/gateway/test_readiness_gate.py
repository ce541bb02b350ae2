"""AWS: the Envoy proxies' namespace carries the AWS Load Balancer Controller's readiness-gate label from its
creation, before any Envoy pod (SRE review of issue 12, should-fix 6): a rollout waits for the NLB's health check."""
from __future__ import annotations

import pytest

from components.gateway import GatewayArgs, ModelRoute
from tests.support.gateway import run_gateway

LABEL = "elbv2.k8s.aws/pod-readiness-gate-inject"


def _run(cloud: str):
    return run_gateway(GatewayArgs(cloud=cloud, namespace="vllm", routes=[ModelRoute("m", "vllm", False, {"a": "m"})],
                                   api_keys={"default": "k"}))


def test_aws_labels_the_proxy_namespace_before_the_proxies_exist():
    run = _run("aws")
    ns = run.named("gw-ns-envoy-gateway-system")
    assert ns.inputs["metadata"]["labels"][LABEL] == "enabled"
    # the Envoy pods come from the Gateway (Envoy Gateway creates them), which waits for the chart in that namespace
    assert "gw-ns-envoy-gateway-system" in run.deps["gw-envoy-gateway"]
    assert "gw-envoy-gateway" in run.deps["gw-gateway"]
    # only the proxies' namespace: the AI Gateway controller is no NLB target
    assert LABEL not in run.named("gw-ns-envoy-ai-gateway-system").inputs["metadata"]["labels"]


@pytest.mark.parametrize("cloud", ["gcp", "existing"])
def test_other_clouds_have_no_aws_label(cloud):
    assert LABEL not in _run(cloud).named("gw-ns-envoy-gateway-system").inputs["metadata"]["labels"]
