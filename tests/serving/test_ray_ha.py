"""Multi-node replicas on a real cluster: a Ray head restart is no reload (GCS fault tolerance on the stack's
own Redis), the head and its Redis survive autoscaler consolidation and wait for an operator in a drain, the dashboard
wants a token, upgrades never need a second fleet of GPUs, and the engine waits as long as the budget."""
from __future__ import annotations

import dataclasses

import pytest
import yaml
from pulumi.runtime import rpc

from components.config.schema import Serving
from components.serving import redis
from components.serving.rayservice import llm_config, max_ongoing_requests, target_ongoing_requests
from tests.support.plans import by_type, plan_config, planned
from tests.support.consistency import label_selector_matches
from tests.support.serving import obj, objs, topology

MODEL = "llama-405b"
RAY_STACKS = ["prod-llama405b-onprem", "prod-llama405b-aws"]
NO_CONSOLIDATION = {"cluster-autoscaler.kubernetes.io/safe-to-evict": "false", "karpenter.sh/do-not-disrupt": "true"}
DEV_405B = {
    "cloud": "existing", "environment": "dev", "namespace": "llm",
    "existing": {"blockStorageClass": "standard",
                 "gpuNodes": {"accelerator": "h100", "gpusPerNode": 8, "vcpu": 192, "ramGib": 2048, "fabric": "infiniband"}},
    "modelCache": {"kind": "rwx", "storageClass": "nfs"}, "serving": {"multiNode": "rayservice"},
    "models": [{"name": "big", "model": "llama-3.1-405b", "precision": "bf16", "maxModelLen": 8192}],
}


def cluster(rs: dict) -> dict:
    return rs["spec"]["rayClusterConfig"]


def head(rs: dict) -> dict:
    return cluster(rs)["headGroupSpec"]["template"]


def serve_llm(rs: dict) -> dict:
    (app,) = yaml.safe_load(rs["spec"]["serveConfigV2"])["applications"]
    (cfg,) = app["args"]["llm_configs"]
    return cfg


@pytest.fixture(scope="module", params=RAY_STACKS)
def plan(request):
    return planned(request.param)


# --- GCS fault tolerance -----------------------------------------------------------------------------------

def test_production_gcs_persists_in_the_stacks_redis_with_the_password_by_reference(plan):
    rs = obj(plan.resources, "RayService", MODEL)
    assert cluster(rs)["gcsFaultToleranceOptions"] == {
        "redisAddress": "llama-405b-gcs-redis.llm.svc.cluster.local:6379",
        "redisPassword": {"valueFrom": {"secretKeyRef": {"name": "llama-405b-gcs-redis", "key": "password"}}}}
    # KubeRay >= 1.3 refuses the older ray.io/ft-enabled annotation next to gcsFaultToleranceOptions, and a
    # password in rayStartParams or the head's env
    assert "ray.io/ft-enabled" not in (rs["metadata"].get("annotations") or {})
    assert "redis-password" not in cluster(rs)["headGroupSpec"]["rayStartParams"]
    assert not {"REDIS_PASSWORD", "RAY_REDIS_ADDRESS"} & {e["name"] for c in head(rs)["spec"]["containers"]
                                                            for e in c["env"]}
    svc = obj(plan.resources, "Service", "llama-405b-gcs-redis")["spec"]
    assert svc["ports"] == [{"name": "redis", "port": 6379, "targetPort": "redis", "protocol": "TCP"}]
    ss = obj(plan.resources, "StatefulSet", "llama-405b-gcs-redis")["spec"]
    assert label_selector_matches({"matchLabels": svc["selector"]}, ss["template"]["metadata"]["labels"])


def test_workers_wait_for_a_returning_head_longer_than_a_reschedule_takes(plan):
    (group,) = cluster(obj(plan.resources, "RayService", MODEL))["workerGroupSpecs"]
    (worker,) = group["template"]["spec"]["containers"]
    env = {e["name"]: e.get("value") for e in worker["env"]}
    assert env["RAY_gcs_rpc_server_reconnect_timeout_s"] == "900"  # KubeRay would set 600


