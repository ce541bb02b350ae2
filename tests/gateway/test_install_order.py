"""The gateway's first `pulumi up` (SRE review of issue 12, must-fix 1): Envoy Gateway v1.9.0 provisions a Gateway
whose GatewayClass's EnvoyProxy is missing with a bare LoadBalancer Service (a public Classic ELB on EKS), so the
EnvoyProxy must exist before the GatewayClass and both before the Gateway."""
from __future__ import annotations

from components.gateway import GatewayArgs, ModelRoute
from tests.support.gateway import run_gateway


def _args(**kw) -> GatewayArgs:
    return GatewayArgs(cloud="aws", namespace="vllm", routes=[ModelRoute("m", "vllm", False, {"app": "m"})],
                       api_keys={"default": "k"}, **kw)


def test_the_envoy_proxy_exists_before_the_class_and_the_class_before_the_gateway():
    run = run_gateway(_args())
    assert "gw-envoyproxy" in run.deps["gw-gatewayclass"]
    assert {"gw-envoyproxy", "gw-gatewayclass"} <= run.deps["gw-gateway"]
    # and all of them after the controllers that read them
    for name in ("gw-envoyproxy", "gw-gatewayclass", "gw-gateway"):
        assert {"gw-envoy-gateway", "gw-ai-gateway"} <= run.deps[name], (name, run.deps[name])
    # the routes wait for the Gateway
    assert "gw-gateway" in run.deps["gw-m-route"]
