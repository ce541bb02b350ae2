"""A replica that spans nodes as a LeaderWorkerSet (serving.multiNode lws, the default): one group per replica,
one pod per GPU node, vLLM 0.31's own multiprocess executor across the group's nodes. No Ray: the pods run
the pinned vllm/vllm-openai image (the version every flag and option was checked against; on EFA AWS's build of the
same release with the EFA userspace, fabric.py VLLM_IMAGES), the leader serves
the OpenAI API like a single-node replica's pod, and KEDA scales the groups through the set's scale
subresource. docs/lws.md has the worked example and what was checked upstream.

vLLM 0.31 (the wheel's source, vllm/):
- engine/arg_utils.py: `--nnodes`, `--node-rank`, `--master-addr`, `--master-port` (parallel group); nnodes
  must divide the world size (TP x PP) and node-rank lie in [0, nnodes); each node runs world / nnodes ranks,
  node r the ranks r x local .. (r + 1) x local - 1, so with TP = GPUs per node node r is pipeline stage r.
- config/parallel.py: master_addr / master_port / nnodes / node_rank are "for multi-node distributed
  inference when distributed_executor_backend is mp" (master_port default 29501); nnodes > 1 is refused for
  any backend but mp / uni / external_launcher, so the planner's `ray` backend is replaced by `mp`.
- entrypoints/launchers/cli_args.py `--headless`; entrypoints/cli/serve.py run_headless: a node whose
  node_rank_within_dp > 0 runs only a MultiprocExecutor joining the head at master_addr:master_port (no API
  server), so a worker pod has no HTTP port and no probe.

Wide-EP (models[].parallelism.mode wide-ep, planner/wide_ep.py, docs/wide-ep.md): the group is ONE vLLM engine of
DP x EP ranks, one rank per GPU, not an mp executor across nodes: every pod runs the planner's arguments
(--data-parallel-size, --data-parallel-size-local = its GPUs, --enable-expert-parallel, --all2all-backend) with
--data-parallel-address $(LWS_LEADER_ADDRESS) and one --data-parallel-rpc-port; the leader (ranks 0 .. local - 1)
runs the API server and load-balances over every rank (vLLM's internal DP load balancer); each worker is
`--headless` from rank LWS_WORKER_INDEX x local (--data-parallel-start-rank: the cumulative local DP size of the
nodes before it, vllm docs/serving/expert_parallel_deployment.md; llm-d guides/wide-ep-lws decode.yaml computes
it the same way). Kubernetes cannot multiply in args, so a worker's command is `sh -c 'exec vllm serve "$@"
--data-parallel-start-rank $((LWS_WORKER_INDEX * local))'` with the planner's arguments as "$@" (no quoting of
them by the shell; vLLM still PID 1 by exec). Requests reach the ranks only through the leader: the Service,
InferencePool, ServiceMonitor, probes and KEDA stay on the leader exactly as for a TP x PP group, and the leader's
/health answers once every rank has joined (the DP coordinator's start-up handshake).

kubernetes-sigs/lws v0.10.0 (api/leaderworkerset/v1/leaderworkerset_types.go, pkg/utils/pod/pod_utils.go):
the webhook adds LWS_LEADER_ADDRESS (`<set>-<group>.<subdomain>.<namespace>`, the leader's name in the set's
headless Service, which publishes not-ready addresses: pkg/utils/controller/controller_utils.go) and
LWS_WORKER_INDEX (0 on the leader) to every container, which the args reference as $(VAR) (the kubelet
expands them; the upstream sglang example does the same).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..cache.component import CacheFacts
from ..cluster.facts import GpuPool
from ..planner import Topology
from ..planner.wide_ep import ALL2ALL, DATA_PARALLEL_RPC_PORT
from .deployment import (PRESTOP_S, first_start_s, grace_s, template_metadata, template_mounts,
                         template_volumes, vllm_args)
from ..kube.k8s import MODEL_LABEL, PROBE_PERIOD_S, http_port, probes
from .fabric import VLLM_COMMAND, vllm_image, vllm_image_env
from .runtime_lora import lora_init_containers, runtime_lora_env
from .node_pod import node_pod
from ..kube.pods import pod_metadata

API_VERSION = "leaderworkerset.x-k8s.io/v1"
KIND = "LeaderWorkerSet"
# The leader serves the OpenAI API exactly where a Deployment's pod would: the model's Service, its InferencePool
# and its ServiceMonitor select it by this role. The workers carry their own.
LEADER_ROLE = "server"
WORKER_ROLE = "lws-worker"
ROLES = (LEADER_ROLE, WORKER_ROLE)
# Labels the controller puts on every pod of a set (api/leaderworkerset/v1/leaderworkerset_types.go)
SET_NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
WORKER_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"
GROUP_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/group-index"
LEADER_ADDRESS = "$(LWS_LEADER_ADDRESS)"
WORKER_INDEX = "$(LWS_WORKER_INDEX)"
MASTER_PORT = 29501  # vLLM's default (config/parallel.py), spelt out: every node must agree on it
# Gang semantics: a worker pod deleted, or any container of the group restarted, deletes the leader and so the
# whole group, which is created again (pkg/controllers/pod_controller.go handleRestartPolicy). An engine whose
# ranks span the group cannot lose one and go on: without it a restarted worker would wait for a leader
# that never calls it again, and the leader would hang in its collectives.
RESTART_POLICY = "RecreateGroupOnPodRestart"
# The workers' StatefulSet is created with the leader pod, not once it is Ready: the leader's /health answers
# only after every rank has joined, so LeaderReady would never create the workers it waits for.
STARTUP_POLICY = "LeaderCreated"
# A worker's way out. It holds no client connection (no port, no probe): its preStop covers only the leader's
# (PRESTOP_S, the endpoint removal reaching the gateway), while the leader still sends work through its ranks.
# When are a group's pods told together? Only when the group is torn down whole: the gang restart deletes the
# leader with propagationPolicy Foreground (kubernetes-sigs/lws v0.10.0 pkg/controllers/pod_controller.go
# handleRestartPolicy), and the worker StatefulSet, owned by the leader pod with blockOwnerDeletion
# (setControllerReferenceWithStatefulSet), is deleted with it; the leader pod object, and so its replacement (the
# leader StatefulSet recreates the same name only once it is gone), waits until every worker pod has terminated.
# A worker preStop of the leader's preStop + drain (343 s on the 405B example) therefore delayed every gang restart
# by ~6 minutes, to drain requests on an engine that had already lost a rank. A scale-in or a rollout deletes only
# the leader pod (its StatefulSet, default background propagation): the garbage collector deletes the worker
# StatefulSet once the leader pod is gone, so the leader's drain keeps its ranks whatever the workers' preStop.
WORKER_PRESTOP_S = PRESTOP_S
WORKER_EXIT_S = 15  # SIGTERM to exit of a headless rank (no requests of its own), before the kubelet's SIGKILL
# What detects a group that must restart: a container that exits or a pod deleted is seen at once (the pod
# controller watches the pods); a hung engine only when the leader's livenessProbe fails (kube/k8s.py probes).
_LIVENESS = probes(PROBE_PERIOD_S)["livenessProbe"]
LIVENESS_DETECT_S = _LIVENESS["periodSeconds"] * _LIVENESS["failureThreshold"]


# How long the leader's engine waits on a rank that is gone, with requests in flight, before it fails and the
# leader exits: vLLM 0.31.0 vllm/envs.py VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS (default 300; the mp executor's
# collective_rpc timeout, v1/executor/multiproc_executor.py). Under the gang restart's foreground deletion the
# replacement group waits for the leader pod too.
EXECUTE_MODEL_TIMEOUT_S = 300


def teardown_s(t: Topology) -> int:
    """The old group's teardown before a gang restart's replacement starts: the workers' grace, or the leader's
    preStop and its engine's wait on the lost rank, bounded by the leader's grace, whichever is longer."""
    return max(worker_grace_s(), min(grace_s(t), PRESTOP_S + EXECUTE_MODEL_TIMEOUT_S))


def worker_grace_s() -> int:
    """A worker's terminationGracePeriodSeconds: its preStop, then its exit."""
    return WORKER_PRESTOP_S + WORKER_EXIT_S


