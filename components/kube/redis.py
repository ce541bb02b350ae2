"""The Redis pod both stores run: the GCS store of a production RayService (serving/redis.py) and the gateway's
token-quota store (gateway/quota_store.py). Non-root, read-only root file system, its config (requirepass) from a
secret file, data on a volume the caller mounts."""
from __future__ import annotations

from ..upstream.versions import REDIS_IMAGE

PORT = 6379
CONFIG_KEY = "redis.conf"  # requirepass lives in the config file, never on a command line
CONFIG_DIR = "/etc/redis"
DATA_DIR = "/data"
REDIS_UID, REDIS_GID = 999, 1000  # the image's `redis` user and group
RESOURCES = {"cpu": "500m", "memory": "1Gi"}


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
