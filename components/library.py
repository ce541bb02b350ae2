"""Typed arguments of the package's entry points, for Python programs and for the component package.

`Platform` (components/platform.py) and `VllmService` (components/package.py) take these. They are
TypedDicts of plain, serializable values: a Python program builds them like any typed argument class
(`PlatformArgs(config=..., hf_token=...)`), and the component provider (provider/) receives exactly
these keys from a TypeScript, Go or YAML program (`pulumi package add`), its schema inferred from the
annotations and the docstrings below. See docs/library.md.
"""
from typing import Any, Optional, Required, TypedDict

import pulumi

from .config import ConfigError, LoadedConfig, StackConfig, parse
from .planner import NoFeasibleTopology, Topology


class PlatformArgs(TypedDict, total=False):
    """The inputs of a Platform: one stack's configuration and its secrets."""

    config: Required[dict[str, Any]]
    """The stack configuration: the keys a stack file sets under `vllm-platform:` (camelCase, without the
    prefix: cloud, environment, namespace, cluster, aws | gcp | existing, models, modelCache, addons,
    serving, gateway, charts, ...), validated by the same schema (docs in Pulumi.yaml and components/config/schema.py).
    Python programs may pass a validated StackConfig instead."""

    hf_token: Required[pulumi.Input[str]]
    """Hugging Face token for gated weights; pass it as a secret (pulumi.Output.secret / config.requireSecret)."""

    kubeconfig: Optional[pulumi.Input[str]]
    """(cloud existing) kubeconfig of the cluster, as a secret; the ambient kubeconfig when unset."""

    gateway_api_keys: Optional[pulumi.Input[dict[str, str]]]
    """The inference gateway's API keys, {client: key} with one key per config gateway.clients entry, as a
    secret (docs/gateway.md); required unless gateway.auth is none or the gateway is off (dev)."""

    chart_mirror_password: Optional[pulumi.Input[str]]
    """The password of config charts.username at the chart mirror config charts.mirror, as a secret
    (docs/addons.md, "Charts from a mirror"); required with charts.username, refused without it."""


class VllmServiceArgs(TypedDict, total=False):
    """The inputs of a VllmService: one model, served on GPU nodes of a cluster you already run."""

    model: Required[dict[str, Any]]
    """One model deployment, as an entry of a stack file's `models` list: name, model, precision,
    maxModelLen, sla {ttftMs, tpotMs, concurrency}, replicas {min, max}, ..."""

    gpu_nodes: Required[dict[str, Any]]
    """The cluster's GPU nodes, as a stack file's `existing.gpuNodes`: accelerator, gpusPerNode, vcpu,
    ramGib, fabric, nodeSelector, taints, ..."""

    namespace: Optional[str]
    """Kubernetes namespace of the service (default vllm)."""

    environment: Optional[str]
    """dev, staging or prod (default dev); prod spreads replicas and raises SLA alerts to critical."""

    model_cache: Optional[dict[str, Any]]
    """Where the weights are cached, as a stack file's `modelCache` (an rwx cache needs storageClass)."""

    addons: Optional[dict[str, Any]]
    """Which add-ons to install, as a stack file's `addons` (default: all of them, as a stack would)."""

    context: Optional[str]
    """A context of the kubeconfig."""

    block_storage_class: Optional[str]
    """A ReadWriteOnce StorageClass of the cluster for the claims the service makes (Prometheus when installed,
    the Ray GCS store in production), as a stack file's `existing.blockStorageClass`."""

    network_policy_enforced: Optional[bool]
    """Whether the cluster's CNI enforces NetworkPolicy (`existing.networkPolicyEnforced`); production
    requires it, since serving isolates tenants with a NetworkPolicy."""

    hf_token: Required[pulumi.Input[str]]
    """Hugging Face token for gated weights, as a secret."""

    kubeconfig: Optional[pulumi.Input[str]]
    """Kubeconfig of the cluster, as a secret; the ambient kubeconfig when unset."""

    gateway: Optional[dict[str, Any]]
    """The inference gateway, as a stack file's `gateway` (docs/gateway.md); on a cluster whose gateway another
    stack installed: {"install": false}."""

    gateway_api_keys: Optional[pulumi.Input[dict[str, str]]]
    """The inference gateway's API keys, {client: key} (one per gateway client, `default` unless configured),
    as a secret (docs/gateway.md)."""

    charts: Optional[dict[str, Any]]
    """Where every Helm chart comes from, as a stack file's `charts`: {mirror, username, caFile} (docs/addons.md,
    "Charts from a mirror"); each chart's own repository when unset."""

    chart_mirror_password: Optional[pulumi.Input[str]]
    """The password of charts.username at the chart mirror, as a secret."""


