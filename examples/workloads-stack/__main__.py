"""Workloads stack: one model on the cluster of a cluster stack (examples/cluster-stack), joined by a
StackReference. The cluster stack installed the add-ons, so they are switched off here and its
Prometheus, StorageClass and GPU pool are used. See docs/organisations.md."""
import pulumi

from components.library import VllmServiceArgs, stack_output
from components.package import VllmService

config = pulumi.Config("vllm-workloads")  # this project's keys (Pulumi.yaml name)
cluster = pulumi.StackReference(config.require("clusterStack"))
# Sizing needs plain values before any resource exists; the kubeconfig stays an Output (and a secret).
gpu_nodes = stack_output(cluster, "gpuNodes")[config.require("instanceType")]
already_installed = {"enabled": False}
addons = {"gpuOperator": already_installed, "kuberay": already_installed, "keda": already_installed,
          "lws": already_installed, "fabric": already_installed,
          "prometheus": {"enabled": False, "url": stack_output(cluster, "prometheusUrl"),
                         "monitorLabels": stack_output(cluster, "monitorLabels")}}

model = config.require_object("model")
service = VllmService(model["name"], VllmServiceArgs(
    model=model, gpu_nodes=gpu_nodes, namespace=config.get("namespace") or "vllm",
    environment=config.get("environment") or "dev",
    model_cache={"kind": "rwx", "storageClass": stack_output(cluster, "storageClass")},
    addons=addons, network_policy_enforced=True,  # EKS VPC CNI with network policy on (the cluster stack)
    hf_token=config.require_secret("hfToken"), kubeconfig=cluster.require_output("kubeconfig"),
    # the cluster stack runs the gateway: this stack adds the model's route, pool, picker and keys
    gateway={"install": False}, gateway_api_keys=config.require_secret_object("gatewayApiKeys")))

pulumi.export("endpoint", service.endpoint)
pulumi.export("topology", service.topology)
