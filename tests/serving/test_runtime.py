"""Serving that behaves on a live cluster (issue 11): start-up within its budget, fabrics at run time,
rollouts at max scale, drain, pinned revisions, hardening and one cache layout for every shape."""
from __future__ import annotations

import dataclasses
import re

import pytest

from components.cache.component import CacheFacts, prefetch_container
from components.catalog import INSTANCE_TYPES, MODELS
from components.cluster.pools import gpu_pool_specs
from components.config import ConfigError, parse
from components.offline.runner import stack_names
from components.planner import PlanRequest, Sla, plan_topology
from components.kube import probes
from components.serving import fabric
from components.serving.deployment import deployment_spec, rollout_strategy
from components.serving.rayservice import rayservice_spec
from tests.support.plans import manifests, plan_config, planned, prod_gateway

STACKS = stack_names()
DIGEST = "sha256:c1c9f6fd5c109ba7f0546a59f5b2f15fb87f64c77782e90a27b648b42a8e67c3"
REV = "5206a32e0bd3067aef1ce90f5528ade7d866253f"


def _pods(resources) -> list[tuple[str, dict]]:
    """(object name, pod spec) of every serving-shaped pod: Deployments, Ray heads and workers, Jobs."""
    out = []
    for m in manifests(resources).values():
        spec = m.get("spec", {})
        name = m["metadata"]["name"]
        if m["kind"] in ("Deployment", "Job", "DaemonSet"):
            out.append((f"{m['kind']}/{name}", spec["template"]["spec"]))
        if m["kind"] == "RayService":
            rc = spec["rayClusterConfig"]
            out.append((f"RayService/{name}/head", rc["headGroupSpec"]["template"]["spec"]))
            out += [(f"RayService/{name}/worker", g["template"]["spec"]) for g in rc["workerGroupSpecs"]]
    return out


def _serving_containers(resources) -> list[tuple[str, dict, dict]]:
    """(where, container, pod) of the containers that run the engine."""
    return [(w, c, pod) for w, pod in _pods(resources) for c in pod["containers"]
            if c["name"] in ("vllm", "ray-worker")]


def _env(c: dict) -> dict:
    return {e["name"]: e.get("value") for e in c.get("env", [])}


# --- start-up that matches the budget -------------------------------------------------------------

@pytest.mark.parametrize("stack", STACKS)
def test_vllm_waits_for_its_engine_exactly_as_long_as_the_startup_probe(stack):
    containers = _serving_containers(planned(stack).resources)
    assert containers
    for where, c, _ in containers:
        timeout = int(_env(c)["VLLM_ENGINE_READY_TIMEOUT_S"])
        if c["name"] == "vllm":
            probe = c["startupProbe"]
            assert timeout == probe["failureThreshold"] * probe["periodSeconds"], where
        assert timeout >= 300, where


def test_large_models_get_more_than_vllms_600_s_default():
    """The 405B BF16 replica loads 754 GiB with the eager loader at 1 GB/s: far past vLLM's 600 s."""
    (where, c, _), = [x for x in _serving_containers(planned("prod-llama405b-aws").resources) if "worker" in x[0]]
    assert _env(c)["VLLM_ENGINE_READY_TIMEOUT_S"] == "1460"


def test_budget_terms_for_prod_llama70b_aws():
    """132 GiB over EFS (1.5 GB/s per node), two TP 4 replicas per node since the class margins (2026-12-06; one TP 8
    before), Run:ai streamer (uncapped): 0.75 GB/s per pod -> 141.7 GB / 0.75 = 189 s load x 1.5 + 240 s engine
    start = 523.5 s -> 530 s."""
    s = planned("prod-llama70b-aws").exports["serving"]["llama-70b"]["startup"]
    assert (s["loader"], s["readGBps"], s["loadS"], s["engineStartS"], s["budgetS"]) == \
        ("runai-streamer", 0.75, 189, 240, 530)
    (_, c, _), = _serving_containers(planned("prod-llama70b-aws").resources)
    assert c["startupProbe"]["failureThreshold"] == 53 and _env(c)["VLLM_ENGINE_READY_TIMEOUT_S"] == "530"


