"""The existing-cluster InfiniBand stack (stacks/Pulumi.prod-llama405b-onprem.yaml) planned end to end (issue 4):
the Network Operator and its NicClusterPolicy, the RDMA resource on the serving pods, and every custom
resource waiting for the operator that installs its CRD."""
from __future__ import annotations

import functools

from components.offline import runner
from tests.support.plans import by_type, one
from tests.support.addons import RELEASE, DependencyMonitor


@functools.lru_cache(maxsize=None)
def onprem_plan():
    """Offline plan of stacks/Pulumi.prod-llama405b-onprem.yaml, with dependencies recorded."""
    seen = []

    class Capture(DependencyMonitor):
        def __init__(self, mocks):
            super().__init__(mocks)
            seen.append(self)

    original, runner.RecordingMonitor = runner.RecordingMonitor, Capture
    try:
        result = runner.plan_stack_offline("prod-llama405b-onprem")
    finally:
        runner.RecordingMonitor = original
    return result, seen[-1].deps


def test_onprem_infiniband_plan_installs_the_network_operator_and_serving_requests_rdma():
    result, deps = onprem_plan()
    releases = {r.inputs["name"] for r in by_type(result.resources, RELEASE)}
    assert {"network-operator", "gpu-operator", "kube-prometheus-stack", "kuberay-operator"} <= releases
    policy = one(result.resources, "kubernetes:mellanox.com/v1alpha1:NicClusterPolicy")
    assert "vllm-addons-network-operator" in deps[policy.name]
    workloads = [r for r in result.resources if r.type in ("kubernetes:ray.io/v1:RayService",
                                                            "kubernetes:apps/v1:Deployment",
                                                            "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet")]
    assert workloads
    for w in workloads:
        assert "rdma/rdma_shared_device_a" in str(w.inputs), w.name


def test_onprem_custom_resources_wait_for_their_operators():
    result, deps = onprem_plan()
    operator_of = {"mellanox.com/": "vllm-addons-network-operator", "monitoring.coreos.com/":
                   "vllm-addons-kube-prometheus-stack", "ray.io/": "vllm-addons-kuberay-operator",
                   "keda.sh/": "vllm-addons-keda"}
    customs = [r for r in result.resources if any(k in r.type for k in operator_of)]
    assert customs
    for r in customs:
        (needed,) = [v for k, v in operator_of.items() if k in r.type]
        assert needed in deps[r.name], (r.type, r.name, deps[r.name])


def test_stack_monitors_and_rules_carry_the_labels_prometheus_selects():
    result, _ = onprem_plan()
    helm = {r.inputs["name"]: r.inputs["values"] for r in by_type(result.resources, RELEASE)}
    spec = helm["kube-prometheus-stack"]["prometheus"]["prometheusSpec"]
    kinds = {"ServiceMonitor": "serviceMonitorSelector", "PodMonitor": "podMonitorSelector",
             "PrometheusRule": "ruleSelector"}
    found = [r for r in result.resources if r.type.split(":")[-1] in kinds]
    assert found
    for r in found:
        wanted = spec[kinds[r.type.split(":")[-1]]]["matchLabels"]
        assert wanted.items() <= r.inputs["metadata"]["labels"].items(), r.name
