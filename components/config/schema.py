"""The stack file, typed. Keys are camelCase in YAML (Pulumi's convention), snake_case in Python.

Everything here is pure (no Pulumi): the loader in load.py feeds it what pulumi.Config holds.
Cross-field rules are model validators so that every error names its field.
"""
from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator
from pydantic.alias_generators import to_camel

from ..catalog import ACCELERATORS, INSTANCE_TYPES, ModelSpec, find_model

PROJECT = "vllm-platform"
DNS_LABEL = r"^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$"


def field_error(field: str, message: str) -> ValueError:
    """An error from a model validator that belongs to one field (the loader appends it to the path)."""
    return ValueError(f"@{field}@ {message}")


class _Base(BaseModel):
    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True, frozen=True)


class Sla(_Base):
    """What one deployment must meet. Latencies are per request at the target concurrency."""
    ttft_ms: float = Field(2000, gt=0, description="time to first token for an average prompt (ms)")
    tpot_ms: float = Field(100, gt=0, description="time per output token (ms)")
    concurrency: int = Field(16, ge=1, description="concurrent requests the fleet holds within the SLA")
    prompt_tokens: int = Field(1024, ge=1, description="average prompt length (tokens)")
    output_tokens: int = Field(256, ge=1, description="average completion length (tokens)")


class Replicas(_Base):
    min: int = Field(1, ge=1, description="replicas kept running (>= 1: a cold 70B start takes minutes)")
    max: int = Field(8, ge=1, description="ceiling for the autoscaler")

    @model_validator(mode="after")
    def _order(self):
        if self.min > self.max:
            raise field_error("min", f"{self.min} is above max ({self.max}); set min <= max")
        return self


class Architecture(_Base):
    """A model outside the catalog, described from its config.json."""
    params_b: float = Field(gt=0, description="total parameters, billions")
    layers: int = Field(ge=1)
    hidden: int = Field(ge=1, description="hidden_size")
    heads: int = Field(ge=1, description="num_attention_heads")
    kv_heads: int = Field(ge=1, description="num_key_value_heads")
    head_dim: int | None = Field(None, ge=1, description="head_dim (default hidden / heads)")
    vocab: int = Field(ge=1, description="vocab_size")
    max_context: int = Field(ge=1, description="max_position_embeddings")

    @model_validator(mode="after")
    def _gqa(self):
        if self.heads % self.kv_heads:
            raise field_error("kvHeads", f"{self.kv_heads} does not divide heads ({self.heads})")
        return self


class ModelDeployment(_Base):
    name: str = Field(pattern=DNS_LABEL, description="Kubernetes name of the deployment")
    model: str = Field(description="catalog id (python -m components table) or Hugging Face repo id")
    architecture: Architecture | None = Field(None, description="for a model outside the catalog")
    precision: Literal["bf16", "fp8", "mxfp4"] | None = None
    accelerator: str | None = Field(None, description="restrict to one GPU (catalog id)")
    instance_types: list[str] | None = Field(None, description="restrict to these instance / machine types")
    tensor_parallel_size: int | None = Field(None, ge=1, description="pin TP instead of searching")
    max_model_len: int | None = Field(None, ge=256, description="default: the model's maximum context")
    gpu_memory_utilization: float = Field(0.90, gt=0.5, lt=1.0)
    kv_cache_dtype: Literal["auto", "fp8", "any"] = Field(
        "any", description="auto = the model dtype; fp8 halves KV memory; any = the planner picks")
    sla: Sla = Sla()
    replicas: Replicas = Replicas()

    # Field validators see the fields declared above them (info.data), so that one bad value
    # does not hide the others: every problem is reported at once.
    @field_validator("accelerator")
    @classmethod
    def _known_accelerator(cls, v):
        if v is not None and v not in ACCELERATORS:
            raise ValueError(f"unknown accelerator {v!r}; allowed: {', '.join(ACCELERATORS)}")
        return v

    @field_validator("instance_types")
    @classmethod
    def _known_instances(cls, v):
        unknown = [i for i in v or [] if i not in INSTANCE_TYPES]
        if unknown:
            raise ValueError(f"unknown instance type(s) {', '.join(unknown)}; see components/catalog/instances.py")
        return v

    @field_validator("precision")
    @classmethod
    def _offered_precision(cls, v, info: ValidationInfo):
        spec = _spec(info.data)
        if v and spec and v not in spec.precisions:
            raise ValueError(f"{v!r} is not offered for {spec.name}; allowed: {', '.join(spec.precisions)}")
        return v

    @field_validator("tensor_parallel_size")
    @classmethod
    def _tp_divides_heads(cls, tp, info: ValidationInfo):
        spec = _spec(info.data)
        if tp and spec and spec.heads % tp:
            ok = [d for d in range(1, min(spec.heads, 16) + 1) if spec.heads % d == 0]
            raise ValueError(f"{tp} does not divide {spec.name}'s {spec.heads} attention heads; "
                             f"allowed: {', '.join(map(str, ok))}")
        return tp

    @field_validator("max_model_len")
    @classmethod
    def _within_context(cls, v, info: ValidationInfo):
        spec = _spec(info.data)
        if v and spec and v > spec.max_context:
            raise ValueError(f"{v} is above {spec.name}'s limit of {spec.max_context}; "
                             f"set maxModelLen <= {spec.max_context}")
        return v

    @model_validator(mode="after")
    def _fits_model(self):
        if self.spec is None:
            raise field_error("model", f"unknown model {self.model!r}: use a catalog id ({', '.join(_catalog_ids())}) "
                                       f"or describe it under `architecture`")
        tokens = self.sla.prompt_tokens + self.sla.output_tokens
        if tokens > self.effective_max_model_len:
            raise field_error("sla", f"promptTokens + outputTokens ({tokens}) exceed maxModelLen "
                                     f"{self.effective_max_model_len}; shorten them or raise maxModelLen")
        return self

    @property
    def spec(self) -> ModelSpec | None:
        return _spec({"model": self.model, "architecture": self.architecture, "name": self.name})

    @property
    def effective_precision(self) -> str:
        spec = self.spec
        if self.precision:
            return self.precision
        if spec.fp8_repo and self.model.lower() == spec.fp8_repo.lower():
            return "fp8"  # asked for the FP8 checkpoint by its repo id
        return spec.precisions[0]

    @property
    def effective_max_model_len(self) -> int:
        return self.max_model_len or self.spec.max_context


