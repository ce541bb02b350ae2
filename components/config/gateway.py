"""`gateway:`: how callers outside the cluster reach the models (components/gateway/, docs/gateway.md).

One Gateway per stack (Envoy Gateway, on every cloud) in front of every model: API keys, per-key rate
limits, a request-size limit and TLS at the edge; prefix-cache-aware routing behind it (an InferencePool and
its endpoint picker per single-node model, Ray Serve LLM's PrefixCacheAffinityRouter for multi-node ones).
The keys themselves are never here: they are the secret `gatewayApiKeys` (a JSON object {client: key}).
"""
from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from .base import DNS_LABEL, _Base, cidr_blocks, field_error
from .problems import PlanContext, plan_check
from .token_quotas import GatewayTokenQuotas, check_token_quotas

# ACM certificate ARNs: arn:<partition>:acm:<region>:<account>:certificate/<id> (docs.aws.amazon.com, ACM ARNs).
ACM_ARN = re.compile(r"^arn:aws(-[a-z]+)*:acm:[a-z0-9-]+:\d{12}:certificate/[0-9a-f-]+$")
PrefixRouting = Literal["approximate", "precise"]
HOSTNAME = r"^(\*\.)?([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$"


class GatewayTls(_Base):
    """none: plain HTTP (dev, or an internal load balancer inside a trusted VPC); certificate: Envoy terminates
    with the certificate chain and key of the Pulumi secrets gatewayTlsCert / gatewayTlsKey, from which the stack
    makes the kubernetes.io/tls Secret in the gateway's namespace before the Gateway (works on the first `up`);
    secret: a kubernetes.io/tls Secret you (or cert-manager) make in that namespace once the first `up` created it;
    acm: an ACM certificate the AWS NLB terminates (AWS only)."""
    mode: Literal["none", "certificate", "secret", "acm"] = "none"
    secret_name: str | None = Field(None, pattern=r"^[a-z0-9]([-.a-z0-9]{0,251}[a-z0-9])?$")
    certificate_arn: str | None = None

    @model_validator(mode="after")
    def _complete(self):
        if self.mode == "secret" and not self.secret_name:
            raise field_error("secretName", "missing: tls.mode secret names the kubernetes.io/tls Secret (in the "
                                            "gateway namespace envoy-gateway-system) that holds your certificate")
        if self.mode == "acm" and not (self.certificate_arn and ACM_ARN.match(self.certificate_arn)):
            raise field_error("certificateArn", f"{self.certificate_arn!r} is not an ACM certificate ARN; tls.mode acm "
                                                f"needs arn:aws:acm:REGION:ACCOUNT:certificate/ID")
        if self.mode != "secret" and self.secret_name:
            raise field_error("secretName", f"only for tls.mode secret (mode is {self.mode}); remove it")
        if self.mode != "acm" and self.certificate_arn:
            raise field_error("certificateArn", f"only for tls.mode acm (mode is {self.mode}); remove it")
        return self


class GatewayRateLimit(_Base):
    """Per API key: requests per second (beyond it: 429 from the gateway, before any GPU). Concurrent requests
    are capped per model, every key together (Envoy's circuit breaker; beyond it 503): Envoy Gateway v1.9 has no
    per-key concurrency limit (docs/gateway.md). Unset: each model's plan ceiling, max replicas x the requests
    one replica holds within the SLA."""
    requests_per_second: int = Field(20, ge=1, le=100_000)
    concurrent_requests: int | None = Field(None, ge=1, le=100_000)


# Tenant priority (docs/tenant-priority.md): a client's tier -> the InferenceObjective priority its requests get in
# each single-node model's endpoint picker (llm-d-router v0.10.0 apix/v1alpha2/inferenceobjective_types.go: higher is
# served first, 0 is what a request without an objective gets, negative allowed). Three named tiers rather than free
# integers: every stack's pickers then run the same three flow-control bands (gateway/priority.py).
PRIORITY_TIERS = {"interactive": 10, "standard": 0, "batch": -10}


