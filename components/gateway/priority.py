"""Tenant priority (`gateway.clients[].priority`, components/config/gateway.py; docs/tenant-priority.md), as plain
specs (pure: tests read them without Pulumi).

A batch key must not starve an interactive one on the same model. What the pinned sources do, and what the stack
makes of it:

- The endpoint picker (llm-d-router v0.10.0) takes a request's priority from an InferenceObjective
  (llm-d.ai/v1alpha2, apix/v1alpha2/inferenceobjective_types.go: spec.priority, higher served first, unset = 0;
  spec.poolRef names the InferencePool). The request names its objective in the header `x-llm-d-inference-objective`
  (deprecated alias `x-gateway-inference-objective`, read when the first is absent: pkg/epp/metadata/consts.go
  headerAliases). The picker looks the value up by objective NAME among the objectives whose poolRef is its own pool
  (pkg/epp/datastore/datastore.go ObjectiveGet, pkg/epp/controller/inferenceobjective_reconciler.go eventPredicate);
  no header, or a name it does not hold: priority 0 (pkg/epp/requestcontrol/director.go getInferenceObjective).
  Objective names are unique per namespace and every model's pool lives in the serving namespace, so an objective
  is per (model, client): `<model>.<client>` (both DNS labels, so the dot never makes two pairs one name).
- The picker finds the InferenceObjective CRD once, at start (pkg/epp/server/controller_config.go
  populateWithDiscovery): the CRD is applied before any picker release (gateway/component.py).
- The priority only orders requests with flow control on (the `flowControl` feature gate, registered off in
  cmd/epp/runner/runner.go): while the pool is saturated (the default utilization-detector) requests wait in the
  picker's queue, the highest band dispatched first; within a band the flows (the header
  `x-llm-d-inference-fairness-id`, else "default-flow") share by the band's fairness policy. A request that waits
  longer than flowControl.defaultRequestTTL is shed with 429 (pkg/epp/requestcontrol/admission.go
  translateFlowControlOutcome: ResourceExhausted while the pool has endpoints).
- The header must come from the gateway, never the caller. Envoy applies an HTTPRoute's RequestHeaderModifier in the
  router filter, after the picker's ext_proc has read the headers (Envoy AI Gateway v1.1.0
  internal/extensionserver/post_translate_modify.go patchListenerWithInferencePoolFilters puts the picker's filter
  just before the router), so a route filter cannot set or strip it in time. A Lua filter can: Envoy Gateway
  v1.9.0 orders api_key_auth (7) before Lua (13+) (internal/xds/translator/httpfilters.go newOrderedHTTPFilter),
  and AI Gateway inserts its own ext_proc before the first Lua filter (afterExtProcFilterPrefixes), so the script
  runs after the key check set the client header (objects.CLIENT_HEADER, which api_key_auth itself sets from the
  matched key) and before the picker. One EnvoyExtensionPolicy per model (schemas/crds/envoy-gateway,
  api/v1alpha1/envoyextensionpolicy_types.go `lua`, Inline) on the model's route and its rule of the shared route
  (route rules by sectionName: internal/gatewayapi/envoyextensionpolicy.go) sets the objective and the fairness id
  from the client header and removes every caller-sent copy of the four headers.
"""
from __future__ import annotations

import yaml

from .objects import CLIENT_HEADER

OBJECTIVE_API = "llm-d.ai/v1alpha2"
OBJECTIVE_KIND = "InferenceObjective"
POOL_GROUP = "inference.networking.k8s.io"
# pkg/epp/metadata/consts.go (llm-d-router v0.10.0): the current name first, then the deprecated alias the picker
# reads when the current one is absent
OBJECTIVE_HEADER, OBJECTIVE_HEADER_OLD = "x-llm-d-inference-objective", "x-gateway-inference-objective"
FAIRNESS_HEADER, FAIRNESS_HEADER_OLD = "x-llm-d-inference-fairness-id", "x-gateway-inference-fairness-id"
# What else the picker reads off the request's headers and a caller must not choose (pkg/epp/metadata/consts.go at
# v0.10.0): a model-name rewrite (another model or adapter in the same pool) and latency SLOs (the SLO-aware scorers).
REWRITE_HEADERS = ("x-llm-d-model-name-rewrite", "x-gateway-model-name-rewrite")
SLO_HEADERS = ("x-llm-d-slo-ttft-ms", "x-slo-ttft-ms", "x-llm-d-slo-tpot-ms", "x-slo-tpot-ms")
CALLER_HEADERS = (OBJECTIVE_HEADER, OBJECTIVE_HEADER_OLD, FAIRNESS_HEADER, FAIRNESS_HEADER_OLD,
                  *REWRITE_HEADERS, *SLO_HEADERS)
