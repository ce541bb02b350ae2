"""The plans the whole-plan tests read: every shipped stack, variants of them, and the test-only fabric stacks
(tests/stacks/Pulumi.fabric-*.yaml), each planned once per test process."""
from __future__ import annotations

import functools

from components.offline.runner import stack_names
from tests.support.plans import plan_config, planned
from tests.support.consistency import Plan, fabric_stacks, stack_path, stack_raw

STACKS = stack_names()
# The same cloud stacks with modelCache.kind nvme: serving reads a hostPath on the node's local disks.
NVME_VARIANTS = [s for s in ("prod-llama70b-aws", "prod-llama405b-aws", "prod-qwen72b-gcp") if s in STACKS]
# The on-prem stack on a cluster that already runs Prometheus and KubeRay (add-ons switched off).
CLUSTER_PROMETHEUS = "http://prometheus-operated.observability.svc:9090"
OWN_ADDONS = {"prometheus": {"enabled": False, "url": CLUSTER_PROMETHEUS, "monitorLabels": {"prometheus": "main"}},
              "kuberay": {"enabled": False}}
# A replica across two GKE A3 High nodes: GPU NIC networks, NCCL sockets (no TCPX plugin or installer).
# replicas.max 3 (was 2): under the 0.35 planning margin a TP 8 x PP 2 replica holds 13 users, so 32 users need
# 3 replicas (6 nodes, as the 2 x PP 3 plan had); max 2 is refused.
GKE_405B = {"name": "llama-405b", "model": "llama-3.1-405b", "precision": "bf16", "accelerator": "h100",
            "instanceTypes": ["a3-highgpu-8g"], "maxModelLen": 32768,
            "sla": {"ttftMs": 3000, "tpotMs": 80, "concurrency": 32}, "replicas": {"min": 1, "max": 3}}
VARIANTS = {**{f"{s}+nvme": (s, {"modelCache": {"kind": "nvme"}}) for s in NVME_VARIANTS},
            "prod-llama405b-onprem+cluster-addons": ("prod-llama405b-onprem", {"addons": OWN_ADDONS}),
            "prod-qwen72b-gcp+multinode": ("prod-qwen72b-gcp", {"models": [GKE_405B]})}
# Every fabric family with a replica across nodes (tests/stacks/Pulumi.fabric-*.yaml).
FABRIC_STACKS = fabric_stacks()
PLANS = STACKS + [v for v, (s, _) in VARIANTS.items() if s in STACKS] + FABRIC_STACKS


@functools.lru_cache(maxsize=None)
def plan(name: str) -> Plan:
    if name in VARIANTS:
        stack, override = VARIANTS[name]
        raw = {**stack_raw(stack), **override}
        resources, exports = plan_config(raw, stack=stack)
        return Plan(name, raw, resources, exports)
    if name in FABRIC_STACKS:
        result = planned(str(stack_path(name)))
        return Plan(name, stack_raw(name), result.resources, result.exports)
    return Plan(name, stack_raw(name), planned(name).resources, planned(name).exports)