def mp_args(args: list[str]) -> list[str]:
    """The planner's `vllm serve` arguments with the multiprocess executor instead of Ray."""
    out = list(args)
    if "--distributed-executor-backend" in out:
        out[out.index("--distributed-executor-backend") + 1] = "mp"
    else:
        out += ["--distributed-executor-backend", "mp"]
    return out


def _nodes(t: Topology, rank: str) -> list[str]:
    return ["--nnodes", str(t.nodes_per_replica), "--node-rank", rank, "--master-addr", LEADER_ADDRESS,
            "--master-port", str(MASTER_PORT)]


def _data_parallel(t: Topology) -> list[str]:
    """Where a wide-EP group's DP ranks meet: the leader's name in the set's headless Service, one RPC port."""
    return ["--data-parallel-address", LEADER_ADDRESS, "--data-parallel-rpc-port", str(DATA_PARALLEL_RPC_PORT)]


def leader_args(t: Topology, cache: CacheFacts) -> list[str]:
    """Node rank 0 runs the API server and the engine core, and waits for the workers' ranks (wide-EP: DP ranks
    0 .. GPUs per node - 1 and the API server over every rank)."""
    if t.wide_ep:
        return [*vllm_args(t, cache), *_data_parallel(t)]
    return [*mp_args(vllm_args(t, cache)), *_nodes(t, "0")]


