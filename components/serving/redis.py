"""The Redis behind a production RayService's GCS fault tolerance, and the head's place in a drain.

Without it the Ray head is a single point of failure: the GCS keeps the cluster's state in memory, a head
restart makes every worker an "unknown worker" that the new head kills, and a 405B replica reloads its
weights from scratch. With `gcsFaultToleranceOptions` (KubeRay >= 1.3; field names from the v1.7.0 CRD in
schemas/crds/kuberay) the GCS writes its tables to this Redis; a new head reads them back and the workers,
which keep serving meanwhile, reconnect within RAY_gcs_rpc_server_reconnect_timeout_s.
Source: docs.ray.io cluster/kubernetes/user-guides/kuberay-gcs-ft.html and kuberay-gcs-persistent-ft.html
(KubeRay supports a standalone Redis only; persistence through an append-only file on a block volume).

Drains: the head and the Redis are single pods, so each has a PodDisruptionBudget of `minAvailable: 1`
(an integer minAvailable is the only form the disruption controller evaluates on pods without a scale
subresource, which a RayCluster's head has none of; maxUnavailable there fails safe to "0 allowed").
With one pod such a budget allows no eviction at all: a node drain WAITS instead of taking the head. That
is the point: nothing removes the cluster's control plane unless an operator decides to (docs/serving.md,
"Moving the Ray head": `kubectl delete pod`, which a budget does not stop). What it costs, per platform:
- EKS managed node groups drain a node for 15 minutes, then fail the update with PodEvictionFailure
  unless it is forced (docs.aws.amazon.com/eks/latest/userguide/managed-node-update-behavior.html, "Upgrade
  phase"; awsdocs/amazon-eks-user-guide managed-node-update-behavior.adoc): a system node group update
  needs the operator to move the head and the Redis while it runs (the runbook), or `--force`.
- GKE node upgrades respect a budget for up to one hour, then evict anyway (elastic/cloud-on-k8s#2448
  reporting GKE's behaviour; the GPU pools' upgrade settings in cluster/gcp/node_pools.py rely on the
  same limit): an unattended upgrade pauses an hour on the head's node, then proceeds.
- `kubectl drain` retries until its --timeout: on-prem the operator moves the head first.
With GCS fault tolerance a moved head is a pause of the control plane (no new replicas, no autoscaling for
a minute or two), not a reload: the budget decides WHEN that pause happens, not whether serving survives.
`unhealthyPodEvictionPolicy: AlwaysAllow` lets a drain evict a head or Redis that is not Ready anyway
(a crash-looping head must never hold a node). The node autoscalers never move either pod to consolidate
nodes (the annotations below).

Zones: the Redis volume is a zonal block volume (EBS gp3 on EKS, GKE's standard-rwo PD, the existing
cluster's existing.blockStorageClass). Both cloud classes bind WaitForFirstConsumer, so the volume is made
in the zone the scheduler first put Redis in, and the PersistentVolume's node affinity keeps Redis in that
zone for ever after. GKE's system pool lives in gcp.zone alone, so volume, Redis and head share one zone
by construction; EKS's system node group spans the VPC's zones, and a node-group update launches each
replacement in the zone of the node it replaces, so Redis's zone keeps a system node. The head prefers
Redis's zone (a preferred pod affinity: every GCS write crosses no zone), and never waits for it.
On an existing cluster a node-local StorageClass (local-path, OpenEBS hostpath) would tie Redis to ONE
node: name a network block class in existing.blockStorageClass.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

from ..passwords import GeneratedPassword
from ..upstream.versions import REDIS_IMAGE
from ..kube.pods import MODEL_LABEL, ROLE_LABEL, model_labels, selector
from ..kube.redis import (CONFIG_DIR, CONFIG_KEY, DATA_DIR, PORT, REDIS_GID, REDIS_UID, RESOURCES,  # noqa: F401
                          pod_spec)

ROLE = "ray-gcs-store"
PASSWORD_KEY = "password"  # what gcsFaultToleranceOptions.redisPassword reads
STORAGE_GIB = 10  # GCS tables of one cluster are megabytes; room for AOF rewrites
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
    selector: dict[str, str] = field(default_factory=dict)  # the Redis pod's labels (the head prefers its zone)


def store_name(model: str) -> str:
    return f"{model}-gcs-redis"


def gcs_store(model: str, namespace: str) -> GcsStore:
    return GcsStore(address=f"{store_name(model)}.{namespace}.svc.cluster.local:{PORT}", secret=store_name(model),
                    selector=selector(model, ROLE))


# KubeRay labels every head pod ray.io/node-type=head and copies the template's own labels onto it (the node
# type, group and cluster labels are not overridable): ray-operator/controllers/ray/common/pod.go, labelPod.
RAY_NODE_TYPE_LABEL = "ray.io/node-type"


def head_selector(model: str) -> dict[str, str]:
    """The model's Ray head pod: our template labels plus the node type KubeRay sets (the model's worker pods
    carry neither the head role nor that node type)."""
    return {**selector(model, HEAD_ROLE), RAY_NODE_TYPE_LABEL: "head"}


def single_pod_budget(match_labels: dict[str, str]) -> dict:
    """minAvailable 1 over one pod: an eviction waits for an operator (module docstring); a pod that is not
    Ready may still be evicted."""
    return {"minAvailable": 1, "selector": {"matchLabels": dict(match_labels)},
            "unhealthyPodEvictionPolicy": "AlwaysAllow"}


def head_pdb_spec(model: str) -> dict:
    return single_pod_budget(head_selector(model))


def store_pdb_spec(model: str) -> dict:
    return single_pod_budget(selector(model, ROLE))


def head_pdb_name(model: str) -> str:
    return f"{model}-ray-head"


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
    """One Redis per production RayService: password Secret, StatefulSet with its volume, Service, NetworkPolicy,
    and the drain budgets of the two single pods a production RayService's control plane is: the Redis and
    the Ray head."""

    def __init__(self, name: str, model: str, namespace: str, system_node_selector: dict[str, str],
                 storage_class: str | None, base_labels: dict[str, str], opts: pulumi.ResourceOptions):
        """opts: the Kubernetes provider and what must exist first (the namespace) pass on to every child."""
        super().__init__("vllm-platform:serving:GcsRedis", name, None, opts)
        child = pulumi.ResourceOptions(parent=self, provider=opts.provider, depends_on=opts.depends_on)
        labels = model_labels(model, ROLE, base_labels)
        meta = {"name": store_name(model), "namespace": namespace, "labels": labels}
        self.store = gcs_store(model, namespace)
        password = GeneratedPassword(f"{name}-password", length=40, opts=pulumi.ResourceOptions(parent=self))
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
        self.store_pdb = k8s.policy.v1.PodDisruptionBudget(
            f"{name}-pdb", metadata=meta, spec=store_pdb_spec(model), opts=child)
        self.head_pdb = k8s.policy.v1.PodDisruptionBudget(
            f"{name}-head-pdb", metadata={**meta, "name": head_pdb_name(model),
                                         "labels": model_labels(model, HEAD_ROLE, base_labels)},
            spec=head_pdb_spec(model), opts=child)
        self.register_outputs({"address": self.store.address})
