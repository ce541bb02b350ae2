"""VllmService: one model deployment, shaped entirely by its Topology.

single-node replica -> Deployment + KEDA ScaledObject + ServiceMonitor
multi-node replica  -> serving.multiNode (shape.py): a LeaderWorkerSet (vLLM's mp executor) + KEDA ScaledObject
                       + ServiceMonitor on its leaders (lws.py, the default), or a KubeRay RayService (Ray Serve
                       LLM; Serve + KubeRay autoscaling) + PodMonitor
every shape               -> ClusterIP endpoint named after the model, NetworkPolicy, PodDisruptionBudget,
                       PrometheusRule with the SLA alerts, Grafana dashboard ConfigMap
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

from ..cache.component import CacheFacts, as_run_error
from ..cluster.facts import AddonsFacts, ClusterFacts
from ..config.schema import Serving
from ..gateway.component import KEYS_SECRET
from ..gateway.objects import with_api_key
from ..planner import Topology
from ..planner.disagg import tcp_warning
from ..planner.vllm_args import VLLM_PORT
from ..upstream.versions import RAY_LLM_VLLM_VERSION, RAY_VERSION, VLLM_VERSION
from .autoscaling import (autoscaling_mode, plan_lines as autoscaling_lines, pool_scaled_object_spec,
                          scaled_object_spec, waiting_threshold)
from .cold_start import cold_start, cold_start_seconds, hold_warning
from ..gateway.wake import RETRY_AFTER_S, WAKE_HOLD_S, WAKE_STATUS
from .deployment import deployment_spec, drain_s, rollout_strategy, rollout_timeouts
from .disagg import DECODE, ROLES, deployment_name, role_deployment_spec
from .fabric import family, ray_image, vllm_image, vllm_image_text
from . import lws
from .network import lws_network_policy_spec, network_policy_spec, pdb_spec, service_spec
from .observability import dashboard_json, pod_monitor_spec, rules_spec, service_monitor_spec
from ..kube.k8s import sizing_annotations
from ..kube.pods import model_labels
from .rayservice import HEAD_RESOURCES, IN_PLACE, NEEDS_WINDOW, first_deploy_s, image_pin_note, rayservice_spec
from .shape import LWS, on_ray, shape
from .upgrades import upgrade_note
from .redis import GcsRedis
from .runtime_lora import lora_summary


@dataclass(frozen=True)
class ServingArgs:
    """What a VllmService reads besides its Topology and the cluster's facts: the stack's namespace, whether
    it is production (a Ray GCS store, critical alerts, the single-replica / unpinned warnings) and the
    `serving` settings. components/wiring.py builds it from a StackConfig; another program builds it
    directly. (The package entry point of the same name takes components.library.VllmServiceArgs.)"""
    namespace: str = "vllm"
    production: bool = False
    serving: Serving = field(default_factory=Serving)
    # The stack's inference gateway (components/gateway/): its Envoy proxies may call the API port
    gateway: bool = False
    # No gateway but API keys (dev, gateway.enabled false): vLLM checks this client's key itself (VLLM_API_KEY
    # from the gateway-api-keys Secret); None: vLLM takes every request the NetworkPolicy lets in
    api_key_client: str | None = None
    # Why the GPU pools cannot hold a second RayCluster (upgrades.no_room), None where they can
    new_cluster_blocked: str | None = None
    # models[].replicas.autoscaling by model name, where a model overrides serving.autoscaling (issue 39)
    autoscaling: dict[str, str] = field(default_factory=dict)

    def autoscaling_mode(self, model: str) -> str:
        return autoscaling_mode(self.serving, self.autoscaling.get(model))


def serving_images(args: ServingArgs, t: Topology) -> list[str]:
    """The images a model's GPU pods run (for the pre-pull DaemonSet)."""
    with as_run_error():
        return [ray_image(t, args.serving.ray_image)] if on_ray(t, args.serving) else [vllm_image(t)]


def image_line(args: ServingArgs, t: Topology) -> str:
    """The plan's line: the image the model's pods run, and why (fabric.py VLLM_IMAGES; the Ray image on RayServices)."""
    if not on_ray(t, args.serving):
        return vllm_image_text(t)
    image = ray_image(t, args.serving.ray_image)
    if args.serving.ray_image:
        why = "serving.rayImage" + (": on EFA it must carry libfabric's efa provider and aws-ofi-nccl, or NCCL falls "
                                    "back to TCP sockets" if family(t.cloud, t.fabric) == "efa" else "")
    else:
        why = f"the Ray Serve LLM image for fabric {t.fabric or 'none'} (fabric.py FABRICS)"
    return f"image: {image} ({why})"


