"""The LeaderWorkerSet shape (issue 25, components/serving/lws.py, docs/lws.md): the worked example stack
tests/stacks/Pulumi.lws-aws-p5.yaml (Llama-3.1-405B, 2 x p5.48xlarge per replica), pinned literally."""
from __future__ import annotations

import dataclasses

import pytest

from components.config.schema import Serving
from components.offline.runner import ROOT, load_stack_yaml
from policies.rules import evaluate_plan
from policies.rules.core import RULES
from tests.support.plans import manifests, planned
from tests.test_manifest_schemas import _plain, problems

STACK = str(ROOT / "tests" / "stacks" / "Pulumi.lws-aws-p5.yaml")
LWS = "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet"
REVISION = "3c3d3cf8b4b54b7fc5b0e8a2d7c0f4a1a0b9c8d7"
ENGINE = ["meta-llama/Llama-3.1-405B-Instruct", "--served-model-name", "llama-405b", "--tensor-parallel-size", "8",
          "--pipeline-parallel-size", "2", "--max-model-len", "32768", "--gpu-memory-utilization", "0.90",
          "--max-num-seqs", "23", "--max-num-batched-tokens", "8192", "--port", "8000",
          "--distributed-executor-backend", "mp", "--safetensors-load-strategy", "eager", "--revision", REVISION,
          "--tokenizer-revision", REVISION, "--shutdown-timeout", "328"]


@pytest.fixture(scope="module")
def plan():
    return planned(STACK)


@pytest.fixture(scope="module")
def objs(plan):
    return manifests([dataclasses.replace(r, inputs=_plain(r.inputs)) for r in plan.resources])


def one(objs, kind: str, name: str = "llama-405b") -> dict:
    (o,) = [o for o in objs.values() if o["kind"] == kind and o["metadata"].get("name") == name]
    return o


def test_the_set_validates_against_the_vendored_lws_crd(objs):
    lws = one(objs, "LeaderWorkerSet")
    assert lws["apiVersion"] == "leaderworkerset.x-k8s.io/v1"
    assert problems(lws, "1.35") == []
    broken = {**lws, "spec": {**lws["spec"], "leaderWorkerTemplate": {**lws["spec"]["leaderWorkerTemplate"],
                                                                     "restartPolicy": "RecreateGroup"}}}
    assert problems(broken, "1.35")  # the strict check does reject a wrong value


def test_gang_semantics_group_size_and_startup(objs):
    spec = one(objs, "LeaderWorkerSet")["spec"]
    # 32 users at 23 per group: the knee under the dense models' 10 % margin at p90 TPOT (72.5 ms est. for an 80 ms
    # SLA); it was 13 per group, 3 groups, under the old 35 % margin on the mean
    assert spec["replicas"] == 2
    assert spec["startupPolicy"] == "LeaderCreated"
    assert spec["rolloutStrategy"] == {"type": "RollingUpdate",
                                       "rollingUpdateConfiguration": {"maxSurge": 0, "maxUnavailable": 1}}
    lwt = spec["leaderWorkerTemplate"]
    assert (lwt["size"], lwt["restartPolicy"]) == (2, "RecreateGroupOnPodRestart")


def _container(objs, template: str) -> dict:
    (c,) = one(objs, "LeaderWorkerSet")["spec"]["leaderWorkerTemplate"][template]["spec"]["containers"]
    return c


def test_leader_args_run_the_api_server_as_node_rank_0(objs):
    c = _container(objs, "leaderTemplate")
    # EFA: AWS's build of vLLM 0.31.0 with the EFA userspace (tests/serving/test_vllm_image.py)
    assert c["image"] == "public.ecr.aws/deep-learning-containers/vllm:0.31.0-gpu-py312-cu130-ubuntu24.04-ec2"
    assert c["args"] == ENGINE + ["--nnodes", "2", "--node-rank", "0", "--master-addr", "$(LWS_LEADER_ADDRESS)",
                                  "--master-port", "29501"]
    assert c["ports"] == [{"name": "http", "containerPort": 8000, "protocol": "TCP"}]
    assert c["readinessProbe"]["httpGet"] == {"path": "/health", "port": "http"}
    assert c["startupProbe"]["failureThreshold"] * c["startupProbe"]["periodSeconds"] == 1460