def _spec(data: dict) -> ModelSpec | None:
    """The catalog entry for `model`, or one built from the inline `architecture`."""
    model = data.get("model")
    if model is None:
        return None
    found = find_model(model)
    if found is not None:
        return found
    a = data.get("architecture")
    if a is None:
        return None
    return ModelSpec(
        id=data.get("name") or "custom", name=model, hf_repo=model, params_b=a.params_b, layers=a.layers,
        hidden=a.hidden, heads=a.heads, kv_heads=a.kv_heads, head_dim=a.head_dim or a.hidden // a.heads,
        vocab=a.vocab, max_context=a.max_context, source="stack file (inline architecture)")


def _catalog_ids():
    from ..catalog import MODELS
    return list(MODELS)


class ModelCache(_Base):
    kind: Literal["rwx", "nvme"] = Field("rwx", description="rwx = shared file system; nvme = node-local disks")
    size_gib: int | None = Field(None, ge=10, description="default: the weights it holds x 1.5")
    storage_class: str | None = Field(None, description="existing RWX StorageClass (existing clusters)")
    read_gbps: float | None = Field(None, gt=0, description="sustained read GB/s of the cache per node; "
                                                            "default: what the cloud's storage documents")


class AwsSettings(_Base):
    """EKS in one region: private subnets across Availability Zones; GPU pools whose replicas span
    nodes (EFA) go into the first zone's subnet (EFA does not cross zones)."""
    region: str = Field(pattern=r"^[a-z]{2}(-[a-z]+)+-\d$")
    vpc_id: str | None = Field(None, pattern=r"^vpc-[0-9a-f]{8,17}$",
                               description="existing VPC (with subnetIds); default: create one with NAT")
    subnet_ids: list[str] | None = Field(
        None, min_length=2, description="private subnets of vpcId, one per zone, routed to a NAT; the first "
                                        "hosts multi-node (EFA) GPU pools")
    vpc_cidr: str = Field("10.0.0.0/16", description="CIDR of the VPC this stack creates")
    availability_zones: list[str] | None = Field(
        None, min_length=2, max_length=6, description="zones of the VPC this stack creates (default: the "
                                                      "region's first three); the first hosts EFA pools")
    endpoint_public_access_cidrs: list[str] = Field(
        default_factory=list, description="CIDRs that may reach the public API endpoint; empty (default): "
                                          "private endpoint only, run `pulumi up` from inside the VPC")
    admin_role_arns: list[str] = Field(default_factory=list,
                                       description="IAM roles/users given cluster-admin access entries")
    capacity_type: Literal["onDemand", "spot", "reservation", "capacityBlock"] = Field(
        "onDemand", description="how GPU nodes are bought; reservation / capacityBlock need capacityReservations")
    capacity_reservations: dict[str, str] = Field(
        default_factory=dict, description="planned instance type -> On-Demand Capacity Reservation or "
                                          "Capacity Block id (cr-...), in the first zone")
    system_instance_type: str = Field("m7i.2xlarge", pattern=r"^[a-z][a-z0-9-]*\.[a-z0-9]+$",
                                      description="on-demand nodes for operators, Prometheus and Ray heads")
    system_nodes: int = Field(2, ge=1, le=10, description="system nodes (2+ keeps operators available)")

    @field_validator("subnet_ids")
    @classmethod
    def _subnet_ids(cls, v):
        bad = [s for s in v or [] if not re.fullmatch(r"subnet-[0-9a-f]{8,17}", s)]
        if bad:
            raise ValueError(f"not a subnet id: {', '.join(bad)}; e.g. subnet-0123456789abcdef0")
        return v

    @field_validator("vpc_cidr", "endpoint_public_access_cidrs")
    @classmethod
    def _cidrs(cls, v):
        import ipaddress

        bad = []
        for cidr in [v] if isinstance(v, str) else v:
            try:
                ipaddress.IPv4Network(cidr, strict=True)
            except ValueError:
                bad.append(cidr)
        if bad:
            raise ValueError(f"not an IPv4 CIDR block: {', '.join(bad)}; e.g. 203.0.113.7/32")
        return v

    @field_validator("admin_role_arns")
    @classmethod
    def _arns(cls, v):
        bad = [a for a in v if not re.fullmatch(r"arn:aws[-a-z]*:iam::\d{12}:(role|user)/[\w+=,.@/-]+", a)]
        if bad:
            raise ValueError(f"not an IAM role or user ARN: {', '.join(bad)}; "
                             f"e.g. arn:aws:iam::123456789012:role/platform-admin")
        return v

    @field_validator("capacity_reservations")
    @classmethod
    def _reservations(cls, v):
        for itype, rid in v.items():
            if itype not in INSTANCE_TYPES or INSTANCE_TYPES[itype].cloud != "aws":
                raise ValueError(f"{itype!r} is not an AWS instance type of the catalog")
            if not re.fullmatch(r"cr-[0-9a-f]{8,17}", rid):
                raise ValueError(f"{itype}: {rid!r} is not a capacity reservation id; e.g. cr-0123456789abcdef0")
        return v

    @model_validator(mode="after")
    def _vpc_and_capacity(self):
        if bool(self.vpc_id) != bool(self.subnet_ids):
            missing = "subnetIds" if self.vpc_id else "vpcId"
            raise field_error(missing, "missing: an existing VPC needs both vpcId and subnetIds")
        if self.vpc_id and self.availability_zones:
            raise field_error("availabilityZones", "given with vpcId; the zones are those of subnetIds, remove it")
        bad = [z for z in self.availability_zones or [] if not re.fullmatch(re.escape(self.region) + r"[a-z]", z)]
        if bad:
            raise field_error("availabilityZones", f"{', '.join(bad)} not in region {self.region}")
        if not 16 <= int(self.vpc_cidr.split("/")[1]) <= 20:
            raise field_error("vpcCidr", f"{self.vpc_cidr}: use a /16 to /20 (pods take VPC addresses)")
        reserved = self.capacity_type in ("reservation", "capacityBlock")
        if reserved and not self.capacity_reservations:
            raise field_error("capacityReservations", f"missing: capacityType {self.capacity_type} needs the "
                                                      f"reservation id per planned instance type")
        if self.capacity_reservations and not reserved:
            raise field_error("capacityType", f"is {self.capacity_type} but capacityReservations is set; use "
                                              f"reservation or capacityBlock, or remove capacityReservations")
        return self


