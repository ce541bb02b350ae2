"""Wide-EP on a LeaderWorkerSet (components/serving/lws.py, docs/wide-ep.md): the worked stack
tests/stacks/Pulumi.wide-ep-onprem.yaml (DeepSeek-V3 FP8, DP 16 x EP 16 over 2 x 8 H200 on InfiniBand), pinned
literally: each rank's flags, the worker's start rank, DeepEP's environment, where requests are served, and the
refusals a stack gets."""
from __future__ import annotations

import dataclasses

import pytest

from components.config import ConfigError, parse
from components.offline.runner import ROOT
from components.upstream.vllm_registry import VLLM_SERVE_FLAGS
from policies.rules import evaluate_plan
from policies.rules.core import RULES
from tests.support.plans import manifests, planned
from tests.test_manifest_schemas import _plain, problems

STACK = str(ROOT / "tests" / "stacks" / "Pulumi.wide-ep-onprem.yaml")
LWS = "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet"
# every rank's engine: TP 1, DP 16 over the group with 8 ranks per node, experts split over all 16, DeepEP LL
ENGINE = ["deepseek-ai/DeepSeek-V3", "--served-model-name", "deepseek-v3", "--tensor-parallel-size", "1",
          "--pipeline-parallel-size", "1", "--data-parallel-size", "16", "--data-parallel-size-local", "8",
          "--enable-expert-parallel", "--all2all-backend", "deepep_low_latency", "--max-model-len", "32768",
          "--gpu-memory-utilization", "0.90", "--max-num-seqs", "5", "--max-num-batched-tokens", "8192",
          "--port", "8000", "--safetensors-load-strategy", "eager", "--shutdown-timeout", "328"]
RANKS = ["--data-parallel-address", "$(LWS_LEADER_ADDRESS)", "--data-parallel-rpc-port", "29550"]


@pytest.fixture(scope="module")
def plan():
    return planned(STACK)


@pytest.fixture(scope="module")
def objs(plan):
    return manifests([dataclasses.replace(r, inputs=_plain(r.inputs)) for r in plan.resources])


def one(objs, kind: str, name: str = "deepseek-v3") -> dict:
    (o,) = [o for o in objs.values() if o["kind"] == kind and o["metadata"].get("name") == name]
    return o


def _container(objs, template: str) -> dict:
    (c,) = one(objs, "LeaderWorkerSet")["spec"]["leaderWorkerTemplate"][template]["spec"]["containers"]
    return c


def test_one_group_per_replica_of_two_nodes_validates_against_the_crd(objs):
    lws = one(objs, "LeaderWorkerSet")
    assert problems(lws, "1.35") == []
    spec = lws["spec"]
    assert (spec["replicas"], spec["startupPolicy"]) == (2, "LeaderCreated")
    assert (spec["leaderWorkerTemplate"]["size"], spec["leaderWorkerTemplate"]["restartPolicy"]) == \
        (2, "RecreateGroupOnPodRestart")


def test_the_leader_serves_the_api_over_ranks_0_to_7_and_every_other_rank(objs):
    c = _container(objs, "leaderTemplate")
    assert c["command"] == ["vllm", "serve"]
    assert c["args"] == ENGINE + RANKS
    assert "--headless" not in c["args"] and "--nnodes" not in c["args"]
    assert c["ports"] == [{"name": "http", "containerPort": 8000, "protocol": "TCP"}]
    assert c["readinessProbe"]["httpGet"] == {"path": "/health", "port": "http"}


def test_a_worker_is_headless_from_rank_worker_index_times_8(objs):
    c = _container(objs, "workerTemplate")
    # the kubelet turns $$ into $; the shell computes 8, 16, ... and exec keeps vLLM PID 1; "$@" = the args untouched
    assert c["command"] == ["/bin/sh", "-c", 'exec vllm serve "$@" --data-parallel-start-rank '
                                             '$$((LWS_WORKER_INDEX * 8))', "vllm"]
    assert c["args"] == ENGINE + RANKS + ["--headless"]
    assert "ports" not in c and "readinessProbe" not in c and "livenessProbe" not in c


