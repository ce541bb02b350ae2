"""The real-engine run's expectations (tests/e2e/expectations.py) are read off the offline plan: pinned here so
that a run cannot pass by expecting nothing."""
import json

import yaml

from tests.e2e import expectations as ex


def _plan(tmp_path, topology, manifests=(), resources=()):
    (tmp_path / "manifests").mkdir(parents=True, exist_ok=True)
    (tmp_path / "topology.json").write_text(json.dumps(topology))
    (tmp_path / "resources.json").write_text(json.dumps(list(resources)))
    for i, m in enumerate(manifests):
        (tmp_path / "manifests" / f"{i}.yaml").write_text(yaml.safe_dump(m))
    return tmp_path


def test_gpu_nodes_count_every_models_maximum_and_the_pd_pools(tmp_path):
    plan = _plan(tmp_path, {"a": {"max_nodes": 2, "disaggregation": None},
                            "b": {"max_nodes": 6, "disaggregation": {"chosen": True, "nodes": 5}},
                            "c": {"max_nodes": 3, "disaggregation": {"chosen": False, "nodes": 9}}})
    assert ex.gpu_nodes_needed(plan) == 2 + 5 + 3


def test_extended_resources_come_from_every_pod_template_kind(tmp_path):
    container = {"name": "x", "resources": {"limits": {"nvidia.com/gpu": 8, "cpu": 4, "hugepages-2Mi": "1Gi"},
                                            "requests": {"rdma/rdma_shared_device_a": 1}}}
    lws = {"kind": "LeaderWorkerSet", "spec": {"leaderWorkerTemplate": {
        "leaderTemplate": {"spec": {"containers": [container]}},
        "workerTemplate": {"spec": {"containers": [{"name": "w", "resources": {
            "limits": {"vpc.amazonaws.com/efa": 32}}}]}}}}}
    job = {"kind": "CronJob", "spec": {"jobTemplate": {"spec": {"template": {"spec": {
        "initContainers": [{"name": "i", "resources": {"requests": {"example.com/dev": 1}}}], "containers": []}}}}}}
    plan = _plan(tmp_path, {}, [lws, job])
    assert ex.extended_resources(plan) == {"nvidia.com/gpu", "rdma/rdma_shared_device_a", "vpc.amazonaws.com/efa",
                                           "example.com/dev"}


def test_storage_classes_an_existing_cluster_must_have():
    cfg = {"vllm-platform:existing": {"blockStorageClass": "fast-block"},
           "vllm-platform:modelCache": {"storageClass": "nfs-client"},
           "vllm-platform:addons": {"prometheus": {"storageClass": "prom"}}}
    assert ex.storage_classes(cfg) == {"fast-block", "nfs-client", "prom"}
    assert ex.storage_classes({}) == set()


def test_the_expected_change_is_the_offline_plans_diff(tmp_path):
    same = {"name": "same", "type": "t", "inputs": {"a": 1}, "parent": "p"}
    before = _plan(tmp_path / "a", {}, resources=[same, {"name": "upd", "type": "t", "inputs": {"max": 2}},
                                                   {"name": "gone", "type": "t", "inputs": {}}])
    after = _plan(tmp_path / "b", {}, resources=[same, {"name": "upd", "type": "t", "inputs": {"max": 3}},
                                                  {"name": "new", "type": "t", "inputs": {}}])
    assert ex.changed_names(before, after) == {"upd", "gone", "new"}


def test_a_previews_changes_skip_unchanged_steps_and_the_stack():
    preview = {"steps": [
        {"op": "same", "urn": "urn:pulumi:dev::vllm-platform::kubernetes:core/v1:Namespace::vllm-ns"},
        {"op": "update", "urn": "urn:pulumi:dev::vllm-platform::vllm-platform:serving:VllmService$"
                                "kubernetes:keda.sh/v1alpha1:ScaledObject::vllm-llama-8b-scaledobject"},
        {"op": "create", "urn": "urn:pulumi:dev::vllm-platform::kubernetes:apps/v1:Deployment::vllm-qwen-7b-deployment"},
        {"op": "update", "urn": "urn:pulumi:dev::vllm-platform::pulumi:pulumi:Stack::vllm-platform-dev"},
        {"op": "read", "urn": "urn:pulumi:dev::vllm-platform::kubernetes:core/v1:ConfigMap::x"},
    ]}
    assert ex.previewed_changes(preview) == {"vllm-llama-8b-scaledobject", "vllm-qwen-7b-deployment"}


