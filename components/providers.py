"""Cloud providers are built once, here, at the top of the program, from the stack config, and handed
to components through opts (children inherit them); reusable components never build their own.

An explicit provider does not read the stack's `aws:*` / `gcp:*` keys the way the default provider
does, so they are passed on here: `aws:profile`, `aws:assumeRoles`, `gcp:impersonateServiceAccount`...
configure the provider exactly as Pulumi documents them. The region / project / zone come from the
validated cloud block, which defaults from `aws:region`, `gcp:project`, `gcp:region` and `gcp:zone`
(components/config/load.py)."""
from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pulumi

from .config.load import ConfigError

if TYPE_CHECKING:
    from .config.schema import StackConfig

COMMON_TAGS = {"managed-by": "pulumi", "part-of": "vllm-platform"}


def _snake(key: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


def provider_kwargs(package: str, provider_args: type, settings: dict[str, Any], ours: dict[str, Any]) -> dict[str, Any]:
    """The provider's keyword arguments: the stack's `<package>:<key>` settings, then ours (region, tags)."""
    params = inspect.signature(provider_args.__init__).parameters
    kwargs, unknown = {}, []
    for key, value in sorted(settings.items()):
        if _snake(key) in params:
            kwargs[_snake(key)] = value
        else:
            unknown.append(f"{package}:{key}")
    if unknown:
        raise ConfigError([f"{key}: not a setting of the {package} provider" for key in unknown])
    return {**kwargs, **ours}


@dataclass(frozen=True)
class CloudProviderArgs:
    """What the explicit cloud provider is built from: the cloud, the stack's region / project / zone,
    the tags every resource carries, and the stack's own `aws:*` / `gcp:*` settings. Built by
    provider_args below from a StackConfig."""
    cloud: str
    tags: dict[str, str]
    region: str | None = None
    project: str | None = None  # gcp
    zone: str | None = None  # gcp
    settings: dict[str, dict[str, Any]] = field(default_factory=dict)


def provider_args(cfg: StackConfig, settings: dict[str, dict[str, Any]] | None = None) -> CloudProviderArgs:
    """The explicit cloud provider's arguments; `settings` are the stack's `aws:*` / `gcp:*` keys."""
    tags = {"environment": cfg.environment, "cluster": cfg.cluster.name}
    if cfg.cloud == "aws":
        return CloudProviderArgs("aws", tags, region=cfg.aws.region, settings=dict(settings or {}))
    if cfg.cloud == "gcp":
        g = cfg.gcp
        return CloudProviderArgs("gcp", tags, region=g.region, project=g.project, zone=g.zone,
                                 settings=dict(settings or {}))
    return CloudProviderArgs(cfg.cloud, tags, settings=dict(settings or {}))


def provider_opts(args: CloudProviderArgs) -> pulumi.ResourceOptions:
    """ResourceOptions carrying the cloud's explicit provider (none for an existing cluster)."""
    tags = {**COMMON_TAGS, **args.tags}
    if args.cloud == "aws":
        import pulumi_aws as aws
        user = args.settings.get("aws", {})
        user_tags = (user.get("defaultTags") or {}).get("tags", {}) if isinstance(user.get("defaultTags"), dict) else {}
        kwargs = provider_kwargs("aws", aws.ProviderArgs, user,
                                 {"region": args.region, "default_tags": {"tags": {**tags, **user_tags}}})
        return pulumi.ResourceOptions(providers={"aws": aws.Provider("aws", **kwargs)})
    if args.cloud == "gcp":
        import pulumi_gcp as gcp
        user = args.settings.get("gcp", {})
        user_labels = user.get("defaultLabels") if isinstance(user.get("defaultLabels"), dict) else {}
        kwargs = provider_kwargs("gcp", gcp.ProviderArgs, user,
                                 {"project": args.project, "region": args.region, "zone": args.zone,
                                  "default_labels": {**tags, **user_labels}})
        return pulumi.ResourceOptions(providers={"gcp": gcp.Provider("gcp", **kwargs)})
    return pulumi.ResourceOptions()


def cloud_provider_opts(cfg: StackConfig, settings: dict[str, dict[str, Any]] | None = None) -> pulumi.ResourceOptions:
    """The explicit provider of a stack configuration, as __main__.py builds it (provider_args)."""
    return provider_opts(provider_args(cfg, settings))
