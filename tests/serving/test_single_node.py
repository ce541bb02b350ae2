"""Single-node replicas: the Deployment runs exactly the plan, sized, probed, secured, autoscaled by KEDA."""
from __future__ import annotations

import json

import pytest

from components.cache.component import CacheFacts
from components.config import ConfigError, parse
from components.offline.render import sanitize
from components.offline.runner import stack_names
from components.planner import Topology
from components.kube import probes
from components.serving import autoscaling
from components.serving.deployment import deployment_spec, rollout_timeouts
from components.serving.network import pdb_spec
from tests.support.plans import manifests, one, plan_config, planned
from tests.support.serving import DEV_MODEL, EXISTING, container, obj, topology


@pytest.fixture(scope="module")
def dev():
    return planned("dev")


@pytest.fixture(scope="module")
def prod70b():
    resources, exports = plan_config(EXISTING)

    class R:
        pass
    r = R()
    r.resources, r.exports = resources, exports
    return r


def test_container_runs_exactly_the_planned_vllm_arguments(dev):
    d = obj(dev.resources, "Deployment", DEV_MODEL)
    c = container(d)
    # pinned by digest, the tag kept for humans
    assert c["image"] == ("vllm/vllm-openai:v0.31.0@sha256:"
                          "c1c9f6fd5c109ba7f0546a59f5b2f15fb87f64c77782e90a27b648b42a8e67c3")
    # the plan's flags, then the loader the shared cache gets (Run:ai streamer) and the drain
    assert c["args"] == [*dev.exports["topology"][DEV_MODEL]["vllm_args"], "--load-format", "runai_streamer",
                         "--shutdown-timeout", "410"]
    # vLLM as PID 1 on every image, whatever its entrypoint (the EFA image's runs it from bash without exec,
    # so SIGTERM would never reach it: fabric.py VLLM_COMMAND)
    assert c["command"] == ["vllm", "serve"]


def test_gpu_requests_equal_limits_and_the_plan(dev, prod70b):
    for result, model in ((dev, DEV_MODEL), (prod70b, "chat")):
        t = topology(result, model)
        res = container(obj(result.resources, "Deployment", model))["resources"]
        assert res["requests"] == res["limits"]
        assert res["limits"]["nvidia.com/gpu"] == str(t.gpus_per_replica)
        assert res["limits"]["cpu"] == str(t.pod_cpu) and res["limits"]["memory"] == f"{t.pod_memory_gib}Gi"


def test_shm_is_memory_backed_and_sized_for_the_replica(prod70b):
    t = topology(prod70b, "chat")
    spec = obj(prod70b.resources, "Deployment", "chat")["spec"]["template"]["spec"]
    shm = next(v for v in spec["volumes"] if v["name"] == "dshm")
    assert shm["emptyDir"] == {"medium": "Memory", "sizeLimit": f"{t.shm_gib}Gi"}
    assert {"name": "dshm", "mountPath": "/dev/shm"} in container({"spec": {"template": {"spec": spec}}})["volumeMounts"]


def test_pods_land_on_the_gpu_pool(dev):
    spec = obj(dev.resources, "Deployment", DEV_MODEL)["spec"]["template"]["spec"]
    assert spec["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Equal", "value": "present",
                                    "effect": "NoSchedule"}]
    terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [{"key": "nvidia.com/gpu.present", "operator": "In", "values": ["true"]}]}]


def test_startup_budget_grows_with_the_model_and_shrinks_with_a_faster_cache():
    assert probes.startup_budget_s(700, 0.5) > probes.startup_budget_s(130, 0.5) > probes.startup_budget_s(15, 0.5)
    assert probes.startup_budget_s(130, 2.0) < probes.startup_budget_s(130, 0.5)
    # 70B BF16 (131.5 GiB) from 0.5 GB/s NFS: ~282 s of reading x 1.5 + 240 s engine start
    assert probes.startup_budget_s(131.5, 0.5) == 670
    # the seeds' fixed 180 s delay would have killed it; the budget never goes below the floor
    assert probes.startup_budget_s(1, 100) == probes.MIN_BUDGET_S
    # pods that start together on one node share its read throughput
    assert probes.startup_budget_s(131.5, 0.5, readers_per_node=4) > probes.startup_budget_s(131.5, 0.5)


