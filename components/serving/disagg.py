"""A P/D model (Topology.disaggregated, components/planner/disagg.py): a prefill and a decode Deployment, each the
single-node Deployment of deployment.py (the same pod spec builders), with what llm-d's P/D needs on top:

* both roles: vLLM's NixlConnector (`--kv-transfer-config`, kv_role kv_both: a decode instance that gets no
  prefill pod serves the request whole), the NIXL side channel (VLLM_NIXL_SIDE_CHANNEL_HOST = the pod IP, port
  5600), and the fabric's devices and IPC_LOCK where NIXL registers memory with an RDMA NIC;
* the pod label `llm-d.ai/role: prefill | decode` the endpoint picker's prefill-filter / decode-filter read;
* decode pods: llm-d's routing sidecar on the pool's port (8000), vLLM behind it on 8200: the sidecar sends the
  prompt to the prefill pod the picker chose (header x-prefiller-host-port), then decodes locally.

Verified at the pinned versions (docs/disaggregation.md lists it): vLLM 0.31.0 vllm/config/kv_transfer.py
(KVTransferConfig: kv_connector, kv_role kv_both, kv_connector_extra_config), kv_connector/factory.py
("NixlConnector"), vllm/envs.py (VLLM_NIXL_SIDE_CHANNEL_HOST default localhost, _PORT default 5600),
kv_connector/v1/nixl/base_worker.py (backends default ["UCX"]), nixl/base_scheduler.py (side channel port +
data_parallel_index); llm-d-router v0.10.0 pkg/epp/framework/plugins/scheduling/filter/bylabel/roles.go
(llm-d.ai/role), pkg/sidecar/proxy/options.go (--port 8000, --model-server-port default 8200, --kv-connector
nixlv2, --secure-proxy default true; `--connector` removed in 0.10), deploy/components/vllm-decode/deployment.yaml
(the sidecar as a native sidecar init container, restartPolicy Always). Pure (no Pulumi).
"""
from __future__ import annotations

import json
from dataclasses import replace

from ..cache.component import CacheFacts
from ..cluster.facts import GpuPool
from ..planner import Topology
from ..planner.vllm_args import VLLM_PORT
from ..upstream.versions import PD_SIDECAR_IMAGE
from .deployment import deployment_spec
from .fabric import EFA_RESOURCE, IPC_LOCK, fabric_resources
from ..kube.k8s import HTTP_PORT_NAME, container_security, probes
from ..kube.pods import gpu_resources

PREFILL, DECODE = "prefill", "decode"
ROLES = (PREFILL, DECODE)
LLMD_ROLE_LABEL = "llm-d.ai/role"  # llm-d-router v0.10.0 filter/bylabel/roles.go RoleLabel
ENGINE_PORT = 8200  # decode pods' vLLM, behind the sidecar (pd-sidecar's --model-server-port default)
ENGINE_PORT_NAME = "engine"
NIXL_PORT = 5600  # vllm/envs.py VLLM_NIXL_SIDE_CHANNEL_PORT default (+ data parallel index: DP 1 here)
NIXL_PORT_NAME = "nixl"
SIDECAR_NAME = "routing-sidecar"
# The sidecar's share of the decode pod (taken from vLLM's, so the pod still fits the node's planned share)
SIDECAR_CPU, SIDECAR_MEMORY_GIB = 1, 1
# The sidecar's arguments: plain HTTP (--secure-proxy defaults to true, a self-signed certificate; the gateway
# reaches the pool over plain HTTP, and the model's NetworkPolicy guards the port), NIXL v2 (vLLM's NixlConnector).
SIDECAR_ARGS = (f"--port={VLLM_PORT}", f"--model-server-port={ENGINE_PORT}", "--kv-connector=nixlv2",
                "--secure-proxy=false")