def test_the_default_loader_is_capped_on_a_shared_file_system_and_the_streamer_is_not():
    # 100 GiB, one pod per node, a 2 GB/s file system
    assert probes.node_read_gbps(2.0, "rwx", "safetensors", 1) == 0.5
    assert probes.node_read_gbps(2.0, "rwx", "eager", 1) == 1.0
    assert probes.node_read_gbps(2.0, "rwx", "runai-streamer", 1) == 2.0
    assert probes.node_read_gbps(2.0, "nvme", "safetensors", 1) == 2.0  # warmed page cache
    # two pods of one node each stream at the cap until the node's figure binds
    assert probes.node_read_gbps(2.0, "rwx", "safetensors", 2) == 1.0
    assert probes.node_read_gbps(0.6, "rwx", "safetensors", 2) == 0.6


def test_loader_flags_are_vllm_0_31_flags():
    assert probes.LOADERS["runai-streamer"].flags == ("--load-format", "runai_streamer")
    assert probes.LOADERS["eager"].flags == ("--safetensors-load-strategy", "eager")
    assert probes.LOADERS["safetensors"].flags == ()


def test_ray_serve_llm_gets_eager_shards_not_the_streamer_its_image_lacks():
    rs = next(m for m in manifests(planned("prod-llama405b-onprem").resources).values() if m["kind"] == "RayService")
    assert "safetensors_load_strategy: eager" in rs["spec"]["serveConfigV2"]
    assert "runai" not in rs["spec"]["serveConfigV2"]


def test_runai_streamer_for_a_multi_node_model_is_a_config_error():
    import pulumi
    cfg = {"cloud": "existing", "namespace": "llm",
           "existing": {"blockStorageClass": "standard", "gpuNodes": {"accelerator": "h100", "gpusPerNode": 8, "vcpu": 192, "ramGib": 2048,
                                     "fabric": "infiniband"}},
           "modelCache": {"kind": "rwx", "storageClass": "nfs", "loader": "runai-streamer"},
           "models": [{"name": "big", "model": "llama-3.1-405b", "precision": "bf16", "maxModelLen": 8192}]}
    with pytest.raises(pulumi.RunError, match="modelCache.loader: runai-streamer needs the runai-model-streamer"):
        plan_config(cfg)


def test_compile_cache_persists_on_the_model_cache():
    for stack in ("dev", "prod-llama405b-onprem"):
        for where, c, _ in _serving_containers(planned(stack).resources):
            assert _env(c)["VLLM_CACHE_ROOT"] == "/models/compile-cache/vllm", where
            assert {"name": "model-cache", "mountPath": "/models"} in c["volumeMounts"], where


def test_prefetch_reports_progress_and_the_wait_names_its_marker():
    c = prefetch_container("meta-llama/Llama-3.1-70B-Instruct", expected_gib=131.4)
    script = c["command"][-1]
    assert "progress: $(du -sm /models/hf/hub/models--meta-llama--Llama-3.1-70B-Instruct" in script
    assert "MiB of ~134553 MiB" in script
    assert "trap 'kill $PROGRESS" in script  # the reporter ends with the script (else the Job never completes)


def test_nvme_pods_warm_the_page_cache_with_the_serving_containers_memory():
    t, spec = _p5_70b()
    facts = CacheFacts("nvme", 4.0, nvme_paths={t.instance_type: "/mnt/nvme/model-cache"})
    pod = deployment_spec("m", t, spec.gpu_pool(nvme_path="/mnt/nvme"), facts, {})["template"]["spec"]
    (init,), (main,) = pod["initContainers"], pod["containers"]
    assert "xargs -0 -r -P 8 -I{} dd if={} of=/dev/null bs=16M" in init["command"][-1]
    for k in ("requests", "limits"):
        assert init["resources"][k] == {r: main["resources"][k][r] for r in ("cpu", "memory")}
    assert main["args"][-4:-2] != ["--load-format", "runai_streamer"]  # vLLM's own loader off a warm cache


# --- image pre-pull before the pods that need it ----------------------------------------------------

