"""vllm-platform: stack config -> topology plan -> Platform. Everything else lives in components/."""
import pulumi

from components.catalog.tables import FIX, DataError  # reads no table: the catalog's names load on first use

# The catalog's data files are read on first use: by the imports below (instance types, accelerators, prices),
# the plan or the Platform. A malformed one fails the run with its file, line and column, like a config error.
try:
    from components.config import ConfigError, load_stack_config
    from components.planner import NoFeasibleTopology
    from components.outputs import gateway_outputs
    from components.platform import Platform
    from components.providers import cloud_provider_opts
    from components.wiring import validated_plan

    try:
        loaded = load_stack_config()
        topologies = validated_plan(loaded.config, provider_config=loaded.provider_config)  # every problem, at once
        providers = cloud_provider_opts(loaded.config, loaded.provider_config)  # aws:* / gcp:* honoured
    except (ConfigError, NoFeasibleTopology) as err:
        raise pulumi.RunError(str(err)) from err  # a clear message, no traceback

    platform = Platform("vllm", loaded, providers, topologies=topologies)
except DataError as err:
    raise pulumi.RunError(f"{err}\n{FIX}") from err  # a clear message, no traceback

# What a platform team reads with `pulumi stack output` (docs/outputs.md); a cloud's own keys only on it.
outputs = {
    "clusterName": platform.cluster_name,
    "apiEndpoint": platform.api_endpoint,
    "oidcIssuer": platform.oidc_issuer,  # EKS: IAM roles for service accounts
    "workloadIdentityPool": platform.workload_identity_pool,  # GKE
    "kubeconfig": platform.kubeconfig,  # a secret
    "grafana": platform.grafana,
    "namespace": loaded.config.namespace,
    "endpoints": platform.endpoints,
    "topology": platform.topology,
    "costPerHour": platform.cost_per_hour,
    "costPerHourMin": platform.cost_per_hour_min,  # every model at its min replicas
    "costPerHourMax": platform.cost_per_hour_max,  # every model at its max replicas
    "bill": platform.bill,  # control plane, system nodes, NAT, file storage, load balancer, total (aws, gcp)
    "serving": platform.serving,  # start-up budget terms, rollout, production warnings
    "gateway": gateway_outputs(platform.gateway),  # URL per model through the authenticated gateway
    "apiUrl": platform.gateway.url if platform.gateway else None,  # one OpenAI URL, model by the body's `model`
}
for key, value in outputs.items():
    if value is not None:
        pulumi.export(key, value)
