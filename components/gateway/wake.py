"""What a client gets when its request finds a model at zero replicas (scale to zero, replicas.min 0): the wake
contract (docs/scale-to-zero.md, "The first request: 503 + Retry-After"). Pure: plain specs and facts.

Why the gateway cannot simply hold the first request through the cold start, and what it does instead, each
checked at the pinned tags:

- Envoy AI Gateway v1.1.0 programs the InferencePool's ext-proc call to the endpoint picker with MessageTimeout
  300 s and FailureModeAllow false (envoyproxy/ai-gateway v1.1.0 internal/extensionserver/inferencepool.go,
  buildHTTPFilterForInferencePool; no annotation changes either). Past 300 s Envoy's ext_proc filter answers the
  request itself with 504 (details `ext_proc_error_per-message_timeout_exceeded`; envoyproxy/envoy
  source/extensions/filters/http/ext_proc/ext_proc.cc, Filter::onMessageTimeout), a gateway error a client
  cannot tell from an outage. A cold start is always longer (COLD_START_FLOOR_S in serving/cold_start.py).
- So the picker must answer first: its flow-control queue TTL (`flowControl.defaultRequestTTL`) is capped at
  WAKE_HOLD_S, below the 300 s. When a queued request's TTL expires while the pool has no endpoint, llm-d-router
  v0.10.0 answers 503 with the header `x-llm-d-request-dropped-reason: rejected-no-endpoints`
  (pkg/epp/requestcontrol/admission.go translateFlowControlOutcome, QueueOutcomeEvictedTTL with ttlPoolEmpty;
  pkg/common/error/error.go RequestDroppedReasonHeaderKey / RequestDroppedReasonNoEndpoints; the same TTL expiry
  with endpoints is 429 `rejected-ttl-expired`, backpressure, left alone). Its pkg/epp/flowcontrol/README.md:
  "keep it under the client or gateway deadline unless you want requests to survive a cold start".
- Envoy Gateway v1.9.0 rewrites exactly that answer: BackendTrafficPolicy `responseOverride` (api/v1alpha1/
  backendtrafficpolicy_types.go; shared_types.go ResponseOverride / CustomResponseMatch `statusCodes` and
  `responseHeaders` / CustomResponse `statusCode`, `contentType`, `body`, `header` (an HTTPHeaderFilter: `set`
  and `add`, no `remove`)), translated to Envoy's custom_response filter (internal/xds/translator/
  custom_response.go; internal/gatewayapi/backendtrafficpolicy.go buildResponseOverride turns `header.set` into
  response headers that replace), which Envoy Gateway places first in the chain "to ensure it sees local replies"
  (internal/xds/translator/httpfilters.go newOrderedHTTPFilter); AI Gateway inserts the pool's ext-proc filter
  just before the router (internal/extensionserver/post_translate_modify.go). Schema: schemas/crds/envoy-gateway/
  gateway.envoyproxy.io_backendtrafficpolicies.yaml (tests/gateway/test_scale_to_zero.py validates the policy).
  ⚠ Not yet observed on a cluster: that the picker's immediate response carries its header into the matcher.
"""
from __future__ import annotations

import json

# Envoy AI Gateway v1.1.0's ext-proc message timeout (above): the most the gateway holds a request for the picker.
GATEWAY_HOLD_MAX_S = 300
# The picker gives up this much before it: its TTL starts when it has the request (headers and body already
# through the ext-proc stream, whose per-message timer is running) and its queue sweeps expired items periodically.
EPP_HOLD_MARGIN_S = 30
WAKE_HOLD_S = GATEWAY_HOLD_MAX_S - EPP_HOLD_MARGIN_S  # 270: the picker's queue TTL for a model at zero
# What the 503 tells the client to wait before it asks again. Short on purpose: each retry is held again up to
# WAKE_HOLD_S (a long poll, answered the moment the model is ready), and a retry re-queues well within KEDA's
# cooldownPeriod (serving/autoscaling.py cooldown_s: the cold start for a model at zero), so a retrying client
# keeps the model waking, and one that gave up does not cancel a start in progress.
RETRY_AFTER_S = 30
WAKE_STATUS = 503
DROPPED_HEADER = "x-llm-d-request-dropped-reason"
NO_ENDPOINTS = "rejected-no-endpoints"
# The header a client (or a log) reads to tell a waking model from another 503 (the circuit breaker's carries
# x-envoy-overloaded); its value is the model's cold start, the longest it keeps answering 503.
WAKING_HEADER = "x-vllm-platform-waking"


def queue_ttl_s(cold_start_s: int) -> int:
    """The picker's flow-control queue TTL for a model at zero: the cold start, at most WAKE_HOLD_S."""
    return min(cold_start_s, WAKE_HOLD_S)


def wake_body(model: str, cold_start_s: int) -> str:
    """An OpenAI-style error body (the SDKs read error.message)."""
    return json.dumps({"error": {
        "message": f"{model} is starting from zero replicas (up to {cold_start_s} s); retry after "
                   f"{RETRY_AFTER_S} s (docs/scale-to-zero.md)",
        "type": "model_waking", "code": "model_waking"}}, separators=(",", ":"))


def response_override(model: str, cold_start_s: int) -> list[dict]:
    """BackendTrafficPolicy spec.responseOverride: the picker's 503 for an empty pool, answered as the wake
    contract (503, Retry-After, the waking header, a JSON body). Only that 503 matches: the circuit breaker's 503,
    a backend's own answers and the picker's 429 are left as they are."""
    return [{
        "match": {"statusCodes": [{"type": "Value", "value": WAKE_STATUS}],
                  "responseHeaders": [{"name": DROPPED_HEADER, "value": {"type": "Exact", "value": NO_ENDPOINTS}}]},
        "response": {"statusCode": WAKE_STATUS, "contentType": "application/json",
                     "body": {"type": "Inline", "inline": wake_body(model, cold_start_s)},
                     "header": {"set": [{"name": "Retry-After", "value": str(RETRY_AFTER_S)},
                                        {"name": WAKING_HEADER, "value": str(cold_start_s)}]}},
    }]


def contract_line(model: str, cold_start_s: int) -> str:
    """What the plan prints for a model at zero whose cold start outlasts the gateway's hold."""
    return (f"COLD START LONGER THAN THE GATEWAY HOLDS: {model} takes up to {cold_start_s} s to start from zero, and "
            f"the gateway holds a request at most {WAKE_HOLD_S} s (the endpoint picker's queue, below Envoy AI "
            f"Gateway's {GATEWAY_HOLD_MAX_S} s ext-proc timeout); a request that finds it at zero is answered "
            f"{WAKE_STATUS} with Retry-After: {RETRY_AFTER_S} and {WAKING_HEADER}: {cold_start_s} while it wakes "
            f"(replicas.firstRequest: retry): clients retry until it answers (docs/scale-to-zero.md), or set "
            f"replicas.min: 1")