@pytest.mark.parametrize("stack", STACKS)
def test_serving_workloads_wait_for_the_awaited_image_prepull(stack):
    resources = planned(stack).resources
    prepull = [r for r in resources if r.type == "kubernetes:apps/v1:DaemonSet" and "-prepull-" in r.name]
    assert prepull
    for r in prepull:
        assert "pulumi.com/skipAwait" not in (r.inputs["metadata"].get("annotations") or {})
    keys = {f"{r.type}::{r.name}" for r in prepull}
    workloads = [r for r in resources if r.type == "kubernetes:apps/v1:Deployment"
                 or (r.type.endswith("RayService"))]
    assert workloads
    for w in workloads:
        assert keys & set(w.dependencies), f"{w.name} does not wait for the image pre-pull"


# --- fabrics at run time --------------------------------------------------------------------------------

def _p5(model: str, name: str, concurrency: int, min_replicas: int, max_replicas: int):
    """A plan on p5.48xlarge and its GPU pool."""
    req = PlanRequest(model=MODELS[model], precision="bf16", candidates=(INSTANCE_TYPES["p5.48xlarge"],),
                      max_model_len=8192, sla=Sla(concurrency=concurrency), min_replicas=min_replicas,
                      max_replicas=max_replicas, served_model_name=name)
    t = plan_topology(req)
    return t, gpu_pool_specs({name: t})[0]


def _p5_405b():
    return _p5("llama-3.1-405b", "llama-405b", 32, 1, 2)


def _p5_70b():
    return _p5("llama-3.1-70b", "m", 64, 2, 4)


# (cloud, pool fabric) -> (family, capabilities a multi-node worker adds)
FAMILIES = {
    ("aws", "efa"): ("efa", ["IPC_LOCK"]),
    ("gcp", "gpudirect-tcpx"): ("gpudirect-tcpx", []),
    ("gcp", "gpudirect-tcpxo"): ("gpudirect-tcpxo", []),
    ("gcp", "rdma"): ("gke-rdma", ["IPC_LOCK"]),
    ("existing", "infiniband"): ("infiniband", ["IPC_LOCK"]),
    ("existing", "rdma"): ("roce", ["IPC_LOCK"]),
    ("existing", None): ("none", []),
}


@pytest.mark.parametrize("cloud, name", list(FAMILIES))
def test_worker_capabilities_follow_the_fabric(cloud, name):
    t, spec = _p5_405b()
    t = dataclasses.replace(t, cloud=cloud, fabric=name)
    want_family, want_caps = FAMILIES[(cloud, name)]
    assert fabric.family(cloud, name) == want_family
    rs = rayservice_spec("m", t, spec.gpu_pool(), CacheFacts("rwx", 2.0, claim="model-cache"), "img:1", {}, {})
    pod = rs["rayClusterConfig"]["workerGroupSpecs"][0]["template"]["spec"]
    (w,) = pod["containers"]
    sc = w["securityContext"]
    assert sc["capabilities"] == {"drop": ["ALL"], **({"add": want_caps} if want_caps else {})}
    if want_caps:  # a capability is only effective for uid 0
        assert sc["runAsUser"] == 0 and sc["runAsNonRoot"] is False and "runAsNonRoot" not in pod["securityContext"]
    else:
        assert sc["runAsUser"] == 1000 and sc["runAsNonRoot"] is True
    # a single-node replica on the same pool sends no NCCL traffic off the node: no capability
    single = dataclasses.replace(t, nodes_per_replica=1, pipeline_parallel_size=1)
    assert fabric.capabilities(single) == ()


def test_gke_rdma_workers_get_googles_gib_nccl_settings_and_the_plugin_from_the_host():
    t, spec = _p5_405b()
    t = dataclasses.replace(t, cloud="gcp", fabric="rdma", accelerator="h200")
    rs = rayservice_spec("m", t, spec.gpu_pool(), CacheFacts("rwx", 2.0, claim="model-cache"), "img:1", {}, {})
    pod = rs["rayClusterConfig"]["workerGroupSpecs"][0]["template"]["spec"]
    env = _env(pod["containers"][0])
    assert env["NCCL_NET"] == "gIB" and env["LD_LIBRARY_PATH"].split(":")[0] == "/usr/local/gib/lib64"
    assert env["NCCL_TUNER_CONFIG_PATH"] == "/usr/local/gib/configs/tuner_config_a3u.txtpb"
    assert (env["NCCL_CROSS_NIC"], env["NCCL_NET_GDR_LEVEL"], env["NCCL_IB_GID_INDEX"]) == ("0", "PIX", "3")
    assert {"name": "gib", "hostPath": {"path": "/home/kubernetes/bin/gib", "type": "Directory"}} in pod["volumes"]
    assert {"name": "gib", "mountPath": "/usr/local/gib", "readOnly": True} in pod["containers"][0]["volumeMounts"]