def test_worker_args_are_headless_and_ranked_by_the_group(objs):
    c = _container(objs, "workerTemplate")
    assert c["args"] == ENGINE + ["--nnodes", "2", "--node-rank", "$(LWS_WORKER_INDEX)", "--master-addr",
                                  "$(LWS_LEADER_ADDRESS)", "--master-port", "29501", "--headless"]
    assert not {"ports", "startupProbe", "readinessProbe", "livenessProbe"} & set(c)
    # the worker keeps its ranks up through the leader's 15 s preStop only: a gang restart (foreground deletion of
    # the leader) waits for every worker to terminate, so the old 343 s (preStop + the leader's drain) held back
    # every group's recovery by ~6 minutes; the leader's drain keeps its ranks on scale-in (background deletion)
    assert c["lifecycle"]["preStop"]["exec"]["command"] == ["/bin/sh", "-c", "sleep 15"]
    assert c["resources"]["limits"]["vpc.amazonaws.com/efa"] == "32"
    assert {"name": "FI_EFA_USE_HUGE_PAGE", "value": "0"} in c["env"]


def test_a_worker_leaves_in_30_s_and_the_leader_keeps_its_drain(objs):
    lwt = one(objs, "LeaderWorkerSet")["spec"]["leaderWorkerTemplate"]
    assert lwt["workerTemplate"]["spec"]["terminationGracePeriodSeconds"] == 30  # 15 s preStop + 15 s to exit
    leader = lwt["leaderTemplate"]["spec"]
    assert leader["terminationGracePeriodSeconds"] == 358  # 15 s preStop + 328 s drain + 15 s
    assert leader["containers"][0]["lifecycle"]["preStop"]["exec"]["command"] == ["/bin/sh", "-c", "sleep 15"]


def test_the_plan_states_a_groups_recovery_time(plan):
    s = plan.exports["serving"]["llama-405b"]
    # teardown: the leader's 15 s preStop + vLLM's 300 s execute-model timeout on the lost rank (within its 358 s
    # grace), longer than the workers' 30 s
    assert s["recovery"] == {"detectS": 120, "teardownS": 315, "startupS": 1460, "readinessS": 10, "totalS": 1905}


def test_every_flag_exists_in_vllm_031():
    from components.upstream.vllm_registry import VLLM_SERVE_FLAGS
    for flag in ("--distributed-executor-backend", "--nnodes", "--node-rank", "--master-addr", "--master-port",
                 "--headless"):
        assert flag in VLLM_SERVE_FLAGS


def test_keda_scales_the_set_through_its_scale_subresource(objs):
    so = one(objs, "ScaledObject")
    assert so["spec"]["scaleTargetRef"] == {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
                                            "name": "llama-405b"}
    assert (so["spec"]["minReplicaCount"], so["spec"]["maxReplicaCount"]) == (2, 3)


def test_one_budget_over_the_sets_pods(objs):
    pdb = one(objs, "PodDisruptionBudget")
    assert pdb["spec"] == {"maxUnavailable": 1, "unhealthyPodEvictionPolicy": "AlwaysAllow",
                           "selector": {"matchLabels": {"vllm-platform/model": "llama-405b",
                                                        "leaderworkerset.sigs.k8s.io/name": "llama-405b"}}}


def test_the_inference_pool_and_the_service_select_the_leaders_only(plan, objs):
    rel = [r for r in plan.resources if r.type == "kubernetes:helm.sh/v3:Release" and r.inputs["name"] == "llama-405b"]
    (epp,) = rel
    assert epp.inputs["values"]["router"]["modelServers"]["matchLabels"] == {
        "vllm-platform/model": "llama-405b", "vllm-platform/role": "server"}
    assert one(objs, "Service")["spec"]["selector"] == {"vllm-platform/model": "llama-405b",
                                                       "vllm-platform/role": "server"}
    lwt = one(objs, "LeaderWorkerSet")["spec"]["leaderWorkerTemplate"]
    assert lwt["leaderTemplate"]["metadata"]["labels"]["vllm-platform/role"] == "server"
    assert lwt["workerTemplate"]["metadata"]["labels"]["vllm-platform/role"] == "lws-worker"
    assert not [o for o in objs.values() if o["kind"] in ("RayService", "PodMonitor")]


def test_the_controller_is_installed_from_its_oci_chart(plan):
    (r,) = [r for r in plan.resources if r.type == "kubernetes:helm.sh/v3:Release" and r.inputs["name"] == "lws"]
    assert (r.inputs["chart"], r.inputs["version"], r.inputs["namespace"]) == \
        ("oci://registry.k8s.io/lws/charts/lws", "0.10.0", "lws-system")
    assert r.inputs["values"]["image"] == {"manager": {"repository": "registry.k8s.io/lws/lws", "tag": "v0.10.0",
                                                       "pullPolicy": "IfNotPresent"}}


