"""The top-level component: wires cluster, add-ons, model cache and serving from the plan.

The only component that reads a StackConfig: components/wiring.py turns it (and the plan) into each
child's own arguments, after the one validation pass (library.resolve -> wiring.validated_plan).

No `from __future__ import annotations` here: the component provider (provider/, components/package.py)
infers Platform's schema from its annotations at run time, so they must be real types.
"""
from typing import Any, Optional

import pulumi
import pulumi_kubernetes as k8s

from .cluster.facts import AddonsFacts
from .config import LoadedConfig
from .library import PlatformArgs, resolve
from .outputs import cluster_outputs, grafana
from .planner import Topology
from .wiring import (cache_args, chart_mirror, cluster_args, gateway_args, inline_chat_templates, model_routes,
                     serving_args)

PART_OF = {"app.kubernetes.io/part-of": "vllm-platform", "app.kubernetes.io/managed-by": "pulumi"}


def cluster_component(name: str, loaded: LoadedConfig, topologies: dict[str, Topology],
                      opts: pulumi.ResourceOptions) -> pulumi.ComponentResource:
    """The cluster component for the configured cloud; all of them carry `.facts` (ClusterFacts)."""
    cfg = loaded.config
    args = cluster_args(cfg, topologies, kubeconfig=loaded.kubeconfig,
                        provider_config=loaded.provider_config.get("aws"),
                        charts=chart_mirror(cfg, loaded.chart_mirror_password))
    if cfg.cloud == "existing":
        from .cluster.existing import ExistingCluster
        return ExistingCluster(name, args, opts)
    if cfg.cloud == "aws":
        from .cluster.aws import AwsGpuCluster
        return AwsGpuCluster(name, args, opts)
    from .cluster.gcp import GcpGpuCluster
    return GcpGpuCluster(name, args, opts)


def _cluster(name: str, loaded: LoadedConfig, topologies: dict[str, Topology], opts: pulumi.ResourceOptions):
    """The cluster component's ClusterFacts."""
    return cluster_component(name, loaded, topologies, opts).facts


def _gateway(name: str, loaded: LoadedConfig, topologies: dict[str, Topology], facts, addons: AddonsFacts,
             cache, after: list, child: pulumi.ResourceOptions):
    """The gateway from the stack's `gateway:` block (components/config/gateway.py); `after`: what it waits for
    (the namespace, the load balancer controller)."""
    from .gateway import InferenceGateway
    from .gateway.component import api_key_secret
    cfg, gw = loaded.config, loaded.config.gateway
    if not gw.enabled:  # dev without a gateway: vLLM checks the key itself (VLLM_API_KEY from this Secret)
        if gw.auth == "apiKeys":
            api_key_secret(f"{name}-api-keys", cfg.namespace, loaded.gateway_api_keys, gw.client_names,
                           pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(
                               provider=facts.provider, depends_on=[*facts.depends_on, *after])))
        return None
    args = gateway_args(cfg, model_routes(cfg, topologies, cache, facts.gpu_node_ready_s), facts,
                        loaded.gateway_api_keys, addons.monitor_labels,
                        charts=chart_mirror(cfg, loaded.chart_mirror_password),
                        tls_pair=(loaded.gateway_tls_cert, loaded.gateway_tls_key))
    # no model's serving workload: a model without GPUs must not hold back the others' routes nor the shared URL
    return InferenceGateway(f"{name}-gateway", args, facts.provider, depends_on=[*facts.depends_on, *after],
                            opts=child)