def test_every_rank_gets_the_fabric_and_deepeps_nvshmem_transport(objs):
    for template in ("leaderTemplate", "workerTemplate"):
        c = _container(objs, template)
        env = {e["name"]: e.get("value") for e in c["env"]}
        assert (env["NVSHMEM_REMOTE_TRANSPORT"], env["NVSHMEM_IB_ENABLE_IBGDA"]) == ("ibgda", "true")
        assert (env["NCCL_IB_HCA"], env["GLOO_SOCKET_IFNAME"]) == ("mlx5", "eth0")
        assert len(env) == len(c["env"])  # no name twice
        assert c["resources"]["limits"]["nvidia.com/gpu"] == "8"
        assert c["resources"]["limits"]["rdma/rdma_shared_device_a"] == "1"
        assert "IPC_LOCK" in c["securityContext"]["capabilities"]["add"]


def test_every_flag_exists_in_vllm_031(objs):
    for template in ("leaderTemplate", "workerTemplate"):
        flags = {a for a in _container(objs, template)["args"] if a.startswith("--")}
        assert flags <= VLLM_SERVE_FLAGS, flags - VLLM_SERVE_FLAGS


def test_requests_reach_the_ranks_through_the_leaders_only(plan, objs):
    (epp,) = [r for r in plan.resources if r.type == "kubernetes:helm.sh/v3:Release"
              and r.inputs["name"] == "deepseek-v3"]
    assert epp.inputs["values"]["router"]["modelServers"]["matchLabels"] == {
        "vllm-platform/model": "deepseek-v3", "vllm-platform/role": "server"}
    assert one(objs, "Service")["spec"]["selector"] == {"vllm-platform/model": "deepseek-v3",
                                                       "vllm-platform/role": "server"}
    lwt = one(objs, "LeaderWorkerSet")["spec"]["leaderWorkerTemplate"]
    assert lwt["workerTemplate"]["metadata"]["labels"]["vllm-platform/role"] == "lws-worker"


def test_the_plan_says_dp_ep_the_backend_and_the_shape(plan):
    s = plan.exports["serving"]["deepseek-v3"]
    assert s["shape"] == "lws"
    assert s["serve"].endswith("--data-parallel-address $(LWS_LEADER_ADDRESS) --data-parallel-rpc-port 29550  "
                               "(workers: ... --headless --data-parallel-start-rank $(LWS_WORKER_INDEX) x 8)")
    assert any(w.startswith("MULTI-NODE SHAPE: deepseek-v3 runs as a LeaderWorkerSet (2 group(s) of 2 x "
                            "existing-h200x8, one DP 16 x EP 16 engine, the leader's API server over every rank, "
                            "headless workers, gang restart)") for w in s["warnings"])
    t = plan.exports["topology"]["deepseek-v3"]
    assert (t["data_parallel_size"], t["all2all_backend"], t["gpus_per_replica"], t["nodes_per_replica"]) == \
        (16, "deepep_low_latency", 16, 2)
    from components.cli.summary import summary
    from components.planner import Topology
    text = summary(Topology.from_dict(t), s["serve"])
    assert "DP 16 x EP 16 (TP 1 per rank, all2all deepep_low_latency) = 16 GPU(s)/replica, 2 node(s)/replica" in text


def test_the_example_passes_the_policy_pack(plan):
    assert [v for v in evaluate_plan(plan) if v.level == "mandatory"] == []


def _rule(name: str):
    (r,) = [r for r in RULES if r.name == name]
    return r


def _set(worker_resources: dict, backend: str = "deepep_low_latency", startup: str = "LeaderCreated") -> dict:
    args = ["m", "--data-parallel-size", "16", "--data-parallel-size-local", "8", "--all2all-backend", backend]
    res = {"requests": worker_resources, "limits": worker_resources}
    return {"metadata": {"name": "ep"}, "spec": {"startupPolicy": startup, "leaderWorkerTemplate": {"size": 2,
            "workerTemplate": {"spec": {"containers": [{"name": "vllm", "command": ["vllm", "serve"], "args": args,
                                                         "resources": res}]}}}}}


def test_policy_refuses_deepep_across_nodes_without_an_rdma_device():
    r = _rule("lws-wide-ep-rdma")
    assert r.messages(LWS, _set({"nvidia.com/gpu": "8"})) == [
        "LeaderWorkerSet ep: deepep_low_latency across nodes without an RDMA device (container vllm)"]
    assert r.messages(LWS, _set({"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32"})) != []  # EFA is no verbs
    assert r.messages(LWS, _set({"nvidia.com/gpu": "8", "rdma/rdma_shared_device_a": "1"})) == []
    assert r.messages(LWS, _set({"nvidia.com/gpu": "8"}, backend="allgather_reducescatter")) == []


