"""The Redis behind a production RayService's GCS fault tolerance, and the head's place in a drain.

Without it the Ray head is a single point of failure: the GCS keeps the cluster's state in memory, a head
restart makes every worker an "unknown worker" that the new head kills, and a 405B replica reloads its
weights from scratch. With `gcsFaultToleranceOptions` (KubeRay >= 1.3; field names from the v1.7.0 CRD in
schemas/crds/kuberay) the GCS writes its tables to this Redis; a new head reads them back and the workers,
which keep serving meanwhile, reconnect within RAY_gcs_rpc_server_reconnect_timeout_s.
Source: docs.ray.io cluster/kubernetes/user-guides/kuberay-gcs-ft.html and kuberay-gcs-persistent-ft.html
(KubeRay supports a standalone Redis only; persistence through an append-only file on a block volume).

Drains: a PodDisruptionBudget cannot protect the single head or the single Redis without blocking every
node drain forever (minAvailable 1 of 1), and a maxUnavailable budget does not work on pods a RayCluster
owns at all (no scale subresource: the disruption controller fails safe to "0 disruptions allowed"). So:
the node autoscalers never move either pod to consolidate nodes (the annotations below), an operator's
drain or a node upgrade may, and GCS fault tolerance makes that a short control-plane pause instead of
a reload.
"""
from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s
import pulumi_random as random

from ..versions import REDIS_IMAGE
from .pods import MODEL_LABEL, ROLE_LABEL, model_labels, selector

ROLE = "ray-gcs-store"
PORT = 6379
PASSWORD_KEY = "password"  # what gcsFaultToleranceOptions.redisPassword reads
CONFIG_KEY = "redis.conf"  # requirepass lives in the config file, never on a command line
CONFIG_DIR = "/etc/redis"
DATA_DIR = "/data"
REDIS_UID, REDIS_GID = 999, 1000  # the image's `redis` user and group
STORAGE_GIB = 10  # GCS tables of one cluster are megabytes; room for AOF rewrites
RESOURCES = {"cpu": "500m", "memory": "1Gi"}
# Pods the node autoscalers must not move to consolidate nodes (a drain still may): cluster-autoscaler's
# and Karpenter's documented opt-outs.
NO_CONSOLIDATION = {"cluster-autoscaler.kubernetes.io/safe-to-evict": "false", "karpenter.sh/do-not-disrupt": "true"}
HEAD_ROLE = "ray-head"


@dataclass(frozen=True)
class GcsStore:
    """Where a RayService's GCS persists: the Redis address and the Secret holding its password."""
    address: str
    secret: str
    password_key: str = PASSWORD_KEY


def store_name(model: str) -> str:
    return f"{model}-gcs-redis"


def gcs_store(model: str, namespace: str) -> GcsStore:
    return GcsStore(address=f"{store_name(model)}.{namespace}.svc.cluster.local:{PORT}", secret=store_name(model))


def redis_conf(password: str) -> str:
    return "\n".join([
        f"requirepass {password}",
        f"port {PORT}",
        f"dir {DATA_DIR}",
        # every write in the append-only file, flushed each second; RDB snapshots as a second copy
        "appendonly yes", "appendfsync everysec", "save 300 1",
        # the GCS must never lose a key to eviction: refuse writes instead, and say so in the logs
        "maxmemory 768mb", "maxmemory-policy noeviction",
    ]) + "\n"


def pod_spec(system_node_selector: dict[str, str]) -> dict:
    container = {
        "name": "redis", "image": REDIS_IMAGE,
        # straight to the server: the image's entrypoint would load every bundled module, which the GCS needs none of
        "command": ["redis-server", f"{CONFIG_DIR}/{CONFIG_KEY}"],
        "ports": [{"name": "redis", "containerPort": PORT, "protocol": "TCP"}],
        "resources": {"requests": dict(RESOURCES), "limits": dict(RESOURCES)},
        "volumeMounts": [{"name": "data", "mountPath": DATA_DIR},
                         {"name": "config", "mountPath": CONFIG_DIR, "readOnly": True}],
        "readinessProbe": {"tcpSocket": {"port": "redis"}, "periodSeconds": 5, "failureThreshold": 3},
        "livenessProbe": {"tcpSocket": {"port": "redis"}, "initialDelaySeconds": 30, "periodSeconds": 10,
                          "failureThreshold": 6},
        "securityContext": {"privileged": False, "allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                            "runAsNonRoot": True, "runAsUser": REDIS_UID, "runAsGroup": REDIS_GID,
                            "capabilities": {"drop": ["ALL"]}},
    }
    spec = {
        "enableServiceLinks": False, "automountServiceAccountToken": False,
        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}, "runAsNonRoot": True,
                            "fsGroup": REDIS_GID, "fsGroupChangePolicy": "OnRootMismatch"},
        "terminationGracePeriodSeconds": 30,
        "containers": [container],
        "volumes": [{"name": "config", "secret": {"secretName": "", "defaultMode": 0o440}}],
    }
    if system_node_selector:
        spec["nodeSelector"] = dict(system_node_selector)
    return spec


