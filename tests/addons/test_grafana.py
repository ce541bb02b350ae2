"""Grafana's admin login is generated and kept secret, never the chart's well-known default."""
from tests.support.plans import by_type, planned


def test_grafana_admin_comes_from_a_generated_secret():
    resources = planned("prod-llama70b-aws").resources
    (release,) = [r for r in by_type(resources, "kubernetes:helm.sh/v3:Release")
                  if r.inputs["chart"] == "kube-prometheus-stack"]
    admin = release.inputs["values"]["grafana"]["admin"]
    assert admin == {"existingSecret": "grafana-admin", "userKey": "admin-user", "passwordKey": "admin-password"}
    assert "prom-operator" not in str(release.inputs)
    (password,) = by_type(resources, "pulumi-python:dynamic:GeneratedPassword")
    assert password.inputs["length"] == 32
    assert password.parent == "vllm-platform:addons:ClusterAddons::vllm-addons"
    (secret,) = [r for r in by_type(resources, "kubernetes:core/v1:Secret") if r.inputs["metadata"]["name"] == "grafana-admin"]
    assert secret.inputs["metadata"]["namespace"] == "monitoring"
    from pulumi.runtime import rpc
    assert rpc.is_rpc_secret(secret.inputs["stringData"])
