"""Plain HTTP is for dev (SRE review of issue 12, should-fix 8): a production stack that installs the gateway
terminates TLS, and the shipped prod stacks carry a marked placeholder certificate / Secret."""
from __future__ import annotations

import pytest

from components.config import ConfigError, parse
from components.offline.runner import load_stack_yaml, stack_file
from components.wiring import validated_plan
from tests.support.plans import planned

AWS_FIX = "set gateway.tls: {mode: acm, certificateArn: arn:aws:acm:REGION:ACCOUNT:certificate/ID}"
SECRET_FIX = ("set gateway.tls: {mode: certificate} with the secrets gatewayTlsCert and gatewayTlsKey (PEM; `pulumi "
              "config set --secret gatewayTlsCert < cert.pem`), or tls: {mode: secret, secretName: NAME} (a "
              "kubernetes.io/tls Secret cert-manager makes in envoy-gateway-system)")


def _raw(stack: str) -> dict:
    return {k.split(":", 1)[1]: v for k, v in load_stack_yaml(stack_file(stack)).items()
            if k.startswith("vllm-platform:")}


@pytest.mark.parametrize("stack, fix", [("prod-llama70b-aws", AWS_FIX), ("prod-qwen72b-gcp", SECRET_FIX),
                                        ("prod-llama405b-onprem", SECRET_FIX)])
def test_production_refuses_plain_http_naming_the_field_and_the_fix(stack, fix):
    raw = _raw(stack)
    raw["gateway"] = {k: v for k, v in raw["gateway"].items() if k != "tls"}
    raw["models"][0]["replicas"] = {"min": 0, "max": 2}  # a second plan-time problem: both reported at once
    with pytest.raises(ConfigError) as e:
        validated_plan(parse(raw, {"hfToken"}))
    tls = [x for x in e.value.errors if x.startswith("gateway.tls.mode")]
    assert tls == [f"gateway.tls.mode: none in prod: the API keys and prompts would cross the network in clear text "
                   f"(plain HTTP is for dev); {fix}"]
    assert any(x.startswith("models[0].replicas.min") for x in e.value.errors)


def test_dev_and_a_stack_on_a_shared_gateway_may_say_none():
    raw = _raw("dev")
    assert raw.get("gateway", {}).get("tls", {}).get("mode", "none") == "none"
    assert validated_plan(parse(raw, {"hfToken"}))
    prod = _raw("prod-llama405b-onprem")
    prod["gateway"] = {"install": False}  # the cluster stack's Gateway carries the TLS
    assert validated_plan(parse(prod, {"hfToken"}))


@pytest.mark.parametrize("stack, tls", [
    ("prod-llama70b-aws", {"mode": "acm",
                           "certificateArn": "arn:aws:acm:us-east-1:123456789012:certificate/"
                                             "00000000-0000-0000-0000-000000000000"}),
    ("prod-llama405b-aws", None), ("prod-llama405b-fp8-h200-aws", None),
    # issue 36: GKE's first `up` serves HTTPS from the certificate set as Pulumi secrets (no Secret to make first in a
    # namespace the stack creates); the stack file tells how to set them
    ("prod-qwen72b-gcp", {"mode": "certificate"}),
    ("prod-llama405b-onprem", {"mode": "secret", "secretName": "llm-gateway-tls"}),
])
def test_shipped_prod_stacks_serve_https_with_a_marked_placeholder(stack, tls):
    raw_tls = _raw(stack)["gateway"]["tls"]
    assert raw_tls["mode"] in ("acm", "secret", "certificate") and (tls is None or raw_tls == tls)
    section = stack_file(stack).read_text().split("vllm-platform:gateway:")[1].split("vllm-platform:models")[0]
    if raw_tls["mode"] == "certificate":
        assert "pulumi config set --secret gatewayTlsCert" in section and "gatewayTlsKey" in section
    else:
        assert "# replace" in section
    gw = planned(stack).exports["gateway"]
    assert gw["endpoints"] and all(u.startswith("https://") for u in gw["endpoints"].values())