def test_startup_probe_carries_the_budget_and_liveness_waits_for_it(dev, prod70b):
    for result, model, gbps in ((dev, DEV_MODEL, 0.5), (prod70b, "chat", 1.0)):
        t = topology(result, model)
        c = container(obj(result.resources, "Deployment", model))
        sp = c["startupProbe"]
        assert sp["httpGet"] == {"path": "/health", "port": "http"}
        assert sp["periodSeconds"] * sp["failureThreshold"] == probes.topology_budget_s(t, gbps)
        assert c["readinessProbe"]["httpGet"]["path"] == "/health"
        assert "initialDelaySeconds" not in c["livenessProbe"]
    assert container(obj(prod70b.resources, "Deployment", "chat"))["startupProbe"]["failureThreshold"] > \
        container(obj(dev.resources, "Deployment", DEV_MODEL))["startupProbe"]["failureThreshold"]


def test_a_faster_cache_shortens_the_rendered_budget():
    slow, _ = plan_config(EXISTING)
    fast, _ = plan_config({**EXISTING, "modelCache": {**EXISTING["modelCache"], "readGbps": 4}})
    thr = lambda rs: container(obj(rs, "Deployment", "chat"))["startupProbe"]["failureThreshold"]  # noqa: E731
    assert thr(fast) < thr(slow)