def worker_args(t: Topology, cache: CacheFacts) -> list[str]:
    """The same engine arguments (each node loads its own pipeline stage), headless, ranked by the group
    (wide-EP: its DP ranks; the start rank is the command's, worker_command)."""
    if t.wide_ep:
        return [*vllm_args(t, cache), *_data_parallel(t), "--headless"]
    return [*mp_args(vllm_args(t, cache)), *_nodes(t, WORKER_INDEX), "--headless"]


def worker_command(t: Topology) -> list[str]:
    """`vllm serve` as PID 1; a wide-EP worker's first DP rank is LWS_WORKER_INDEX x its GPUs, which only a shell
    can compute (`$$` is the kubelet's escape for a literal `$`; "$@" passes the args untouched)."""
    if not t.wide_ep:
        return VLLM_COMMAND
    return ["/bin/sh", "-c", f'exec vllm serve "$@" --data-parallel-start-rank '
                             f'$$((LWS_WORKER_INDEX * {t.gpus_per_node}))', "vllm"]


def _env(t: Topology) -> list[dict]:
    """No usage reports (vLLM's, and on EFA the image's own: fabric.py VLLM_IMAGES); runtime LoRA's resolver on
    the shared cache (runtime_lora.py), as on a Deployment's pods; a wide-EP group's all2all backend's own
    (planner/wide_ep.py ALL2ALL: DeepEP's NVSHMEM transport)."""
    backend = ALL2ALL[t.all2all_backend].env if t.wide_ep and t.all2all_backend in ALL2ALL else ()
    return [{"name": "DO_NOT_TRACK", "value": "1"}, *vllm_image_env(t), *runtime_lora_env(t),
            *({"name": k, "value": v} for k, v in backend)]


def _sleep(seconds: int) -> dict:
    return {"preStop": {"exec": {"command": ["/bin/sh", "-c", f"sleep {seconds}"]}}}


def leader_template(t: Topology, pool: GpuPool, cache: CacheFacts, labels: dict) -> dict:
    budget = cache.budget(t).total_s
    container = {"name": "vllm", "imagePullPolicy": "IfNotPresent", "command": VLLM_COMMAND,
                 "args": leader_args(t, cache),
                 "ports": [http_port()], "lifecycle": _sleep(PRESTOP_S), **probes(budget)}
    pod = node_pod(t, pool, cache, vllm_image(t), container, grace_s(t), env=_env(t), mounts=template_mounts(t),
                   volumes=template_volumes(t), init=lora_init_containers(t, vllm_image(t), cache))
    return {"metadata": template_metadata(t, pod_metadata(labels, pool)), "spec": pod}


def worker_template(t: Topology, pool: GpuPool, cache: CacheFacts, labels: dict) -> dict:
    """A worker keeps its ranks up through the leader's preStop only (WORKER_PRESTOP_S): all pods of a group are
    told at once only when the group is recreated (gang restart, foreground deletion), where a long worker
    preStop would hold back the replacement group; a scale-in or rollout lets the leader drain before the
    workers are deleted at all."""
    container = {"name": "vllm", "imagePullPolicy": "IfNotPresent", "command": worker_command(t),
                 "args": worker_args(t, cache),
                 "lifecycle": _sleep(WORKER_PRESTOP_S)}
    pod = node_pod(t, pool, cache, vllm_image(t), container, worker_grace_s(), env=_env(t),
                   init=lora_init_containers(t, vllm_image(t), cache))
    return {"metadata": pod_metadata(labels, pool), "spec": pod}


def group_room(t: Topology) -> int:
    """Groups the pool holds beyond replicas.max at its maximum size."""
    return t.max_nodes // t.nodes_per_replica - t.max_replicas


def rollout_strategy(t: Topology) -> dict:
    """A template change replaces groups one at a time. A surge group needs nodes_per_replica free GPU nodes
    beyond the fleet at replicas.max, which a pool sized to that fleet does not have (it would stay Pending and
    the rollout hang), so such a pool rolls in place: one group down for one start-up at a time (LWS forbids
    maxUnavailable 0 with maxSurge 0)."""
    if group_room(t) >= 1:
        return {"type": "RollingUpdate", "rollingUpdateConfiguration": {"maxSurge": 1, "maxUnavailable": 0}}
    return {"type": "RollingUpdate", "rollingUpdateConfiguration": {"maxSurge": 0, "maxUnavailable": 1}}