# NIXL's libfabric backend on EFA: the same provider settings as NCCL's (serving/fabric.py, the EFA row: no huge
# pages, fork-safe registrations); UCX (InfiniBand, RoCE, GKE RDMA, TCP) finds its devices itself (UCX_TLS and
# UCX_NET_DEVICES unset: UCX picks RDMA verbs where the pod has a device, TCP where not).
# FI_PROVIDER=efa: NIXL's LIBFABRIC plugin picks the efa provider (aws/deep-learning-containers test/efa/scripts/
# nixl_disagg_pd.sh, the two-node P/D test of the image serving/fabric.py VLLM_IMAGES runs on EFA).
TRANSPORT_ENV = {"LIBFABRIC": {"FI_PROVIDER": "efa", "FI_EFA_FORK_SAFE": "1", "FI_EFA_USE_HUGE_PAGE": "0"}, "UCX": {}}
# engine.kvOffloadGiB on a P/D model. vLLM 0.31.0 vllm/config/vllm.py _post_init_kv_transfer_config: with
# --kv-offloading-size (backend native) it OVERWRITES kv_connector with "OffloadingConnector" (keeping the extra config),
# so the NixlConnector would be silently gone and no KV cache would reach the decode pods. Both are composed instead,
# with the offloading flags left out (kv_offloading_size is None: _post_init_kv_transfer_config returns untouched):
# - kv_connector/factory.py registers "MultiConnector"; kv_connector/v1/multi_connector.py builds each child from
#   kv_connector_extra_config.connectors as its own KVTransferConfig (so each child names its kv_role: kv_transfer.py
#   __post_init__ refuses a connector without one, and reads its own kv_connector_extra_config), loads a request's KV
#   from the FIRST child reporting matched tokens and saves to all: NIXL first, so a decode pod reads the prefill
#   pod's KV and the host tier serves the prefix hits NIXL does not claim; request_finished merges the children's
#   kv_transfer_params (NIXL's reach the sidecar unchanged);
# - the OffloadingConnector child's extra config is what --kv-offloading-size would have set: cpu_bytes_to_use =
#   GiB x 2^30 (v1/kv_offload/cpu/spec.py reads it; spec_name defaults to CPUOffloadingSpec, v1/kv_offload/factory.py);
# - KV cache layouts agree (MultiConnector.get_required_kvcache_layout refuses a mismatch): NixlConnector asks for
#   LBHNC (None for MLA), OffloadingConnector for LBHNC (nixl/connector.py, offloading_connector.py).
# vLLM's own tests compose the same pair (tests/v1/kv_connector/unit, "MultiConnector with NIXLConnector +
# OffloadingConnector", connectors [NixlConnector kv_both, OffloadingConnector kv_both]).
OFFLOAD_FLAGS = ("--kv-offloading-size", "--kv-offloading-backend")


def nixl_connector(backend: str = "UCX") -> dict:
    """The NixlConnector's KVTransferConfig fields (vllm/config/kv_transfer.py KVTransferConfig)."""
    out: dict = {"kv_connector": "NixlConnector", "kv_role": "kv_both"}
    if backend != "UCX":  # nixl/base_worker.py: kv_connector_extra_config.backends, default ["UCX"]
        out["kv_connector_extra_config"] = {"backends": [backend]}
    return out


def offloading_connector(offload_gib: float) -> dict:
    """The host KV tier as --kv-offloading-size S --kv-offloading-backend native configures it (cpu_bytes_to_use)."""
    return {"kv_connector": "OffloadingConnector", "kv_role": "kv_both",
            "kv_connector_extra_config": {"cpu_bytes_to_use": round(offload_gib * (1 << 30))}}


def kv_transfer_config(backend: str = "UCX", offload_gib: float = 0.0) -> dict:
    """vLLM's --kv-transfer-config for both roles: the NixlConnector, or with a host tier (engine.kvOffloadGiB) a
    MultiConnector of it and the OffloadingConnector (see above)."""
    if not offload_gib:
        return nixl_connector(backend)
    return {"kv_connector": "MultiConnector", "kv_role": "kv_both", "kv_connector_extra_config": {
        "connectors": [nixl_connector(backend), offloading_connector(offload_gib)]}}


def without_offload_flags(args: list[str]) -> list[str]:
    """The arguments less --kv-offloading-size / --kv-offloading-backend and their values (the MultiConnector holds
    the tier instead: either flag would replace the NixlConnector)."""
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
        elif a in OFFLOAD_FLAGS:
            skip = True
        elif not a.startswith(tuple(f + "=" for f in OFFLOAD_FLAGS)):
            out.append(a)
    return out


def role_count(t: Topology, role: str) -> int:
    d = t.disaggregation
    return d.prefill_instances if role == PREFILL else d.decode_instances


def deployment_name(model: str, role: str) -> str:
    return f"{model}-{role}"