def test_policy_refuses_leader_ready_with_dp_ranks_across_nodes():
    r = _rule("lws-startup-leader-created")
    assert r.messages(LWS, _set({}, startup="LeaderReady")) == [
        "LeaderWorkerSet ep: startupPolicy LeaderReady with a multi-node vLLM engine (--nnodes or data-parallel "
        "ranks across nodes)"]


BASE = {"cloud": "existing", "existing": {"gpuNodes": {"accelerator": "h200", "gpusPerNode": 8, "vcpu": 192,
                                                       "ramGib": 2048, "fabric": "infiniband", "networkGbps": 3200},
                     "blockStorageClass": "fast-block"},
        "modelCache": {"kind": "rwx", "storageClass": "nfs-client"},
        "models": [{"name": "ds", "model": "deepseek-v3", "parallelism": {"mode": "wide-ep"}}]}


def errors(model: dict) -> list[str]:
    with pytest.raises(ConfigError) as e:
        parse({**BASE, "models": [{**BASE["models"][0], **model}]}, {"hfToken", "kubeconfig"})
    return e.value.errors


def test_a_dense_model_is_refused_with_the_fix():
    (e,) = errors({"model": "llama-3.1-70b"})
    assert e.startswith("models[0].parallelism: mode: wide-ep splits routed experts over the GPUs; Llama-3.1-70B")
    assert "is a dense model (no routed experts): remove parallelism (tensor x pipeline is planned), or serve a " \
           "mixture-of-experts model (" in e and "deepseek-v3" in e


def test_pinned_tp_and_owned_flags_and_options_without_wide_ep_are_refused():
    (e,) = errors({"tensorParallelSize": 8})
    assert e == "models[0].tensorParallelSize: wide-ep runs TP 1 per rank (DP = EP = GPUs per replica): remove " \
                "tensorParallelSize"
    (e,) = errors({"extraArgs": {"--all2all-backend": "naive"}})
    assert e.startswith("models[0].extraArgs: --all2all-backend: set by parallelism.mode wide-ep")
    (e,) = errors({"parallelism": {"all2allBackend": "deepep_low_latency"}})
    assert e == "models[0].parallelism.all2allBackend: applies to mode: wide-ep only; remove it or set mode: wide-ep"
    (e,) = errors({"parallelism": {"mode": "wide-ep", "all2allBackend": "pplx"}})
    assert "all2allBackend" in e and "deepep_low_latency" in e


def test_data_parallel_size_in_extra_args_points_at_wide_ep():
    (e,) = errors({"parallelism": {"mode": "tensor"}, "extraArgs": {"--data-parallel-size": 2}})
    assert "--data-parallel-size" in e and "parallelism.mode: wide-ep" in e


def test_a_wide_ep_replica_across_nodes_is_refused_on_rayservice():
    from types import SimpleNamespace

    from components.config.schema import Serving
    from components.planner import Topology
    from components.serving.checks import wide_ep_problems
    t = Topology.from_dict(planned(STACK).exports["topology"]["deepseek-v3"])
    ctx = SimpleNamespace(models=(SimpleNamespace(name="deepseek-v3"),), topologies={"deepseek-v3": t},
                          serving=Serving(multiNode="rayservice"))
    assert wide_ep_problems(ctx) == [
        "models[0].parallelism.mode: wide-ep across 2 nodes runs as a LeaderWorkerSet; serving.multiNode is "
        "rayservice, which is not rendered for wide-EP (docs/wide-ep.md); set serving.multiNode: lws"]
    assert wide_ep_problems(SimpleNamespace(**{**vars(ctx), "serving": Serving()})) == []


def test_keda_reads_a_groups_kv_usage_as_the_mean_of_its_ranks(objs):
    """The leader publishes one vllm:kv_cache_usage_perc per DP rank (16 here): summed, a group at 6 % per rank
    would read 0.96 and scale out at a third of its load."""
    so = one(objs, "ScaledObject")
    (kv,) = [t for t in so["spec"]["triggers"] if t["name"] == "kv-cache-usage"]
    assert kv["metadata"]["query"].endswith(") / 16")
    assert kv["metadata"]["query"].startswith('sum(vllm:kv_cache_usage_perc{namespace="llm"')
    assert so["spec"]["scaleTargetRef"]["kind"] == "LeaderWorkerSet"