class _Cluster:
    """Answers get_json by kind and kubectl's api-resources / labelled-get as the API server would."""
    def __init__(self, answers, labelled=""):
        self.answers, self.labelled = answers, labelled

    def get_json(self, kind):
        return {"items": self.answers.get(kind, [])}

    def kubectl(self, *args, check=True):
        out = "configmaps\ngatewayclasses.gateway.networking.k8s.io\nevents\n" if args[0] == "api-resources" \
            else self.labelled
        return type("P", (), {"stdout": out})()


def test_after_destroy_only_chart_crds_and_the_programs_retained_crd_may_remain():
    clean = _Cluster({"namespaces": [{"metadata": {"name": n}} for n in sorted(ex.SYSTEM_NAMESPACES)],
                      "customresourcedefinitions": [{"metadata": {"name": "scaledobjects.keda.sh"}},
                                                    {"metadata": {"name": "inferencepools.inference.networking.k8s.io"}}]})
    assert ex.leftovers(clean, {"scaledobjects.keda.sh"}) == {
        "unexpected": [], "retained_crds": ["customresourcedefinition/scaledobjects.keda.sh"],
        "retained_by_program": ["customresourcedefinition/inferencepools.inference.networking.k8s.io"]}
    stuck = _Cluster({"namespaces": [{"metadata": {"name": "vllm"}, "status": {"phase": "Terminating"},
                                      "spec": {"finalizers": ["kubernetes"]}}],
                      "persistentvolumes": [{"metadata": {"name": "pvc-1"}, "status": {"phase": "Released"}}],
                      "customresourcedefinitions": [{"metadata": {"name": "things.example.com"}}]},
                     labelled="gatewayclass.gateway.networking.k8s.io/vllm-platform\n")
    left = ex.leftovers(stuck, set())
    assert left["unexpected"] == ["namespace/vllm (Terminating, finalizers ['kubernetes'])",
                                  "gatewayclass.gateway.networking.k8s.io/vllm-platform",
                                  "persistentvolume/pvc-1 (Released)",
                                  "customresourcedefinition/things.example.com (neither a chart's nor one the "
                                  "program retains)"]
    assert left["retained_crds"] == [] and left["retained_by_program"] == []


def test_a_weekly_change_that_replaces_anything_is_caught():
    urn = "urn:pulumi:dev::vllm-platform::vllm-platform:cache:ModelCache$kubernetes:core/v1:PersistentVolumeClaim::"
    for op in ("replace", "create-replacement", "delete-replaced"):
        preview = {"steps": [{"op": op, "urn": urn + "vllm-cache-pvc"}, {"op": "update", "urn": urn + "x"}]}
        assert ex.replacements(preview) == {"vllm-cache-pvc"}
    assert ex.replacements({"steps": [{"op": "update", "urn": urn + "vllm-cache-pvc"}]}) == set()


def _export(*objs):
    return {"deployment": {"resources": [
        {"type": f"kubernetes:{k}", "outputs": {"metadata": {"name": n, "namespace": ns}}} for k, n, ns in objs]
        + [{"type": "pulumi:providers:kubernetes", "outputs": {}},
           {"type": "kubernetes:helm.sh/v3:Release", "outputs": {"metadata": {}}}]}}