class Platform(pulumi.ComponentResource):
    """One stack's whole fleet: a cluster (new EKS / GKE, or one you already run) with its GPU node pools,
    the add-ons (GPU Operator, KubeRay, KEDA, kube-prometheus-stack, fabric), the model cache, and one
    sized, autoscaled vLLM service per model of the configuration.

    Python:  Platform("vllm", PlatformArgs(config={...}, hf_token=secret), opts=ResourceOptions(providers=...))
    The cloud provider (aws / gcp) comes in through opts and every child inherits it; the topology is
    planned from the config unless `topologies` is given. See docs/library.md.
    """

    endpoints: pulumi.Output[dict[str, str]]
    """In-cluster OpenAI-compatible base URL per model name."""
    api_endpoints: pulumi.Output[dict[str, str]]
    """The gateway's authenticated OpenAI-compatible base URL per model name (docs/gateway.md)."""
    topology: pulumi.Output[dict[str, Any]]
    """The plan per model: instance type, parallelism, replicas, vLLM flags, KV cache, cost."""
    cost_per_hour: pulumi.Output[float]
    """Price of the planned GPU nodes at their planned replica count, $/hour, at the stack's region and
    capacity type (components/catalog/prices.py)."""
    cost_per_hour_min: pulumi.Output[float]
    """The same with every model at its minimum replicas."""
    cost_per_hour_max: pulumi.Output[float]
    """The same with every model at its maximum replicas."""
    bill: Optional[pulumi.Output[dict[str, Any]]]
    """(EKS / GKE) the whole bill beside the GPU nodes: control plane, system nodes, NAT, file storage, load
    balancer, each with its price source and read date, and the total (components/costs/bill.py)."""
    cluster_name: pulumi.Output[str]
    """Name of the Kubernetes cluster."""
    api_endpoint: Optional[pulumi.Output[str]]
    """The cluster's API server URL (EKS / GKE; none for an existing cluster)."""
    oidc_issuer: Optional[pulumi.Output[str]]
    """(EKS) OIDC issuer URL, for IAM roles for service accounts."""
    workload_identity_pool: Optional[pulumi.Output[str]]
    """(GKE) workload identity pool, PROJECT.svc.id.goog."""
    kubeconfig: Optional[pulumi.Output[str]]
    """Kubeconfig of the cluster (a secret)."""
    grafana: Optional[pulumi.Output[dict[str, str]]]
    """Grafana's in-cluster URL, a port-forward command and the admin Secret (when this stack installs it)."""

    def __init__(self, name: str, args: PlatformArgs, opts: Optional[pulumi.ResourceOptions] = None, *,
                 topologies: Optional[dict[str, Topology]] = None):
        loaded, topologies = resolve(args, topologies)
        super().__init__("vllm-platform:index:Platform", name, None, opts)
        cfg = loaded.config
        child = pulumi.ResourceOptions(parent=self)
        self.cluster = cluster_component(f"{name}-cluster", loaded, topologies, child)
        self.facts = self.cluster.facts
        k8s_opts = pulumi.ResourceOptions(parent=self, provider=self.facts.provider,
                                          depends_on=self.facts.depends_on)
        labels = {**PART_OF, "vllm-platform/environment": cfg.environment}
        self.namespace = k8s.core.v1.Namespace(
            f"{name}-ns", metadata={"name": cfg.namespace, "labels": labels}, opts=k8s_opts)
        ns_opts = pulumi.ResourceOptions.merge(k8s_opts, pulumi.ResourceOptions(depends_on=[self.namespace]))
        # The token only ever travels as a Pulumi secret into this Secret; pods read it by reference.
        # hfToken is optional (only gated repositories need it, config/load.py): without one the Secret holds an
        # empty HF_TOKEN, which huggingface_hub reads as no token (anonymous downloads)
        self.hf_secret = k8s.core.v1.Secret(
            f"{name}-hf-token",
            metadata={"name": "hf-token", "namespace": cfg.namespace, "labels": labels},
            type="Opaque", string_data={"HF_TOKEN": loaded.hf_token if loaded.hf_token is not None else ""},
            opts=ns_opts)
        # models[].engine.chatTemplate given inline: a ConfigMap the serving pods mount (planning.engine_options)
        self.chat_templates = [k8s.core.v1.ConfigMap(
            f"{name}-{model}-chat-template", metadata={"name": cm, "namespace": cfg.namespace, "labels": labels},
            data=data, opts=ns_opts) for model, (cm, data) in inline_chat_templates(cfg).items()]
        # --- add-ons (issue 4): ClusterAddons -> self.addons: AddonsFacts ---
        from .addons import ClusterAddons
        self.addons: AddonsFacts = ClusterAddons(f"{name}-addons", self.facts, cfg.addons, opts=child,
                                                 heartbeat_url=loaded.heartbeat_url,
                                                 charts=chart_mirror(cfg, loaded.chart_mirror_password)).facts
        # --- model cache and serving (issue 3): ModelCache + one VllmService per topology ---
        from .cache.component import ModelCache
        from .serving.service import VllmService, serving_images
        serving = serving_args(cfg)
        images: dict[str, list[str]] = {}
        for t in topologies.values():
            images.setdefault(t.instance_type, []).extend(serving_images(serving, t))
        pods_need = [*self.facts.depends_on, self.namespace, self.hf_secret, *self.chat_templates]
        self.cache = ModelCache(f"{name}-cache", cache_args(cfg, topologies), topologies, self.facts, images,
                                labels, depends_on=pods_need, opts=child)
        self.services = {
            model: VllmService(f"{name}-{model}", serving, t, self.facts, self.addons, self.cache.facts, labels,
                               # the pre-pull DaemonSets (awaited) first: a new image is on the nodes
                               # before the serving pods that need it roll
                               depends_on=[*pods_need, self.cache, *self.cache.prepull], opts=child)
            for model, t in topologies.items()}
        self.endpoints = {model: s.endpoint for model, s in self.services.items()}
        # --- planning.profile: a Job per model measuring its candidate shapes on its GPU pool (serving/profile.py) ---
        from .serving.profile import ProfileJob, ProfilePriorityClass
        from .wiring import profile_plans
        self.profiles = {}
        profile_plan = profile_plans(cfg, topologies)[0]
        # the profile pods' PriorityClass (below the serving pods, never preempting): one per stack, with the Jobs
        self.profile_priority = ProfilePriorityClass(
            f"{name}-profile-priority", cfg.namespace, labels, provider=self.facts.provider,
            depends_on=list(self.facts.depends_on), opts=child,
        ) if any(p.shapes for p in profile_plan.values()) else None
        for model, plan in profile_plan.items():
            for line in plan.lines():  # GPU hours spent by `pulumi up`: shown before it runs (and by `plan`)
                pulumi.log.warn(line, self)
            if plan.shapes:
                t = topologies[model]
                self.profiles[model] = ProfileJob(
                    f"{name}-{model}-profile", plan, t, cfg.namespace, self.facts.pool_for(t.instance_type),
                    self.cache.facts, labels, provider=self.facts.provider,
                    depends_on=[*pods_need, self.cache, *self.cache.prepull, self.profile_priority], opts=child)
        # --- inference gateway (issue 12): StackConfig.gateway -> GatewayArgs -> InferenceGateway ---
        # EKS: after the AWS Load Balancer Controller, which turns the gateway's LoadBalancer Service into an NLB;
        # after the ServiceMonitor CRD (the EPP charts make one each)
        self.gateway = _gateway(name, loaded, topologies, self.facts, self.addons, self.cache.facts,
                                [self.namespace, *self.addons.depends("load-balancer"),
                                 *self.addons.depends("monitoring")], child)
        self.api_endpoints = self.gateway.endpoints if self.gateway else {}
        # --- end inference gateway ---
        self.serving = {model: s.summary for model, s in self.services.items()}
        self.kubeconfig = pulumi.Output.secret(self.facts.kubeconfig) if self.facts.kubeconfig is not None else None
        self.topologies = topologies
        self.topology = {model: t.to_dict() for model, t in topologies.items()}
        self.cost_per_hour = round(sum(t.cost_billed_per_hour for t in topologies.values()), 2)
        self.cost_per_hour_min = round(sum(t.cost_min_per_hour for t in topologies.values()), 2)
        self.cost_per_hour_max = round(sum(t.cost_max_per_hour for t in topologies.values()), 2)
        # the whole bill beside the GPU nodes (components/costs/bill.py); None on an existing cluster (no cloud bill)
        from .costs.bill import stack_bill
        bill = stack_bill(cfg, topologies)
        self.bill = bill.to_dict() if bill else None
        identity = cluster_outputs(self.cluster)
        self.cluster_name = identity["cluster_name"]
        self.api_endpoint = identity["api_endpoint"]
        self.oidc_issuer = identity["oidc_issuer"]
        self.workload_identity_pool = identity["workload_identity_pool"]
        self.grafana = grafana(cfg.addons.prometheus)
        self.register_outputs({"namespace": cfg.namespace, "endpoints": self.endpoints,
                               "apiEndpoints": self.api_endpoints,
                               "clusterName": self.cluster_name})