def role_args(t: Topology, role: str) -> tuple[str, ...]:
    """The plan's vLLM arguments with the connector (the host tier inside it, never as --kv-offloading-size: that
    would replace the NixlConnector); decode pods' vLLM listens behind the sidecar."""
    args = without_offload_flags(list(t.vllm_args))
    if role == DECODE:  # behind the sidecar; the batch the planner sized decode for (within engine.maxNumSeqs)
        for flag, value in (("--port", ENGINE_PORT), ("--max-num-seqs", t.disaggregation.decode_concurrency)):
            if flag in args:
                args[args.index(flag) + 1] = str(value)
    config = kv_transfer_config(t.disaggregation.backend, t.kv_offload_gib)
    return (*args, "--kv-transfer-config", json.dumps(config, separators=(",", ":")))


def role_topology(t: Topology, role: str) -> Topology:
    """One role's Deployment: its instances, the fleet's maximum (the pool's room is shared by both roles)."""
    return replace(t, replicas=role_count(t, role), vllm_args=role_args(t, role))


def rdma(t: Topology) -> bool:
    return t.disaggregation.transport == "rdma"


def pod_fabric(t: Topology, pool: GpuPool) -> dict[str, int]:
    """The RDMA devices one instance's pod asks for: an EFA pool's share of the node's interfaces (the
    instances of a node split them by GPUs), a shared RDMA device as the cluster advertises it."""
    if not rdma(t):
        return {}
    out = fabric_resources(t, pool)
    if EFA_RESOURCE in out:
        out[EFA_RESOURCE] = max(1, out[EFA_RESOURCE] * t.gpus_per_replica // t.gpus_per_node)
    return out


def _env(t: Topology) -> list[dict]:
    extra = TRANSPORT_ENV.get(t.disaggregation.backend, {})
    return [{"name": "VLLM_NIXL_SIDE_CHANNEL_HOST", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": "VLLM_NIXL_SIDE_CHANNEL_PORT", "value": str(NIXL_PORT)},
            *({"name": k, "value": v} for k, v in sorted(extra.items()))]


def sidecar_container() -> dict:
    """llm-d's routing sidecar as a native sidecar (an init container with restartPolicy Always): it starts
    before vLLM and stops after it, so a drain finishes the in-flight decodes through it."""
    amounts = {"cpu": str(SIDECAR_CPU), "memory": f"{SIDECAR_MEMORY_GIB}Gi"}
    return {"name": SIDECAR_NAME, "image": PD_SIDECAR_IMAGE, "imagePullPolicy": "IfNotPresent",
            "restartPolicy": "Always", "args": list(SIDECAR_ARGS),
            "ports": [{"name": HTTP_PORT_NAME, "containerPort": VLLM_PORT, "protocol": "TCP"}],
            "resources": {"requests": dict(amounts), "limits": dict(amounts)},
            "securityContext": container_security(),
            "readinessProbe": {"httpGet": {"path": "/health", "port": HTTP_PORT_NAME}, "periodSeconds": 10}}


def role_deployment_spec(model: str, t: Topology, role: str, pool: GpuPool, cache: CacheFacts,
                         labels: dict[str, str], node_ready_s: int = 0) -> dict:
    """The role's Deployment: deployment.deployment_spec of its topology, then the P/D settings on its pod."""
    rt = role_topology(t, role)
    match = {LLMD_ROLE_LABEL: role}
    spec = deployment_spec(model, rt, pool, cache, {**labels, **match}, node_ready_s, match=match)
    pod = spec["template"]["spec"]
    vllm = next(c for c in pod["containers"] if c["name"] == "vllm")
    vllm["env"] = [*vllm["env"], *_env(t)]
    nixl = {"name": NIXL_PORT_NAME, "containerPort": NIXL_PORT, "protocol": "TCP"}
    cpu, memory = t.pod_cpu, t.pod_memory_gib
    if role == DECODE:
        vllm["ports"] = [{"name": ENGINE_PORT_NAME, "containerPort": ENGINE_PORT, "protocol": "TCP"}, nixl]
        vllm.update(probes(cache.budget(rt).total_s, port=ENGINE_PORT_NAME))
        pod["initContainers"] = [*pod["initContainers"], sidecar_container()]
        cpu, memory = cpu - SIDECAR_CPU, memory - SIDECAR_MEMORY_GIB
    else:
        vllm["ports"] = [*vllm["ports"], nixl]
    vllm["resources"] = gpu_resources(t.gpus_per_replica, cpu, memory, pod_fabric(t, pool))
    if rdma(t):  # NIXL registers the KV cache with the NIC: IPC_LOCK, effective only for uid 0 (fabric.py)
        vllm["securityContext"] = container_security((IPC_LOCK,))
    return spec
