"""Every pinned version in one place (bump deliberately; checked late 2026).

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
# Pinned by digest (the tag stays for humans): the manifest-list digest of vllm/vllm-openai:v0.31.0 as
# Docker Hub served it in 2026-10 (`docker buildx imagetools inspect vllm/vllm-openai:v0.31.0`), the same
# in several independent pins of that release. A tag can be re-pushed; a digest cannot.
VLLM_IMAGE_DIGEST = "sha256:c1c9f6fd5c109ba7f0546a59f5b2f15fb87f64c77782e90a27b648b42a8e67c3"
VLLM_IMAGE = f"vllm/vllm-openai:{VLLM_VERSION}@{VLLM_IMAGE_DIGEST}"
# The same vLLM on AWS EFA (components/serving/fabric.py VLLM_IMAGES: P/D over NIXL's LIBFABRIC backend, LWS multi-node
# NCCL): the upstream image has no EFA userspace (vllm-project/vllm#55635), so NCCL falls back to sockets and NIXL's
# LIBFABRIC plugin finds no efa provider. AWS Deep Learning Containers' Ubuntu vLLM image is that upstream image plus
# the EFA installer (libfabric with the efa provider, aws-ofi-nccl in /opt/amazon/ofi-nccl/lib on LD_LIBRARY_PATH):
# aws/deep-learning-containers docker/vllm/Dockerfile (FROM $BASE_IMAGE, install_efa.sh ${EFA_VERSION}, ENTRYPOINT
# dockerd_entrypoint.sh = telemetry then `vllm serve "$@"`), .github/config/image/vllm/ec2-ubuntu.yml (base_image
# vllm/vllm-openai:v<version>, efa_version 1.47.0), the tag from docs/src/data/vllm/0.31.0-gpu-ec2.yml (commit
# c6e3ca189bf92a6c0c5abffa60b4694a61e377b1). NIXL comes from the upstream base; the DLC's EFA tests
# (test/efa/scripts/nixl_libfabric_smoke.py, nixl_disagg_pd.sh: LIBFABRIC backend with provider efa, a two-node P/D
# request) run on every *-ubuntu.yml image PR (.github/workflows/vllm.pr-ubuntu.yml run-efa-test).
# ⚠ pinned by tag: no digest of this tag could be checked from here (set it when `docker buildx imagetools inspect`
# answers); ⚠ the EFA tests' result for the 0.31.0 build itself was not seen, only the workflow that runs them.
VLLM_EFA_IMAGE_TAG = f"{VLLM_VERSION.lstrip('v')}-gpu-py312-cu130-ubuntu24.04-ec2"
VLLM_EFA_IMAGE = f"public.ecr.aws/deep-learning-containers/vllm:{VLLM_EFA_IMAGE_TAG}"

# Multi-node replicas run Ray Serve LLM (KubeRay RayService). The image carries Ray, Serve LLM and its
# own vLLM (ray-llm 2.58.0 bundles vLLM 0.26.0); the metric names the stack uses exist in both releases.
# Tags: hub.docker.com/r/rayproject/ray-llm; the AWS one: aws/deep-learning-containers docker/ray_llm
# (same Ray 2.58.0 / vLLM 0.26.0 plus the EFA installer 1.49: libfabric and the aws-ofi-nccl plugin).
RAY_VERSION = "2.58.0"
# The vLLM inside both Ray images (the note above ⚠ not re-checked in the review of issue 13): engine options and
# extraArgs are validated against vLLM 0.31's registry only (config/vllm_registry.py); no 0.26 registry is
# vendored, so the plan warns instead of refusing (serving/service.py engine_version_note).
RAY_LLM_VLLM_VERSION = "0.26.0"
RAY_LLM_IMAGE = f"rayproject/ray-llm:{RAY_VERSION}-py312-cu130"
RAY_LLM_EFA_IMAGE = "public.ecr.aws/deep-learning-containers/ray:serve-llm-cuda-v1.0"
# The model-cache prefetch runs `hf download` from the vLLM image: its huggingface_hub writes the cache
# layout vLLM reads, and on GPU nodes (nvme caches, the wait-for-cache gate) the image is pre-pulled.
PREFETCH_IMAGE = VLLM_IMAGE
# Keeps the image pre-pull DaemonSet's pods alive after their init containers pulled the images.
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"

CHARTS = {
    "gpu-operator": Chart("https://helm.ngc.nvidia.com/nvidia", "gpu-operator", "v26.7.0"),
    "network-operator": Chart("https://helm.ngc.nvidia.com/nvidia", "network-operator", "26.10.0"),
    "kuberay-operator": Chart("https://ray-project.github.io/kuberay-helm/", "kuberay-operator", "1.7.0"),
    "keda": Chart("https://kedacore.github.io/charts", "keda", "2.20.2"),
    # LeaderWorkerSet controller (multi-node replicas, components/serving/lws.py): kubernetes-sigs/lws tag v0.10.0
    # (commit 2161f38), whose site/content/en/docs/installation/_index.md installs CHART_VERSION=0.10.0 from
    # this OCI repository; the CRD it ships is the one vendored in schemas/crds/lws.
    "lws": Chart("oci://registry.k8s.io/lws/charts", "lws", "0.10.0"),
    "kube-prometheus-stack": Chart("https://prometheus-community.github.io/helm-charts",
                                   "kube-prometheus-stack", "92.0.0"),
    # aws/eks-charts stable/aws-efa-k8s-device-plugin/Chart.yaml at master 2026-08-03 (appVersion v0.5.20);
    # the chart spells its version with the v.
    "aws-efa-k8s-device-plugin": Chart("https://aws.github.io/eks-charts", "aws-efa-k8s-device-plugin", "v0.5.30"),
    # EKS node autoscaling; the image is pinned per Kubernetes minor below (the chart's appVersion is not).
    "cluster-autoscaler": Chart("https://kubernetes.github.io/autoscaler", "cluster-autoscaler", "9.58.0"),
    # The inference gateway (components/gateway/, docs/gateway.md). OCI charts: the repo is the registry path.
    # Envoy Gateway v1.9.0 (envoyproxy/gateway tag v1.9.0, 2026-08-15; the chart is published with the release's
    # tag as its version); Envoy AI Gateway v1.1.0 (envoyproxy/ai-gateway tag v1.1.0, 2026-08-21), whose
    # controller is Envoy Gateway's extension server that resolves InferencePool backends; the llm-d router's
    # endpoint picker chart v0.10.0 (llm-d/llm-d-router tag v0.10.0, 2026-08-17; GAIE v1.6.0 moved its EPP there).
    "gateway-helm": Chart("oci://docker.io/envoyproxy", "gateway-helm", "v1.9.0"),
    "ai-gateway-crds-helm": Chart("oci://docker.io/envoyproxy", "ai-gateway-crds-helm", "v1.1.0"),
    "ai-gateway-helm": Chart("oci://docker.io/envoyproxy", "ai-gateway-helm", "v1.1.0"),
    "llm-d-router-gateway": Chart("oci://ghcr.io/llm-d/charts", "llm-d-router-gateway", "v0.10.0"),
    # EKS: NLBs for LoadBalancer Services (the gateway's). aws/eks-charts stable/aws-load-balancer-controller/
    # Chart.yaml at 5239609 (2026-08-03): version 3.5.0, appVersion v3.5.0; its IAM policy is the controller's
    # docs/install/iam_policy.json at v3.5.0 (components/cluster/aws/lb_controller_policy.py).
    "aws-load-balancer-controller": Chart("https://aws.github.io/eks-charts", "aws-load-balancer-controller", "3.5.0"),
}
# The endpoint picker image: the chart's default tag is `main` (a moving build); pinned to the release's tag,
# which llm-d-router's release process pushes beside the chart (.github/ISSUE_TEMPLATE/new-release.md).
# ⚠ tag from the release process, no digest checked from here.
EPP_IMAGE_TAG = "v0.10.0"
# The P/D routing sidecar on decode pods (components/serving/disagg.py): llm-d-router v0.10.0 builds it from
# cmd/pd-sidecar (Dockerfile.sidecar) as $(IMAGE_REGISTRY)/$(SIDECAR_IMAGE_NAME) = ghcr.io/llm-d/
# llm-d-router-disagg-sidecar (Makefile). ⚠ the release tag as for the EPP image, no digest checked from here.
PD_SIDECAR_IMAGE = f"ghcr.io/llm-d/llm-d-router-disagg-sidecar:{EPP_IMAGE_TAG}"

# GKE (components/cluster/gcp/control_plane.py). cluster.kubernetesVersion is the control plane's
# minimum (min_master_version: "1.35" = the channel's newest 1.35 patch at creation); the release channel
# then moves the cluster to newer patches and minors inside the maintenance window, node pools after
# it (auto-upgrade). REGULAR's default is 1.35 (1.35.8-gke.1036000, GKE Regular channel release notes,
# 2026-09-17); 1.34 left standard support on 2026-10-01 (components/upstream/kubernetes_support.py). Before the
# cluster is created, GKE's own answer is checked (components/cluster/gcp/versions_check.py).
GKE_RELEASE_CHANNEL = "REGULAR"
# GKE-managed NVIDIA driver on COS (gpu_driver_installation_config): LATEST, not DEFAULT, because
# the vLLM image's CUDA needs a recent driver branch; GKE picks the build per node version.
GKE_GPU_DRIVER_VERSION = "LATEST"

# EKS (components/cluster/aws): the managed add-ons' builds are not pinned here. A `-eksbuild.N` suffix is EKS's
# own and no source outside an account lists it reliably, so each add-on's build is EKS's answer for the cluster's
# minor on every run (aws.eks.get_addon_version, most_recent; components/cluster/aws/versions_check.py
# addon_versions): the build EKS lists as newest, which it will accept. The offline plan answers from a vendored
# table of what EKS's documentation lists (components/offline/data/eks_addon_versions.csv).
# Cluster Autoscaler's minor must equal the cluster's (github.com/kubernetes/autoscaler README,
# "Releases"); patch releases as promoted in kubernetes/k8s.io#8815 (1.33.3, 1.34.2) and chart 9.54.0 (1.35.0);
# 1.36.1: kubernetes/autoscaler tag cluster-autoscaler-1.36.1 (35e8a28, 2026-07-22; ⚠ the image's promotion to
# registry.k8s.io not checked from here). These keys are the minors the EKS path accepts.
CLUSTER_AUTOSCALER_IMAGE = "registry.k8s.io/autoscaling/cluster-autoscaler"
CLUSTER_AUTOSCALER_TAGS = {"1.33": "v1.33.3", "1.34": "v1.34.2", "1.35": "v1.35.0", "1.36": "v1.36.1"}

# Cluster fabrics (components/addons/fabrics.py, gke_nccl.py).
# NVIDIA Network Operator: the NicClusterPolicy's component images ship with each chart release under
# one tag (Mellanox/network-operator example/crs/mellanox.com_v1alpha1_nicclusterpolicy_cr-ipoib.yaml;
# released images live in nvcr.io/nvidia/mellanox). Bump together with CHARTS["network-operator"].
NETWORK_OPERATOR_REGISTRY = "nvcr.io/nvidia/mellanox"
NETWORK_OPERATOR_COMPONENTS_TAG = "network-operator-v26.10.0"
# GKE GPUDirect-RDMA (A3 Ultra / A4) NCCL plugin installer: GoogleCloudPlatform/container-engine-accelerators
# gpudirect-rdma/README.md release notes (Aug 15, 2025). Pinned by tag: no published digest could be checked
# from here. The policy pack admits exactly this reference as a privileged node agent
# (policies/rules/workloads.py PRIVILEGED_NODE_AGENT): bumping it means reviewing that exception too.
# (A3 High / Mega need no installer: serving uses NCCL sockets there, components/addons/fabrics.py.)
GKE_NCCL_RDMA_INSTALLER_IMAGE = "us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib:v1.1.0"
# The Redis that backs the Ray head's GCS fault tolerance (components/serving/redis.py): the official image,
# pinned by its multi-platform index digest as docker-library/repo-info records it
# (repos/redis/remote/8.10.2-alpine.md at commit 0bdd94409df031423d112c6f22cab289fa8fc401). It runs as the
# image's own `redis` user (uid 999, gid 1000, from the same Dockerfile).
REDIS_IMAGE = "redis:8.10.2-alpine@sha256:72cedd9603038893af961e90ac5e1a1a0d8377d5e338dbdad8fe284ea25de18f"

# NVIDIA AIConfigurator's standalone core (PyPI aiconfigurator-core, Apache-2.0), the version pyproject's
# `aiconfigurator` extra pins: planning.estimator: auto prices dense models with it (components/planner/aic.py).
AIC_VERSION = "0.12.0"
