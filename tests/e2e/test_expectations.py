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
    def __init__(self, answers, labelled=""):
        self.answers, self.labelled = answers, labelled

    def get_json(self, kind):
        return {"items": self.answers.get(kind, [])}

    def kubectl(self, *args, check=True):
        return type("P", (), {"stdout": self.labelled})()


def test_after_destroy_only_chart_crds_may_remain():
    clean = _Cluster({"namespaces": [{"metadata": {"name": n}} for n in sorted(ex.SYSTEM_NAMESPACES)],
                      "customresourcedefinitions": [{"metadata": {"name": "scaledobjects.keda.sh"}}]})
    assert ex.leftovers(clean) == {"unexpected": [], "retained_crds": ["customresourcedefinition/scaledobjects.keda.sh"]}
    stuck = _Cluster({"namespaces": [{"metadata": {"name": "vllm"}, "status": {"phase": "Terminating"},
                                      "spec": {"finalizers": ["kubernetes"]}}],
                      "persistentvolumes": [{"metadata": {"name": "pvc-1"}, "status": {"phase": "Released"}}],
                      "customresourcedefinitions": [{"metadata": {"name": "inferencepools.inference.networking.k8s.io"}}]},
                     labelled="customresourcedefinition/inferencepools.inference.networking.k8s.io\n")
    left = ex.leftovers(stuck)
    assert left["unexpected"] == ["namespace/vllm (Terminating, finalizers ['kubernetes'])",
                                  "customresourcedefinition/inferencepools.inference.networking.k8s.io",
                                  "persistentvolume/pvc-1 (Released)"]
    assert left["retained_crds"] == []
