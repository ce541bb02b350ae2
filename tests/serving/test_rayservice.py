"""Multi-node replicas: a RayService running Ray Serve LLM at the plan's TP x PP, one worker pod per node,
the fabric's devices and NCCL environment, and Ray Serve + KubeRay autoscaling."""
from __future__ import annotations

import dataclasses

import pytest
import yaml

from components.cache.component import CacheFacts
from components.catalog import INSTANCE_TYPES, MODELS
from components.cluster.pools import gpu_pool_specs
from components.planner import PlanRequest, Sla, plan_topology
from components.serving import fabric
from components.serving.fabric import FabricError, fabric_for
from components.serving.rayservice import engine_kwargs, rayservice_spec
from components.upstream.versions import RAY_LLM_EFA_IMAGE, RAY_LLM_IMAGE, RAY_VERSION
from tests.support.plans import manifests, plan_config, planned
from tests.support.consistency import fabric_stacks, stack_path
from tests.support.serving import obj, objs, topology

STACK = "prod-llama405b-onprem"
MODEL = "llama-405b"
CACHE = CacheFacts("rwx", 2.0, claim="model-cache")


@pytest.fixture(scope="module")
def onprem():
    return planned(STACK)


def worker_group(rs: dict) -> dict:
    (g,) = rs["spec"]["rayClusterConfig"]["workerGroupSpecs"]
    return g


def worker(rs: dict) -> dict:
    (c,) = worker_group(rs)["template"]["spec"]["containers"]
    return c


def llm_config(rs: dict) -> dict:
    (app,) = yaml.safe_load(rs["spec"]["serveConfigV2"])["applications"]
    assert app["import_path"] == "ray.serve.llm:build_openai_app"
    (cfg,) = app["args"]["llm_configs"]
    return cfg


def test_onprem_405b_spans_two_nodes_as_a_rayservice(onprem):
    t = topology(onprem, MODEL)
    assert (t.tensor_parallel_size, t.pipeline_parallel_size, t.nodes_per_replica) == (8, 2, 2)
    kinds = {m["kind"] for m in manifests(onprem.resources).values()}
    assert "RayService" in kinds and "Deployment" not in kinds and "ScaledObject" not in kinds
    assert "PodMonitor" in kinds and "ServiceMonitor" not in kinds


def test_worker_group_is_one_pod_per_node_sized_by_the_plan(onprem):
    t = topology(onprem, MODEL)
    g = worker_group(obj(onprem.resources, "RayService", MODEL))
    # 32 users, 23 per replica (the knee at the dense 10 % margin, p90 TPOT): 2 replicas of 2 nodes
    assert g["replicas"] == t.nodes_per_replica * t.replicas == 4
    assert g["minReplicas"] == t.nodes_per_replica * t.min_replicas == 2  # replicas.min 1
    assert g["maxReplicas"] == t.nodes_per_replica * t.max_replicas == 8  # replicas.max 4
    res = worker(obj(onprem.resources, "RayService", MODEL))["resources"]
    assert res["requests"] == res["limits"]
    # a whole node per pod: every GPU, the pod's CPU and memory share, and the InfiniBand device
    assert res["limits"] == {"nvidia.com/gpu": "8", "cpu": str(t.pod_cpu), "memory": f"{t.pod_memory_gib}Gi",
                             "rdma/rdma_shared_device_a": "1"}


def test_engine_runs_at_the_plans_tp_and_pp(onprem):
    t = topology(onprem, MODEL)
    cfg = llm_config(obj(onprem.resources, "RayService", MODEL))
    assert cfg["model_loading_config"] == {"model_id": MODEL, "model_source": t.model_repo}
    kw = cfg["engine_kwargs"]
    assert (kw["tensor_parallel_size"], kw["pipeline_parallel_size"]) == (8, 2)
    assert kw["max_model_len"] == t.max_model_len and kw["max_num_seqs"] == t.max_num_seqs
    assert kw["gpu_memory_utilization"] == pytest.approx(t.gpu_memory_utilization)
    assert cfg["accelerator_type"] == "H100"


# NVML device names as the GPUs report them (nvidia-smi --query-gpu=name).
NVML_NAMES = {"a10g": "NVIDIA A10G", "l4": "NVIDIA L4", "l40s": "NVIDIA L40S", "a100-40gb": "NVIDIA A100-SXM4-40GB",
              "a100-80gb": "NVIDIA A100-SXM4-80GB", "h100": "NVIDIA H100 80GB HBM3", "h200": "NVIDIA H200",
              "b200": "NVIDIA B200"}


