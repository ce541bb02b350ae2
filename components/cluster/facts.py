"""The cloud-neutral hand-over from a cluster component to add-ons and serving.

AwsGpuCluster, GcpGpuCluster and ExistingCluster each return a ClusterFacts; nothing
downstream looks at which cloud built it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

GPU_TAINT_KEY = "nvidia.com/gpu"
GPU_RESOURCE = "nvidia.com/gpu"
POOL_LABEL = "vllm-platform/gpu-pool"
# On the pod template of a serving workload whose GPU nodes come from a reservation / Capacity Block
# (aws.capacityType reservation|capacityBlock, gcp.reservation): the reservation, not the planner or the
# stack file, fixes the instance type. The policy pack reads it (pinned-instance-cost, docs/policies.md).
CAPACITY_ANNOTATION = "vllm-platform/capacity"
RESERVED_CAPACITY = "reserved"


@dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: str  # NoSchedule | NoExecute | PreferNoSchedule

    def toleration(self) -> dict:
        return {"key": self.key, "operator": "Equal", "value": self.value, "effect": self.effect}


@dataclass(frozen=True)
class GpuPool:
    """One kind of GPU node: where a planned instance type's pods land and what they can ask for."""
    name: str
    instance_type: str
    accelerator: str
    gpus_per_node: int
    node_selector: dict[str, str]
    taints: tuple[Taint, ...]
    fabric: str | None = None  # "efa" | "gpudirect-tcpx" | "gpudirect-tcpxo" | "rdma" | "infiniband" | None
    # Extended resources a pod on this pool requests per node for the fabric, e.g.
    # {"vpc.amazonaws.com/efa": 32} or {"rdma/rdma_shared_device_a": 1}.
    fabric_resources: dict[str, int] = field(default_factory=dict)
    nvme_path: str | None = None  # host path where local NVMe is mounted (model cache kind nvme)
    # Annotations a pod on this pool carries to get its fabric interfaces where the cloud attaches
    # them per pod rather than as an extended resource, e.g. GKE multi-networking's
    # networking.gke.io/interfaces for GPUDirect-TCPX(O) and RDMA.
    pod_annotations: dict[str, str] = field(default_factory=dict)
    reserved: bool = False  # the nodes come from a reservation / Capacity Block (CAPACITY_ANNOTATION)

    def tolerations(self) -> list[dict]:
        return [t.toleration() for t in self.taints]


# --- what a kind of cluster provides, so that add-ons read facts instead of switching on the cloud ------------

# Node software a GPU fabric needs besides the node pools (ClusterFacts.fabric_software values; the add-ons
# in components/addons/fabrics.py install them).
EFA_DEVICE_PLUGIN = "efa-device-plugin"  # advertises vpc.amazonaws.com/efa
GKE_GIB_INSTALLER = "gke-gib-installer"  # Google's gIB NCCL plugin for GPUDirect RDMA (A3 Ultra, A4)
NETWORK_OPERATOR = "network-operator"  # NVIDIA Network Operator: RDMA shared device plugin, Multus, IPoIB


@dataclass(frozen=True)
class GpuNodeStack:
    """What the GPU nodes' image and the cluster kind already provide; the GPU Operator installs the rest."""
    container_toolkit: bool  # the NVIDIA Container Toolkit is on the image (the operator leaves it alone)
    managed_device_plugin: bool  # the platform's own device plugin advertises nvidia.com/gpu (one may)
    driver_install_dir: str | None = None  # where a pre-installed driver lives, when not the host root
    toolkit_install_dir: str | None = None
    cdi: bool = False  # devices reach containers through CDI (the runtime config path GKE needs)
    toolkit_env: tuple[tuple[str, str], ...] = ()
    # System-node-critical pods outside kube-system are admitted only under a ResourceQuota naming the class.
    critical_pods_need_quota: bool = False
    source: str = ""


# EKS AL2023 NVIDIA AMI: driver and container toolkit on the image, no device plugin.
EKS_GPU_STACK = GpuNodeStack(
    container_toolkit=True, managed_device_plugin=False,
    source="docs.aws.amazon.com/eks/latest/userguide/ml-eks-k8s-device-plugin.html; NVIDIA GPU Operator docs, "
           "Amazon EKS (driver.enabled=false, toolkit.enabled=false)")
