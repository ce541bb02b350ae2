"""The top-level component: wires cluster, add-ons, model cache and serving from the plan."""
from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from .cluster.facts import AddonsFacts, ClusterFacts
from .config import LoadedConfig
from .planner import Topology

PART_OF = {"app.kubernetes.io/part-of": "vllm-platform", "app.kubernetes.io/managed-by": "pulumi"}


def _cluster(name: str, loaded: LoadedConfig, topologies: dict[str, Topology],
             opts: pulumi.ResourceOptions) -> ClusterFacts:
    """The cluster component for the configured cloud; all of them hand back ClusterFacts."""
    cfg = loaded.config
    if cfg.cloud == "existing":
        from .cluster.existing import ExistingCluster
        return ExistingCluster(name, cfg, topologies, loaded.kubeconfig, opts).facts
    if cfg.cloud == "aws":
        from .cluster.aws import AwsGpuCluster
        return AwsGpuCluster(name, cfg, topologies, opts).facts
    from .cluster.gcp import GcpGpuCluster
    return GcpGpuCluster(name, cfg, topologies, opts).facts


class Platform(pulumi.ComponentResource):
    """One stack's whole fleet: a cluster (new or existing) and one vLLM service per model."""

    def __init__(self, name: str, loaded: LoadedConfig, topologies: dict[str, Topology],
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__("vllm-platform:index:Platform", name, None, opts)
        cfg = loaded.config
        child = pulumi.ResourceOptions(parent=self)
        self.facts = _cluster(f"{name}-cluster", loaded, topologies, child)
        k8s_opts = pulumi.ResourceOptions(parent=self, provider=self.facts.provider,
                                          depends_on=self.facts.depends_on)
        labels = {**PART_OF, "vllm-platform/environment": cfg.environment}
        self.namespace = k8s.core.v1.Namespace(
            f"{name}-ns", metadata={"name": cfg.namespace, "labels": labels}, opts=k8s_opts)
        ns_opts = pulumi.ResourceOptions.merge(k8s_opts, pulumi.ResourceOptions(depends_on=[self.namespace]))
        # The token only ever travels as a Pulumi secret into this Secret; pods read it by reference.
        self.hf_secret = k8s.core.v1.Secret(
            f"{name}-hf-token",
            metadata={"name": "hf-token", "namespace": cfg.namespace, "labels": labels},
            type="Opaque", string_data={"HF_TOKEN": loaded.hf_token}, opts=ns_opts)
        # --- add-ons (issue 4): ClusterAddons -> self.addons: AddonsFacts ---
        from .addons import ClusterAddons
        self.addons: AddonsFacts = ClusterAddons(f"{name}-addons", self.facts, cfg.addons, opts=child).facts
        # --- model cache and serving (issue 3): ModelCache + one VllmService per topology ---
        from .cache import ModelCache
        from .serving.service import VllmService, serving_images
        images: dict[str, list[str]] = {}
        for t in topologies.values():
            images.setdefault(t.instance_type, []).extend(serving_images(cfg, t))
        pods_need = [*self.facts.depends_on, self.namespace, self.hf_secret]
        self.cache = ModelCache(f"{name}-cache", cfg, topologies, self.facts, images, labels,
                                depends_on=pods_need, opts=child)
        self.services = {
            model: VllmService(f"{name}-{model}", cfg, t, self.facts, self.addons, self.cache.facts, labels,
                               # the pre-pull DaemonSets (awaited) first: a new image is on the nodes
                               # before the serving pods that need it roll
                               depends_on=[*pods_need, self.cache, *self.cache.prepull], opts=child)
            for model, t in topologies.items()}
        self.endpoints = {model: s.endpoint for model, s in self.services.items()}
        self.serving = {model: s.summary for model, s in self.services.items()}
        self.kubeconfig = self.facts.kubeconfig
        self.topologies = topologies
        self.register_outputs({"namespace": cfg.namespace})