def test_roce_on_your_own_cluster_is_verbs_not_gib():
    t, _ = _p5_405b()
    env = dict(fabric.fabric_for(dataclasses.replace(t, cloud="existing", fabric="rdma")).env)
    assert env["NCCL_IB_GID_INDEX"] == "3" and env["NCCL_IB_HCA"] == "mlx5" and "NCCL_NET" not in env


def test_a3_high_single_node_replicas_name_the_socket_transport():
    """prod-qwen72b-gcp runs TP 8 on a3-highgpu-8g (TP 4 before the step-model refit), whose nodes carry the TCPX
    NCCL plugin."""
    (_, c, _), = _serving_containers(planned("prod-qwen72b-gcp").resources)
    assert _env(c)["NCCL_NET"] == "Socket"
    tcpxo = fabric.fabric_for(dataclasses.replace(_p5_405b()[0], cloud="gcp", fabric="gpudirect-tcpxo"))
    assert tcpxo.env["NCCL_NET"] == "Socket"


# --- rollouts at the edges ------------------------------------------------------------------------------

def _roll(replicas: int, slots: int, surge: int, unavailable: int) -> bool:
    """Kubernetes' rolling update on a pool with `slots` pod places: True when every old pod is replaced."""
    old, new_ready, free = replicas, 0, slots - replicas
    for _ in range(4 * replicas + 4):
        if old == 0:
            return True
        # scale down old pods while at least replicas - unavailable stay available
        can_kill = max(0, old + new_ready - (replicas - unavailable))
        kill = min(can_kill, old)
        old, free = old - kill, free + kill
        # start new pods up to replicas + surge in total, where a place is free
        start = min(replicas + surge - old - new_ready, free)
        if start <= 0 and kill == 0:
            return False
        new_ready, free = new_ready + max(0, start), free - max(0, start)
    return old == 0


def test_the_rollout_simulation_can_hang():
    assert not _roll(replicas=8, slots=8, surge=1, unavailable=0)
    assert _roll(replicas=8, slots=9, surge=1, unavailable=0)
    assert _roll(replicas=8, slots=8, surge=0, unavailable=1)


@pytest.mark.parametrize("stack", [s for s in STACKS if s not in ("prod-llama405b-aws", "prod-llama405b-onprem")])
def test_a_rollout_at_max_replicas_completes_on_the_pools_maximum(stack):
    for m in manifests(planned(stack).resources).values():
        if m["kind"] != "Deployment" or m["metadata"]["name"].startswith("image-prepull"):
            continue
        t = planned(stack).exports["topology"][m["metadata"]["name"]]
        slots = t["max_nodes"] * t["replicas_per_node"]  # the pool's maximum, in replicas
        ru = m["spec"]["strategy"]["rollingUpdate"]
        assert _roll(t["max_replicas"], slots, ru["maxSurge"], ru["maxUnavailable"]), stack


def test_prod_llama70b_has_no_room_at_max_so_it_rolls_in_place():
    """4 replicas at 1 per node on a 4-node pool: no slot for a surge pod at max."""
    m = next(m for m in manifests(planned("prod-llama70b-aws").resources).values() if m["kind"] == "Deployment")
    assert m["spec"]["strategy"]["rollingUpdate"] == {"maxSurge": 0, "maxUnavailable": 1}


def test_a_pool_with_a_free_slot_at_max_keeps_every_replica_during_a_rollout():
    t, _ = _p5_70b()
    roomy = dataclasses.replace(t, max_replicas=3, max_nodes=2, replicas_per_node=2)  # 4 slots, 3 replicas
    assert rollout_strategy(roomy)["rollingUpdate"] == {"maxSurge": 1, "maxUnavailable": 0}


