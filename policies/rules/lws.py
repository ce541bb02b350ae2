"""LeaderWorkerSet rules (issue 25): a group whose pods hold one engine together.

Field names and values: kubernetes-sigs/lws v0.10.0 (schemas/crds/lws; api/leaderworkerset/v1/
leaderworkerset_types.go): leaderWorkerTemplate.restartPolicy RecreateGroupOnPodRestart / RecreateGroupAfterStart
/ None (Default, deprecated); spec.startupPolicy LeaderCreated (the default) / LeaderReady.
"""
from __future__ import annotations

from .core import MANDATORY, UNKNOWN, as_number, get, rule
from .podspec import LWS, command_words, flag_values, pod_templates, runs_vllm_serve

GANG_POLICIES = ("RecreateGroupOnPodRestart", "RecreateGroupAfterStart")


def _name(props: dict) -> str:
    return str(get(props, "metadata", "name") or "unnamed")


def _multi_node_vllm(props: dict) -> bool:
    """Some pod of the set runs `vllm serve` over more than one node (--nnodes > 1)."""
    for tpl in pod_templates(LWS, props):
        for _, c in tpl.containers(init=False):
            if runs_vllm_serve(c) and (as_number(flag_values(command_words(c)).get("--nnodes")) or 1) > 1:
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
      "A LeaderWorkerSet running vLLM's multiprocess executor across nodes (`vllm serve --nnodes N`) creates its "
      "workers with the leader: the leader's /health answers only once every worker's ranks joined, so "
      "startupPolicy LeaderReady (workers only after a Ready leader) never starts the group.",
      "set spec.startupPolicy: LeaderCreated (the default)")
def lws_startup_leader_created(resource_type, props):
    if get(props, "spec", "startupPolicy") == "LeaderReady" and _multi_node_vllm(props):
        yield f"LeaderWorkerSet {_name(props)}: startupPolicy LeaderReady with a multi-node vLLM engine (--nnodes)"