def endpoint(model: str, namespace: str) -> str:
    return f"http://{model}.{namespace}.svc.cluster.local:{VLLM_PORT}/v1"


def nodes_for(t: Topology, replicas: int) -> int:
    """GPU nodes `replicas` replicas of t occupy (replicas per node, production spread, nodes per replica)."""
    return max(math.ceil(replicas / t.replicas_per_node), min(replicas, t.spread_nodes)) * t.nodes_per_replica


def second_replica(t: Topology) -> tuple[int, float]:
    """(extra GPU nodes, extra $/h) of running two replicas instead of one."""
    extra = nodes_for(t, 2) - nodes_for(t, 1)
    return extra, extra * t.price_per_node_hour


def engine_version_note(t: Topology) -> str | None:
    """A multi-node replica runs the Ray Serve LLM image and its own vLLM: what the stack sets beyond the plan's
    numbers was checked against vLLM 0.31 only."""
    o = t.engine.options if t.engine is not None else None
    set_ = o.summary() if o is not None else []
    if not set_:
        return None
    return (f"ENGINE VERSION: {t.served_model_name} runs multi-node on the Ray Serve LLM image (Ray {RAY_VERSION}), "
            f"which carries vLLM {RAY_LLM_VLLM_VERSION}, not {VLLM_VERSION.lstrip('v')}; its engine options "
            f"({'; '.join(set_)}) were checked against vLLM {VLLM_VERSION.lstrip('v')}'s parsers and flags only: "
            f"one that vLLM {RAY_LLM_VLLM_VERSION} lacks fails the Serve app at start (DEPLOY_FAILED)")


