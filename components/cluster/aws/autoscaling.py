"""Node autoscaling with Cluster Autoscaler on the managed node groups.

Why Cluster Autoscaler and not Karpenter: the GPU capacity here is already shaped per planned
instance type by managed node groups (launch template with EFA interfaces, placement group, zone,
capacity reservation or Capacity Block, min/max from the plan). Cluster Autoscaler resizes exactly
those groups inside the plan's bounds, so one place says what a GPU node is and the plan's max caps
the bill. Karpenter would launch its own instances from NodePools/EC2NodeClasses, a second
description of the same nodes, plus an interruption queue and its own controller role to run.
"""
from __future__ import annotations

import json

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from ..charts import ChartMirror, chart_source
from ...upstream.versions import CHARTS, CLUSTER_AUTOSCALER_IMAGE, CLUSTER_AUTOSCALER_TAGS
from .iam import cluster_autoscaler_policy, pod_identity_role
from .node_pools import SYSTEM_LABELS

NAMESPACE = "kube-system"
SERVICE_ACCOUNT = "cluster-autoscaler"


def autoscaler_values(cluster: str, region: str, kubernetes_version: str) -> dict:
    """Helm values for the cluster-autoscaler chart (charts/cluster-autoscaler/values.yaml)."""
    return {
        "cloudProvider": "aws",
        "awsRegion": region,
        # Managed node groups tag their Auto Scaling groups with both keys.
        "autoDiscovery": {"clusterName": cluster},
        "fullnameOverride": "cluster-autoscaler",
        "image": {"repository": CLUSTER_AUTOSCALER_IMAGE, "tag": CLUSTER_AUTOSCALER_TAGS[kubernetes_version]},
        "rbac": {"serviceAccount": {"create": True, "name": SERVICE_ACCOUNT}},
        "nodeSelector": dict(SYSTEM_LABELS),
        "resources": {"requests": {"cpu": "100m", "memory": "600Mi"}, "limits": {"memory": "600Mi"}},
        "extraArgs": {
            # Among groups that fit a pending pod, the one that leaves the least idle CPU/memory.
            "expander": "least-waste",
            # The system groups, one per zone (node_pools.py AwsNodeGroups._system), are one shape: a scale-up
            # that needs no particular zone is spread over them. Only groups of the same instance type, labels
            # and taints count as similar (the zone and eks.amazonaws.com/nodegroup labels aside:
            # cluster-autoscaler processors/nodegroupset/aws_nodegroups.go), so no GPU group, one per instance
            # type, is ever balanced against another.
            "balance-similar-node-groups": True,
            # The NVMe model cache is a hostPath, which Cluster Autoscaler counts as local data (so is a
            # disk-backed emptyDir; the memory-backed /dev/shm is not): left on, idle GPU nodes never scale down.
            "skip-nodes-with-local-storage": False,
            # A p5 node: instance launch, NVMe RAID, driver and a 10-20 GB image before it is Ready.
            "max-node-provision-time": "25m",
            "scale-down-unneeded-time": "10m",
            "scale-down-delay-after-add": "10m",
        },
    }


class ClusterAutoscaler(pulumi.ComponentResource):
    def __init__(self, name: str, cluster: aws.eks.Cluster, cluster_name: str, region: str, kubernetes_version: str,
                 partition: str, account: str, provider: k8s.Provider, depends_on: list,
                 opts: pulumi.ResourceOptions | None = None, charts: ChartMirror | None = None):
        super().__init__("vllm-platform:aws:ClusterAutoscaler", name, None, opts)
        self.role, association = pod_identity_role(
            name, cluster, NAMESPACE, SERVICE_ACCOUNT,
            json.dumps(cluster_autoscaler_policy(partition, region, account, cluster_name)), self,
            f"cluster-autoscaler of {cluster_name} (Pod Identity)", depends_on, policy_suffix="scaling")
        self.release = k8s.helm.v3.Release(
            f"{name}-release", name="cluster-autoscaler", **chart_source(CHARTS["cluster-autoscaler"], charts),
            namespace=NAMESPACE,
            values=autoscaler_values(cluster_name, region, kubernetes_version),
            opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[association, *depends_on]))
        self.register_outputs({"role": self.role.arn})