def _config(value: Any, secrets: set[str]) -> StackConfig:
    if isinstance(value, StackConfig):
        return value
    if not isinstance(value, dict):
        raise ConfigError([f"config: expected the stack configuration as an object, got {type(value).__name__}"])
    return parse(value, secrets=secrets)


def resolve(args: "PlatformArgs | LoadedConfig", topologies: Optional[dict[str, Topology]] = None
            ) -> tuple[LoadedConfig, dict[str, Topology]]:
    """Validated config and topology plan of a Platform's arguments; a bad value is a pulumi.RunError
    naming its field (no traceback), raised before any resource exists. The one validation pass: the
    schema (parse) and then every rule that needs the plan (wiring.validated_plan), every problem at once."""
    from .wiring import validated_plan

    try:
        if isinstance(args, LoadedConfig):
            loaded = args
        else:
            if not args.get("hf_token"):
                raise ConfigError(["hfToken: missing; pass the Hugging Face token (as a secret) in hf_token"])
            password = args.get("chart_mirror_password")
            secrets = {"hfToken", "chartMirrorPassword"} if password else {"hfToken"}
            loaded = LoadedConfig(_config(args.get("config"), secrets),
                                  pulumi.Output.secret(args["hf_token"]),
                                  pulumi.Output.secret(args["kubeconfig"]) if args.get("kubeconfig") else None,
                                  gateway_api_keys=pulumi.Output.secret(args["gateway_api_keys"])
                                  if args.get("gateway_api_keys") else None,
                                  chart_mirror_password=pulumi.Output.secret(password) if password else None)
        return loaded, validated_plan(loaded.config, topologies, loaded.provider_config)
    except (ConfigError, NoFeasibleTopology) as err:
        raise pulumi.RunError(str(err)) from err


def service_config(args: VllmServiceArgs) -> dict[str, Any]:
    """The stack configuration a VllmService stands for: an existing cluster serving one model."""
    existing: dict[str, Any] = {"gpuNodes": args.get("gpu_nodes")}
    for key, camel in (("context", "context"), ("block_storage_class", "blockStorageClass"),
                       ("network_policy_enforced", "networkPolicyEnforced")):
        if args.get(key) is not None:
            existing[camel] = args[key]
    config: dict[str, Any] = {"cloud": "existing", "existing": existing, "models": [args.get("model")]}
    for key, camel in (("namespace", "namespace"), ("environment", "environment"),
                       ("model_cache", "modelCache"), ("addons", "addons"), ("gateway", "gateway"),
                       ("charts", "charts")):
        if args.get(key) is not None:
            config[camel] = args[key]
    return config


def stack_output(ref: pulumi.StackReference, name: str) -> Any:
    """A plain value of another stack's output, for inputs that must be known before any resource exists
    (the sizing facts a workloads stack reads from its cluster stack: GPU nodes, StorageClass, Prometheus).
    Outputs that are only passed on (a kubeconfig) should stay Outputs: `ref.require_output(name)`."""
    from pulumi.runtime.sync_await import _sync_await

    details = _sync_await(ref.get_output_details(name))
    value = details.value if details.value is not None else details.secret_value
    if value is None:
        raise pulumi.RunError(f"stack {ref.name} has no output {name!r}: run `pulumi up` on it first")
    return value