class GcpSettings(_Base):
    """GKE Standard in one project: a regional control plane, GPU nodes in one zone (GPUDirect / RDMA
    networks and compact placement are zonal)."""
    project: str = Field(pattern=r"^[a-z][-a-z0-9]{4,28}[a-z0-9]$")
    region: str = Field(pattern=r"^[a-z]+-[a-z]+\d$")
    zone: str = Field(pattern=r"^[a-z]+-[a-z]+\d-[a-z]$")
    network: str | None = Field(None, description="existing VPC name; default: create one (with Cloud NAT)")
    subnetwork: str | None = Field(None, description="existing subnet in `region` of `network`")
    pods_range: str | None = Field(None, description="secondary range name of `subnetwork` for pods")
    services_range: str | None = Field(None, description="secondary range name of `subnetwork` for services")
    master_authorized_networks: list[str] = Field(
        default_factory=list, description="CIDRs that may reach the control plane (where `pulumi up` runs); "
                                          "empty (default): private endpoint only, as privateEndpoint")
    private_endpoint: bool = Field(False, description="control plane on an internal IP only (reach it over "
                                                      "VPN / Interconnect / a bastion in the VPC)")
    release_channel: Literal["RAPID", "REGULAR", "STABLE", "EXTENDED"] | None = Field(
        None, description="default: components/versions.py GKE_RELEASE_CHANNEL")
    system_machine_type: str = Field("e2-standard-8", pattern=r"^[a-z0-9]+-[a-z0-9-]+$",
                                     description="nodes for operators, Prometheus and the Ray heads")
    filestore_tier: Literal["BASIC_HDD", "BASIC_SSD", "ZONAL", "REGIONAL", "ENTERPRISE"] = Field(
        "BASIC_SSD", description="RWX model cache tier; read throughput per tier in "
                                 "components/cluster/gcp/filestore.py")
    spot: bool = Field(False, description="GPU nodes as Spot VMs (preemptible at 30 s notice)")
    reservation: str | None = Field(
        None, pattern=r"^(projects/[a-z][-a-z0-9]{4,28}[a-z0-9]/reservations/)?[a-z]([-a-z0-9]{0,61}[a-z0-9])?$",
        description="consume this specific reservation for the GPU nodes (NAME or "
                    "projects/PROJECT/reservations/NAME for a shared one)")

    @field_validator("master_authorized_networks")
    @classmethod
    def _cidrs(cls, v):
        import ipaddress

        bad = []
        for cidr in v:
            try:
                ipaddress.ip_network(cidr, strict=True)
            except ValueError:
                bad.append(cidr)
        if bad:
            raise ValueError(f"not a CIDR block: {', '.join(bad)}; e.g. 203.0.113.7/32")
        return v

    @model_validator(mode="after")
    def _zone_in_region(self):
        if not self.zone.startswith(self.region + "-"):
            raise field_error("zone", f"{self.zone} is not in region {self.region}")
        if self.subnetwork and not self.network:
            raise field_error("network", "missing: `subnetwork` is set, so name its VPC in `network`")
        if self.network and not (self.subnetwork and self.pods_range and self.services_range):
            raise field_error("subnetwork", "an existing `network` needs `subnetwork`, `podsRange` and "
                                            "`servicesRange` (the subnet and its secondary range names)")
        if self.spot and self.reservation:
            raise field_error("spot", "Spot VMs cannot consume a reservation; set `spot` or `reservation`")
        return self


