"""The Redis behind the token quotas: Envoy Gateway's rate-limit service keeps its counters there
(components/gateway/quotas.py says what is counted; docs/token-quotas.md).

One in-memory pod in the gateway's namespace, password-protected (the password a Pulumi secret, in a Secret the
rate-limit container reads as REDIS_AUTH) and reachable only from the rate-limit pods. No volume and no
PodDisruptionBudget on purpose: a counter lives one minute, so a moved or restarted Redis forgets at most one
window, and the rate-limit service fails open meanwhile (quotas.rate_limit_config), which a drain should not wait
for. The pod itself is the GCS store's (components/kube/redis.py pod_spec: non-root, read-only root file system,
the config file from the Secret so the password is never on a command line), with an emptyDir for /data.
"""
from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from ..passwords import GeneratedPassword
from ..kube.redis import pod_spec
from .objects import NAMESPACE
from .quotas import (REDIS_CONFIG_KEY, REDIS_NAME, REDIS_PASSWORD_KEY, REDIS_PORT, REDIS_RESOURCES,
                     redis_conf, redis_network_policy_spec)

SELECTOR = {"app.kubernetes.io/name": REDIS_NAME, "app.kubernetes.io/component": "ratelimit-store"}


def deployment_spec(system_node_selector: dict[str, str]) -> dict:
    pod = pod_spec(system_node_selector)
    container = pod["containers"][0]
    container["resources"] = {"requests": dict(REDIS_RESOURCES), "limits": dict(REDIS_RESOURCES)}
    pod["volumes"] = [{"name": "config", "secret": {"secretName": REDIS_NAME, "defaultMode": 0o440}},
                      {"name": "data", "emptyDir": {}}]
    return {"replicas": 1, "selector": {"matchLabels": dict(SELECTOR)},
            # Recreate: one counter store at a time (two would split a window's counts)
            "strategy": {"type": "Recreate"},
            "template": {"metadata": {"labels": dict(SELECTOR)}, "spec": pod}}


def service_spec() -> dict:
    return {"type": "ClusterIP", "selector": dict(SELECTOR),
            "ports": [{"name": "redis", "port": REDIS_PORT, "targetPort": "redis", "protocol": "TCP"}]}


class QuotaStore(pulumi.ComponentResource):
    """Password Secret, Deployment, Service and NetworkPolicy of the rate-limit Redis."""

    def __init__(self, name: str, system_node_selector: dict[str, str], labels: dict[str, str],
                 opts: pulumi.ResourceOptions):
        super().__init__("vllm-platform:gateway:QuotaStore", name, None, opts)
        child = pulumi.ResourceOptions(parent=self, provider=opts.provider, depends_on=opts.depends_on)
        meta = {"name": REDIS_NAME, "namespace": NAMESPACE, "labels": {**labels, **SELECTOR}}
        # alphanumeric: envoyproxy/ratelimit would read a colon in REDIS_AUTH as user:password (quotas.py)
        password = GeneratedPassword(f"{name}-password", length=40, opts=pulumi.ResourceOptions(parent=self))
        self.secret = k8s.core.v1.Secret(
            f"{name}-secret", metadata=meta, type="Opaque",
            string_data={REDIS_PASSWORD_KEY: pulumi.Output.secret(password.result),
                         REDIS_CONFIG_KEY: pulumi.Output.secret(password.result.apply(redis_conf))}, opts=child)
        self.service = k8s.core.v1.Service(f"{name}-service", metadata=meta, spec=service_spec(), opts=child)
        self.network_policy = k8s.networking.v1.NetworkPolicy(
            f"{name}-netpol", metadata=meta, spec=redis_network_policy_spec(SELECTOR), opts=child)
        self.deployment = k8s.apps.v1.Deployment(
            f"{name}-deployment", metadata=meta, spec=deployment_spec(system_node_selector),
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[self.secret])))
        self.register_outputs({})