# GKE with the GKE-managed driver (gpu_driver_installation_config): GKE's device plugin is the one advertiser
# of nvidia.com/gpu (two plugins registering it break kubelet's accounting); the operator adds the toolkit
# (its operands run under the nvidia runtime class) and DCGM.
GKE_GPU_STACK = GpuNodeStack(
    container_toolkit=False, managed_device_plugin=True, driver_install_dir="/home/kubernetes/bin/nvidia",
    toolkit_install_dir="/home/kubernetes/bin/nvidia", cdi=True, toolkit_env=(("RUNTIME_CONFIG_SOURCE", "file"),),
    critical_pods_need_quota=True,
    source="docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/google-gke.html (install dirs, CDI, "
           "RUNTIME_CONFIG_SOURCE=file on GKE 1.33+, the ResourceQuota); docs.nvidia.com/aicr GKE GPU setup, "
           "gke-default profile (devicePlugin.enabled=false)")
# A cluster we attach to: the operator owns toolkit and device plugin (the driver per driver_preinstalled).
SELF_MANAGED_GPU_STACK = GpuNodeStack(container_toolkit=False, managed_device_plugin=False,
                                      source="NVIDIA GPU Operator getting-started defaults")

# Per cluster kind: which node software each GpuPool.fabric needs (None: nothing beyond the node pool).
# GKE A3 High / Mega: serving runs NCCL's socket transport over the GPU NICs (components/serving/fabric.py),
# which GKE multi-networking plugs into the pod; the GPUDirect-TCPX(O) plugins and their privileged
# installers are not installed, so NCCL cannot pick them up.
EKS_FABRIC_SOFTWARE: dict[str, str | None] = {"efa": EFA_DEVICE_PLUGIN}
GKE_FABRIC_SOFTWARE: dict[str, str | None] = {"gpudirect-tcpx": None, "gpudirect-tcpxo": None,
                                               "rdma": GKE_GIB_INSTALLER}
SELF_MANAGED_FABRIC_SOFTWARE: dict[str, str | None] = {"infiniband": NETWORK_OPERATOR, "rdma": NETWORK_OPERATOR}

# How long a GPU node the cluster component creates takes from the node group / node pool asking for it to a
# pod requesting nvidia.com/gpu being able to start there: instance launch and boot, kubelet registration,
# then the GPU stack (driver check, device plugin advertising nvidia.com/gpu, the GPU Operator's validator,
# the EFA device plugin on EKS). PLANNING ESTIMATE, not a vendor figure: about 5 min to a Ready p5 / A3 node
# plus 5-10 min for the GPU operands on a fresh node; 900 s is the upper end. Serving Kubernetes objects no
# longer wait for the GPU pools, so on the first `pulumi up` a serving pod waits (Pending) for this too.
# An existing cluster's GPU nodes already exist: 0.
NEW_GPU_NODE_READY_S = 900
EXISTING_GPU_NODE_READY_S = 0

# API groups whose CRDs GKE installs and upgrades itself (ClusterFacts.platform_crd_groups): "GKE automatically
# installs all GA CRDs for Gateway API and Gateway API Inference Extension on GKE versions 1.34.0-gke.1626000 or
# later" (llm-d.ai/docs/resources/gateway/gke and llm-d.ai/docs/dev/resources/gateway/install-crds, read
# 2026-12-06; the InferencePool CRD there is the GA inference.networking.k8s.io/v1 the stack's pools use). Every
# GKE cluster the stack creates runs 1.34 or newer (components/upstream/versions.py; the 1.34 patches GKE
# offers in 2026 are all past that build), so the stack never creates, patches or
# deletes a CRD of these groups there; the Envoy Gateway bundle's experimental-only kinds of the group (TCPRoute,
# ...) are then absent, which Envoy Gateway v1.9.0 tolerates (it checks each CRD before watching it:
# internal/provider/kubernetes/controller.go crdExists).
GKE_PLATFORM_CRD_GROUPS = frozenset({"gateway.networking.k8s.io", "inference.networking.k8s.io"})

# Cluster DNS servers (the metrics the monitoring stack scrapes differ).
COREDNS = "coredns"  # EKS, kubeadm and most self-managed clusters
KUBE_DNS = "kube-dns"  # GKE Standard's default provider


@dataclass(frozen=True)
class LoadBalancerController:
    """An NLB controller the cluster component prepared (EKS: the AWS Load Balancer Controller's Pod Identity
    role); the add-ons install it (components/addons/aws_lb_controller.py) and a LoadBalancer Service that sets
    its class gets an NLB. Present: the gateway sets the NLB fields on its Service."""
    cluster_name: str
    region: str
    vpc_id: Any  # Input[str]
    namespace: str
    service_account: str  # the one the Pod Identity association names
    highly_available: bool  # production: two replicas and a PodDisruptionBudget
    depends_on: list[Any] = field(default_factory=list)  # the Pod Identity association (role and policy)