def serving_summary(args: ServingArgs, t: Topology, cache: CacheFacts, node_ready_s: int = 0) -> dict:
    """What the plan prints under each model: the start-up budget's terms, the rollout and drain, the wait
    of a first request after scaling to zero, and what a production reviewer must see (a single replica, an
    unpinned model). `node_ready_s`: ClusterFacts.gpu_node_ready_s."""
    b = cache.budget(t)
    out: dict = {"startup": {**b.terms(), "text": b.describe()}, "warnings": []}
    with as_run_error():
        out["image"] = image_line(args, t)
    if t.min_replicas == 0:
        c = cold_start(t, cache, node_ready_s)
        out["coldStart"] = {**c.terms(), "text": c.describe()}
        held = hold_warning(t.served_model_name, c.total_s)
        if held:
            out["warnings"].append(held)
            out["firstRequest"] = {"holdS": WAKE_HOLD_S, "status": WAKE_STATUS, "retryAfterS": RETRY_AFTER_S}
    out["shape"] = shape(t, args.serving)
    if not t.multi_node:
        out["rollout"] = rollout_strategy(t)["rollingUpdate"]
        out["drainS"] = drain_s(t)
    warn = out["warnings"]
    if out["shape"] == LWS:
        out["firstDeployS"] = lws.first_deploy_s(t, cache, node_ready_s)
        out["rollout"] = lws.rollout_strategy(t)["rollingUpdateConfiguration"]
        out["drainS"] = drain_s(t)
        out["recovery"] = {"detectS": (r := lws.recovery(t, cache)).detect_s, "teardownS": r.teardown_s,
                           "startupS": r.startup_s, "readinessS": r.readiness_s, "totalS": r.total_s}
        warn.append(lws.shape_note(t, f"{HEAD_RESOURCES['cpu']} CPU / {HEAD_RESOURCES['memory']}", cache))
        # what the leader really runs (mp executor, node ranks), not the planner's Ray form of the arguments
        out["serve"] = "vllm serve " + " ".join(lws.leader_args(t, cache)) + (
            f"  (workers: ... --headless --data-parallel-start-rank {lws.WORKER_INDEX} x {t.gpus_per_node})"
            if t.wide_ep else f"  (workers: --node-rank {lws.WORKER_INDEX} ... --headless)")
    if on_ray(t, args.serving):
        out["firstDeployS"] = first_deploy_s(t, cache, node_ready_s)
        warn.append(upgrade_note(t, args.serving.ray_upgrade_strategy, args.new_cluster_blocked, IN_PLACE,
                                 NEEDS_WINDOW))
        if (note := engine_version_note(t)):
            warn.append(note)
        image_note = image_pin_note(t.served_model_name, serving_images(args, t)[0]) if args.production else None
        if image_note:
            warn.append(image_note)
    if args.production and t.min_replicas == 1:
        nodes, cost = second_replica(t)
        price = (f"+${cost:,.2f}/h ({nodes} more GPU node(s))" if cost else
                 f"{nodes} more GPU node(s)" if nodes else "no extra node (it fits beside the first)")
        warn.append(f"SINGLE REPLICA in production: {t.served_model_name} runs 1 replica at its minimum, so a node "
                    f"failure, drain or rollout takes the endpoint down for a whole start-up ({b.total_s} s); "
                    f"replicas.min: 2 costs {price}")
    mode = args.autoscaling_mode(t.served_model_name)
    if not on_ray(t, args.serving):  # KEDA (a RayService scales through Ray Serve)
        out["autoscaling"] = {"mode": mode, "lines": autoscaling_lines(args.namespace, t, args.serving, mode)}
    elif mode == "slo":
        warn.append(f"NO SLO AUTOSCALING: {t.served_model_name} runs as a RayService, which Ray Serve scales on its "
                    f"own replicas' ongoing requests, not KEDA; autoscaling: slo does not apply to it")
    if t.disaggregated and args.production and t.disaggregation.prefill_max + t.disaggregation.decode_max \
            <= t.disaggregation.prefill_instances + t.disaggregation.decode_instances:
        warn.append(f"NO HEADROOM in production: {t.served_model_name}'s P/D pools run at replicas.max "
                    f"({t.max_replicas}) already: a spike above the declared load queues with nowhere to scale; "
                    f"raise replicas.max")
    elif not t.disaggregated and args.production and t.replicas >= t.max_replicas:
        warn.append(f"NO HEADROOM in production: {t.served_model_name} needs {t.replicas} replica(s) for the declared "
                    f"load, its replicas.max: a spike above it queues with nowhere to scale and the gateway refuses "
                    f"requests beyond {t.max_replicas} x {t.concurrency_per_replica}; raise replicas.max")
    if (tcp := tcp_warning(t)):
        warn.append(tcp)
    if t.moe and not t.knee_measured:  # a measured knee (planning.measurements) is no estimate
        warn.append(f"ESTIMATE: {t.served_model_name} is a mixture-of-experts model; published measurements ran up to "
                    f"3.7x slower per token than the capacity model estimates (Mixtral on vLLM's V0 engine), so its "
                    f"planning margin is the MoE rows' {t.latency_margin * 100:g} % (docs/capacity.md#known-gaps): "
                    f"measure its shapes (planning.profile, or bench/bench_serve.py) before trusting the knee")
    if (lora := lora_summary(t, cache.revision(t.model_repo))):  # engine.lora.runtimeUpdates (docs/lora.md)
        out["lora"] = lora
        if not lora["exactBase"]:
            warn.append(f"UNPINNED LoRA BASE: {t.served_model_name} resolves adapters whose adapter_config.json names "
                        f"the snapshot vLLM loaded ({lora['baseModel']}); a later cache fill of a new main commit "
                        f"moves it and published adapters stop resolving (404): set models[].revision")
    if args.production and not cache.revision(t.model_repo):
        warn.append(f"UNPINNED MODEL in production: {t.model_repo} is served at whatever its main branch was when "
                    f"the cache filled; set models[].revision to the commit you tested")
    return out


