"""Cluster stack: the cluster, its GPU node pools and the add-ons, owned by the platform team.

Workloads stacks (examples/workloads-stack) read its outputs through a StackReference and deploy models
onto it, each with its own lifecycle. See docs/organisations.md.
"""
import pulumi

from components.addons import ClusterAddons
from components.catalog import INSTANCE_TYPES
from components.config import ConfigError, load_stack_config
from components.planner import NoFeasibleTopology
from components.gateway import InferenceGateway
from components.platform import cluster_component
from components.wiring import chart_mirror, gateway_args, validated_plan
from components.providers import cloud_provider_opts

try:
    loaded = load_stack_config(required=set())  # no hfToken: the models are the workloads stacks'
    # sizes the GPU pools for the models the workloads will serve; every problem reported before any resource
    topologies = validated_plan(loaded.config, provider_config=loaded.provider_config)
    opts = cloud_provider_opts(loaded.config, loaded.provider_config)
except (ConfigError, NoFeasibleTopology) as err:
    raise pulumi.RunError(str(err)) from err

cluster = cluster_component("vllm-cluster", loaded, topologies, opts)
charts = chart_mirror(loaded.config, loaded.chart_mirror_password)  # `charts:`, every Helm chart from a mirror
addons = ClusterAddons("vllm-addons", cluster.facts, loaded.config.addons, opts=opts, charts=charts).facts
# The inference gateway's controllers, load balancer and Gateway, once per cluster; each workloads stack adds its
# models' routes, pools and keys (gateway.install: false there). docs/gateway.md.
gateway = InferenceGateway("vllm-gateway", gateway_args(loaded.config, [], cluster.facts, None, charts=charts),
                           cluster.facts.provider,
                           depends_on=[*cluster.facts.depends_on, *addons.depends("load-balancer")], opts=opts)


def gpu_nodes(instance_type: str) -> dict:
    """A pool as a workloads stack describes it (a stack file's existing.gpuNodes)."""
    pool, shape = cluster.facts.pool_for(instance_type), INSTANCE_TYPES[instance_type]
    return {"accelerator": pool.accelerator, "gpusPerNode": pool.gpus_per_node, "vcpu": shape.vcpu,
            "ramGib": shape.ram_gib, "nodeSelector": dict(pool.node_selector),
            "taints": [{"key": t.key, "value": t.value, "effect": t.effect} for t in pool.taints],
            "pricePerNodeHour": shape.price_hour}


pulumi.export("clusterName", cluster.facts.name)
pulumi.export("kubeconfig", pulumi.Output.secret(cluster.facts.kubeconfig))
pulumi.export("gpuNodes", {t.instance_type: gpu_nodes(t.instance_type) for t in topologies.values()})
pulumi.export("storageClass", cluster.facts.rwx_storage_class)
pulumi.export("prometheusUrl", addons.prometheus_url)
pulumi.export("monitorLabels", addons.monitor_labels)
pulumi.export("gatewayAddress", gateway.address_command)
