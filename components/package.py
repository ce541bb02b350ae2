"""The Pulumi component package: what `pulumi package add` exposes to TypeScript, Go, YAML, C# and
Python programs. provider/__main__.py hosts these with pulumi.provider.experimental, which infers the
schema from the annotations (PlatformArgs, VllmServiceArgs in components/library.py) and docstrings.

- Platform: a whole fleet from one configuration (components/platform.py).
- VllmService: one model on a cluster you already run: a Platform on that cluster with that one model
  (its add-ons, model cache and serving), for teams whose cluster comes from elsewhere.

No `from __future__ import annotations`: the annotations are read at run time.
"""
from typing import Any, Optional

import pulumi

from . import __version__
from .library import PlatformArgs, VllmServiceArgs, service_config
from .platform import Platform

PACKAGE = "vllm-platform"
VERSION = __version__


class VllmService(pulumi.ComponentResource):
    """One open-weight model behind an OpenAI-compatible endpoint on GPU nodes of a cluster you already run:
    sized for its SLA (tensor / pipeline parallelism, KV cache, replicas), autoscaled by KEDA or Ray Serve,
    observed by Prometheus with SLA alerts and a Grafana dashboard."""

    endpoint: pulumi.Output[str]
    """In-cluster OpenAI-compatible base URL, http://MODEL.NAMESPACE.svc.cluster.local:8000/v1."""
    topology: pulumi.Output[dict[str, Any]]
    """The plan: parallelism, replicas, vLLM flags, KV cache, estimated latency."""
    grafana: Optional[pulumi.Output[dict[str, str]]]
    """Grafana's in-cluster URL, a port-forward command and the admin Secret (when the add-on is installed)."""

    def __init__(self, name: str, args: VllmServiceArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__(f"{PACKAGE}:index:VllmService", name, None, opts)
        platform = Platform(name, PlatformArgs(config=service_config(args), hf_token=args.get("hf_token"),
                                               kubeconfig=args.get("kubeconfig"),
                                               gateway_api_keys=args.get("gateway_api_keys"),
                                               chart_mirror_password=args.get("chart_mirror_password")),
                            opts=pulumi.ResourceOptions(parent=self))
        [(_, self.endpoint)] = platform.endpoints.items()
        [(_, self.topology)] = platform.topology.items()
        self.grafana = platform.grafana
        self.register_outputs({"endpoint": self.endpoint})


COMPONENTS = [Platform, VllmService]