@pytest.mark.parametrize("accelerator", sorted(NVML_NAMES))
def test_accelerator_type_is_what_a_ray_node_detects(accelerator):
    """Serve LLM's bundles ask for accelerator_type:<type>; a node offers only the type Ray reads off its
    GPU's name (NVIDIA_GPU_NAME_PATTERN in ray/_private/accelerators/nvidia_gpu.py), else the replica
    never schedules."""
    import re

    from components.serving.rayservice import RAY_ACCELERATOR
    detected = re.compile(r"\w+\s+([A-Z0-9]+)").match(NVML_NAMES[accelerator]).group(1)
    assert RAY_ACCELERATOR[accelerator] == detected


def test_every_catalog_gpu_has_a_ray_accelerator_type():
    from components.catalog import ACCELERATORS
    from components.serving.rayservice import RAY_ACCELERATOR
    assert set(ACCELERATORS) == set(NVML_NAMES) == set(RAY_ACCELERATOR)


def test_engine_metrics_are_exported_for_the_alerts(onprem):
    assert llm_config(obj(onprem.resources, "RayService", MODEL))["log_engine_metrics"] is True


def test_engine_kwargs_carry_every_planned_flag():
    args = ("org/model", "--served-model-name", "m", "--tensor-parallel-size", "8", "--port", "8000",
            "--kv-cache-dtype", "fp8", "--gpu-memory-utilization", "0.90", "--enforce-eager")
    source, model_id, kw = engine_kwargs(args)
    assert (source, model_id) == ("org/model", "m")
    assert kw == {"tensor_parallel_size": 8, "kv_cache_dtype": "fp8", "gpu_memory_utilization": 0.9,
                  "enforce_eager": True}
    with pytest.raises(ValueError, match="positional"):
        engine_kwargs(("org/model", "stray"))


def test_replicas_autoscale_through_serve_and_kuberay(onprem):
    t = topology(onprem, MODEL)
    rs = obj(onprem.resources, "RayService", MODEL)
    auto = llm_config(rs)["deployment_config"]["autoscaling_config"]
    assert (auto["min_replicas"], auto["max_replicas"], auto["initial_replicas"]) == \
        (t.min_replicas, t.max_replicas, t.replicas)
    assert auto["downscale_delay_s"] > auto["upscale_delay_s"]
    rc = rs["spec"]["rayClusterConfig"]
    assert rc["enableInTreeAutoscaling"] is True and rc["rayVersion"] == RAY_VERSION


def test_infiniband_workers_get_nccl_ib_and_the_pinned_image(onprem):
    w = worker(obj(onprem.resources, "RayService", MODEL))
    env = {e["name"]: e.get("value") for e in w["env"]}
    assert env["NCCL_IB_DISABLE"] == "0" and env["NCCL_IB_HCA"] == "mlx5" and env["NCCL_DEBUG"] == "WARN"
    assert w["image"] == RAY_LLM_IMAGE
    assert env["HF_HUB_OFFLINE"] == "1" and "HF_TOKEN" not in env  # offline: no token in the workers


def test_head_has_no_gpus_and_the_endpoint_keeps_the_model_name(onprem):
    rs = obj(onprem.resources, "RayService", MODEL)["spec"]
    head = rs["rayClusterConfig"]["headGroupSpec"]
    assert head["rayStartParams"]["num-gpus"] == "0"
    (c,) = head["template"]["spec"]["containers"]
    assert "nvidia.com/gpu" not in c["resources"]["limits"]
    assert {"name": "serve", "containerPort": 8000, "protocol": "TCP"} in c["ports"]
    assert rs["serveService"]["metadata"]["name"] == MODEL


def test_metrics_rules_and_dashboard_use_ray_prefixed_vllm_names(onprem):
    rules = obj(onprem.resources, "PrometheusRule", f"{MODEL}-sla")
    exprs = [r["expr"] for g in rules["spec"]["groups"] for r in g["rules"] if r["alert"] != "VllmMetricsAbsent"]
    # Ray's metrics agent sanitizes vLLM's names: the colon form would match no series (VllmMetricsAbsent reads
    # Prometheus' `up` and Serve's replica health, tests/serving/test_alerts.py)
    assert len(exprs) == 5 and all("ray_vllm_" in e and "vllm:" not in e for e in exprs)
    assert "ray_vllm_time_to_first_token_seconds_bucket" in exprs[0]
    dash = obj(onprem.resources, "ConfigMap", f"{MODEL}-dashboard")["data"][f"vllm-{MODEL}.json"]
    assert "ray_vllm_num_requests_waiting" in dash and "vllm:" not in dash
    pm = obj(onprem.resources, "PodMonitor", MODEL)["spec"]
    assert pm["podMetricsEndpoints"][0]["port"] == "metrics"


