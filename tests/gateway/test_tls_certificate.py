"""gateway.tls.mode certificate (issue 36): the first `pulumi up` terminates TLS without a Secret made beforehand in a
namespace the stack itself creates. The certificate and key come as the Pulumi secrets gatewayTlsCert / gatewayTlsKey;
the stack makes the kubernetes.io/tls Secret in the gateway namespace, after that namespace and before the Gateway,
and its data stays a Pulumi secret."""
from __future__ import annotations

import pytest
from pulumi.runtime import rpc

from components.config.load import ConfigError, parse
from components.gateway import GatewayArgs, ModelRoute
from components.gateway.component import tls_problems
from tests.support.gateway import run_gateway

CERT = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----\n"
KEY = "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49\n-----END PRIVATE KEY-----\n"
SECRET = "kubernetes:core/v1:Secret"


def _run(**kw):
    return run_gateway(GatewayArgs(cloud="gcp", namespace="vllm", routes=[ModelRoute("m", "vllm", False, {"a": "m"})],
                                   api_keys={"default": "k"}, **kw))


def test_the_stack_makes_the_tls_secret_before_the_gateway_and_keeps_it_secret():
    run = _run(tls_mode="certificate", tls_certificate=CERT, tls_key=KEY)
    tls = run.named("gw-tls")
    assert tls.type == SECRET and tls.inputs["type"] == "kubernetes.io/tls"
    assert tls.inputs["metadata"]["namespace"] == "envoy-gateway-system"
    assert rpc.is_rpc_secret(tls.inputs["stringData"]), "the certificate's key must stay a Pulumi secret"
    assert tls.inputs["stringData"]["value"] == {"tls.crt": CERT, "tls.key": KEY}
    # in the namespace the stack makes, and before the Gateway that names it
    assert "gw-ns-envoy-gateway-system" in run.deps["gw-envoy-gateway"] and "gw-envoy-gateway" in run.deps["gw-tls"]
    assert "gw-tls" in run.deps["gw-gateway"]
    [listener] = run.named("gw-gateway").inputs["spec"]["listeners"]
    assert listener["protocol"] == "HTTPS" and listener["port"] == 443
    assert listener["tls"] == {"mode": "Terminate", "certificateRefs": [{"kind": "Secret", "name": "vllm-gateway-tls"}]}


def test_secret_mode_makes_no_secret_and_names_yours():
    run = _run(tls_mode="secret", tls_secret="mine")
    assert not [r for r in run.resources if r.name == "gw-tls"]
    [listener] = run.named("gw-gateway").inputs["spec"]["listeners"]
    assert listener["tls"]["certificateRefs"] == [{"kind": "Secret", "name": "mine"}]


@pytest.mark.parametrize("cert, key, expected", [
    ("", KEY, "gatewayTlsCert: missing or empty"),
    (None, None, "gatewayTlsKey: missing or empty"),
    (CERT, " ", "gatewayTlsKey: missing or empty"),
    (KEY, CERT, "gatewayTlsCert: holds a private key"),
    ("MIIBszCCAVmgAwIBAgIU", KEY, "gatewayTlsCert: no PEM certificate"),
    (CERT, "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIGH\n-----END ENCRYPTED PRIVATE KEY-----", "gatewayTlsKey: an encrypted key"),
    (CERT, "just a key", "gatewayTlsKey: no PEM private key"),
    (CERT.replace("MIIBszCCAVmgAwIBAgIU", "not*base64!"), KEY, "gatewayTlsCert: no PEM certificate"),
])
def test_bad_pem_is_named_by_its_secret(cert, key, expected):
    problems = tls_problems(cert, key)
    assert any(p.startswith(expected) for p in problems), problems


def test_good_pem_pairs_pass():
    assert tls_problems(CERT + CERT, KEY) == []  # a chain
    rsa = KEY.replace("PRIVATE KEY", "RSA PRIVATE KEY")
    assert tls_problems(CERT, rsa) == []


def test_a_bad_pair_fails_the_run_with_the_fields_not_a_traceback():
    with pytest.raises(Exception, match="gatewayTlsKey: missing or empty"):
        _run(tls_mode="certificate", tls_certificate=CERT, tls_key="")


def _raw(mode: dict) -> dict:
    from components.offline.runner import load_stack_yaml, stack_file
    raw = {k.split(":", 1)[1]: v for k, v in load_stack_yaml(stack_file("dev")).items()
           if k.startswith("vllm-platform:")}
    return {**raw, "gateway": {"tls": mode}}


def test_no_other_mode_takes_the_tls_secrets_and_they_are_never_plain_text():
    parse(_raw({"mode": "certificate"}), secrets={"hfToken", "gatewayApiKeys", "gatewayTlsCert", "gatewayTlsKey"})
    with pytest.raises(ConfigError) as err:
        parse(_raw({"mode": "none"}), secrets={"hfToken", "gatewayTlsCert"})
    assert any(e.startswith("gatewayTlsCert: set, but gateway.tls.mode is none") for e in err.value.errors)
    with pytest.raises(ConfigError) as err:
        parse(_raw({"mode": "certificate"}), plain={"gatewayTlsKey"}, secrets={"gatewayTlsCert"})
    assert any(e.startswith("gatewayTlsKey: set in plain text") for e in err.value.errors)
