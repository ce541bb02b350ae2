"""Cluster add-ons and serving settings."""
from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from .base import _Base, field_error


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
    # issue 39: what KEDA scales on (components/serving/autoscaling.py, docs/autoscaling.md)
    autoscaling: Literal["queue", "slo"] = Field(
        "queue", description="KEDA's signals per model (models[].replicas.autoscaling overrides): queue (waiting "
                             "requests and KV-cache usage per replica) or slo (also the requests in flight against "
                             "the planner's knee, and the SLA's TTFT / TPOT percentile measured by vLLM as a guard "
                             "that adds a replica while it is exceeded); P/D pools scale on their own role's signals "
                             "either way (docs/autoscaling.md)")
    scale_down_window_s: int = Field(600, ge=0, le=3600, description="HPA scale-down stabilization (seconds)")
    ray_image: str | None = Field(None, description="Ray Serve LLM image for multi-node replicas instead of the "
                                                    "pinned one (it must carry your fabric's NCCL transport)")
    # KubeRay v1.7.0's RayServiceUpgradeType values offered here (components/serving/upgrades.py)
    ray_upgrade_strategy: Literal["None", "NewCluster"] = Field(
        "None", description="how a RayService rolls a RayCluster spec change (a Ray image, resources): None "
                            "leaves it to a maintenance window; NewCluster brings up a second cluster beside the "
                            "first and switches to it, and the GPU pool's max grows to hold both (refused on an "
                            "existing cluster and on reserved capacity)")
    # issue 25: prefill/decode disaggregation (components/planner/disagg.py, docs/disaggregation.md)
    disaggregation: Literal["off", "auto", "on"] = Field(
        "off", description="prefill/decode disaggregation of single-node models (llm-d P/D over vLLM's "
                           "NixlConnector): off; auto (the planner picks P/D where it is cheaper per million "
                           "tokens); on (every model served P/D, refused where it cannot be)")

    # issue 25: the shape of a replica that spans nodes (components/serving/shape.py, docs/lws.md). New stacks get a
    # LeaderWorkerSet; a stack deployed with RayServices sets rayservice (switching replaces the fleet)
    multi_node: Literal["lws", "rayservice"] = Field(
        "lws", description="a replica that spans nodes: lws (a LeaderWorkerSet running vLLM's multiprocess "
                           "executor across nodes, the default) or rayservice (KubeRay RayService with Ray Serve "
                           "LLM); changing it on a deployed stack replaces that model's pods (UPGRADING.md)")

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
    gib_installer_digest: str | None = Field(
        None, pattern=r"^sha256:[0-9a-f]{64}$",
        description="(GKE A3 Ultra / A4) digest of the pinned gIB NCCL installer image (components/upstream/versions.py), "
                    "which runs privileged on the GPU nodes and is therefore pinned by digest: `gcloud artifacts "
                    "docker images describe IMAGE --format='value(image_summary.digest)'`")
    rdma_interfaces: list[str] = Field(
        default_factory=list, description="(existing clusters, infiniband / roce) netdevs of the HCAs the RDMA "
                                          "device plugin exposes, e.g. [ibp24s0]; default: every NVIDIA NIC")


class Addons(_Base):
    """Cluster add-ons (components/addons). Switch one off where the cluster already runs it."""
    gpu_operator: GpuOperatorAddon = GpuOperatorAddon()
    kuberay: AddonSwitch = AddonSwitch()
    lws: AddonSwitch = Field(AddonSwitch(), description="the LeaderWorkerSet controller (multi-node replicas with "
                                                        "serving.multiNode lws; components/addons/lws.py)")
    keda: AddonSwitch = AddonSwitch()
    prometheus: PrometheusAddon = PrometheusAddon()
    fabric: FabricAddon = Field(FabricAddon(), description="EFA device plugin, GKE GPUDirect NCCL installers, "
                                                           "NVIDIA Network Operator (InfiniBand / RoCE)")