def test_redis_password_is_generated_and_stays_a_secret(plan):
    (secret,) = [r for r in by_type(plan.resources, "kubernetes:core/v1:Secret")
                 if r.inputs["metadata"]["name"] == "llama-405b-gcs-redis"]
    assert rpc.is_rpc_secret(secret.inputs["stringData"])
    data = secret.inputs["stringData"]["value"]
    assert set(data) == {"password", "redis.conf"}
    assert data["redis.conf"].startswith(f"requirepass {data['password']}\n")
    assert "appendonly yes" in data["redis.conf"] and "maxmemory-policy noeviction" in data["redis.conf"]
    passwords = [r for r in by_type(plan.resources, "pulumi-python:dynamic:GeneratedPassword")
                 if r.name.endswith("-gcs-password")]
    assert len(passwords) == 1 and passwords[0].inputs["length"] == 40
    # the password never sits in the pod spec or on the command line (`ps` would show it)
    ss = obj(plan.resources, "StatefulSet", "llama-405b-gcs-redis")
    assert "requirepass" not in yaml.safe_dump(ss) and data["password"] not in yaml.safe_dump(ss)


def test_redis_is_persistent_pinned_hardened_and_on_the_system_pool(plan):
    ss = obj(plan.resources, "StatefulSet", "llama-405b-gcs-redis")["spec"]
    pod = ss["template"]["spec"]
    (c,) = pod["containers"]
    assert c["image"].startswith("redis:8.10.2-alpine@sha256:")
    assert c["command"] == ["redis-server", "/etc/redis/redis.conf"]
    assert c["securityContext"]["runAsNonRoot"] and c["securityContext"]["readOnlyRootFilesystem"]
    assert c["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert c["securityContext"]["allowPrivilegeEscalation"] is False
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert pod["automountServiceAccountToken"] is False
    assert c["resources"]["requests"] == c["resources"]["limits"]
    (claim,) = ss["volumeClaimTemplates"]
    assert claim["spec"]["accessModes"] == ["ReadWriteOnce"] and {"name": "data", "mountPath": "/data"} in c["volumeMounts"]
    assert ss["replicas"] == 1
    assert ss["template"]["metadata"]["annotations"] == NO_CONSOLIDATION
    rs = obj(plan.resources, "RayService", MODEL)
    assert pod.get("nodeSelector") == head(rs)["spec"].get("nodeSelector")  # the head's (system) pool


def test_the_aws_head_and_redis_run_on_the_system_node_group():
    resources = planned("prod-llama405b-aws").resources
    system = {"vllm-platform/node-role": "system"}
    assert head(obj(resources, "RayService", MODEL))["spec"]["nodeSelector"] == system
    assert obj(resources, "StatefulSet", "llama-405b-gcs-redis")["spec"]["template"]["spec"]["nodeSelector"] == system


@pytest.mark.parametrize("storage_class, expected", [("gp3", {"storageClassName": "gp3"}), (None, {})])
def test_redis_claim_names_the_clusters_block_storage_class(storage_class, expected):
    ss = redis.statefulset_spec("m", {}, {"pool": "system"}, storage_class)
    (claim,) = ss["volumeClaimTemplates"]
    assert {k: v for k, v in claim["spec"].items() if k == "storageClassName"} == expected
    assert claim["spec"]["resources"]["requests"]["storage"] == "10Gi"


def test_only_the_models_ray_head_reaches_its_redis(plan):
    np = obj(plan.resources, "NetworkPolicy", "llama-405b-gcs-redis")["spec"]
    assert np["podSelector"] == {"matchLabels": {"vllm-platform/model": MODEL, "vllm-platform/role": "ray-gcs-store"}}
    assert np["ingress"] == [{"from": [{"podSelector": {"matchLabels": {"vllm-platform/model": MODEL,
                                                                        "vllm-platform/role": "ray-head"}}}],
                              "ports": [{"port": 6379, "protocol": "TCP"}]}]
    assert head(obj(plan.resources, "RayService", MODEL))["metadata"]["labels"]["vllm-platform/role"] == "ray-head"


def test_development_ray_clusters_keep_an_in_memory_gcs():
    resources, _ = plan_config(DEV_405B)
    (rs,) = objs(resources, "RayService")
    assert "gcsFaultToleranceOptions" not in cluster(rs)
    assert not objs(resources, "StatefulSet")
    assert not [r for r in by_type(resources, "pulumi-python:dynamic:GeneratedPassword") if "gcs" in r.name]


# --- drains ------------------------------------------------------------------------------------------------

def test_autoscalers_never_move_the_head_and_only_its_own_budget_covers_it(plan):
    """The head and its Redis: never moved by a node autoscaler; each covered by exactly one budget of its own
    (minAvailable 1: a drain waits for an operator), never by the workers' budget."""
    rs = obj(plan.resources, "RayService", MODEL)
    assert head(rs)["metadata"]["annotations"] == NO_CONSOLIDATION
    assert head(rs)["spec"]["restartPolicy"] == "Always"
    head_labels = {**head(rs)["metadata"]["labels"], "ray.io/node-type": "head"}  # KubeRay adds the node type
    redis_labels = obj(plan.resources, "StatefulSet", "llama-405b-gcs-redis")["spec"]["template"]["metadata"]["labels"]
    for labels, name in ((head_labels, "llama-405b-ray-head"), (redis_labels, "llama-405b-gcs-redis")):
        covering = [p for p in objs(plan.resources, "PodDisruptionBudget")
                    if label_selector_matches(p["spec"]["selector"], labels)]
        assert [p["metadata"]["name"] for p in covering] == [name]
        assert covering[0]["spec"]["minAvailable"] == 1 and "maxUnavailable" not in covering[0]["spec"]
    for pdb in objs(plan.resources, "PodDisruptionBudget"):
        # pods of a RayCluster (no scale subresource): maxUnavailable would fail safe to 0 allowed
        if label_selector_matches(pdb["spec"]["selector"], {"vllm-platform/model": MODEL,
                                                            "vllm-platform/role": "ray-worker"}):
            assert "maxUnavailable" not in pdb["spec"] and isinstance(pdb["spec"]["minAvailable"], int)


# --- auth and upgrades -------------------------------------------------------------------------------------

def test_dashboard_and_gcs_want_kuberays_token(plan):
    rs = obj(plan.resources, "RayService", MODEL)
    assert cluster(rs)["authOptions"] == {"mode": "token"}
    assert cluster(rs)["rayVersion"] >= "2.52.0"  # KubeRay refuses token mode below


def test_upgrades_never_surge_a_second_cluster(plan):
    spec = obj(plan.resources, "RayService", MODEL)["spec"]
    assert spec["upgradeStrategy"] == {"type": "None"}
    # deprecated and unread since KubeRay 1.1: a value here would only mislead
    assert not {"serviceUnhealthySecondThreshold", "deploymentUnhealthySecondThreshold"} & set(spec)


def test_the_aws_gpu_pool_could_never_hold_a_second_cluster():
    """Why NewCluster (KubeRay's default) is not the stack's default: it runs a second fleet beside the first until
    the switch, and the pool is sized for one fleet at max scale unless serving.rayUpgradeStrategy: NewCluster
    grows it (tests/serving/test_ray_upgrades.py)."""
    resources = planned("prod-llama405b-aws").resources
    (group,) = cluster(obj(resources, "RayService", MODEL))["workerGroupSpecs"]
    (pool,) = [r for r in by_type(resources, "aws:eks/nodeGroup:NodeGroup") if "gpu" in r.name]
    assert pool.inputs["scalingConfig"]["maxSize"] < 2 * group["maxReplicas"]


# --- start-up budget ---------------------------------------------------------------------------------------

def test_engine_waits_as_long_as_the_start_up_budget(plan):
    rs = obj(plan.resources, "RayService", MODEL)
    cfg = serve_llm(rs)
    env = cfg["runtime_env"]["env_vars"]
    assert env["RAYLLM_ENGINE_START_TIMEOUT_S"] == env["VLLM_ENGINE_READY_TIMEOUT_S"]
    budget = int(env["VLLM_ENGINE_READY_TIMEOUT_S"])
    assert budget > 600  # vLLM's default would end a 754 GiB load part-way
    # the same wait the worker containers' vLLM gets (serving/probes.budget), one figure per stack
    (group,) = cluster(rs)["workerGroupSpecs"]
    (worker,) = [c for c in group["template"]["spec"]["containers"] if c["name"] == "ray-worker"]
    assert {"name": "VLLM_ENGINE_READY_TIMEOUT_S", "value": str(budget)} in worker["env"]
    assert budget == {"prod-llama405b-onprem": 1460, "prod-llama405b-aws": 1460}.get(plan.stack, budget)
    dc = cfg["deployment_config"]
    assert (dc["health_check_period_s"], dc["health_check_timeout_s"]) == (30, 30)
    assert dc["graceful_shutdown_timeout_s"] == 120


# --- Serve autoscaling against the KV cache ----------------------------------------------------------------

def test_onprem_405b_scales_before_its_kv_cache_fills():
    """The capacity model's knee makes the shipped on-prem 405B TPOT-bound: 23 requests per replica (p90 TPOT
    72.5 ms x the dense models' 10 % margin = 79.75 ms under its 80 ms SLA; its KV cache would hold 549; the knee
    depends on the calibration, the margin and the SLA percentile: 13 under the old 35 % on the mean), so Serve adds
    a replica once the batch is full and a queue of KEDA's waiting threshold (3, a tenth of 23 rounded up) forms
    (26), and hands one replica at most its batch plus twice that (29). Were it KV-bound at 549, Serve would add a
    replica at 75 % of the batch, as KEDA's KV threshold would, before preemptions."""
    t = topology(planned("prod-llama405b-onprem"), MODEL)
    assert (t.max_num_seqs, t.concurrency_per_replica, t.concurrency_bound) == (23, 23, "tpot")
    assert t.kv_limit_concurrency == 549
    auto = serve_llm(obj(planned("prod-llama405b-onprem").resources, "RayService", MODEL))["deployment_config"]
    assert auto["autoscaling_config"]["target_ongoing_requests"] == 26
    assert auto["max_ongoing_requests"] == 29
    kv = dataclasses.replace(t, concurrency_bound="kv-cache", concurrency_per_replica=549, max_num_seqs=549)
    assert (target_ongoing_requests(kv, Serving()), max_ongoing_requests(kv, Serving())) == (411, 659)


def test_latency_bound_plans_scale_once_the_batch_is_full_and_a_queue_forms():
    t = topology(planned("prod-llama405b-onprem"), MODEL)
    t = dataclasses.replace(t, concurrency_bound="tpot", concurrency_per_replica=64, max_num_seqs=64)
    assert (target_ongoing_requests(t, Serving()), max_ongoing_requests(t, Serving())) == (71, 78)
    # the stack's own KEDA knobs move Serve's target the same way
    tuned = Serving(waiting_per_replica=2, kv_cache_usage=0.5)
    assert (target_ongoing_requests(t, tuned), max_ongoing_requests(t, tuned)) == (66, 68)
    kv_bound = dataclasses.replace(t, concurrency_bound="kv-cache")
    assert target_ongoing_requests(kv_bound, tuned) == 32
    assert llm_config(kv_bound, tuned)["deployment_config"]["autoscaling_config"]["target_ongoing_requests"] == 32
