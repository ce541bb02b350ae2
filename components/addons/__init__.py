"""Cluster add-ons: GPU Operator, KubeRay, KEDA, kube-prometheus-stack and the GPU fabric's node software.

Pure modules build the Helm values and manifests (gpu_operator, kuberay, keda, prometheus, fabrics,
gke_nccl, placement, aws_lb_controller: the AWS Load Balancer Controller on EKS); component.ClusterAddons
installs them and hands serving an AddonsFacts.
"""
from .component import ClusterAddons, release_args

__all__ = ["ClusterAddons", "release_args"]