def test_pdb_and_network_policy_cover_the_ray_pods(onprem):
    pdb = obj(onprem.resources, "PodDisruptionBudget", MODEL)["spec"]
    # RayCluster pods have no scale subresource: maxUnavailable would fail safe to "0 disruptions allowed"
    # and block every drain. minAvailable = nodes per replica x min - 1 = 2 x 1 - 1: one of the 2 workers of the
    # minimum fleet may go, so a drain proceeds one node at a time (tests/serving/test_ha.py)
    assert pdb["minAvailable"] == 1 and "maxUnavailable" not in pdb
    assert pdb["selector"]["matchLabels"] == {"vllm-platform/model": MODEL, "vllm-platform/role": "ray-worker"}
    np = obj(onprem.resources, "NetworkPolicy", MODEL)["spec"]
    operators = [p for rule in np["ingress"] for p in rule["from"]
                 if p.get("podSelector", {}).get("matchLabels") == {"app.kubernetes.io/name": "kuberay-operator"}]
    assert operators, "the KubeRay operator must reach the head's dashboard"


# --- AWS: EFA, from the planner and the cloud-neutral pool spec (no cloud component needed) -------------

@pytest.fixture(scope="module")
def p5_405b():
    req = PlanRequest(model=MODELS["llama-3.1-405b"], precision="bf16",
                      candidates=(INSTANCE_TYPES["p5.48xlarge"],), max_model_len=8192,
                      sla=Sla(concurrency=32), min_replicas=1, max_replicas=3, served_model_name="llama-405b")
    t = plan_topology(req)
    (spec,) = gpu_pool_specs({"llama-405b": t})
    return t, spec


def test_efa_workers_request_every_interface_of_the_instance_type(p5_405b):
    t, spec = p5_405b
    assert t.nodes_per_replica == 2 and t.efa_interfaces == 32
    rs = {"spec": rayservice_spec("llama-405b", t, spec.gpu_pool(), CACHE, fabric.ray_image(t), {}, {})}
    w = worker(rs)
    assert w["resources"]["requests"] == w["resources"]["limits"]
    assert w["resources"]["limits"]["vpc.amazonaws.com/efa"] == "32"
    assert w["resources"]["limits"]["nvidia.com/gpu"] == "8"
    env = {e["name"]: e["value"] for e in w["env"] if "value" in e}
    assert env["FI_PROVIDER"] == "efa" and env["NCCL_DEBUG"] == "WARN"
    # no hugepages reserved on the nodes nor requested: libfabric's EFA provider must not use them
    assert env["FI_EFA_USE_HUGE_PAGE"] == "0"
    assert not any(r.startswith("hugepages-") for r in w["resources"]["limits"])
    assert w["image"] == RAY_LLM_EFA_IMAGE
    g = worker_group(rs)
    assert (g["replicas"], g["minReplicas"], g["maxReplicas"]) == (2 * t.replicas, 2, 6)


def test_pool_advertised_fabric_resources_win(p5_405b):
    t, spec = p5_405b
    pool = spec.gpu_pool(fabric_resources={"vpc.amazonaws.com/efa": 16})
    assert fabric.fabric_resources(t, pool) == {"vpc.amazonaws.com/efa": 16}


@pytest.mark.parametrize("name", ["gpudirect-tcpx", "gpudirect-tcpxo"])
def test_gpudirect_tcp_fabrics_use_nccl_sockets_over_the_gpu_nics_without_a_privileged_sidecar(p5_405b, name):
    t, _ = p5_405b
    f = fabric_for(dataclasses.replace(t, fabric=name, instance_type="a3-megagpu-8g"))
    assert f.env["NCCL_SOCKET_IFNAME"] == "eth" and f.env["GLOO_SOCKET_IFNAME"] == "eth0"
    assert f.env["NCCL_DEBUG"] == "WARN" and "FI_PROVIDER" not in f.env


def test_unknown_fabric_is_refused_by_name(p5_405b):
    t, _ = p5_405b
    with pytest.raises(FabricError, match="no NCCL setup for fabric 'warp-drive'"):
        fabric_for(dataclasses.replace(t, fabric="warp-drive"))


