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

    def tolerations(self) -> list[dict]:
        return [t.toleration() for t in self.taints]


@dataclass
class ClusterFacts:
    cloud: str  # "aws" | "gcp" | "existing"
    name: str
    provider: Any  # pulumi_kubernetes.Provider
    gpu_pools: dict[str, GpuPool]  # by instance type
    system_node_selector: dict[str, str]
    rwx_storage_class: str | None  # StorageClass for the RWX model cache
    cache_read_gbps: float  # sustained read throughput of the model cache, for start-up budgets
    driver_preinstalled: bool  # GPU driver on the node image (EKS NVIDIA AMI, GKE-managed) or not
    kubeconfig: Any | None = None  # pulumi.Output[str], secret
    depends_on: list[Any] = field(default_factory=list)  # what must exist before Kubernetes objects
    # StorageClass every claim that is not RWX should name (one the cluster component creates, e.g. EKS's
    # encrypted gp3 default class); None: the cluster's own default class.
    block_storage_class: str | None = None
    # The CNI enforces NetworkPolicy (EKS VPC CNI with enableNetworkPolicy, GKE Dataplane V2).
    network_policy_enforced: bool = False

    def pool_for(self, instance_type: str) -> GpuPool:
        return self.gpu_pools[instance_type]


@dataclass
class AddonsFacts:
    """What the add-ons hand to serving (filled by components/addons, issue 4).

    `ready` maps a capability to the resources a custom resource of that kind must depend on
    (the operator release that installs its CRDs), so that the first `pulumi up` on an empty
    cluster succeeds: "keda" (ScaledObject), "kuberay" (RayService), "monitoring" (ServiceMonitor,
    PodMonitor, PrometheusRule), "network" (NetworkAttachmentDefinition / RDMA resources).
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
