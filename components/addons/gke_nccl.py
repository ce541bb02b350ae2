"""GKE GPUDirect-RDMA node software (A3 Ultra, A4): Google's gIB NCCL plugin installer. Pure.

Built from GoogleCloudPlatform/container-engine-accelerators gpudirect-rdma/nccl-rdma-installer.yaml (the
manifest the GKE GPUDirect-RDMA how-to applies), with three changes: the pods are placed on our GPU pools'
labels and taints rather than on every GKE accelerator; every image is pinned in components/upstream/versions.py;
and the upstream's second privileged init container (alpine:latest running sysctl) is folded into the
installer's own script, so that one privileged container on one pinned image is all the policy pack's
exception (policies/rules/workloads.py PRIVILEGED_NODE_AGENT) has to admit.

The installer copies the gIB NCCL plugin and NCCL into /home/kubernetes/bin/nvidia/lib64 and
/home/kubernetes/bin/gib on the host, which GKE mounts into GPU containers (/usr/local/nvidia/lib64,
/usr/local/gib). A3 High / A3 Mega get nothing here: serving runs NCCL's socket transport over their GPU
NICs, so the GPUDirect-TCPX(O) plugins (and the privileged installers and NRI device injector they need)
are not installed (components/addons/fabrics.py).
"""
from __future__ import annotations

from ..cluster.facts import GpuPool
from ..upstream.versions import GKE_NCCL_RDMA_INSTALLER_IMAGE, PAUSE_IMAGE
from .placement import pool_affinity

NAMESPACE = "kube-system"  # system-node-critical pods are admitted there without a quota
INSTALLER = "nccl-rdma-installer"  # the DaemonSet's name: the policy pack's exception names it
INSTALLER_CPU = {"requests": {"cpu": "150m"}}
RDMA_NICS = 8  # A3 Ultra and A4: gpu0rdma0 .. gpu7rdma0


def _host_path(name: str, path: str, kind: str | None = None) -> dict:
    host = {"path": path, **({"type": kind} if kind else {})}
    return {"name": name, "hostPath": host}


def installer_script() -> str:
    """RoCE traffic arrives on interfaces the kernel sees as martian sources: silence that log flood (the
    pod shares the host's network namespace, so these are the node's sysctls), then install the plugin.
    A NIC that is missing is reported, not fatal: the plugin install is what the pod is for."""
    quiet = "".join(f"echo 0 > /proc/sys/net/ipv4/conf/gpu{i}rdma0/log_martians || echo 'no gpu{i}rdma0'\n"
                    for i in range(RDMA_NICS))
    return (quiet +
            "set -ex\n"
            "/scripts/container_entry.sh install --install-nccl\n"
            "cp -r /var/lib/gib/lib64/. /usr/local/home/kubernetes/bin/nvidia/lib64\n"
            "cp -r /var/lib/gib/. /usr/local/home/kubernetes/bin/gib\n"
            "echo \"installation finishes\"\n")


def rdma_installer(pools: list[GpuPool], tolerations: list[dict], digest: str) -> dict:
    """A3 Ultra / A4: the gIB NCCL plugin for GPUDirect RDMA over RoCE, as one DaemonSet in kube-system."""
    labels = {"k8s-app": INSTALLER}
    installer = {
        "name": INSTALLER, "image": f"{GKE_NCCL_RDMA_INSTALLER_IMAGE}@{digest}", "securityContext": {"privileged": True},
        "resources": INSTALLER_CPU, "command": ["/bin/sh", "-c"], "args": [installer_script()],
        "volumeMounts": [{"name": "library-dir-host", "mountPath": "/usr/local/home/kubernetes/bin/nvidia/lib64"},
                         {"name": "gib", "mountPath": "/usr/local/home/kubernetes/bin/gib"}],
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": INSTALLER, "namespace": NAMESPACE, "labels": labels},
        "spec": {
            "selector": {"matchLabels": labels},
            "updateStrategy": {"type": "RollingUpdate"},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "priorityClassName": "system-node-critical",
                    "affinity": pool_affinity(pools),
                    "tolerations": tolerations,
                    "hostNetwork": True,
                    "hostPID": True,  # as upstream: the installer's entry script works on the host
                    "initContainers": [installer],
                    # The work is done in the init container; this keeps the pod (and the DaemonSet) Ready.
                    "containers": [{"name": "pause", "image": PAUSE_IMAGE}],
                    "volumes": [_host_path("library-dir-host", "/home/kubernetes/bin/nvidia/lib64",
                                           "DirectoryOrCreate"),
                                _host_path("gib", "/home/kubernetes/bin/gib")],
                },
            },
        },
    }
