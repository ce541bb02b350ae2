"""The start-up budget: how long a serving pod may take from container start to a healthy engine.

The seeds' fixed 120-180 s liveness delay killed a 70B pod while it was still reading 140 GB of
weights. Here one budget, made of separate terms, sizes the startupProbe AND vLLM's own
VLLM_ENGINE_READY_TIMEOUT_S (vLLM aborts a start-up that takes longer, 600 s by default, which a
large model's weight load alone exceeds):

  load          weights / the read throughput ONE pod reaches: its node's share of the cache, capped
                by what the loader reaches per client (LOADERS: vLLM's default safetensors loader reads
                shards through mmap one at a time and stays far below a shared file system's
                per-client maximum; the Run:ai streamer reads concurrently and reaches it)
  engine start  memory profiling + torch.compile (cold compile cache) + CUDA-graph capture
  x SAFETY on the load (shared file systems vary), rounded up to whole probe periods

Image pull is a separate term: the kubelet pulls before the container starts, so it is not in the
probe budget, but it is in the rollout deadline and in how long Pulumi waits (deployment.py).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..planner import Topology
from .k8s import HEALTH_PATH, PROBE_PERIOD_S, probes  # noqa: F401  (re-exported: probes.probes)

GIB = 1024**3
# Engine start after the weights are in GPU memory, 70B-class model, cold compile cache. Planning
# figures from vLLM start-up logs (the engine logs each phase: "Memory profiling takes", "torch.compile
# takes ... in total", "Graph capturing finished in"); a warm VLLM_CACHE_ROOT skips most of the compile.
PROFILE_S = 30
TORCH_COMPILE_COLD_S = 150
CUDA_GRAPH_CAPTURE_S = 60
ENGINE_START_S = PROFILE_S + TORCH_COMPILE_COLD_S + CUDA_GRAPH_CAPTURE_S  # 240
SAFETY = 1.5
MIN_BUDGET_S = 300
PERIOD_S = PROBE_PERIOD_S
# Pulling the serving image onto a node that has none of its layers (vllm/vllm-openai v0.31.0: 9 GB
# compressed for amd64; ~60 MB/s pull + unpack on a fresh node). The pre-pull DaemonSet takes it out
# of the serving pod's path on existing nodes; a node the autoscaler adds still pays it once.
IMAGE_PULL_S = 300
# vLLM's default engine-ready timeout (vllm/envs.py VLLM_ENGINE_READY_TIMEOUT_S), which the budget replaces.
VLLM_ENGINE_READY_DEFAULT_S = 600
ENGINE_READY_ENV = "VLLM_ENGINE_READY_TIMEOUT_S"


@dataclass(frozen=True)
class Loader:
    flags: tuple[str, ...]  # added to `vllm serve` / the engine kwargs
    shared_fs_gbps: float | None  # what one pod reaches on a shared file system; None = its per-client max
    why: str


# Per-client read figures of the loaders on NFS-class file systems (EFS, Filestore, NFS): planning
# estimates, the reason for the cap is the access pattern. Local NVMe is never capped: the cache fill
# warms the page cache with parallel reads before the engine starts (cache.py).
LOADERS: dict[str, Loader] = {
    "safetensors": Loader((), 0.5, "vLLM's default loader: one shard at a time through mmap page faults"),
    # --safetensors-load-strategy (vLLM >= 0.10.2, PR #24469 "for NFS based file loading"): eager reads
    # each shard whole and sequentially instead of faulting pages in
    "eager": Loader(("--safetensors-load-strategy", "eager"), 1.0, "whole shards, sequential reads"),
    # --load-format runai_streamer: the Run:ai Model Streamer reads tensors with concurrent readers
    # (16 by default) and reaches the file system's per-client maximum; the vllm/vllm-openai image carries
    # runai-model-streamer[s3,gcs] (the `vllm[runai]` extra)
    "runai-streamer": Loader(("--load-format", "runai_streamer"), None, "concurrent readers"),
}


def load_seconds(weights_gib: float, read_gbps: float, readers_per_node: int = 1) -> float:
    """Seconds to read the weights when `readers_per_node` pods start on one node together."""
    if read_gbps <= 0:
        raise ValueError(f"cache read throughput must be > 0 GB/s (got {read_gbps})")
    return weights_gib * GIB * readers_per_node / (read_gbps * 1e9)


def startup_budget_s(weights_gib: float, read_gbps: float, readers_per_node: int = 1) -> int:
    """How long a pod may take to become healthy, rounded up to whole probe periods. `read_gbps` is the
    node's read throughput for this loader (see pod_read_gbps)."""
    raw = load_seconds(weights_gib, read_gbps, readers_per_node) * SAFETY + ENGINE_START_S
    return max(MIN_BUDGET_S, int(math.ceil(raw / PERIOD_S) * PERIOD_S))


def topology_budget_s(t: Topology, read_gbps: float) -> int:
    return startup_budget_s(t.weights_gib, read_gbps, t.replicas_per_node)


def node_read_gbps(storage_gbps: float, cache_kind: str, loader: str, readers_per_node: int) -> float:
    """What the pods of one node read together: the storage's per-node figure, or every pod's loader
    cap added up when that is lower."""
    cap = LOADERS[loader].shared_fs_gbps if cache_kind == "rwx" else None
    return storage_gbps if cap is None else min(storage_gbps, cap * readers_per_node)


@dataclass(frozen=True)
class StartupBudget:
    weights_gib: float
    cache_kind: str
    loader: str
    storage_gbps: float  # the cache's per-node figure
    read_gbps: float  # what this pod reads at (its node share, capped by the loader)
    readers_per_node: int
    load_s: int
    engine_start_s: int
    total_s: int  # startupProbe budget = VLLM_ENGINE_READY_TIMEOUT_S
    image_pull_s: int = IMAGE_PULL_S

    def terms(self) -> dict:
        return {"imagePullS": self.image_pull_s, "loadS": self.load_s, "loader": self.loader,
                "readGBps": round(self.read_gbps, 3), "weightsGiB": round(self.weights_gib, 1),
                "engineStartS": self.engine_start_s, "safety": SAFETY, "budgetS": self.total_s}

    def describe(self) -> str:
        return (f"start-up budget {self.total_s} s = load {self.load_s} s ({self.weights_gib:.0f} GiB at "
                f"{self.read_gbps:.2f} GB/s per pod, {self.loader} loader from {self.cache_kind}) x {SAFETY:g} "
                f"+ engine start {self.engine_start_s} s (profiling {PROFILE_S} + torch.compile "
                f"{TORCH_COMPILE_COLD_S} + CUDA graphs {CUDA_GRAPH_CAPTURE_S}); image pull ~{self.image_pull_s} s "
                f"before it on a fresh node")


def budget(t: Topology, storage_gbps: float, cache_kind: str, loader: str) -> StartupBudget:
    node = node_read_gbps(storage_gbps, cache_kind, loader, t.replicas_per_node)
    load = load_seconds(t.weights_gib, node, t.replicas_per_node)
    return StartupBudget(
        weights_gib=t.weights_gib, cache_kind=cache_kind, loader=loader, storage_gbps=storage_gbps,
        read_gbps=node / t.replicas_per_node, readers_per_node=t.replicas_per_node,
        load_s=int(math.ceil(load)), engine_start_s=ENGINE_START_S,
        total_s=startup_budget_s(t.weights_gib, node, t.replicas_per_node))


def engine_ready_env(total_s: int) -> dict:
    """vLLM must not give up on its own start-up before the startupProbe would."""
    return {"name": ENGINE_READY_ENV, "value": str(total_s)}
