"""The InferencePool CRD is cluster-wide: a destroy of one stack must not delete every InferencePool in the cluster
(SRE review of issue 12, should-fix 7); Pulumi leaves it in place (retainOnDelete)."""
from __future__ import annotations

from components.gateway import GatewayArgs, ModelRoute
from tests.support.gateway import run_gateway


def test_a_destroy_leaves_the_inferencepool_crd():
    run = run_gateway(GatewayArgs(cloud="gcp", namespace="vllm", routes=[ModelRoute("m", "vllm", False, {"a": "m"})],
                                  api_keys={"default": "k"}))
    crd = run.named("gw-inferencepool-crd")
    assert crd.inputs["metadata"]["name"] == "inferencepools.inference.networking.k8s.io"
    assert "gw-inferencepool-crd" in run.retained
    # the per-model objects are still deleted with the stack
    assert run.retained == {"gw-inferencepool-crd"}