class NodeTaint(_Base):
    key: str = Field(pattern=r"^([a-z0-9.-]+/)?[A-Za-z0-9_.-]+$")
    value: str = ""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] = "NoSchedule"


class GpuNodes(_Base):
    """The GPU nodes of a cluster we attach to, described so that the planner can size for them."""
    accelerator: str
    gpus_per_node: int = Field(ge=1, le=16)
    vcpu: int = Field(ge=2)
    ram_gib: float = Field(ge=8)
    fabric: Literal["none", "infiniband", "roce"] = "none"
    network_gbps: float = Field(400, gt=0, description="fabric bandwidth per node")
    node_selector: dict[str, str] = Field(default_factory=dict, description="labels that pick the GPU nodes")
    taints: list[NodeTaint] = Field(
        default_factory=lambda: [NodeTaint(key="nvidia.com/gpu", value="present", effect="NoSchedule")],
        description="taints the GPU nodes carry (serving pods and GPU DaemonSets tolerate them)")
    rdma_resource: str = Field(
        "rdma/rdma_shared_device_a", pattern=r"^[a-z0-9.-]+/[a-zA-Z0-9_.-]+$",
        description="(infiniband / roce) extended resource of the RDMA shared device plugin serving pods request")
    price_per_node_hour: float = Field(0.0, ge=0, description="for cost ranking; 0 = rank by GPU count")

    @field_validator("accelerator")
    @classmethod
    def _known(cls, v):
        if v not in ACCELERATORS:
            raise ValueError(f"unknown accelerator {v!r}; allowed: {', '.join(ACCELERATORS)}")
        return v



class ExistingSettings(_Base):
    context: str | None = Field(None, description="kubeconfig context (ambient kubeconfig when no `kubeconfig` secret)")
    gpu_nodes: GpuNodes