def test_rollout_never_drops_below_ready_replicas_and_pulumi_waits_long_enough(prod70b):
    t = topology(prod70b, "chat")
    d = obj(prod70b.resources, "Deployment", "chat")["spec"]
    assert d["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}}
    assert d["replicas"] == t.replicas
    cache = CacheFacts("rwx", 1.0, claim="model-cache")
    create, update = rollout_timeouts(t, cache)
    assert d["progressDeadlineSeconds"] > 600 and create > d["progressDeadlineSeconds"]
    assert update >= probes.topology_budget_s(t, 1.0) * t.replicas


def test_hf_token_never_appears_in_plain_text():
    token = "hf_SENTINELtoken0123456789"
    resources, _ = plan_config(EXISTING, secrets={"hfToken": token})
    # it did flow in (so this test can fail) ...
    assert token in json.dumps(one(resources, "kubernetes:core/v1:Secret", "vllm-hf-token").inputs, default=str)
    # ... but only ever as a Pulumi secret: with secrets masked, no input of any resource holds it
    for r in resources:
        assert token not in json.dumps(sanitize(r.inputs)), f"{r.type} {r.name} carries the token in plain text"
    # the serving pod reads the cache offline and holds no token; only the prefetch Job reaches the Hub
    env = container(obj(resources, "Deployment", "chat"))["env"]
    assert "HF_TOKEN" not in [e["name"] for e in env]
    assert {"name": "HF_HUB_OFFLINE", "value": "1"} in env
    job_env = obj(resources, "Job", "prefetch-chat")["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "HF_TOKEN"}}} in job_env


def test_scaled_object_targets_the_deployment(dev, prod70b):
    for result, model in ((dev, DEV_MODEL), (prod70b, "chat")):
        so = obj(result.resources, "ScaledObject", model)
        assert so["apiVersion"] == "keda.sh/v1alpha1"
        assert so["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": model}
        assert obj(result.resources, "Deployment", model)
        for kind in ("RayCluster", "RayService"):
            assert kind not in json.dumps(so)
    t = topology(prod70b, "chat")
    spec = obj(prod70b.resources, "ScaledObject", "chat")["spec"]
    assert (spec["minReplicaCount"], spec["maxReplicaCount"]) == (2, 6) == (t.min_replicas, t.max_replicas)


def test_scaled_object_triggers_on_queue_and_kv_cache_with_plan_defaults(prod70b):
    t = topology(prod70b, "chat")
    spec = obj(prod70b.resources, "ScaledObject", "chat")["spec"]
    trig = {tr["name"]: tr for tr in spec["triggers"]}
    assert trig["waiting-requests"]["metadata"]["query"] == \
        'sum(vllm:num_requests_waiting{namespace="llm",model_name="chat"})'
    assert trig["kv-cache-usage"]["metadata"]["query"] == 'sum(vllm:kv_cache_usage_perc{namespace="llm",model_name="chat"})'
    assert all(tr["type"] == "prometheus" and tr["metricType"] == "AverageValue" for tr in trig.values())
    assert trig["waiting-requests"]["metadata"]["serverAddress"].startswith("http://")
    expected_waiting = max(1, -(-t.concurrency_per_replica // 10))
    assert trig["waiting-requests"]["metadata"]["threshold"] == f"{expected_waiting:g}"
    expected_kv = 0.75 if t.concurrency_bound == "kv-cache" else 0.9
    assert trig["kv-cache-usage"]["metadata"]["threshold"] == f"{expected_kv:g}"
    behavior = spec["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]
    assert behavior["scaleUp"]["stabilizationWindowSeconds"] == 0
    assert behavior["scaleDown"]["stabilizationWindowSeconds"] == 600
    assert behavior["scaleDown"]["policies"] == [{"type": "Pods", "value": 1, "periodSeconds": 300}]


def test_thresholds_come_from_config_when_given():
    resources, _ = plan_config({**EXISTING, "serving": {"waitingPerReplica": 3, "kvCacheUsage": 0.8,
                                                         "scaleDownWindowS": 1200}})
    spec = obj(resources, "ScaledObject", "chat")["spec"]
    trig = {tr["name"]: tr["metadata"]["threshold"] for tr in spec["triggers"]}
    assert trig == {"waiting-requests": "3", "kv-cache-usage": "0.8"}
    assert spec["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"] \
        == 1200


def test_kv_threshold_default_follows_what_bounds_the_plan(prod70b):
    t = topology(prod70b, "chat")
    cfg = parse({"cloud": "aws", "aws": {"region": "us-east-1"}, "models": [{"name": "x", "model": "llama-3.1-8b"}]},
                {"hfToken"})
    kv_bound = Topology(**{**t.__dict__, "concurrency_bound": "kv-cache"})
    tpot_bound = Topology(**{**t.__dict__, "concurrency_bound": "tpot"})
    assert autoscaling.kv_threshold(kv_bound, cfg.serving) == 0.75
    assert autoscaling.kv_threshold(tpot_bound, cfg.serving) == 0.9


def test_network_policy_admits_only_configured_namespaces_and_prometheus():
    resources, _ = plan_config({**EXISTING, "serving": {"allowedNamespaces": ["gateway", "apps"]}})
    np = obj(resources, "NetworkPolicy", "chat")["spec"]
    assert np["podSelector"]["matchLabels"] == {"vllm-platform/model": "chat", "vllm-platform/role": "server"}
    assert np["policyTypes"] == ["Ingress"]
    peers = [p for rule in np["ingress"] for p in rule["from"]]
    namespaces = sorted(p["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"]
                        for p in peers if p.get("namespaceSelector", {}).get("matchLabels") and "podSelector" not in p)
    assert namespaces == ["apps", "gateway"]
    # Prometheus only from its own namespace: a pod label alone would let any tenant in
    assert {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}},
            "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}}} in peers
    assert all(rule["ports"] == [{"port": 8000, "protocol": "TCP"}] for rule in np["ingress"])
    open_peers = [p for p in peers if p.get("namespaceSelector") == {} and "podSelector" not in p]
    assert not open_peers  # never "any pod in any namespace"


def test_service_is_cluster_ip_on_the_api_port(dev):
    svc = obj(dev.resources, "Service", DEV_MODEL)["spec"]
    assert svc["type"] == "ClusterIP"
    assert svc["ports"] == [{"name": "http", "port": 8000, "targetPort": "http", "protocol": "TCP"}]
    assert svc["selector"] == obj(dev.resources, "Deployment", DEV_MODEL)["spec"]["selector"]["matchLabels"]


def test_pdb_lets_drains_take_one_replica_at_a_time_and_never_blocks_them(dev, prod70b):
    for result, model in ((prod70b, "chat"), (dev, DEV_MODEL)):
        pdb = obj(result.resources, "PodDisruptionBudget", model)["spec"]
        assert pdb["maxUnavailable"] == 1 and "minAvailable" not in pdb
        assert pdb["selector"] == obj(result.resources, "Deployment", model)["spec"]["selector"]
    t = topology(prod70b, "chat")
    # production survives that one replica's drain: its replicas sit on at least two nodes
    assert t.spread_nodes == 2 and t.min_replicas >= 2 and pdb_spec("chat", t)["maxUnavailable"] < t.min_replicas


@pytest.mark.parametrize("stack", stack_names())
def test_no_privileged_mode_and_no_added_capabilities(stack):
    for m in manifests(planned(stack).resources).values():
        if m.get("metadata", {}).get("labels", {}).get("app.kubernetes.io/part-of") != "vllm-platform":
            continue
        spec = m.get("spec", {})
        templates = [spec.get("template", {}).get("spec")]
        rc = spec.get("rayClusterConfig", {})
        templates += [rc.get("headGroupSpec", {}).get("template", {}).get("spec")]
        templates += [g["template"]["spec"] for g in rc.get("workerGroupSpecs", [])]
        for pod in filter(None, templates):
            assert not pod.get("hostNetwork") and not pod.get("hostPID") and not pod.get("hostIPC")
            # only the Ray head talks to the Kubernetes API (KubeRay's autoscaler sidecar)
            is_head = any(c["name"] == "ray-head" for c in pod["containers"])
            assert pod.get("automountServiceAccountToken") is (None if is_head else False), m["metadata"]["name"]
            for c in pod.get("containers", []) + pod.get("initContainers", []):
                sc = c.get("securityContext", {})
                assert sc.get("privileged") is False and sc.get("allowPrivilegeEscalation") is False, c["name"]
                assert sc["capabilities"]["drop"] == ["ALL"], c["name"]
                added = sc.get("capabilities", {}).get("add", [])
                # only IPC_LOCK, only on a worker that holds an RDMA/EFA device (test_fabric_runtime.py)
                assert added in ([], ["IPC_LOCK"]), c["name"]
                if added:
                    limits = c["resources"]["limits"]
                    assert any(k.startswith(("rdma/", "vpc.amazonaws.com/efa")) for k in limits), c["name"]


def qos_class(pod: dict) -> str:
    """Kubernetes' QoS class of a pod spec (pkg/apis/core/helper/qos): Guaranteed only when every container,
    init containers included, has CPU and memory limits and requests equal to them (unset = the limit)."""
    containers = pod.get("containers", []) + pod.get("initContainers", [])
    if not any(c.get("resources") for c in containers):
        return "BestEffort"
    for c in containers:
        limits = c.get("resources", {}).get("limits", {})
        requests = {**limits, **c.get("resources", {}).get("requests", {})}
        if any(r not in limits or requests[r] != limits[r] for r in ("cpu", "memory")):
            return "Burstable"
    return "Guaranteed"


def serving_pods(resources) -> dict[str, dict]:
    """Pod specs of the GPU serving pods (Deployments, Ray workers) by object."""
    out = {}
    for m in manifests(resources).values():
        if m["kind"] == "Deployment" and m["metadata"]["labels"].get("app.kubernetes.io/name") == "vllm":
            out[m["metadata"]["name"]] = m["spec"]["template"]["spec"]
        for g in m.get("spec", {}).get("rayClusterConfig", {}).get("workerGroupSpecs", []):
            out[f"{m['metadata']['name']}/{g['groupName']}"] = g["template"]["spec"]
    return out


def test_qos_helper_sees_an_init_container():
    main = {"name": "m", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}}
    assert qos_class({"containers": [main]}) == "Guaranteed"
    init = {"name": "i", "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "64Mi"}}}
    assert qos_class({"containers": [main], "initContainers": [init]}) == "Burstable"


@pytest.mark.parametrize("kind", ["rwx", "nvme"])
def test_serving_pods_are_guaranteed_qos_with_their_cache_init_container(kind):
    """Exclusive CPUs (static CPU manager) and GPU-NUMA alignment need the Guaranteed class, and the
    cache's init container (wait gate or node-local prefetch) counts towards it."""
    from components.cluster.facts import GpuPool
    t = topology(planned("dev"), DEV_MODEL)
    pool = GpuPool(name="gpu", instance_type=t.instance_type, accelerator=t.accelerator, gpus_per_node=1,
                   node_selector={}, taints=(), nvme_path="/mnt/nvme")
    cache = CacheFacts(kind, 1.0, claim="model-cache", nvme_paths={t.instance_type: "/mnt/nvme/model-cache"})
    pod = deployment_spec(DEV_MODEL, t, pool, cache, {})["template"]["spec"]
    assert pod["initContainers"] and qos_class(pod) == "Guaranteed"


@pytest.mark.parametrize("stack", stack_names())
def test_every_rendered_serving_pod_is_guaranteed_qos(stack):
    pods = serving_pods(planned(stack).resources)
    assert pods, f"{stack}: no serving pods"
    assert {name: qos_class(pod) for name, pod in pods.items()} == {name: "Guaranteed" for name in pods}


def test_serving_config_errors_name_the_field():
    base = {"cloud": "aws", "aws": {"region": "us-east-1"}, "models": [{"name": "x", "model": "llama-3.1-8b"}]}
    with pytest.raises(ConfigError) as e:
        parse({**base, "serving": {"allowedNamespaces": ["Gateway"], "rayImage": "rayproject/ray-llm:latest",
                                   "kvCacheUsage": 1.5, "replicas": 3}}, {"hfToken"})
    errs = "\n".join(e.value.errors)
    assert "serving.allowedNamespaces: not a namespace name: Gateway" in errs
    assert "serving.rayImage: 'rayproject/ray-llm:latest' is not pinned" in errs
    assert "serving.kvCacheUsage: Input should be less than 1" in errs
    assert "serving.replicas: unknown key; allowed: allowedNamespaces" in errs


OPERATOR_OF = {"ScaledObject": "keda", "ServiceMonitor": "kube-prometheus-stack", "PodMonitor": "kube-prometheus-stack",
               "PrometheusRule": "kube-prometheus-stack", "RayService": "kuberay-operator"}


@pytest.mark.parametrize("config", [EXISTING, {**EXISTING, "models": [
    {"name": "big", "model": "llama-3.1-405b", "precision": "bf16", "maxModelLen": 8192}],
    "existing": {**EXISTING["existing"],
                 "gpuNodes": {**EXISTING["existing"]["gpuNodes"], "fabric": "infiniband"}}}], ids=["deployment", "ray"])
def test_custom_resources_wait_for_their_operator(monkeypatch, config):
    """Every ScaledObject / ServiceMonitor / PodMonitor / PrometheusRule / RayService depends on the Helm
    release that installs its CRD (AddonsFacts.depends), so a first `pulumi up` on an empty cluster works."""
    import components.offline.runner as runner

    deps: dict[str, list[str]] = {}

    class Monitor(runner.RecordingMonitor):
        def RegisterResource(self, request):
            deps[request.name] = list(request.dependencies)
            return super().RegisterResource(request)

    monkeypatch.setattr(runner, "RecordingMonitor", Monitor)
    resources, _ = plan_config(config)
    crs = [r for r in resources if r.type.split(":")[1].split("/")[0] in ("keda.sh", "monitoring.coreos.com", "ray.io")
           and r.type.rsplit(":", 1)[1] in OPERATOR_OF]
    assert {r.type.rsplit(":", 1)[1] for r in crs} >= {"PrometheusRule"} and len(crs) >= 3
    for r in crs:
        release = f"vllm-addons-{OPERATOR_OF[r.type.rsplit(':', 1)[1]]}"
        assert any(u.endswith(f"helm.sh/v3:Release::{release}") for u in deps[r.name]), (r.name, deps[r.name])


def test_production_replicas_are_spread_over_nodes():
    from tests.support.plans import planned
    (dep,) = [r for r in planned("prod-llama70b-aws").resources if r.type == "kubernetes:apps/v1:Deployment"]
    topo = planned("prod-llama70b-aws").exports["topology"]
    (t,) = topo.values()
    assert t["spread_nodes"] == 2 and t["min_nodes"] >= 2
    (c,) = dep.inputs["spec"]["template"]["spec"]["topologySpreadConstraints"]
    assert (c["topologyKey"], c["maxSkew"], c["whenUnsatisfiable"]) == ("kubernetes.io/hostname", 1, "DoNotSchedule")
    assert c["labelSelector"]["matchLabels"] == dep.inputs["spec"]["selector"]["matchLabels"]
    dev = [r for r in planned("dev").resources if r.type == "kubernetes:apps/v1:Deployment"][0]
    assert "topologySpreadConstraints" not in dev.inputs["spec"]["template"]["spec"]


def test_first_rollout_deadline_waits_for_a_new_gpu_node_on_the_clouds_not_on_an_existing_cluster():
    # prod-llama70b-aws (p5, EFS): the GPU node (900 s, longer than the 706 s Hub download the prefetch Job
    # does meanwhile) + image pull 300 s + start-up budget 530 s (two TP 4 replicas per node since the class
    # margins: each pod reads half of EFS's 1.5 GB/s) = 1730 s
    aws = planned("prod-llama70b-aws")
    assert obj(aws.resources, "Deployment", "llama-70b")["spec"]["progressDeadlineSeconds"] == 1730
    # dev on an existing cluster: its GPU nodes exist, 46 s download (8 GiB of FP8 weights) + 300 s pull + 300 s budget
    assert obj(planned("dev").resources, "Deployment", DEV_MODEL)["spec"]["progressDeadlineSeconds"] == 646
    t = topology(aws, "llama-70b")
    rwx = CacheFacts("rwx", 1.0, claim="model-cache")
    # Pulumi's create wait: the node's 900 s replace the 706 s download
    assert rollout_timeouts(t, rwx, 900)[0] - rollout_timeouts(t, rwx, 0)[0] == 900 - 706
    assert rollout_timeouts(t, rwx, 900)[1] == rollout_timeouts(t, rwx, 0)[1] + 900
    # a node-local cache is filled on the node once it is ready: the two add up
    nvme = CacheFacts("nvme", 1.0, nvme_paths={t.instance_type: "/mnt/nvme/model-cache"})
    assert rollout_timeouts(t, nvme, 900)[0] - rollout_timeouts(t, nvme, 0)[0] == 900


def test_when_prometheus_is_down_keda_holds_at_least_the_planned_replicas(prod70b):
    """Issue 36: a dead Prometheus fails every trigger's query; without a fallback the HPA reads that as no load.
    KEDA's fallback (v2.20.2) then asks for the planned count, or what runs now if more, after 4 failed polls."""
    t = topology(prod70b, "chat")
    spec = obj(prod70b.resources, "ScaledObject", "chat")["spec"]
    assert t.replicas >= 2
    assert spec["fallback"] == {"failureThreshold": 4, "replicas": t.replicas, "behavior": "currentReplicasIfHigher"}
    assert spec["pollingInterval"] * spec["fallback"]["failureThreshold"] == 60