@dataclass
class ClusterFacts:
    cloud: str  # "aws" | "gcp" | "existing": for names and messages only; add-ons read the facts below
    name: str
    provider: Any  # pulumi_kubernetes.Provider
    gpu_pools: dict[str, GpuPool]  # by instance type
    system_node_selector: dict[str, str]
    rwx_storage_class: str | None  # StorageClass for the RWX model cache
    cache_read_gbps: float  # sustained read throughput of the model cache, for start-up budgets
    driver_preinstalled: bool  # GPU driver on the node image (EKS NVIDIA AMI, GKE-managed) or not
    kubeconfig: Any | None = None  # pulumi.Output[str], secret
    # StorageClass that non-RWX claims (Prometheus) name: one the cluster component creates or the cluster
    # kind guarantees (GKE: standard-rwo); None: the claim must name one from config.
    block_storage_class: str | None = None
    network_policy_enforced: bool = False  # the CNI enforces NetworkPolicy (GKE Dataplane V2, VPC CNI policy on)
    depends_on: list[Any] = field(default_factory=list)  # what must exist before Kubernetes objects
    gpu_stack: GpuNodeStack = SELF_MANAGED_GPU_STACK
    fabric_software: dict[str, str | None] = field(default_factory=lambda: dict(SELF_MANAGED_FABRIC_SOFTWARE))
    # etcd, scheduler and controller manager hidden by the provider, kube-proxy's metrics not reachable
    # (EKS: bound to localhost; GKE Dataplane V2: no kube-proxy): scraping them only raises TargetDown.
    managed_control_plane: bool = False
    cluster_dns: str = COREDNS
    # Seconds from a GPU pool's node being asked for to a GPU pod starting on it (NEW_GPU_NODE_READY_S for a
    # pool the cluster component creates); the serving rollout deadlines add it.
    gpu_node_ready_s: int = EXISTING_GPU_NODE_READY_S
    # EKS: the AWS Load Balancer Controller's identity, for the add-on that installs it (None: no NLB controller;
    # a LoadBalancer Service gets whatever the cluster's own cloud provider gives it).
    load_balancer_controller: LoadBalancerController | None = None
    # What a prefetch Job that reads a models[].source bucket waits for: the cloud identity the cluster component
    # granted its service account (EKS Pod Identity associations, GKE bucket IAM members; components/cluster/source_access.py)
    weights_access: list[Any] = field(default_factory=list)
    # API groups whose CRDs the cluster's platform installs and upgrades (GKE_PLATFORM_CRD_GROUPS): the stack takes
    # those CRDs as they are and applies none of them (components/upstream/crds.py applied_crds)
    platform_crd_groups: frozenset[str] = frozenset()

    def pool_for(self, instance_type: str) -> GpuPool:
        return self.gpu_pools[instance_type]


@dataclass
class AddonsFacts:
    """What the add-ons hand to serving (filled by components/addons, issue 4).

    `ready` maps a capability to the resources a custom resource of that kind must depend on
    (the operator release that installs its CRDs), so that the first `pulumi up` on an empty
    cluster succeeds: "keda" (ScaledObject), "kuberay" (RayService), "lws" (LeaderWorkerSet), "monitoring" (ServiceMonitor,
    PodMonitor, PrometheusRule), "network" (NetworkAttachmentDefinition / RDMA resources), "load-balancer"
    (a LoadBalancer Service that asks for the NLB controller's class: ClusterFacts.load_balancer_controller).
    An add-on switched off in config leaves its key with [] and the stack uses what the cluster has.
    """
    prometheus_url: str  # what KEDA's Prometheus triggers query
    monitor_labels: dict[str, str]  # labels Prometheus selects ServiceMonitors/PodMonitors/PrometheusRules by
    dashboard_label: tuple[str, str]  # (key, value) the Grafana dashboard sidecar picks ConfigMaps by
    ready: dict[str, list[Any]] = field(default_factory=dict)
    rdma_resource: str | None = None  # extended resource name serving pods request on InfiniBand/RoCE
    # Namespaces the scraping Prometheus and the KubeRay operator run in, for serving's NetworkPolicy
    # (None: not known, e.g. the cluster's own Prometheus at a URL outside <svc>.<namespace>.svc).
    prometheus_namespace: str | None = None
    kuberay_namespace: str | None = None

    def depends(self, capability: str) -> list[Any]:
        return list(self.ready.get(capability, []))