def statefulset_spec(model: str, labels: dict[str, str], system_node_selector: dict[str, str],
                     storage_class: str | None) -> dict:
    pod = pod_spec(system_node_selector)
    pod["volumes"][0]["secret"]["secretName"] = store_name(model)
    claim: dict = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": f"{STORAGE_GIB}Gi"}}}
    if storage_class:
        claim["storageClassName"] = storage_class
    return {
        "replicas": 1,  # KubeRay's GCS fault tolerance supports a standalone Redis only
        "serviceName": store_name(model),
        "selector": {"matchLabels": selector(model, ROLE)},
        "podManagementPolicy": "OrderedReady",
        "updateStrategy": {"type": "RollingUpdate"},
        # the claim outlives the StatefulSet (the default, spelled out): a replaced StatefulSet finds its data
        "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"},
        "template": {"metadata": {"labels": labels, "annotations": dict(NO_CONSOLIDATION)}, "spec": pod},
        "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": claim}],
    }


def service_spec(model: str) -> dict:
    return {"type": "ClusterIP", "selector": selector(model, ROLE),
            "ports": [{"name": "redis", "port": PORT, "targetPort": "redis", "protocol": "TCP"}]}


def network_policy_spec(model: str) -> dict:
    """Only the model's Ray head (and KubeRay's Redis clean-up Job, which runs from the head's pod template
    and so carries its labels) reaches the GCS store."""
    return {"podSelector": {"matchLabels": selector(model, ROLE)}, "policyTypes": ["Ingress"],
            "ingress": [{"from": [{"podSelector": {"matchLabels": {MODEL_LABEL: model, ROLE_LABEL: HEAD_ROLE}}}],
                         "ports": [{"port": PORT, "protocol": "TCP"}]}]}


class GcsRedis(pulumi.ComponentResource):
    """One Redis per production RayService: password Secret, StatefulSet with its volume, Service, NetworkPolicy."""

    def __init__(self, name: str, model: str, namespace: str, system_node_selector: dict[str, str],
                 storage_class: str | None, base_labels: dict[str, str], opts: pulumi.ResourceOptions):
        """opts: the Kubernetes provider and what must exist first (the namespace) pass on to every child."""
        super().__init__("vllm-platform:serving:GcsRedis", name, None, opts)
        child = pulumi.ResourceOptions(parent=self, provider=opts.provider, depends_on=opts.depends_on)
        labels = model_labels(model, ROLE, base_labels)
        meta = {"name": store_name(model), "namespace": namespace, "labels": labels}
        self.store = gcs_store(model, namespace)
        password = random.RandomPassword(f"{name}-password", length=40, special=False,
                                         opts=pulumi.ResourceOptions(parent=self))
        self.secret = k8s.core.v1.Secret(
            f"{name}-secret", metadata=meta, type="Opaque",
            string_data={PASSWORD_KEY: pulumi.Output.secret(password.result),
                         CONFIG_KEY: pulumi.Output.secret(password.result.apply(redis_conf))}, opts=child)
        self.service = k8s.core.v1.Service(f"{name}-service", metadata=meta, spec=service_spec(model), opts=child)
        self.network_policy = k8s.networking.v1.NetworkPolicy(
            f"{name}-netpol", metadata=meta, spec=network_policy_spec(model), opts=child)
        self.statefulset = k8s.apps.v1.StatefulSet(
            f"{name}-statefulset", metadata=meta,
            spec=statefulset_spec(model, labels, system_node_selector, storage_class),
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[self.secret, self.service])))
        self.register_outputs({"address": self.store.address})