def lws_spec(model: str, t: Topology, pool: GpuPool, cache: CacheFacts, leader_labels: dict,
             worker_labels: dict) -> dict:
    return {
        "replicas": t.replicas,
        "startupPolicy": STARTUP_POLICY,
        "rolloutStrategy": rollout_strategy(t),
        "leaderWorkerTemplate": {
            "size": t.nodes_per_replica,
            "restartPolicy": RESTART_POLICY,
            "leaderTemplate": leader_template(t, pool, cache, leader_labels),
            "workerTemplate": worker_template(t, pool, cache, worker_labels),
        },
    }


def scale_target(model: str) -> dict:
    """KEDA's scaleTargetRef: the set's scale subresource counts groups (schemas/crds/lws: specReplicasPath
    .spec.replicas, labelSelectorPath .status.hpaPodSelector, which the controller sets to the leaders)."""
    return {"apiVersion": API_VERSION, "kind": KIND, "name": model}


def set_pods(model: str) -> dict:
    """Every pod of the model's set (leaders and workers) and nothing else: the prefetch Job's pods carry the
    model label too, and a budget over a pod without a scalable controller would allow no eviction at all."""
    return {"matchLabels": {MODEL_LABEL: model, SET_NAME_LABEL: model}}


def pdb_spec(model: str) -> dict:
    """One budget over the whole set, maxUnavailable 1 counted in pods. The set's pods belong to StatefulSets
    (the leaders' and one per group), which have a scale subresource, so the disruption controller counts the
    expected pods as replicas x size. A drain evicts one pod (one node); the gang restart then deletes its whole
    group, whose pods are not Ready until it is back, and the budget allows no further eviction until then:
    drains take one group at a time and never wait for ever. A budget per group cannot be written ahead for a
    set KEDA scales, and one per group would let every group lose a pod at once."""
    return {"maxUnavailable": 1, "selector": set_pods(model), "unhealthyPodEvictionPolicy": "AlwaysAllow"}


def first_deploy_s(t: Topology, cache: CacheFacts, node_ready_s: int = 0) -> int:
    """The first group's deadline: its GPU nodes, the cache, the image, the start-up budget (as a Deployment's)."""
    return first_start_s(t, cache, node_ready_s)


@dataclass(frozen=True)
class Recovery:
    """A gang restart, from the failure to the replacement group serving again, on the group's own nodes (the
    image is there, the cache keeps the weights): detection, the old group's teardown, the start-up, readiness."""
    detect_s: int
    teardown_s: int
    startup_s: int
    readiness_s: int

    @property
    def total_s(self) -> int:
        return self.detect_s + self.teardown_s + self.startup_s + self.readiness_s

    def describe(self) -> str:
        return (f"a failed pod takes its group down and back in up to {self.total_s} s (~{-(-self.total_s // 60)} "
                f"min: detection {self.detect_s} s (a hung engine's liveness; a crash is seen at once) + teardown "
                f"{self.teardown_s} s (the leader's {PRESTOP_S} s preStop and, with requests in flight on a lost rank, "
                f"vLLM's {EXECUTE_MODEL_TIMEOUT_S} s execute-model timeout, within its grace) + start-up "
                f"{self.startup_s} s + readiness {self.readiness_s} s)")


def recovery(t: Topology, cache: CacheFacts) -> Recovery:
    return Recovery(detect_s=LIVENESS_DETECT_S, teardown_s=teardown_s(t), startup_s=cache.budget(t).total_s,
                    readiness_s=PROBE_PERIOD_S)


def shape_note(t: Topology, ray_head: str, cache: CacheFacts) -> str:
    """What the plan says about the shape: the set, its rollout, and what it saves against a RayService."""
    r = rollout_strategy(t)["rollingUpdateConfiguration"]
    roll = ("one surge group beside the fleet" if r["maxSurge"] else
            f"one group at a time in place (the pool holds no spare {t.nodes_per_replica} nodes at replicas.max)")
    engine = (f"one DP {t.data_parallel_size} x EP {t.data_parallel_size} engine, the leader's API server over "
              f"every rank, headless workers" if t.wide_ep else "vLLM's mp executor")
    return (f"MULTI-NODE SHAPE: {t.served_model_name} runs as a LeaderWorkerSet ({t.replicas} group(s) of "
            f"{t.nodes_per_replica} x {t.instance_type}, {engine}, gang restart), scaled by KEDA between "
            f"{t.min_replicas} and {t.max_replicas} groups; a template change rolls {roll}; "
            f"{recovery(t, cache).describe()}. Same GPU nodes as a "
            f"RayService, without its Ray head ({ray_head} on a system node) and its production Redis; "
            f"serving.multiNode: rayservice selects KubeRay instead")