def test_the_plan_names_the_shape_and_its_cost(plan):
    s = plan.exports["serving"]["llama-405b"]
    assert s["shape"] == "lws"
    assert (s["rollout"], s["drainS"]) == ({"maxSurge": 0, "maxUnavailable": 1}, 328)
    assert ("MULTI-NODE SHAPE: llama-405b runs as a LeaderWorkerSet (2 group(s) of 2 x p5.48xlarge, vLLM's mp "
            "executor, gang restart), scaled by KEDA between 2 and 3 groups; a template change rolls one group at a "
            "time in place (the pool holds no spare 2 nodes at replicas.max); a failed pod takes its group down and "
            "back in up to 1905 s (~32 min: detection 120 s (a hung engine's liveness; a crash is seen at once) + "
            "teardown 315 s (the leader's 15 s preStop and, with requests in flight on a lost rank, vLLM's 300 s "
            "execute-model timeout, within its grace) + start-up 1460 s + readiness 10 s). Same GPU nodes "
            "as a RayService, "
            "without its Ray head (4 CPU / 16Gi on a system node) and its production Redis; serving.multiNode: "
            "rayservice selects KubeRay instead") in s["warnings"]
    assert not [w for w in s["warnings"] if w.startswith(("RAYSERVICE UPGRADES", "ENGINE VERSION"))]
    # the plan's command line is the leader's, not the planner's Ray form (`--distributed-executor-backend ray`)
    assert "--distributed-executor-backend mp" in s["serve"] and "backend ray" not in s["serve"]
    assert s["serve"].endswith("--nnodes 2 --node-rank 0 --master-addr $(LWS_LEADER_ADDRESS) --master-port 29501  "
                               "(workers: --node-rank $(LWS_WORKER_INDEX) ... --headless)")
    from components.planner import Topology
    from components.cli.summary import summary
    t = Topology.from_dict(plan.exports["topology"]["llama-405b"])
    assert f"\n  {s['serve']}\n" in summary(t, s["serve"]) and "backend ray" not in summary(t, s["serve"])


def test_the_example_passes_the_policy_pack(plan):
    assert [v for v in evaluate_plan(plan) if v.level == "mandatory"] == []


def test_new_stacks_default_to_lws_and_the_shipped_ray_stacks_stay_on_rayservice():
    assert Serving().multi_node == "lws"
    for stack in ("prod-llama405b-aws", "prod-llama405b-onprem"):
        raw = load_stack_yaml(ROOT / "stacks" / f"Pulumi.{stack}.yaml")["vllm-platform:serving"]
        assert raw["multiNode"] == "rayservice", stack
        assert [r.type for r in planned(stack).resources if r.type.endswith((":RayService", ":LeaderWorkerSet"))] \
            == ["kubernetes:ray.io/v1:RayService"]


def test_a_wrong_shape_names_the_field():
    from components.config import ConfigError
    from components.config.load import parse
    from tests.support.consistency import stack_raw
    with pytest.raises(ConfigError) as e:
        parse({**stack_raw("dev"), "serving": {"multiNode": "ray"}}, {"hfToken"})
    (err,) = [x for x in e.value.errors if x.startswith("serving.multiNode")]
    assert "'lws' or 'rayservice'" in err, err


def _rule(name):
    (r,) = [r for r in RULES if r.name == name]
    return r


def test_policy_refuses_a_set_without_gang_restart():
    r = _rule("lws-gang-restart")
    props = {"metadata": {"name": "big"}, "spec": {"leaderWorkerTemplate": {"size": 2, "restartPolicy": "None"}}}
    assert r.messages(LWS, props) == ["LeaderWorkerSet big: groups of 2 pods with restartPolicy None: a restarted pod "
                                      "rejoins no engine"]
    props["spec"]["leaderWorkerTemplate"]["restartPolicy"] = "RecreateGroupOnPodRestart"
    assert r.messages(LWS, props) == []
    assert r.messages(LWS, {"metadata": {"name": "one"}, "spec": {"leaderWorkerTemplate": {"size": 1}}}) == []


def test_policy_refuses_leader_ready_with_a_multi_node_engine():
    r = _rule("lws-startup-leader-created")
    vllm = {"name": "vllm", "image": "vllm/vllm-openai:v0.31.0", "args": ["m", "--nnodes", "2", "--node-rank", "0"]}
    props = {"metadata": {"name": "big"}, "spec": {"startupPolicy": "LeaderReady", "leaderWorkerTemplate": {
        "size": 2, "leaderTemplate": {"spec": {"containers": [vllm]}}}}}
    assert r.messages(LWS, props) == ["LeaderWorkerSet big: startupPolicy LeaderReady with a multi-node vLLM engine "
                                      "(--nnodes or data-parallel ranks across nodes)"]
    props["spec"]["startupPolicy"] = "LeaderCreated"
    assert r.messages(LWS, props) == []