def test_custom_resources_are_told_apart_from_built_in_objects():
    objs = ex.state_objects(_export(("apps/v1:Deployment", "d", "vllm"), ("core/v1:Namespace", "vllm", None),
                                    ("networking.k8s.io/v1:NetworkPolicy", "n", "vllm"),
                                    ("apiextensions.k8s.io/v1:CustomResourceDefinition", "c", None),
                                    ("gateway.networking.k8s.io/v1:HTTPRoute", "r", "vllm"),
                                    ("leaderworkerset.x-k8s.io/v1:LeaderWorkerSet", "l", "llm"),
                                    ("ray.io/v1:RayService", "rs", "llm")))
    assert len(objs) == 7  # the provider and the Helm release are not objects of the cluster
    assert ex.unreconciled_kinds(objs) == {"gateway.networking.k8s.io/v1:HTTPRoute", "ray.io/v1:RayService",
                                           "leaderworkerset.x-k8s.io/v1:LeaderWorkerSet"}


class _Api:
    def __init__(self, objects):
        self.objects = objects

    def get_json(self, resource, name, *ns):
        return self.objects[(resource, name)]


def test_a_workload_not_ready_or_an_unlisted_or_reconciled_custom_resource_fails_the_run():
    objs = [("apps/v1:Deployment", "d", "vllm"), ("batch/v1:Job", "j", "vllm"), ("apps/v1:DaemonSet", "ds", "vllm"),
            ("ray.io/v1:RayService", "rs", "llm"), ("example.com/v1:Thing", "t", "llm"),
            ("keda.sh/v1alpha1:ScaledObject", "so", "vllm")]
    api = _Api({("deployment", "d"): {"spec": {"replicas": 2}, "status": {"availableReplicas": 1}},
                ("job", "j"): {"status": {"succeeded": 1}},
                ("daemonset", "ds"): {"status": {"desiredNumberScheduled": 0, "numberReady": 0}},
                ("rayservice.ray.io", "rs"): {"status": {}},
                ("scaledobject.keda.sh", "so"): {"status": {"conditions": [{"type": "Ready"}]}}})
    problems = ex.workload_problems(api, objs)
    assert [p.split(":")[0] for p in problems] == ["apps/v1", "apps/v1", "example.com/v1", "keda.sh/v1alpha1"]
    assert "not ready after up" in problems[0] and "daemonset" not in problems[0].lower()
    assert "NEVER_RECONCILED does not list" in problems[2]
    assert "NEVER_RECONCILED is wrong" in problems[3]


def test_the_api_servers_default_status_is_not_a_controllers():
    pending = {"conditions": [{"type": "Accepted", "status": "Unknown", "reason": "Pending",
                               "message": "Waiting for controller"}]}
    assert not ex.reconciled(pending) and not ex.reconciled({})
    assert ex.reconciled({"conditions": [{"type": "Accepted", "status": "True"}]})
    assert ex.reconciled({"observedGeneration": 1})


def test_every_crd_the_program_applies_is_retained_by_design_after_destroy():
    """Issue 36: the CRDs the program applies server-side carry the project's label and are retainOnDelete; after
    destroy they are expected, not leftovers (the Envoy Gateway bundle's among them)."""
    for name in ("inferencepools.inference.networking.k8s.io", "envoyproxies.gateway.envoyproxy.io",
                 "httproutes.gateway.networking.k8s.io", "rayjobs.ray.io", "leaderworkersets.leaderworkerset.x-k8s.io"):
        assert f"customresourcedefinition/{name}" in ex.RETAINED_BY_PROGRAM, name
    cluster = _Cluster({"namespaces": [{"metadata": {"name": n}} for n in sorted(ex.SYSTEM_NAMESPACES)],
                        "customresourcedefinitions": [{"metadata": {"name": "envoyproxies.gateway.envoyproxy.io"}}]},
                       labelled="customresourcedefinition.apiextensions.k8s.io/envoyproxies.gateway.envoyproxy.io\n"
                                "customresourcedefinition/envoyproxies.gateway.envoyproxy.io\n")
    left = ex.leftovers(cluster, set())
    assert left["retained_by_program"] == ["customresourcedefinition/envoyproxies.gateway.envoyproxy.io"]

