"""Every pinned version in one place (bump deliberately; see ../shared/DESIGN.md, checked late 2026).

Charts: (repository URL, chart name, version). Images: full references, never `latest`.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Chart:
    repo: str
    chart: str
    version: str


VLLM_VERSION = "v0.31.0"
VLLM_IMAGE = f"vllm/vllm-openai:{VLLM_VERSION}"

CHARTS = {
    "gpu-operator": Chart("https://helm.ngc.nvidia.com/nvidia", "gpu-operator", "v26.7.0"),
    "network-operator": Chart("https://helm.ngc.nvidia.com/nvidia", "network-operator", "26.10.0"),
    "kuberay-operator": Chart("https://ray-project.github.io/kuberay-helm/", "kuberay-operator", "1.7.0"),
    "keda": Chart("https://kedacore.github.io/charts", "keda", "2.20.2"),
    "kube-prometheus-stack": Chart("https://prometheus-community.github.io/helm-charts",
                                   "kube-prometheus-stack", "92.0.0"),
    "aws-efa-k8s-device-plugin": Chart("https://aws.github.io/eks-charts", "aws-efa-k8s-device-plugin", "0.5.14"),
}

KARPENTER_VERSION = "1.14.1"
LWS_VERSION = "0.9.0"
