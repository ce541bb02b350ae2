"""AWS Load Balancer Controller (EKS): it gives the gateway's LoadBalancer Service a Network Load Balancer.
Pure values; the cluster component makes its Pod Identity role (components/cluster/aws/iam.py) and hands
ClusterFacts.load_balancer_controller over; ClusterAddons installs the chart from it.

Values keys: aws/eks-charts stable/aws-load-balancer-controller/values.yaml at chart 3.5.0 (vendored under
schemas/charts/aws-load-balancer-controller/3.5.0/). Service semantics: the controller's
docs/guide/service/nlb.md and annotations.md at v3.5.0.
"""
from __future__ import annotations

from ..cluster.facts import LoadBalancerController


def lb_controller_values(lbc: LoadBalancerController, system_selector: dict[str, str]) -> dict:
    """Installed in lbc.namespace under lbc.service_account: the ones its Pod Identity association names."""
    values = {
        "clusterName": lbc.cluster_name,
        # Both given, so that the controller never asks the instance metadata service (Pod Identity
        # credentials come from the agent; IMDS is two hops away from a pod).
        "region": lbc.region,
        "vpcId": lbc.vpc_id,
        "serviceAccount": {"create": True, "name": lbc.service_account},
        # Off: with the webhook on (the chart's default) the controller stamps its class on EVERY new
        # LoadBalancer Service in the cluster. A Service that asks for this controller gets an NLB here: the gateway's
        # Envoy Service by the annotations aws-load-balancer-type external + nlb-target-type ip
        # (components/gateway/objects.py lb_annotations; docs/aws-load-balancer.md).
        "enableServiceMutatorWebhook": False,
        "nodeSelector": dict(system_selector),
        # One leader works, the others stand by; they also serve the TargetGroupBinding webhook, whose
        # failurePolicy is Fail, so production keeps two up through a node drain.
        "replicaCount": 2 if lbc.highly_available else 1,
    }
    if lbc.highly_available:
        values["podDisruptionBudget"] = {"maxUnavailable": 1}
    return values
