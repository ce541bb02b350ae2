"""The Pulumi program itself: conventions every component keeps, on every shipped stack."""
import pytest

from components.offline.runner import stack_names
from tests.support.plans import planned


@pytest.mark.parametrize("stack", stack_names())
def test_same_resources_in_preview_and_update(stack):
    """Nothing is created inside .apply(): preview (unknowns, callbacks skipped) registers the same set."""
    update = {(r.type, r.name) for r in planned(stack).resources}
    preview = {(r.type, r.name) for r in planned(stack, preview=True).resources}
    assert preview == update


@pytest.mark.parametrize("stack", stack_names())
def test_components_follow_the_house_conventions(stack):
    resources = planned(stack).resources
    components = [r for r in resources if not r.custom]
    for c in components:
        assert c.type.startswith("vllm-platform:") and c.type.count(":") == 2, c.type
    roots = [r for r in resources if r.parent is None]
    # only the Platform and the cloud providers __main__ builds hang off the stack itself
    assert {r.type for r in roots} <= {"vllm-platform:index:Platform", "pulumi:providers:aws", "pulumi:providers:gcp"}
    names = [(r.type, r.name) for r in resources]
    assert len(names) == len(set(names))
    for r in resources:
        if r.parent:
            assert r.name.startswith("vllm") or r.name.startswith(r.parent.split("::")[1]), (r.name, r.parent)


def test_topology_is_exported_per_model():
    t = planned("dev").exports["topology"]
    assert list(t) == ["llama-8b"] and t["llama-8b"]["instance_type"] == "existing-l4x1"
    assert planned("dev").exports["namespace"] == "vllm"


GRAFANA = {
    "url": "http://kube-prometheus-stack-grafana.monitoring.svc.cluster.local:80",
    "portForward": "kubectl -n monitoring port-forward svc/kube-prometheus-stack-grafana 3000:80"
                   "  # then http://localhost:3000",
    "adminSecret": "monitoring/grafana-admin",
    "adminLogin": "kubectl -n monitoring get secret grafana-admin -o jsonpath='{.data.admin-password}' | base64 -d",
}


def test_stack_outputs_of_an_existing_cluster():
    out = planned("dev").exports
    assert out["clusterName"] == "vllm"
    assert out["endpoints"] == {"llama-8b": "http://llama-8b.vllm.svc.cluster.local:8000/v1"}
    assert out["grafana"] == GRAFANA
    assert out["topology"]["llama-8b"]["tensor_parallel_size"] == 1 and out["costPerHour"] == 0.0
    # nothing of a cloud the stack does not use; no kubeconfig secret in the dev stack file
    assert not {"apiEndpoint", "oidcIssuer", "workloadIdentityPool", "kubeconfig"} & set(out)


def test_stack_outputs_of_an_eks_stack():
    out = planned("prod-llama70b-aws").exports
    assert out["clusterName"] == "llama70b-prod"
    endpoint = out["apiEndpoint"]
    assert endpoint.startswith("https://") and endpoint.endswith(".gr7.us-east-1.eks.amazonaws.com")
    assert out["oidcIssuer"] == "https://oidc.eks.us-east-1.amazonaws.com/id/" + endpoint[8:40]
    assert f"server: {endpoint}" in out["kubeconfig"] and "--cluster-name\n      - llama70b-prod" in out["kubeconfig"]
    assert out["grafana"] == GRAFANA
    assert out["endpoints"] == {"llama-70b": "http://llama-70b.llm.svc.cluster.local:8000/v1"}
    assert out["namespace"] == "llm"
    topo = out["topology"]["llama-70b"]
    assert topo["instance_type"].startswith("p") and out["costPerHour"] == round(topo["cost_per_hour"], 2) > 0
    assert "workloadIdentityPool" not in out


def test_stack_outputs_of_a_gke_stack():
    out = planned("prod-qwen72b-gcp").exports
    assert out["workloadIdentityPool"] == "my-gcp-project.svc.id.goog"
    assert out["apiEndpoint"].startswith("https://34.") and "oidcIssuer" not in out


def test_the_kubeconfig_output_is_a_secret():
    from pulumi.runtime import settings
    from pulumi.runtime.sync_await import _sync_await

    from components.offline.runner import plan_stack_offline
    plan_stack_offline("prod-llama70b-aws")  # not the cached plan: the root resource below is this run's
    outputs = settings.get_root_resource().outputs
    assert _sync_await(outputs["kubeconfig"].is_secret())
    assert not _sync_await(outputs["clusterName"].is_secret())