class GatewayClient(_Base):
    """One API-key holder with its tier: `{name: chat, priority: interactive}`. A plain name in gateway.clients is
    the same client at no tier (every request at priority 0, flow control not turned on for it)."""
    name: str
    priority: str | int | None = None  # a tier's name; a number is refused with the tiers (their numbers are fixed)

    @model_validator(mode="after")
    def _tier(self):
        if self.priority is not None and self.priority not in PRIORITY_TIERS:
            tiers = ", ".join(f"{t} ({p:+d})" if p else f"{t} (0)" for t, p in PRIORITY_TIERS.items())
            raise field_error("priority", f"{self.priority!r} for client {self.name}: not a tier; one of {tiers} "
                                          f"(docs/tenant-priority.md)")
        return self


def raw_client_names(entries) -> list[str]:
    """The client names of an unvalidated gateway.clients (the offline plan's placeholder keys): a name, or the
    `name` of a {name, priority} entry; unset: [default]."""
    return [e.get("name", "") if isinstance(e, dict) else str(e) for e in (entries or ["default"])]


class GatewaySettings(_Base):
    enabled: bool = True
    # false: the cluster already runs the gateway (a cluster stack installed it, examples/cluster-stack); this
    # stack makes only its models' pools, pickers, routes, policies and key Secret
    install: bool = True
    # internal: reachable from the VPC only (AWS internal NLB, GCP internal passthrough LB); internet-facing: public
    scheme: Literal["internal", "internet-facing"] = "internal"
    # apiKeys: every request needs `Authorization: Bearer KEY` (or x-api-key) of one of the clients below;
    # none: anyone who reaches the load balancer may call (dev only; the config and the policy pack refuse it
    # elsewhere)
    auth: Literal["apiKeys", "none"] = "apiKeys"
    # The API-key holders (e.g. one per team); their keys are the secret gatewayApiKeys {client: key}. An entry is a
    # name, or {name, priority} with a tier of PRIORITY_TIERS (tenant priority, docs/tenant-priority.md)
    clients: list[GatewayClient] = Field(default_factory=lambda: [GatewayClient(name="default")])
    rate_limit: GatewayRateLimit = GatewayRateLimit()
    # Tokens per minute per key and model, charged from each answer's usage (components/config/token_quotas.py);
    # None: no token budget (the per-key request limit above still holds)
    token_quotas: GatewayTokenQuotas | None = None
    # Largest request body the gateway forwards (prompt + parameters); beyond it 413.
    max_request_mib: int = Field(4, ge=1, le=1024)
    # A long generation streams for minutes: the gateway's per-request timeout.
    request_timeout_s: int = Field(600, ge=10, le=86_400)
    # The DNS name clients use (a CNAME to the load balancer you create); without it the URL is the LB's.
    hostname: str | None = Field(None, pattern=HOSTNAME)
    # Source CIDRs the load balancer admits (empty: the VPC for internal, everyone for internet-facing).
    source_ranges: list[str] = Field(default_factory=list)
    tls: GatewayTls = GatewayTls()
    # How each single-node model's endpoint picker scores prefix-cache affinity (docs/prefix-routing.md):
    # approximate: from hashes of the request text the picker itself routed (the chart's prefix-cache-scorer);
    # precise: from the KV-cache events vLLM publishes (what each pod really holds) and the real token ids (the
    # model pods' render endpoint). models[].prefixRouting overrides it per model.
    prefix_routing: PrefixRouting = "approximate"

    _ranges = field_validator("source_ranges")(cidr_blocks)

    @field_validator("clients", mode="before")
    @classmethod
    def _names(cls, value):
        """A plain name is the client at no tier."""
        return [{"name": c} if isinstance(c, str) else c for c in value] if isinstance(value, list) else value

    @property
    def client_names(self) -> list[str]:
        """The clients' names in order (a key's identity: the secret gatewayApiKeys, rate limits, quotas)."""
        return [c.name for c in self.clients]

    @property
    def tenant_priorities(self) -> dict[str, int] | None:
        """client -> its InferenceObjective priority when any client names a tier (a client without one: standard,
        0); None when none does (no objectives, flow control as without tenants)."""
        if all(c.priority is None for c in self.clients):
            return None
        return {c.name: PRIORITY_TIERS[c.priority or "standard"] for c in self.clients}

    @model_validator(mode="after")
    def _clients(self):
        names = self.client_names
        bad = [c for c in names if not re.match(DNS_LABEL, c)]
        if bad:
            raise field_error("clients", f"{', '.join(bad)}: a client is a DNS label (lower case, digits, '-')")
        if len(set(names)) != len(names):
            raise field_error("clients", "duplicate client names")
        if self.auth == "apiKeys" and not names:
            raise field_error("clients", "empty: auth apiKeys needs at least one client (e.g. [default])")
        if self.tenant_priorities is not None and self.auth != "apiKeys":
            raise field_error("clients", f"a priority needs auth: apiKeys (it is {self.auth}): the gateway knows a "
                                         f"request's client, and so its tier, only from its API key; remove the "
                                         f"priorities or set auth: apiKeys")
        return self


