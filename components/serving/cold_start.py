"""How long the first request waits when a model scaled to zero (replicas.min 0) has to start again.

The gateway holds that request at most gateway/wake.WAKE_HOLD_S (270 s, below Envoy AI Gateway's 300 s ext-proc
timeout), which every cold start outlasts (COLD_START_FLOOR_S): past it the client gets the wake contract, 503 with
Retry-After while the model keeps starting (gateway/wake.py), and the model must say it accepts that
(replicas.firstRequest: retry, serving/checks.py). The route timeout comes from `first_request_timeout_s`, the
picker's queue TTL from `cold_start_seconds` capped at the hold, and the plan prints the wait (docs/scale-to-zero.md). Built from the same terms as the rollout deadlines
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
from ..gateway.wake import WAKE_HOLD_S, contract_line
from ..planner import Topology
from .autoscaling import POLLING_S
from .deployment import drain_s
from ..kube.k8s import PROBE_PERIOD_S
from ..kube.probes import IMAGE_PULL_S, MIN_BUDGET_S

if TYPE_CHECKING:
    from ..cache.component import CacheFacts

# Prometheus scrapes the EPP's metrics at the stack's scrape interval (observability.SCRAPE_INTERVAL, 15 s).
EPP_SCRAPE_S = 15
ACTIVATION_S = EPP_SCRAPE_S + POLLING_S
# The shortest cold start there is: activation, the smallest start-up budget the startupProbe allows (probes.py
# MIN_BUDGET_S) and one readiness period, on a GPU node that stayed with the image and the weights on it. It is
# already longer than the gateway holds a request (WAKE_HOLD_S), so no model at zero has its first request held
# end to end: serving/checks.py asks every one to accept the wake contract.
COLD_START_FLOOR_S = ACTIVATION_S + MIN_BUDGET_S + PROBE_PERIOD_S


def hold_warning(model: str, total_s: int) -> str | None:
    """What the plan says when a cold start outlasts what the gateway holds a request (None: it does not): the
    wake contract the clients get (gateway/wake.py)."""
    if total_s <= WAKE_HOLD_S:
        return None
    return contract_line(model, total_s)


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
        return (f"scale to zero: idle replicas go to 0; the model is back up to {self.total_s} s "
                f"(~{-(-self.total_s // 60)} min: {' + '.join(parts)}) after the first request")


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