# --- drain, revision, single replica ----------------------------------------------------------------------

def test_requests_drain_before_the_pod_goes():
    """dev: SLA TPOT 100 ms, a 4096-token completion -> vLLM drains for 410 s after a 15 s preStop sleep."""
    d = next(m for m in manifests(planned("dev").resources).values() if m["kind"] == "Deployment")
    pod = d["spec"]["template"]["spec"]
    c = pod["containers"][0]
    assert c["lifecycle"]["preStop"] == {"exec": {"command": ["/bin/sh", "-c", "sleep 15"]}}
    i = c["args"].index("--shutdown-timeout")
    assert c["args"][i + 1] == "410"
    assert pod["terminationGracePeriodSeconds"] == 15 + 410 + 15


EXISTING = {
    "cloud": "existing", "environment": "prod", "namespace": "llm", "gateway": prod_gateway("existing"),
    "existing": {"blockStorageClass": "standard", "networkPolicyEnforced": True,
                 "gpuNodes": {"accelerator": "h100", "gpusPerNode": 8, "vcpu": 192, "ramGib": 2048}},
    "modelCache": {"kind": "rwx", "storageClass": "nfs", "readGbps": 1},
    "models": [{"name": "chat", "model": "llama-3.1-70b", "maxModelLen": 8192, "replicas": {"min": 2, "max": 6},
                "revision": REV}],
}


def test_a_pinned_revision_reaches_vllm_the_prefetch_and_the_ready_marker():
    resources, exports = plan_config(EXISTING)
    objs = manifests(resources).values()
    d = next(m for m in objs if m["kind"] == "Deployment")
    c = d["spec"]["template"]["spec"]["containers"][0]
    args = " ".join(c["args"])
    assert f"--revision {REV} --tokenizer-revision {REV}" in args
    job = next(m for m in objs if m["kind"] == "Job")
    script = job["spec"]["template"]["spec"]["containers"][0]["command"][-1]
    assert f"hf download meta-llama/Llama-3.1-70B-Instruct --revision {REV}" in script
    marker = "/models/.ready/meta-llama-llama-3-1-70b-instruct@5206a32e0bd3"
    assert f"touch {marker}" in script
    assert marker in d["spec"]["template"]["spec"]["initContainers"][0]["command"][-1]
    assert not any("UNPINNED" in w for w in exports["serving"]["chat"]["warnings"])


def test_a_revision_must_be_a_commit():
    bad = {**EXISTING, "models": [{**EXISTING["models"][0], "revision": "main"}]}
    with pytest.raises(ConfigError) as e:
        parse(bad, {"hfToken"})
    assert "models[0].revision" in str(e.value)


def test_production_single_replica_is_loud_and_priced():
    w = planned("prod-llama405b-aws").exports["serving"]["llama-405b"]["warnings"]
    assert any(x.startswith("SINGLE REPLICA in production") and "+$110.08/h (2 more GPU node(s))" in x for x in w)
    w = planned("prod-llama70b-aws").exports["serving"]["llama-70b"]["warnings"]
    assert not any("SINGLE REPLICA" in x for x in w)


def test_plan_prints_the_budget_and_the_warnings(capsys):
    from components.cli import main
    assert main(["plan", "prod-llama405b-fp8-h200-aws"]) == 0
    out = capsys.readouterr().out
    # replicas.min 2: two TP 4 replicas (knee 23 users each, 46 >= 32) spread over two p5en nodes at $63.296 =
    # $126.59/h; a p5en node can hold two TP 4 pods, so each is budgeted half the node's 1.50 GB/s:
    # 381 GiB (409.1 GB) / 0.75 GB/s = 546 s, x 1.5 + 240 s of engine start = 1059 -> 1060 s
    assert "2 replica(s) on 2 node(s), $126.59/h" in out
    assert "start-up budget 1060 s = load 546 s (381 GiB at 0.75 GB/s per pod, runai-streamer loader" in out
    # two replicas at the minimum: no single-replica warning, and the load (2 replicas) leaves max 3 headroom
    assert "WARNING: SINGLE REPLICA" not in out and "NO HEADROOM" not in out
    assert "WARNING: UNPINNED MODEL in production: RedHatAI/Meta-Llama-3.1-405B-Instruct-FP8" in out