class ClusterSettings(_Base):
    name: str = Field("vllm", pattern=DNS_LABEL)
    # 1.33 left EKS standard support on 2026-07-29; GKE's REGULAR channel carries 1.34.
    kubernetes_version: str = Field("1.34", pattern=r"^1\.\d{2}$")


class Serving(_Base):
    """How the vLLM services are reached, scaled and watched (components/serving)."""
    allowed_namespaces: list[str] = Field(
        default_factory=list, description="namespaces whose pods may call the OpenAI API "
                                          "(besides the serving namespace itself and Prometheus)")
    waiting_per_replica: float | None = Field(
        None, gt=0, description="KEDA: add replicas when waiting requests per replica exceed this; "
                                "default: a tenth of the planned concurrency per replica")
    kv_cache_usage: float | None = Field(
        None, gt=0, lt=1, description="KEDA: add replicas when KV-cache usage (0-1) per replica exceeds this; "
                                      "default: 0.75 when the plan is KV-bound, else 0.9")
    scale_down_window_s: int = Field(600, ge=0, le=3600, description="HPA scale-down stabilization (seconds)")
    ray_image: str | None = Field(None, description="Ray Serve LLM image for multi-node replicas instead of the "
                                                    "pinned one (it must carry your fabric's NCCL transport)")

    @field_validator("allowed_namespaces")
    @classmethod
    def _namespace_names(cls, v):
        bad = [n for n in v if not re.fullmatch(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", n)]
        if bad:
            raise ValueError(f"not a namespace name: {', '.join(bad)}; lowercase letters, digits and '-'")
        return v

    @field_validator("ray_image")
    @classmethod
    def _pinned_image(cls, v):
        tag = v.rsplit("/", 1)[-1] if v else ""
        if v and ("@sha256:" not in v and (":" not in tag or tag.endswith(":latest"))):
            raise ValueError(f"{v!r} is not pinned; give a tag other than latest, or a digest")
        return v


class AddonSwitch(_Base):
    enabled: bool = Field(True, description="false: the cluster already runs it and the stack uses that one")


class GpuOperatorAddon(AddonSwitch):
    install_driver: bool | None = Field(
        None, description="(existing clusters) the operator installs the NVIDIA driver; default: only where "
                          "the node image carries none")


class PrometheusAddon(AddonSwitch):
    retention: str = Field("15d", pattern=r"^[1-9][0-9]*(h|d|w|y)$", description="how long metrics are kept")
    storage_gib: int = Field(50, ge=1, le=16384, description="Prometheus volume size")
    storage_class: str | None = Field(None, description="StorageClass of the Prometheus volume; default: "
                                                        "the cluster's default class")
    url: str | None = Field(None, pattern=r"^https?://[^\s/]+(/\S*)?$",
                            description="(enabled: false) the cluster's Prometheus, queried by KEDA")
    monitor_labels: dict[str, str] | None = Field(
        None, description="(enabled: false) labels the cluster's Prometheus selects ServiceMonitors, "
                          "PodMonitors and PrometheusRules by")

    @model_validator(mode="after")
    def _existing_prometheus(self):
        if not self.enabled and not self.url:
            raise field_error("url", "missing: with enabled: false, give the URL of the cluster's Prometheus "
                                     "(KEDA queries it), e.g. http://prometheus.monitoring.svc:9090")
        for key, value in (("url", self.url), ("monitorLabels", self.monitor_labels)):
            if self.enabled and value is not None:
                raise field_error(key, "only for an existing Prometheus (enabled: false); remove it")
        return self


class FabricAddon(AddonSwitch):
    rdma_interfaces: list[str] = Field(
        default_factory=list, description="(existing clusters, infiniband / roce) netdevs of the HCAs the RDMA "
                                          "device plugin exposes, e.g. [ibp24s0]; default: every NVIDIA NIC")


class Addons(_Base):
    """Cluster add-ons (components/addons). Switch one off where the cluster already runs it."""
    gpu_operator: GpuOperatorAddon = GpuOperatorAddon()
    kuberay: AddonSwitch = AddonSwitch()
    keda: AddonSwitch = AddonSwitch()
    prometheus: PrometheusAddon = PrometheusAddon()
    fabric: FabricAddon = Field(FabricAddon(), description="EFA device plugin, GKE GPUDirect NCCL installers, "
                                                           "NVIDIA Network Operator (InfiniBand / RoCE)")


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

    @property
    def production(self) -> bool:
        return self.environment == "prod"