class VllmService(pulumi.ComponentResource):
    def __init__(self, name: str, args: ServingArgs, t: Topology, facts: ClusterFacts, addons: AddonsFacts,
                 cache: CacheFacts, labels: dict[str, str], depends_on: list | None = None,
                 opts: pulumi.ResourceOptions | None = None):
        """depends_on: what the pods need to exist first (namespace, HF token Secret, model cache)."""
        super().__init__("vllm-platform:serving:VllmService", name, None, opts)
        model, ns = t.served_model_name, args.namespace
        pool = facts.pool_for(t.instance_type)
        child = pulumi.ResourceOptions(parent=self, provider=facts.provider, depends_on=list(depends_on or []))

        def meta(obj_name: str, role: str, extra: dict | None = None, annotations: dict | None = None) -> dict:
            out = {"name": obj_name, "namespace": ns, "labels": {**model_labels(model, role, labels), **(extra or {})}}
            if annotations:
                out["annotations"] = annotations
            return out

        def needs(capability: str) -> pulumi.ResourceOptions:
            # a custom resource waits for the operator release that installs its CRD
            return pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=addons.depends(capability)))

        self.summary = serving_summary(args, t, cache, facts.gpu_node_ready_s)
        sized = sizing_annotations(t)  # knee source and latency margin: policy latency-margin-in-production
        kind = shape(t, args.serving)
        runtime = "ray" if on_ray(t, args.serving) else "vllm"
        if runtime == "ray":
            # production: the head's GCS persists in a Redis of its own (redis.py), so a head restart is no reload
            self.gcs_redis = GcsRedis(f"{name}-gcs", model, ns, facts.system_node_selector, facts.block_storage_class,
                                      labels, opts=child) if args.production else None
            with as_run_error():
                spec = rayservice_spec(model, t, pool, cache, ray_image(t, args.serving.ray_image),
                                       facts.system_node_selector, labels, serving=args.serving,
                                       gcs=self.gcs_redis.store if self.gcs_redis else None)
            self.workload = k8s.apiextensions.CustomResource(
                f"{name}-rayservice", api_version="ray.io/v1", kind="RayService", metadata=meta(model, "ray", annotations=sized),
                spec=spec, opts=pulumi.ResourceOptions.merge(needs("kuberay"), pulumi.ResourceOptions(
                    depends_on=[self.gcs_redis] if self.gcs_redis else [])))
            self.monitor = k8s.apiextensions.CustomResource(
                f"{name}-podmonitor", api_version="monitoring.coreos.com/v1", kind="PodMonitor",
                metadata=meta(model, "ray", addons.monitor_labels), spec=pod_monitor_spec(model),
                opts=needs("monitoring"))
        elif kind == LWS:  # issue 25: the leaders serve the API like a Deployment's pods (lws.py)
            with as_run_error():
                spec = lws.lws_spec(model, t, pool, cache, model_labels(model, lws.LEADER_ROLE, labels),
                                    model_labels(model, lws.WORKER_ROLE, labels))
            if args.api_key_client:  # issue 12: no gateway, the leader's vLLM checks the key
                with_api_key({"template": spec["leaderWorkerTemplate"]["leaderTemplate"]}, KEYS_SECRET,
                             args.api_key_client)
            self.workload = k8s.apiextensions.CustomResource(
                f"{name}-lws", api_version=lws.API_VERSION, kind=lws.KIND, metadata=meta(model, lws.LEADER_ROLE, annotations=sized),
                spec=spec, opts=pulumi.ResourceOptions.merge(needs("lws"), pulumi.ResourceOptions(
                    ignore_changes=["spec.replicas"])))  # KEDA owns the group count once the set exists
        elif t.disaggregated:  # P/D: a prefill and a decode Deployment, a ScaledObject each below (serving/disagg.py)
            create_s, update_s = rollout_timeouts(t, cache, facts.gpu_node_ready_s)
            self.roles = {role: k8s.apps.v1.Deployment(
                f"{name}-{role}-deployment", metadata=meta(deployment_name(model, role), "server", annotations=sized),
                spec=role_deployment_spec(model, t, role, pool, cache, model_labels(model, "server", labels),
                                          facts.gpu_node_ready_s),
                opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(
                    ignore_changes=["spec.replicas"],  # each pool's ScaledObject owns its count once it exists
                    custom_timeouts=pulumi.CustomTimeouts(create=f"{create_s}s", update=f"{update_s}s"))))
                for role in ROLES}
            self.workload = self.roles[DECODE]  # Service and ServiceMonitor below
            # issue 39: each pool its own ScaledObject, on its role's series and within the plan's bounds
            self.pool_scalers = {role: k8s.apiextensions.CustomResource(
                f"{name}-{role}-scaledobject", api_version="keda.sh/v1alpha1", kind="ScaledObject",
                metadata=meta(deployment_name(model, role), "server"),
                spec=pool_scaled_object_spec(deployment_name(model, role), ns, t, role, addons.prometheus_url,
                                             args.serving, args.autoscaling_mode(model)),
                opts=pulumi.ResourceOptions.merge(needs("keda"), pulumi.ResourceOptions(depends_on=[self.roles[role]])))
                for role in ROLES}
        else:
            create_s, update_s = rollout_timeouts(t, cache, facts.gpu_node_ready_s)
            spec = deployment_spec(model, t, pool, cache, model_labels(model, "server", labels), facts.gpu_node_ready_s)
            if args.api_key_client:  # issue 12: no gateway, vLLM checks the key
                spec = with_api_key(spec, KEYS_SECRET, args.api_key_client)
            self.workload = k8s.apps.v1.Deployment(
                f"{name}-deployment", metadata=meta(model, "server", annotations=sized),
                spec=spec,
                opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(
                    # KEDA owns the replica count once the Deployment exists
                    ignore_changes=["spec.replicas"],
                    custom_timeouts=pulumi.CustomTimeouts(create=f"{create_s}s", update=f"{update_s}s"))))
        if runtime == "vllm":  # a Deployment's pods or an LWS's leaders: one Service, KEDA, one ServiceMonitor
            self.service = k8s.core.v1.Service(f"{name}-service", metadata=meta(model, "server"),
                                               spec=service_spec(model), opts=child)
            self.scaler = None if t.disaggregated else k8s.apiextensions.CustomResource(
                f"{name}-scaledobject", api_version="keda.sh/v1alpha1", kind="ScaledObject",
                metadata=meta(model, "server"),
                spec=scaled_object_spec(model, ns, t, addons.prometheus_url, args.serving,
                                        target=lws.scale_target(model) if kind == LWS else None,
                                        cold_start_s=cold_start_seconds(t, cache, facts.gpu_node_ready_s),
                                        mode=args.autoscaling_mode(model)),
                opts=pulumi.ResourceOptions.merge(needs("keda"), pulumi.ResourceOptions(depends_on=[self.workload])))
            self.monitor = k8s.apiextensions.CustomResource(
                f"{name}-servicemonitor", api_version="monitoring.coreos.com/v1", kind="ServiceMonitor",
                metadata=meta(model, "server", addons.monitor_labels),
                spec=service_monitor_spec(model, roles=t.disaggregated),
                opts=needs("monitoring"))

        # precise prefix routing: the pickers dial the pods' KV-cache event socket (planner/engine_args.py KvEvents)
        kv_events = t.engine.options.kv_events if t.engine else None
        kv_port = kv_events.port if kv_events and args.gateway else None
        if kind == LWS:
            netpol = lws_network_policy_spec(model, args.serving.allowed_namespaces, addons.prometheus_namespace,
                                             gateway=args.gateway, kv_events_port=kv_port)
        else:
            netpol = network_policy_spec(model, t.multi_node, args.serving.allowed_namespaces,
                                         addons.prometheus_namespace, addons.kuberay_namespace, gateway=args.gateway,
                                         peers=t.disaggregated, kv_events_port=kv_port)
        self.network_policy = k8s.networking.v1.NetworkPolicy(
            f"{name}-netpol", metadata=meta(model, runtime), spec=netpol, opts=child)
        self.pdb = k8s.policy.v1.PodDisruptionBudget(
            f"{name}-pdb", metadata=meta(model, runtime),
            spec=lws.pdb_spec(model) if kind == LWS else pdb_spec(model, t), opts=child)
        severity = "critical" if args.production else "warning"
        self.rules = k8s.apiextensions.CustomResource(
            f"{name}-rules", api_version="monitoring.coreos.com/v1", kind="PrometheusRule",
            metadata=meta(f"{model}-sla", runtime, addons.monitor_labels),
            spec=rules_spec(t, ns, runtime, waiting_threshold(t, args.serving), severity,
                            startup_s=cache.budget(t).total_s,
                            cold_start_s=cold_start_seconds(t, cache, facts.gpu_node_ready_s)),
            opts=needs("monitoring"))
        key, value = addons.dashboard_label
        self.dashboard = k8s.core.v1.ConfigMap(
            f"{name}-dashboard", metadata=meta(f"{model}-dashboard", runtime, {key: value}),
            data={f"vllm-{model}.json": dashboard_json(t, ns, runtime)}, opts=child)
        self.endpoint = endpoint(model, ns)
        self.register_outputs({"endpoint": self.endpoint, "shape": "multi-node" if t.multi_node else "single-node",
                               "workload": kind})
