"""`gateway.tokenQuotas`: tokens per minute per API key and model, charged from each answer's token usage
(components/gateway/quotas.py, docs/token-quotas.md).

Envoy AI Gateway v1.1.0 reads the usage of every answer on the shared URL and Envoy Gateway v1.9.0's global rate
limit (its rate-limit service, on a Redis this stack runs) charges it to the caller's budget; a caller over budget
gets 429 until the minute's window has room again. The per-key request limits (`gateway.rateLimit`) stay as
they are. Budgets are per client NAME (gateway.clients), never per key value: the keys stay the secret gatewayApiKeys.
"""
from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from .base import _Base, field_error
from .problems import PlanContext, plan_check

# Envoy Gateway v1.9.0 BackendTrafficPolicy rateLimit.*.rules[].limit.requests: int64, maximum 4294967295
# (schemas/crds/envoy-gateway/gateway.envoyproxy.io_backendtrafficpolicies.yaml).
MAX_LIMIT = 4_294_967_295


class GatewayTokenQuotas(_Base):
    """tokensPerMinute: each client's budget per model; clients: a different budget for some clients (by name);
    counts: which tokens are charged (total: prompt + answer, what the planner's fleet capacity counts)."""
    tokens_per_minute: int
    clients: dict[str, int] = Field(default_factory=dict)
    counts: Literal["total", "output", "input"] = "total"

    @model_validator(mode="after")
    def _budgets(self):
        if not 1 <= self.tokens_per_minute <= MAX_LIMIT:
            raise field_error("tokensPerMinute", f"{self.tokens_per_minute}: a budget is 1..{MAX_LIMIT} tokens per "
                                                 f"minute (the rate limit's largest count); without a budget remove "
                                                 f"gateway.tokenQuotas")
        bad = sorted(c for c, n in self.clients.items() if not 1 <= n <= MAX_LIMIT)
        if bad:
            raise field_error("clients", f"{', '.join(bad)}: a budget is 1..{MAX_LIMIT} tokens per minute "
                                         f"(to stop a client, remove it from gateway.clients)")
        return self

    def budget(self, client: str) -> int:
        return self.clients.get(client, self.tokens_per_minute)


def check_token_quotas(q: GatewayTokenQuotas | None, clients: list[str], auth: str, install: bool) -> None:
    """What the quotas must agree with in `gateway:` (check_gateway calls it)."""
    if q is None:
        return
    if auth != "apiKeys":
        raise field_error("gateway.tokenQuotas", f"needs gateway.auth: apiKeys (it is {auth}): a budget belongs to "
                                                 f"an API key's client, and without keys there is no client")
    unknown = sorted(set(q.clients) - set(clients))
    if unknown:
        raise field_error("gateway.tokenQuotas.clients", f"{', '.join(unknown)}: not in gateway.clients "
                                                         f"({', '.join(clients)}); a budget is set per client name")
    if not install:
        # Envoy Gateway refuses a BackendTrafficPolicy with global rules unless its own config runs the rate-limit
        # service (v1.9.0 internal/gatewayapi/backendtrafficpolicy.go buildGlobalRateLimit: "enable Ratelimit in
        # the EnvoyGateway config"), and a refused policy makes its routes answer 500 to every request
        # (applyTrafficFeatureToRoute); a cluster stack's install has no rate-limit service
        raise field_error("gateway.tokenQuotas", "needs gateway.install: true: the rate-limit service and its "
                                                 "Redis come with the stack's own Envoy Gateway install, which a "
                                                 "cluster stack's Gateway (gateway.install: false) runs without; "
                                                 "remove tokenQuotas or install the gateway in this stack")


def lora_refusal(model: str) -> str:
    """Token quotas beside LoRA adapters (engine.lora): a client names an adapter in the body's `model` on the
    model's own URL `/<model>/v1` (docs/lora.md), which quotas remove; the shared URL's AIGatewayRoute matches the
    served model names only (gateway/shared.py, an exact `x-ai-eg-model` per model), so every adapter request
    would get AI Gateway's route-not-found 404. Refused rather than shipped that way."""
    return (f"gateway.tokenQuotas: {model} serves LoRA adapters (engine.lora), which clients reach by the "
            f"adapter's name on the model's own URL /{model}/v1; token quotas count only the shared URL, whose "
            f"routes match served model names, so with quotas every adapter request would get 404. Remove "
            f"gateway.tokenQuotas, or engine.lora from {model}")


def lora_problems(gw, models) -> list[str]:
    """One line per model with engine.lora where the gateway runs token quotas (lora_refusal). The plan check
    gateway.quota_lora (config/problems.py) reports them with the stack's other configuration errors, before any
    resource is built; the gateway component keeps the same check for GatewayArgs built by hand
    (components/gateway/quotas.py)."""
    if not (gw.enabled and gw.token_quotas is not None):
        return []
    return [lora_refusal(m.name) for m in models if m.engine.lora is not None]


@plan_check("gateway.quota_lora")
def _quota_lora(ctx: PlanContext) -> list[str]:
    return lora_problems(ctx.gateway, ctx.models)