def prefix_routing(gw: GatewaySettings, dep) -> str:
    """A model's prefix-cache routing: its own models[].prefixRouting, else the stack's gateway.prefixRouting."""
    return dep.prefix_routing or gw.prefix_routing


def check_gateway(gw: GatewaySettings, cloud: str, environment: str) -> None:
    """What the gateway settings must agree with elsewhere in the stack (StackConfig calls it)."""
    if not gw.enabled and environment != "dev":
        raise field_error("gateway.enabled", f"false in {environment}: outside dev every model is served through the "
                                             f"authenticated gateway; set it to true")
    if gw.enabled and gw.auth == "none" and environment != "dev":
        raise field_error("gateway.auth", f"none in {environment}: only dev may serve without API keys; set auth: "
                                          f"apiKeys and the secret gatewayApiKeys")
    if gw.enabled:
        check_token_quotas(gw.token_quotas, gw.client_names, gw.auth, gw.install)
    if gw.tls.mode == "acm" and cloud != "aws":
        raise field_error("gateway.tls.mode", f"acm is an AWS certificate (the NLB terminates it); on {cloud} use "
                                              f"mode certificate (the secrets gatewayTlsCert / gatewayTlsKey) or mode "
                                              f"secret with a kubernetes.io/tls Secret (cert-manager)")
    if gw.tls.mode == "certificate" and not gw.install:
        raise field_error("gateway.tls.mode", "certificate with gateway.install false: TLS belongs to the stack that "
                                              "installs the Gateway (the cluster stack); remove tls here")
    if gw.scheme == "internet-facing" and gw.tls.mode == "none" and environment != "dev":
        raise field_error("gateway.tls.mode", f"none on an internet-facing gateway in {environment}: API keys would "
                                              f"cross the internet in clear text; use secret or acm")


def production_tls_problems(gw: GatewaySettings, cloud: str, environment: str) -> list[str]:
    """Plain HTTP is for dev: a production Gateway this stack installs terminates TLS (registered below as the plan
    check gateway.production_tls, config/problems.py: reported beside every other plan-time rule)."""
    if not (gw.enabled and gw.install and gw.tls.mode == "none" and environment == "prod"):
        return []
    fix = ("tls: {mode: acm, certificateArn: arn:aws:acm:REGION:ACCOUNT:certificate/ID}" if cloud == "aws" else
           "tls: {mode: certificate} with the secrets gatewayTlsCert and gatewayTlsKey (PEM; `pulumi config set "
           "--secret gatewayTlsCert < cert.pem`), or tls: {mode: secret, secretName: NAME} (a kubernetes.io/tls "
           "Secret cert-manager makes in envoy-gateway-system)")
    return [f"gateway.tls.mode: none in prod: the API keys and prompts would cross the network in clear text (plain "
            f"HTTP is for dev); set gateway.{fix}"]


@plan_check("gateway.production_tls")
def _production_tls(ctx: PlanContext) -> list[str]:
    return production_tls_problems(ctx.gateway, ctx.cloud, ctx.environment)