def test_ray_image_can_be_overridden_from_config():
    config = {
        "cloud": "existing", "namespace": "llm",
        "existing": {"gpuNodes": {"accelerator": "h100", "gpusPerNode": 8, "vcpu": 192, "ramGib": 2048,
                                  "fabric": "infiniband"}, "blockStorageClass": "fast-block"},
        "modelCache": {"kind": "rwx", "storageClass": "nfs"},
        "serving": {"multiNode": "rayservice", "rayImage": "registry.example.com/ray-llm-ib:2.58.0"},
        "models": [{"name": "big", "model": "llama-3.1-405b", "precision": "bf16", "maxModelLen": 8192}],
    }
    resources, _ = plan_config(config)
    (rs,) = objs(resources, "RayService")
    assert worker(rs)["image"] == "registry.example.com/ray-llm-ib:2.58.0"
    (ds,) = [d for d in objs(resources, "DaemonSet") if d["metadata"]["name"].startswith("image-prepull-")]
    assert [c["image"] for c in ds["spec"]["template"]["spec"]["initContainers"]] == \
        ["registry.example.com/ray-llm-ib:2.58.0"]


def test_head_reads_the_shared_cache_but_not_a_node_local_one(p5_405b):
    t, spec = p5_405b
    for facts, offline in ((CACHE, True), (CacheFacts("nvme", 4.0, nvme_paths={t.instance_type: "/mnt/nvme/mc"}), False)):
        rs = rayservice_spec("m", t, spec.gpu_pool(nvme_path="/mnt/nvme"), facts, "img:1", {}, {})
        (head,) = rs["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]["containers"]
        env = {e["name"]: e.get("value") for e in head["env"]}
        assert ("HF_HUB_OFFLINE" in env) is offline
        assert any(m["name"] == "model-cache" for m in head["volumeMounts"]) is offline
        assert ("HF_TOKEN" in env) is not offline  # a head that fetches from the Hub needs the token
        # offline on a shared cache: it waits for the prefetch Job's marker before building the Serve app
        assert [c["name"] for c in rs["rayClusterConfig"]["headGroupSpec"]["template"]["spec"].get(
            "initContainers", [])] == (["wait-for-cache"] if offline else [])


def test_head_of_the_shipped_405b_stack_waits_for_the_same_marker_as_its_workers():
    rs = obj(planned("prod-llama405b-aws").resources, "RayService", MODEL)
    (head_init,) = rs["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]["initContainers"]
    (worker_init,) = worker_group(rs)["template"]["spec"]["initContainers"]
    assert head_init["name"] == worker_init["name"] == "wait-for-cache"
    assert head_init["command"] == worker_init["command"]
    assert "/models/.ready/" in head_init["command"][-1]
    assert head_init["volumeMounts"] == [{"name": "model-cache", "mountPath": "/models", "readOnly": True}]


@pytest.mark.parametrize("stack, manifest, kind", [
    ("dev", "deployment_vllm_llama-8b.yaml", "Deployment"),
    (STACK, "rayservice_llm_llama-405b.yaml", "RayService"),
])
def test_plan_writes_the_manifests_of_both_shapes(stack, manifest, kind, capsys):
    from components.cli import main
    from components.offline.runner import ROOT
    assert main(["plan", stack]) == 0
    path = ROOT / "build" / stack / "manifests" / manifest
    assert yaml.safe_load(path.read_text())["kind"] == kind
    assert "manifests in" in capsys.readouterr().out


def test_ray_engine_gets_the_planned_batch_budget(p5_405b):
    """Ray Serve LLM does not fall back to the API server's batch defaults: the planner's value,
    which the memory profile was sized for, is passed explicitly."""
    t, _ = p5_405b
    _, _, kwargs = engine_kwargs(t.vllm_args)
    assert kwargs["max_num_batched_tokens"] == 8192  # H100: vLLM's default for GPUs >= 70 GiB
    assert kwargs["tensor_parallel_size"] == 8 and kwargs["pipeline_parallel_size"] == 2


def test_every_efa_fabric_family_turns_off_libfabric_huge_pages():
    seen = 0
    for stack in fabric_stacks():
        for rs in objs(planned(str(stack_path(stack))).resources, "RayService"):
            w = worker(rs)
            if "vpc.amazonaws.com/efa" not in w["resources"]["limits"]:
                continue
            seen += 1
            env = {e["name"]: e.get("value") for e in w["env"]}
            assert env["FI_EFA_USE_HUGE_PAGE"] == "0", stack
            assert not any(r.startswith("hugepages-") for r in w["resources"]["limits"]), stack
    assert seen >= 4  # p4d, p5, p5en, p6-b200
