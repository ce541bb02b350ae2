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

# Multi-node replicas run Ray Serve LLM (KubeRay RayService). The image carries Ray, Serve LLM and its
# own vLLM (ray-llm 2.58.0 bundles vLLM 0.26.0); the metric names the stack uses exist in both releases.
# Tags: hub.docker.com/r/rayproject/ray-llm; the AWS one: aws/deep-learning-containers docker/ray_llm
# (same Ray 2.58.0 / vLLM 0.26.0 plus the EFA installer 1.49: libfabric and the aws-ofi-nccl plugin).
RAY_VERSION = "2.58.0"
RAY_LLM_IMAGE = f"rayproject/ray-llm:{RAY_VERSION}-py312-cu130"
RAY_LLM_EFA_IMAGE = "public.ecr.aws/deep-learning-containers/ray:serve-llm-cuda-v1.0"
# The model-cache prefetch runs `hf download` from the vLLM image: the image is already on the GPU
# nodes (pre-pull DaemonSet) and its huggingface_hub writes the cache layout vLLM reads.
PREFETCH_IMAGE = VLLM_IMAGE
# Keeps the image pre-pull DaemonSet's pods alive after their init containers pulled the images.
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"

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
