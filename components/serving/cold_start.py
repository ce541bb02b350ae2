"""How long the first request waits when a model scaled to zero (replicas.min 0) has to start again.

The gateway must hold that request at least this long instead of failing it: its route timeout and the
endpoint picker's flow-control queue TTL come from `first_request_timeout_s` / `cold_start_seconds`, and the
plan prints the wait (docs/scale-to-zero.md). Built from the same terms as the rollout deadlines
(deployment.first_start_s) and the start-up budget (probes.py), so the figures cannot drift apart:

  activation   the EPP's queue gauge reaches Prometheus (one scrape) and KEDA reads it (one poll)
  GPU node     a node the cluster component creates: ClusterFacts.gpu_node_ready_s (the Cluster Autoscaler
               removed the idle one); 0 on an existing cluster, whose GPU nodes stay
  cache fill   a node-local (nvme) cache is empty on a new node: the Hub download again; a shared (rwx)
               cache kept the weights
  image pull   on a new node (probes.IMAGE_PULL_S)
  start-up     the start-up budget the startupProbe allows (weights load x safety + engine start)
  readiness    one readiness-probe period before the pod is an endpoint
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..cache.component import download_seconds
from ..planner import Topology
from .autoscaling import POLLING_S
from .deployment import drain_s
from ..kube.k8s import PROBE_PERIOD_S
from ..kube.probes import IMAGE_PULL_S

if TYPE_CHECKING:
    from ..cache.component import CacheFacts

# Prometheus scrapes the EPP's metrics at the stack's scrape interval (observability.SCRAPE_INTERVAL, 15 s).
EPP_SCRAPE_S = 15
ACTIVATION_S = EPP_SCRAPE_S + POLLING_S
# The longest the gateway holds a request while the EPP queues it: Envoy AI Gateway v1.1.0 programs the
# InferencePool's ext-proc filter with MessageTimeout 300 s and FailureModeAllow false
# (envoyproxy/ai-gateway v1.1.0 internal/extensionserver/inferencepool.go, buildHTTPFilterForInferencePool; no
# annotation changes it), so a request the EPP still holds after 300 s fails however long the route allows.
GATEWAY_HOLD_MAX_S = 300


def hold_warning(model: str, total_s: int) -> str | None:
    """What the plan warns when a cold start outlasts what the gateway can hold a request (None: it does not)."""
    if total_s <= GATEWAY_HOLD_MAX_S:
        return None
    return (f"COLD START LONGER THAN THE GATEWAY HOLDS: {model} takes up to {total_s} s to start from zero, and "
            f"the gateway holds a request at most {GATEWAY_HOLD_MAX_S} s (Envoy AI Gateway's ext-proc timeout), so "
            f"the first request after an idle spell fails while the model keeps starting; the client retries "
            f"after ~{total_s} s, or set replicas.min: 1")


@dataclass(frozen=True)
class ColdStart:
    activation_s: int
    node_s: int
    cache_fill_s: int
    image_pull_s: int
    startup_s: int
    readiness_s: int

    @property
    def total_s(self) -> int:
        return (self.activation_s + self.node_s + self.cache_fill_s + self.image_pull_s + self.startup_s
                + self.readiness_s)

    def terms(self) -> dict:
        return {"activationS": self.activation_s, "gpuNodeS": self.node_s, "cacheFillS": self.cache_fill_s,
                "imagePullS": self.image_pull_s, "startupS": self.startup_s, "readinessS": self.readiness_s,
                "totalS": self.total_s}

    def describe(self) -> str:
        parts = [f"activation {self.activation_s} s"]
        if self.node_s:
            parts.append(f"GPU node {self.node_s} s")
        if self.cache_fill_s:
            parts.append(f"cache fill {self.cache_fill_s} s")
        if self.image_pull_s:
            parts.append(f"image pull {self.image_pull_s} s")
        parts += [f"start-up {self.startup_s} s", f"readiness {self.readiness_s} s"]
        return (f"scale to zero: idle replicas go to 0; the first request after that waits up to {self.total_s} s "
                f"(~{-(-self.total_s // 60)} min: {' + '.join(parts)}) while the gateway holds it")


def cold_start(t: Topology, cache: "CacheFacts", node_ready_s: int = 0) -> ColdStart:
    """The terms of one cold start of t from zero replicas. `node_ready_s`: ClusterFacts.gpu_node_ready_s."""
    new_node = node_ready_s > 0
    return ColdStart(
        activation_s=ACTIVATION_S, node_s=node_ready_s,
        cache_fill_s=download_seconds(t.weights_gib) if new_node and cache.kind == "nvme" else 0,
        image_pull_s=IMAGE_PULL_S if new_node else 0,
        startup_s=cache.budget(t).total_s, readiness_s=PROBE_PERIOD_S)


def cold_start_seconds(t: Topology, cache: "CacheFacts", node_ready_s: int = 0) -> int:
    """The longest a request to a model at zero replicas waits before its first token can start."""
    return cold_start(t, cache, node_ready_s).total_s


def first_request_timeout_s(t: Topology, cache: "CacheFacts", node_ready_s: int = 0) -> int:
    """What the gateway's route timeout (and the EPP's queue TTL, at least cold_start_seconds) must allow the
    first request: the cold start, then the longest answer at the SLA's time per output token (drain_s)."""
    return cold_start_seconds(t, cache, node_ready_s) + drain_s(t)