# --- hardening ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("stack", STACKS)
def test_engines_run_non_root_on_a_read_only_root_with_writable_scratch(stack):
    for where, c, pod in _serving_containers(planned(stack).resources):
        sc = c["securityContext"]
        assert sc["readOnlyRootFilesystem"] is True and sc["allowPrivilegeEscalation"] is False, where
        if not sc["capabilities"].get("add"):
            assert sc["runAsNonRoot"] is True and sc["runAsUser"] == 1000, where
        env, mounts = _env(c), [m["mountPath"] for m in c["volumeMounts"] if not m.get("readOnly")]
        for var in ("HOME", "XDG_CACHE_HOME", "TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "NUMBA_CACHE_DIR",
                    "OUTLINES_CACHE_DIR", "VLLM_CACHE_ROOT", "HF_HOME"):
            assert any(env[var].startswith(m + "/") for m in mounts), f"{where}: {var}={env[var]} is not writable"
        assert "/tmp" in mounts, where


@pytest.mark.parametrize("stack", STACKS)
def test_vllm_image_is_pinned_by_digest(stack):
    for where, c, _ in _serving_containers(planned(stack).resources):
        if c["name"] == "vllm":
            assert c["image"].endswith(f":v0.31.0@{DIGEST}"), where


# --- one cache layout, by construction ------------------------------------------------------------------------

@pytest.mark.parametrize("stack", STACKS)
def test_prefetch_and_every_serving_shape_agree_on_the_cache_layout(stack):
    resources = planned(stack).resources
    markers_written, markers_awaited = set(), set()
    seen = 0
    for where, pod in _pods(resources):
        for c in pod.get("initContainers", []) + pod["containers"]:
            env = _env(c)
            mounts = {m["name"]: m["mountPath"] for m in c.get("volumeMounts", [])}
            if "HF_HOME" in env or "model-cache" in mounts:
                seen += 1
                assert mounts.get("model-cache") == "/models", f"{where}/{c['name']}"
                assert env.get("HF_HOME", "/models/hf") == "/models/hf", f"{where}/{c['name']}"
            script = " ".join(c.get("command", []))
            markers_written |= set(re.findall(r"touch (/models/\.ready/\S+)", script))
            markers_awaited |= set(re.findall(r"until \[ -f (/models/\.ready/\S+) \]", script))
    assert seen >= 2
    assert markers_awaited <= markers_written or not markers_awaited, (markers_awaited, markers_written)
    assert markers_written


def test_offline_serving_containers_hold_no_token():
    for stack in STACKS:
        for where, c, _ in _serving_containers(planned(stack).resources):
            assert "HF_TOKEN" not in _env(c), f"{stack}: {where}"


def test_policy_admits_ipc_lock_on_gke_rdma_workers_and_nothing_else():
    """GKE attaches RDMA NICs by annotation (no device resource): the pack must not refuse their IPC_LOCK."""
    from policies.rules import StackResource, evaluate_resources
    t, spec = _p5_405b()
    t = dataclasses.replace(t, cloud="gcp", fabric="rdma", accelerator="h200")
    pool = dataclasses.replace(spec.gpu_pool(), pod_annotations={"networking.gke.io/interfaces": "[]"})
    rs = rayservice_spec("m", t, pool, CacheFacts("rwx", 2.0, claim="model-cache"), "img:1", {}, {})
    rule = "no-added-capabilities"
    found = [v for v in evaluate_resources([StackResource("kubernetes:ray.io/v1:RayService", "m", {"spec": rs})])
             if v.rule == rule]
    assert found == []
    bare = dataclasses.replace(spec.gpu_pool(), pod_annotations={})
    rs = rayservice_spec("m", t, bare, CacheFacts("rwx", 2.0, claim="model-cache"), "img:1", {}, {})
    found = [v for v in evaluate_resources([StackResource("kubernetes:ray.io/v1:RayService", "m", {"spec": rs})])
             if v.rule == rule]
    assert found and "adds capability IPC_LOCK" in found[0].message
