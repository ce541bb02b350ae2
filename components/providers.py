"""Cloud providers are built once, here, from the stack config, and handed to components through opts."""
from __future__ import annotations

import pulumi

from .config.schema import StackConfig

COMMON_TAGS = {"managed-by": "pulumi", "part-of": "vllm-platform"}


def cloud_provider_opts(cfg: StackConfig) -> pulumi.ResourceOptions:
    tags = {**COMMON_TAGS, "environment": cfg.environment, "cluster": cfg.cluster.name}
    if cfg.cloud == "aws":
        import pulumi_aws as aws
        provider = aws.Provider("aws", region=cfg.aws.region, default_tags={"tags": tags})
        return pulumi.ResourceOptions(providers={"aws": provider})
    if cfg.cloud == "gcp":
        import pulumi_gcp as gcp
        provider = gcp.Provider("gcp", project=cfg.gcp.project, region=cfg.gcp.region, zone=cfg.gcp.zone,
                                default_labels=tags)
        return pulumi.ResourceOptions(providers={"gcp": provider})
    return pulumi.ResourceOptions()
