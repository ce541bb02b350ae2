"""pd-rdma-in-production: a production NixlConnector Deployment must have an RDMA device."""
from __future__ import annotations

from policies.rules import MANDATORY, StackResource, evaluate_resources

NS = StackResource("kubernetes:core/v1:Namespace", "ns", {"metadata": {
    "name": "llm", "labels": {"vllm-platform/environment": "prod"}}})
NIXL = '{"kv_connector":"NixlConnector","kv_role":"kv_both"}'


def _deployment(resources: dict, annotations: dict | None = None) -> StackResource:
    container = {"name": "vllm", "image": "vllm/vllm-openai:v0.31.0", "args": ["m", "--kv-transfer-config", NIXL],
                 "resources": {"requests": resources, "limits": resources}}
    return StackResource("kubernetes:apps/v1:Deployment", "d", {"metadata": {"name": "m-decode", "namespace": "llm"},
                         "spec": {"template": {"metadata": {"annotations": annotations or {}},
                                               "spec": {"containers": [container]}}}})


def _pd(*resources) -> list[str]:
    return [v.message for v in evaluate_resources([NS, *resources]) if v.rule == "pd-rdma-in-production"]


def test_nixl_without_rdma_in_production_is_mandatory():
    got = [v for v in evaluate_resources([NS, _deployment({"nvidia.com/gpu": "4"})]) if v.rule == "pd-rdma-in-production"]
    assert len(got) == 1 and got[0].level == MANDATORY
    assert got[0].message.startswith("Deployment m-decode runs vLLM's NixlConnector in production without an RDMA "
                                     "device (container vllm); fix: serve the model on an instance type with EFA")


def test_efa_rdma_device_or_gke_rdma_network_pass():
    assert _pd(_deployment({"nvidia.com/gpu": "4", "vpc.amazonaws.com/efa": "16"})) == []
    assert _pd(_deployment({"nvidia.com/gpu": "4", "rdma/ib": "1"})) == []
    gke = {"networking.gke.io/interfaces": '[{"interfaceName":"eth1","network":"rdma-0"}]'}
    assert _pd(_deployment({"nvidia.com/gpu": "4"}, gke)) == []


def test_dev_is_not_checked():
    dev = StackResource("kubernetes:core/v1:Namespace", "ns", {"metadata": {
        "name": "llm", "labels": {"vllm-platform/environment": "dev"}}})
    assert [v for v in evaluate_resources([dev, _deployment({})]) if v.rule == "pd-rdma-in-production"] == []
