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
from typing import Any

import pulumi

from .config.load import ConfigError
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


def cloud_provider_opts(cfg: StackConfig, settings: dict[str, dict[str, Any]] | None = None) -> pulumi.ResourceOptions:
    """ResourceOptions carrying the cloud's explicit provider (none for an existing cluster)."""
    settings = settings or {}
    tags = {**COMMON_TAGS, "environment": cfg.environment, "cluster": cfg.cluster.name}
    if cfg.cloud == "aws":
        import pulumi_aws as aws
        user = settings.get("aws", {})
        user_tags = (user.get("defaultTags") or {}).get("tags", {}) if isinstance(user.get("defaultTags"), dict) else {}
        kwargs = provider_kwargs("aws", aws.ProviderArgs, user,
                                 {"region": cfg.aws.region, "default_tags": {"tags": {**tags, **user_tags}}})
        return pulumi.ResourceOptions(providers={"aws": aws.Provider("aws", **kwargs)})
    if cfg.cloud == "gcp":
        import pulumi_gcp as gcp
        user = settings.get("gcp", {})
        user_labels = user.get("defaultLabels") if isinstance(user.get("defaultLabels"), dict) else {}
        kwargs = provider_kwargs("gcp", gcp.ProviderArgs, user,
                                 {"project": cfg.gcp.project, "region": cfg.gcp.region, "zone": cfg.gcp.zone,
                                  "default_labels": {**tags, **user_labels}})
        return pulumi.ResourceOptions(providers={"gcp": gcp.Provider("gcp", **kwargs)})
    return pulumi.ResourceOptions()
