"""StackConfig -> the typed arguments of each component, and the one validation pass before any resource.

Every component takes arguments of its own, defined next to it (AwsClusterArgs, GcpClusterArgs,
ExistingClusterArgs, ModelCacheArgs, ServingArgs, CloudProviderArgs; the add-ons take the `addons` block);
none reads a StackConfig. This module (pure: it registers no resource) and components/platform.py are
the only readers of StackConfig besides the planner's input (components/planning.py). docs/library.md,
"How a component gets its arguments", says how a new component joins.

validated_plan() is the single validation pass: the schema has already run (config/load.py: every field,
the cross-field rules and the bounds the policy pack enforces, config/bounds.py); here every model is
planned (every refusal reported, not only the first) and the rules that need the plan run: the checks each
concern registers in config/problems.py (the cloud's pure checks, the model cache's weights sources, loader and
pinned revisions, where a model may scale to zero, ...), collected once in a fixed order (problems.ORDER), all
before the first resource, all at once, in one ConfigError.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from .cache.checks import pinned_revisions
from .cache.component import ModelCacheArgs
from .cache.sources import WeightsSource
from .cluster.charts import ChartMirror
from .cluster.existing import ExistingClusterArgs
from .cluster.pools import gpu_pool_specs, model_cache_gib
from .config import ConfigError, StackConfig
from .config.problems import PlanContext, collect
from .planner import NoFeasibleTopology, Topology
from .planning import INLINE_TEMPLATE_KEY, chat_template_config_map, no_fit, plan_models, weights_source
from .providers import CloudProviderArgs, provider_args  # noqa: F401  (provider_args: re-exported)
from .cluster.source_access import bucket_readers
from .config.gateway import prefix_routing
from .serving.service import ServingArgs
from .serving.shape import on_ray, ray_topologies
from .serving.upgrades import no_room, pool_surge
from .serving.profile import PROFILES_DIR, priority_class_name
from .profiling.plan import ProfilePlan, ProfileRefused, plan_profile, profile_candidates, FIX as PROFILE_FIX

# The modules whose plan checks register into config/problems.py, imported once here (the assembly layer, the only
# one above every concern that checks a plan): config.problems.ORDER fixes the order they report in.
from .cache import checks as _cache_checks  # noqa: F401  (registers cache.*)
from .cluster import checks as _cluster_checks  # noqa: F401  (registers cluster)
from .config import gateway as _gateway_checks  # noqa: F401  (registers gateway.production_tls)
from .config import token_quotas as _quota_checks  # noqa: F401  (registers gateway.quota_lora)
from .planner import checks as _planner_checks  # noqa: F401  (registers planner.*)
from .serving import checks as _serving_checks  # noqa: F401  (registers serving.*)
from .serving import prefix_routing as _prefix_checks  # noqa: F401  (registers gateway.prefix_routing)

PLAN_CHECK_MODULES = (_cluster_checks, _cache_checks, _serving_checks, _gateway_checks, _quota_checks,
                      _prefix_checks, _planner_checks)


def chart_mirror(cfg: StackConfig, password: Any = None) -> ChartMirror | None:
    """The stack's `charts` block as every Helm release reads it (components/cluster/charts.py chart_source); password: the
    secret chartMirrorPassword. None: each chart from its own repository."""
    c = cfg.charts
    if c.mirror is None:
        return None
    return ChartMirror(location=c.location, kind=c.kind, username=c.username,
                       password=password if c.username is not None else None, ca_file=c.ca_file)


def cluster_args(cfg: StackConfig, topologies: dict[str, Topology], kubeconfig: Any = None,
                 provider_config: dict[str, Any] | None = None, charts: ChartMirror | None = None):
    """AwsClusterArgs, GcpClusterArgs or ExistingClusterArgs for the configured cloud; charts: chart_mirror() (the
    EKS cluster installs the Cluster Autoscaler's chart)."""
    if cfg.cloud == "existing":
        return ExistingClusterArgs(existing=cfg.existing, cluster=cfg.cluster, model_cache=cfg.model_cache,
                                   topologies=dict(topologies), kubeconfig=kubeconfig)
    # serving.rayUpgradeStrategy NewCluster: room for a RayService's second cluster (serving/upgrades.py)
    surge = pool_surge(cfg.serving.ray_upgrade_strategy, ray_topologies(cfg.serving, topologies))
    for model, plan in profile_plans(cfg, topologies)[0].items():  # planning.profile: room for the Job's one node
        if plan.shapes:
            surge[model] = surge.get(model, 0) + 1
    pools = tuple(gpu_pool_specs(topologies, surge))
    readers = bucket_readers(cfg.namespace, model_sources(cfg).values())
    if cfg.cloud == "aws":
        from .cluster.aws.component import AwsClusterArgs, pool_models
        return AwsClusterArgs(aws=cfg.aws, pools=pools, pool_models=pool_models(topologies), cluster=cfg.cluster,
                              model_cache=cfg.model_cache, environment=cfg.environment,
                              provider_config=dict(provider_config or {}), bucket_readers=readers, charts=charts)
    from .cluster.gcp.component import GcpClusterArgs
    return GcpClusterArgs(gcp=cfg.gcp, pools=pools, cache_gib=model_cache_gib(cfg.model_cache.size_gib, topologies),
                          cluster=cfg.cluster, model_cache=cfg.model_cache, environment=cfg.environment,
                          bucket_readers=readers)


def model_sources(cfg: StackConfig) -> dict[str, WeightsSource]:
    """models[].source other than the Hub, by deployment name; an S3 source without a region reads the bucket in
    the stack's aws.region (else us-east-1)."""
    out = {}
    for dep in cfg.models:
        if dep.source.kind == "hf":
            continue
        src = weights_source(dep)
        if src.kind == "s3" and not src.region:
            src = replace(src, region=cfg.aws.region if cfg.aws is not None else "us-east-1")
        out[dep.name] = src
    return out


def cache_args(cfg: StackConfig, topologies: dict[str, Topology]) -> ModelCacheArgs:
    """The model cache's arguments; a CacheError when two deployments of one repository pin different revisions."""
    return ModelCacheArgs(namespace=cfg.namespace, model_cache=cfg.model_cache,
                          revisions=pinned_revisions(cfg.models, topologies), sources=model_sources(cfg))


def inline_chat_templates(cfg: StackConfig) -> dict[str, tuple[str, dict[str, str]]]:
    """models[].engine.chatTemplate.inline by deployment name: (the ConfigMap's name, its data)."""
    return {dep.name: (chat_template_config_map(dep.name), {INLINE_TEMPLATE_KEY: dep.engine.chat_template.inline})
            for dep in cfg.models if dep.engine.chat_template and dep.engine.chat_template.inline}


def upgrade_room(cfg: StackConfig) -> str | None:
    """Why this stack's GPU pools cannot hold a RayService's second cluster (serving/upgrades.no_room), or None."""
    return no_room(cfg.cloud, cfg.aws.capacity_type if cfg.aws else None, cfg.gcp.reservation if cfg.gcp else None)


def serving_args(cfg: StackConfig) -> ServingArgs:
    gw = cfg.gateway
    return ServingArgs(namespace=cfg.namespace, production=cfg.production, serving=cfg.serving, gateway=gw.enabled,
                       api_key_client=gw.client_names[0] if not gw.enabled and gw.auth == "apiKeys" else None,
                       new_cluster_blocked=upgrade_room(cfg),
                       autoscaling={dep.name: dep.replicas.autoscaling for dep in cfg.models
                                    if dep.replicas.autoscaling is not None})


def gateway_args(cfg: StackConfig, routes: list, facts: Any, api_keys: Any, monitor_labels: dict | None = None,
                 charts: ChartMirror | None = None, tls_pair: tuple[Any, Any] = (None, None)):
    """StackConfig.gateway -> GatewayArgs (also for a cluster stack that installs the gateway alone: routes=[]);
    facts: the cluster's ClusterFacts (its system node selector); api_keys: the secret gatewayApiKeys; charts:
    chart_mirror(), where the gateway's releases get their charts;
    monitor_labels: AddonsFacts.monitor_labels (the EPPs' ServiceMonitors)."""
    from .gateway import GatewayArgs
    gw = cfg.gateway
    return GatewayArgs(
        cloud=cfg.cloud, namespace=cfg.namespace, routes=routes, scheme=gw.scheme, auth=gw.auth == "apiKeys",
        clients=gw.client_names, priorities=gw.tenant_priorities, requests_per_second=gw.rate_limit.requests_per_second,
        concurrent_requests=gw.rate_limit.concurrent_requests, max_request_mib=gw.max_request_mib,
        request_timeout_s=gw.request_timeout_s, hostname=gw.hostname, source_ranges=list(gw.source_ranges),
        tls_mode=gw.tls.mode, tls_secret=gw.tls.secret_name, certificate_arn=gw.tls.certificate_arn,
        tls_certificate=tls_pair[0], tls_key=tls_pair[1],  # the secrets gatewayTlsCert / gatewayTlsKey
        system_node_selector=dict(facts.system_node_selector), api_keys=api_keys, install=gw.install,
        monitor_labels=dict(monitor_labels or {}),
        # production: no single Envoy proxy or endpoint picker whose drain takes a model's endpoint down
        proxy_replicas=2 if cfg.production else 1, epp_replicas=2 if cfg.production else 1,
        token_quotas=token_quotas(gw), charts=charts,
        platform_crd_groups=frozenset(facts.platform_crd_groups),
        precise_models=frozenset(d.name for d in cfg.models if prefix_routing(gw, d) == "precise"))


def token_quotas(gw: Any):
    """gateway.tokenQuotas -> the gateway's TokenQuotas: every client's budget by name (None: no quotas)."""
    from .gateway.quotas import TokenQuotas
    q = gw.token_quotas
    return None if q is None else TokenQuotas({c: q.budget(c) for c in gw.client_names}, q.counts)


def total_tokens_per_s(t: Topology) -> float:
    """Prompt + answer tokens/s one replica serves at its knee: its output tokens/s x (prompt + output) / output
    (capacity.py counts both at one request rate). From the output figure, which a P/D fleet's topology carries
    per instance (planner/disagg.py chosen_topology), where knee_total_tokens_per_s is the aggregated shape's."""
    if not t.output_tokens:
        return t.knee_total_tokens_per_s
    return t.knee_output_tokens_per_s * (t.prompt_tokens + t.output_tokens) / t.output_tokens


def model_routes(cfg: StackConfig, topologies: dict[str, Topology], cache: Any = None, node_ready_s: int = 0) -> list:
    """The gateway's route per model: an InferencePool over a single-node model's server pods, Ray Serve's
    Service for a multi-node one. A model that scales to zero (cache: its CacheFacts; node_ready_s:
    ClusterFacts.gpu_node_ready_s) carries its cold start: the EPP's queue TTL and the route's timeout."""
    from .gateway import ModelRoute
    from .planner.vllm_args import VLLM_PORT
    from .serving.cold_start import cold_start_seconds, first_request_timeout_s
    from .kube.pods import selector
    from .serving.runtime_lora import runtime_updates

    def wait(t: Topology) -> dict:
        if t.min_replicas != 0 or cache is None:
            return {}
        return {"cold_start_s": cold_start_seconds(t, cache, node_ready_s),
                "first_request_s": first_request_timeout_s(t, cache, node_ready_s)}
    # a LeaderWorkerSet's leaders serve the API as a Deployment's pods do (role server): the same InferencePool
    return [ModelRoute(t.served_model_name, cfg.namespace, on_ray(t, cfg.serving),
                       {} if on_ray(t, cfg.serving) else selector(t.served_model_name, "server"), VLLM_PORT, **wait(t),
                       max_concurrency=(t.max_replicas * t.concurrency_per_replica) or None,
                       lora=bool(t.engine and t.engine.options.lora), runtime_lora=runtime_updates(t),
                       disaggregated=t.disaggregated,
                       max_total_tokens_per_s=t.max_replicas * total_tokens_per_s(t),
                       max_output_tokens_per_s=t.max_replicas * t.knee_output_tokens_per_s)
            for t in topologies.values()]


def plan_context(cfg: StackConfig, topologies: dict[str, Topology],
                 provider_config: dict[str, dict[str, Any]] | None = None) -> PlanContext:
    """What the plan checks read (config/problems.py): the stack's blocks, the plan, the cloud's cluster arguments."""
    return PlanContext(cloud=cfg.cloud, environment=cfg.environment, production=cfg.production,
                       models=tuple(cfg.models), model_cache=cfg.model_cache, serving=cfg.serving,
                       gateway=cfg.gateway, aws=cfg.aws, gcp=cfg.gcp, topologies=topologies,
                       cluster=cluster_args(cfg, topologies, provider_config=(provider_config or {}).get("aws")))


def plan_problems(cfg: StackConfig, topologies: dict[str, Topology],
                  provider_config: dict[str, dict[str, Any]] | None = None) -> list[str]:
    """Every rule that needs the plan, as `field: problem` lines: every check registered in config/problems.py
    (the cloud's checks, the cache's, serving's, the gateway's, the planner's), in its ORDER."""
    return collect(plan_context(cfg, topologies, provider_config))


def profile_no_room(cfg: StackConfig) -> str | None:
    """Why the stack's GPU pools cannot take the profile Job's node (the rule upgrade_room applies for a
    RayService's second cluster), or None where the autoscaler can add it."""
    if upgrade_room(cfg) is None:
        return None
    if cfg.cloud == "existing":
        return "cloud existing: the stack does not size the cluster's GPU nodes"
    if cfg.cloud == "aws":
        return f"aws.capacityType {cfg.aws.capacity_type}: the reserved capacity holds no node more for the Job"
    return "gcp.reservation: the reservation holds no node more for the Job"


def profile_plans(cfg: StackConfig, topologies: dict[str, Topology]) -> tuple[dict[str, ProfilePlan], list[str]]:
    """planning.profile: what each profiled model's Job measures (components/profiling/plan.py), and the problems
    (`field: problem` lines) of the models it cannot profile or does not know."""
    p = cfg.planning.profile
    if not p.enabled:
        return {}, []
    if cfg.model_cache.kind == "nvme":  # the rows would sit on the node-local disk of a node the autoscaler removes
        return {}, ["planning.profile.enabled: true with modelCache.kind nvme: the Job writes its rows to the model "
                    "cache, here each node's local NVMe, which goes with the node (the profile's extra node is "
                    "removed once idle); set modelCache.kind: rwx (a shared file system the rows outlive the node "
                    "on), or planning.profile.enabled: false and measure with bench/bench_serve.py "
                    "(docs/measurements.md)"]
    from .planning import plan_request
    names = [d.name for d in cfg.models]
    problems = [f"planning.profile.models[{i}]: {n!r} is none of the stack's models ({', '.join(names)}); list "
                f"models[].name values" for i, n in enumerate(p.models or ()) if n not in names]
    plans = {}
    for i, dep in enumerate(cfg.models):
        t = topologies.get(dep.name)
        if t is None or not p.profiles(dep.name):
            continue
        try:
            plans[dep.name] = plan_profile(
                dep.name, t, profile_candidates(plan_request(cfg, dep)), count=p.candidates, max_minutes=p.max_minutes,
                max_minutes_per_shape=p.max_minutes_per_shape, out_dir=PROFILES_DIR,
                pinned_seqs=dep.engine.max_num_seqs, sized_pool=cfg.cloud != "existing",
                no_room=profile_no_room(cfg) or "", priority_class=priority_class_name(cfg.namespace))
        except ProfileRefused as e:
            problems.append(f"planning.profile: models[{i}] ({dep.name}) cannot be profiled: {e}; {PROFILE_FIX}")
    return plans, problems


class ValidatedPlan(dict):
    """A plan (deployment name -> Topology) validated_plan has checked: passed on, it is not checked again."""


def validated_plan(cfg: StackConfig, topologies: dict[str, Topology] | None = None,
                   provider_config: dict[str, dict[str, Any]] | None = None) -> dict[str, Topology]:
    """The plan of a parsed StackConfig (or `topologies`, a plan of the caller's own), once every rule that
    needs it holds. Raises ConfigError with every problem (plan refusals among them, as
    `models[i] (name): no topology fits: ...`) when a rule fails, else NoFeasibleTopology naming every
    model no topology fits."""
    if isinstance(topologies, ValidatedPlan):
        return topologies  # __main__.py validated it before building the provider; Platform takes it as it is
    refused: list[NoFeasibleTopology] = []
    if topologies is None:
        topologies, refused = plan_models(cfg)
    problems = plan_problems(cfg, topologies, provider_config) + profile_plans(cfg, topologies)[1]
    if problems:
        raise ConfigError(problems + [e.message.replace(": ", ": no topology fits: ", 1) for e in refused])
    if refused:
        raise no_fit(refused)
    return ValidatedPlan(topologies)
