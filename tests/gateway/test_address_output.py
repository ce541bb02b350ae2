"""The URL's GATEWAY_ADDRESS is a placeholder in the stack outputs (SRE review of issue 12, should-fix 5): `plan`
says so and prints the command that reads the load balancer's address."""
from __future__ import annotations

from components.outputs import gateway_lines
from tests.support.plans import planned

COMMAND = "kubectl -n envoy-gateway-system get gateway inference -o jsonpath='{.status.addresses[0].value}'"


def test_plan_says_the_address_is_a_placeholder_and_how_to_read_it():
    gw = planned("dev").exports["gateway"]
    assert gw["address"] == COMMAND
    assert gw["endpoints"]["llama-8b"] == "http://GATEWAY_ADDRESS/llama-8b/v1"
    assert ("  GATEWAY_ADDRESS is a placeholder, also in the stack outputs (the load balancer's address exists only "
            f"after `pulumi up`); read it with: {COMMAND}") in gateway_lines(gw)


def test_a_hostname_replaces_the_placeholder_and_the_note():
    lines = gateway_lines({"scheme": "internal", "auth": "apiKeys", "tls": "secret",
                           "url": "https://llm.example.com/v1", "endpoints": {"m": "https://llm.example.com/m/v1"}})
    assert not any("GATEWAY_ADDRESS" in x for x in lines)