# Flow control (apix/config/v1alpha1 endpointpickerconfig_types.go FlowControlConfig / PriorityBandConfig)
FLOW_CONTROL_GATE = "flowControl"
# Within a band each client is a flow (its fairness id); round-robin takes the flows in turn, where the default
# global-strict-fairness-policy serves the single oldest request of the band whoever sent it
# (pkg/epp/framework/plugins/flowcontrol/fairness/roundrobin, registered StabilityBeta in cmd/epp/runner/runner.go;
# a band's fairnessPolicyRef names a plugin instance, pkg/epp/config/loader/flowcontrol.go resolvePlugin)
FAIRNESS_POLICY = "round-robin-fairness-policy"
# The queue wait a request may spend before it is shed with 429: the picker's own default (FlowControlConfig
# .defaultRequestTTL "If omitted, it defaults to 60s"), spelt out; a model that scales to zero keeps its longer
# cold-start TTL (gateway/wake.py), which then holds for every band
QUEUE_TTL_S = 60
# The band of a request without an objective (director.go: defaultPriority 0): always configured
DEFAULT_PRIORITY = 0


def objective_name(model: str, client: str) -> str:
    return f"{model}.{client}"


def objective_spec(model: str, priority: int) -> dict:
    """The client's InferenceObjective on the model's pool (the pool is named after the model: the EPP release)."""
    return {"priority": priority, "poolRef": {"group": POOL_GROUP, "kind": "InferencePool", "name": model}}


def bands(priorities: dict[str, int]) -> list[int]:
    """The priority levels the pickers run, highest first: every tier a client has, and 0."""
    return sorted({*priorities.values(), DEFAULT_PRIORITY}, reverse=True)


def with_flow_control(config_yaml: str, priorities: dict[str, int]) -> str:
    """The picker's config file (values.py: the default plugins, LoRA, P/D or scale-to-zero one) with the tenants'
    priority bands: the flowControl gate once, the bands (each round-robin between clients) beside whatever
    flowControl already holds (scale to zero's defaultRequestTTL stays), and the fairness plugin instance."""
    config = yaml.safe_load(config_yaml)
    gates = list(config.get("featureGates") or [])
    if FLOW_CONTROL_GATE not in gates:
        gates.append(FLOW_CONTROL_GATE)
    flow = dict(config.get("flowControl") or {})
    flow.setdefault("defaultRequestTTL", f"{QUEUE_TTL_S}s")
    flow["priorityBands"] = [{"priority": p, "fairnessPolicyRef": FAIRNESS_POLICY} for p in bands(priorities)]
    plugins = list(config.get("plugins") or [])
    if not any(p.get("type") == FAIRNESS_POLICY for p in plugins):
        plugins.append({"type": FAIRNESS_POLICY})
    out = {"apiVersion": config["apiVersion"], "kind": config["kind"], "featureGates": gates, "flowControl": flow}
    out.update({k: v for k, v in config.items() if k not in out})
    out["plugins"] = plugins
    return yaml.safe_dump(out, sort_keys=False)


def _lua_string(value: str) -> str:
    """A Lua string literal of a DNS label (the model's name): nothing in it to escape."""
    return '"' + value + '"'


def lua_script(model: str) -> str:
    """Per model: drop every caller-sent objective / fairness header, then, for a request the key check identified
    (CLIENT_HEADER, set by api_key_auth from the matched key; sanitize strips the key itself), name the client's
    objective on this model and make the client its own flow. No client header (no key check on the route): the
    request keeps priority 0 and the default flow."""
    removes = "\n".join(f'  h:remove("{name}")' for name in CALLER_HEADERS)
    return (f"function envoy_on_request(request_handle)\n"
            f"  local h = request_handle:headers()\n"
            f"{removes}\n"
            f'  local client = h:get("{CLIENT_HEADER}")\n'
            f"  if client ~= nil and client ~= \"\" then\n"
            f'    h:replace("{OBJECTIVE_HEADER}", {_lua_string(model)} .. "." .. client)\n'
            f'    h:replace("{FAIRNESS_HEADER}", client)\n'
            f"  end\n"
            f"end\n")


def extension_policy_name(model: str) -> str:
    return f"{model}-priority"


def extension_policy_spec(model: str, targets: list[dict]) -> dict:
    """Envoy Gateway EnvoyExtensionPolicy (v1alpha1): the Lua filter on the model's route(s) (targets: as the
    model's BackendTrafficPolicy, its own HTTPRoute and its rule of the shared route)."""
    return {"targetRefs": list(targets), "lua": [{"type": "Inline", "inline": lua_script(model)}]}


def _signed(p: int) -> str:
    return f"{p:+d}" if p else "0"


def priority_lines(priorities: dict[str, int] | None, models: list[str]) -> list[str]:
    """What `plan` prints: each client's tier and priority, and the models it orders (the single-node ones)."""
    if not priorities:
        return []
    from ..config.gateway import PRIORITY_TIERS
    tier = {p: t for t, p in PRIORITY_TIERS.items()}
    clients = ", ".join(f"{c} {tier.get(p, '?')} ({_signed(p)})" for c, p in priorities.items())
    where = ", ".join(models) if models else "no single-node model (multi-node models have no endpoint picker)"
    return [f"  tenant priority (served first under saturation, highest first): {clients}",
            f"    per model an InferenceObjective per client and flow control with bands "
            f"{', '.join(_signed(b) for b in bands(priorities))} (round robin between clients of a band; "
            f"a request queued over {QUEUE_TTL_S}s is shed with 429): {where}"]
