"""LeaderWorkerSet rules (issue 25): a group whose pods hold one engine together.

Field names and values: kubernetes-sigs/lws v0.10.0 (schemas/crds/lws; api/leaderworkerset/v1/
leaderworkerset_types.go): leaderWorkerTemplate.restartPolicy RecreateGroupOnPodRestart / RecreateGroupAfterStart
/ None (Default, deprecated); spec.startupPolicy LeaderCreated (the default) / LeaderReady.
"""
from __future__ import annotations

from .core import MANDATORY, UNKNOWN, as_dict, as_number, get, rule
from .podspec import LWS, command_words, flag_values, pod_templates, runs_vllm_serve
from .production import GKE_INTERFACES

GANG_POLICIES = ("RecreateGroupOnPodRestart", "RecreateGroupAfterStart")


def _name(props: dict) -> str:
    return str(get(props, "metadata", "name") or "unnamed")


def _spans_nodes(flags: dict) -> bool:
    """`vllm serve` flags of an engine over several nodes: the mp executor's --nnodes > 1, or data-parallel ranks
    beyond the node's own (--data-parallel-size > --data-parallel-size-local: wide-EP, docs/wide-ep.md)."""
    if (as_number(flags.get("--nnodes")) or 1) > 1:
        return True
    dp, local = as_number(flags.get("--data-parallel-size")), as_number(flags.get("--data-parallel-size-local"))
    return dp is not None and local is not None and dp > local


def _multi_node_vllm(props: dict) -> bool:
    """Some pod of the set runs `vllm serve` over more than one node (--nnodes > 1, or DP ranks on other nodes)."""
    for tpl in pod_templates(LWS, props):
        for _, c in tpl.containers(init=False):
            if runs_vllm_serve(c) and _spans_nodes(flag_values(command_words(c))):
                return True
    return False


@rule("lws-gang-restart", MANDATORY, {LWS},
      "A LeaderWorkerSet whose groups span pods (leaderWorkerTemplate.size > 1) recreates the whole group when one of "
      "its pods or containers restarts: the engine's ranks are spread over the group, and a rank that comes back "
      "alone is never called again while the others hang in their collectives (the replica serves nothing and "
      "stays Ready until its liveness gives up).",
      "set spec.leaderWorkerTemplate.restartPolicy: RecreateGroupOnPodRestart")
def lws_gang_restart(resource_type, props):
    size = get(props, "spec", "leaderWorkerTemplate", "size", default=1)
    policy = get(props, "spec", "leaderWorkerTemplate", "restartPolicy", default="None")
    if size == UNKNOWN or policy == UNKNOWN or (as_number(size) or 1) <= 1:
        return
    if policy not in GANG_POLICIES:
        yield (f"LeaderWorkerSet {_name(props)}: groups of {as_number(size):g} pods with restartPolicy {policy}: "
               f"a restarted pod rejoins no engine")


@rule("lws-startup-leader-created", MANDATORY, {LWS},
      "A LeaderWorkerSet running one vLLM engine across nodes (`vllm serve --nnodes N`, or data-parallel ranks "
      "beyond the node's own: `--data-parallel-size` above `--data-parallel-size-local`) creates its "
      "workers with the leader: the leader's /health answers only once every worker's ranks joined, so "
      "startupPolicy LeaderReady (workers only after a Ready leader) never starts the group.",
      "set spec.startupPolicy: LeaderCreated (the default)")
def lws_startup_leader_created(resource_type, props):
    if get(props, "spec", "startupPolicy") == "LeaderReady" and _multi_node_vllm(props):
        yield (f"LeaderWorkerSet {_name(props)}: startupPolicy LeaderReady with a multi-node vLLM engine (--nnodes or "
               f"data-parallel ranks across nodes)")


# DeepEP's all2all (vLLM 0.31 --all2all-backend deepep_*) reaches the other nodes' GPUs through NVSHMEM's
# GPU-initiated RDMA over InfiniBand / RoCE verbs (components/planner/wide_ep.py ALL2ALL): a pod without an RDMA
# device (a Network Operator RDMA resource, or GKE's RDMA networks) fails at start-up. EFA is no such device here:
# DeepEP's IBGDA transport does not run on it.
VERBS_RESOURCES = ("rdma/",)


def _verbs_device(tpl, c: dict) -> bool:
    amounts = {**as_dict(get(c, "resources", "requests")), **as_dict(get(c, "resources", "limits"))}
    return any(k.startswith(VERBS_RESOURCES) for k in amounts) or \
        "rdma-" in str(tpl.annotations.get(GKE_INTERFACES) or "")


@rule("lws-wide-ep-rdma", MANDATORY, {LWS},
      "A wide-EP LeaderWorkerSet whose vLLM moves tokens to the experts on other nodes with DeepEP "
      "(`--all2all-backend deepep_low_latency` / `deepep_high_throughput` and data-parallel ranks across nodes) "
      "gives every pod an RDMA device: DeepEP's NVSHMEM transport is GPU-initiated RDMA over InfiniBand / RoCE "
      "verbs, and an engine without it fails at start-up (docs/wide-ep.md).",
      "serve the model on an InfiniBand / RoCE / GKE RDMA pool (existing.gpuNodes.fabric), or set "
      "models[].parallelism.all2allBackend: allgather_reducescatter")
def lws_wide_ep_rdma(resource_type, props):
    for tpl in pod_templates(LWS, props):
        for _, c in tpl.containers(init=False):
            flags = flag_values(command_words(c))
            if not (runs_vllm_serve(c) and _spans_nodes(flags)
                    and str(flags.get("--all2all-backend", "")).startswith("deepep")):
                continue
            if not _verbs_device(tpl, c):
                yield (f"LeaderWorkerSet {_name(props)}: {flags['--all2all-backend']} across nodes without an RDMA "
                       f"device (container {c.get('name')})")
