"""The stack file, typed. Keys are camelCase in YAML (Pulumi's convention), snake_case in Python.

Everything here is pure (no Pulumi): the loader in load.py feeds it what pulumi.Config holds.
Cross-field rules are model validators so that every error names its field.
"""
from __future__ import annotations

from typing import Literal

from pydantic import Field, ValidationInfo, model_validator

from ..upstream import kubernetes_support
from ..upstream.versions import GKE_RELEASE_CHANNEL

from .addons import AddonSwitch, Addons, FabricAddon, GpuOperatorAddon, PrometheusAddon, Serving
from .base import DNS_LABEL, PROJECT, _Base, field_error
from .charts import ChartSettings
from .gateway import GatewaySettings, check_gateway
from .clouds import AwsSettings, ClusterSettings, ExistingSettings, GcpSettings, GpuNodes, NodeTaint
from .models import Architecture, ModelCache, ModelDeployment, Replicas, Sla
from .planning import Planning, unmatched
from .pricing import PricingSettings, pricing_problem

__all__ = ["AddonSwitch", "Addons", "FabricAddon", "GpuOperatorAddon", "PrometheusAddon", "Serving", "DNS_LABEL",
           "PROJECT", "field_error", "AwsSettings", "ClusterSettings", "ExistingSettings", "GcpSettings",
           "GpuNodes", "NodeTaint", "Architecture", "ModelCache", "ModelDeployment", "Replicas", "Sla",
           "StackConfig"]


class StackConfig(_Base):
    cloud: Literal["aws", "gcp", "existing"]
    environment: Literal["dev", "staging", "prod"] = "dev"
    namespace: str = Field("vllm", pattern=DNS_LABEL)
    cluster: ClusterSettings = ClusterSettings()
    aws: AwsSettings | None = None
    gcp: GcpSettings | None = None
    existing: ExistingSettings | None = None
    models: list[ModelDeployment] = Field(min_length=1)
    model_cache: ModelCache = ModelCache()
    addons: Addons = Addons()
    serving: Serving = Serving()
    gateway: GatewaySettings = GatewaySettings()  # components/config/gateway.py
    pricing: PricingSettings = PricingSettings()  # components/config/pricing.py
    planning: Planning = Planning()  # components/config/planning.py: latency margin, measured knees
    charts: ChartSettings = ChartSettings()  # components/config/charts.py: every Helm chart from a mirror

    @model_validator(mode="after")
    def _cloud_settings(self):
        if getattr(self, self.cloud) is None:
            raise field_error(self.cloud, f"missing: cloud is {self.cloud!r}, so add a `{self.cloud}` block")
        for other in {"aws", "gcp", "existing"} - {self.cloud}:
            if getattr(self, other) is not None:
                raise field_error(other, f"given but cloud is {self.cloud!r}; remove it")
        names = [m.name for m in self.models]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise field_error("models", f"duplicate name(s) {', '.join(dup)}; names must be unique")
        if self.cloud == "existing" and self.model_cache.kind == "rwx" and not self.model_cache.storage_class:
            raise field_error("modelCache", "storageClass is required for an rwx cache on an existing cluster")
        return self

    @model_validator(mode="after")
    def _pricing_fits_cloud(self):
        system = (self.aws.system_instance_type if self.aws else self.gcp.system_machine_type if self.gcp else None)
        problem = pricing_problem(self.pricing, self.cloud, system)
        if problem:
            raise field_error(*problem)
        return self

    @model_validator(mode="after")
    def _measurements_name_models(self):
        for problem in unmatched(self.planning, self.models):
            raise field_error(*problem)
        return self

    @model_validator(mode="after")
    def _gateway_fits_stack(self):
        check_gateway(self.gateway, self.cloud, self.environment)
        return self

    @model_validator(mode="after")
    def _addons_fit_cloud(self):
        if self.addons.gpu_operator.install_driver is not None and self.cloud != "existing":
            raise field_error("addons.gpuOperator.installDriver", f"only for cloud existing; on {self.cloud} the "
                                                                  f"node image carries the driver")
        fabric = self.existing.gpu_nodes.fabric if self.existing else "none"
        if self.addons.fabric.rdma_interfaces and fabric == "none":
            raise field_error("addons.fabric.rdmaInterfaces", "only for an existing cluster with fabric "
                                                              "infiniband or roce")
        rdma = self.existing.gpu_nodes.rdma_resource if self.existing else ""
        if fabric != "none" and self.addons.fabric.enabled and not rdma.startswith("rdma/"):
            raise field_error("existing.gpuNodes.rdmaResource", f"{rdma} cannot be advertised by the Network "
                                                                f"Operator this stack installs (rdma/<name>); rename "
                                                                f"it or set addons.fabric.enabled: false")
        return self

    @model_validator(mode="after")
    def _existing_cluster_guarantees(self):
        """What an existing cluster must provide before the stack relies on it (components/cluster/existing.py)."""
        if self.existing is None:
            return self
        prom = self.addons.prometheus
        if prom.enabled and not prom.storage_class and not self.existing.block_storage_class:
            raise field_error("existing.blockStorageClass", "missing: Prometheus' volume claim must name a "
                                                             "ReadWriteOnce StorageClass the cluster has (kubectl get "
                                                             "storageclass), or set addons.prometheus.storageClass")
        if self.production and not self.existing.network_policy_enforced:
            raise field_error("existing.networkPolicyEnforced", "is false, and production serving isolates tenants "
                                                                "with a NetworkPolicy: check that the cluster's CNI "
                                                                "enforces NetworkPolicy (Calico, Cilium, ...), then set "
                                                                "it to true")
        return self

    @model_validator(mode="after")
    def _kubernetes_supported(self, info: ValidationInfo):
        """No new cluster on a minor whose standard support has ended (EKS would upgrade it behind Pulumi's
        back, GKE refuses it) unless the stack opted in to extended support; `today` from the validation
        context (config.load.parse) or kubernetes_support.today()."""
        if self.cloud not in ("aws", "gcp"):
            return self
        on = (info.context or {}).get("today") or kubernetes_support.today()
        line = kubernetes_support.support_problem(self.cloud, self.cluster.kubernetes_version, on,
                                                  self.extended_support)
        if line:
            field = kubernetes_support.FIELD
            raise field_error(field, line.removeprefix(f"{field}: "))
        return self

    @property
    def extended_support(self) -> bool:
        """aws.supportType EXTENDED or gcp.releaseChannel EXTENDED: the stack pays to stay past standard support."""
        if self.cloud == "aws" and self.aws is not None:
            return self.aws.support_type == "EXTENDED"
        if self.cloud == "gcp" and self.gcp is not None:
            return (self.gcp.release_channel or GKE_RELEASE_CHANNEL) == "EXTENDED"
        return False

    @property
    def production(self) -> bool:
        return self.environment == "prod"
