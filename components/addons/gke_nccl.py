"""GKE GPUDirect node software: the NCCL network plugin installers and the NRI device injector. Pure.

Built from GoogleCloudPlatform/container-engine-accelerators gpudirect-tcpx/nccl-tcpx-installer.yaml,
gpudirect-tcpxo/nccl-tcpxo-installer.yaml, nri_device_injector/nri-device-injector.yaml and
gpudirect-rdma/nccl-rdma-installer.yaml (the manifests the GKE GPUDirect how-tos apply), with two
changes: the pods are placed on our GPU pools' labels and taints rather than on every GKE accelerator,
and every image is pinned in components/versions.py.

The installers copy the NCCL plugin into /home/kubernetes/bin/nvidia/lib64 on the host, which GKE mounts
into GPU containers at /usr/local/nvidia/lib64; the device injector adds the devices a pod lists in its
devices.gke.io/container.<name> annotation (the TCPX(O) receive-data-path daemon needs the GPUs).
"""
from __future__ import annotations

from ..cluster.facts import GpuPool
from ..versions import (GKE_NCCL_RDMA_INSTALLER_IMAGE, GKE_NCCL_TCPX_INSTALLER_IMAGE,
                        GKE_NCCL_TCPXO_INSTALLER_IMAGE, GKE_NRI_DEVICE_INJECTOR_IMAGE, HOST_SHELL_IMAGE,
                        PAUSE_IMAGE)
from .placement import pool_affinity

NAMESPACE = "kube-system"  # system-node-critical pods are admitted there without a quota
PRIVILEGED = {"privileged": True}
INSTALLER_CPU = {"requests": {"cpu": "150m"}}


def _host_path(name: str, path: str, kind: str | None = None) -> dict:
    host = {"path": path, **({"type": kind} if kind else {})}
    return {"name": name, "hostPath": host}


def _daemonset(name: str, pools: list[GpuPool], tolerations: list[dict], init: list[dict],
               containers: list[dict], volumes: list[dict]) -> dict:
    labels = {"k8s-app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": labels},
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
                    "hostPID": True,
                    "initContainers": init,
                    "containers": containers,
                    "volumes": volumes,
                },
            },
        },
    }


def _pause() -> dict:
    """The installers' work is done in init containers; this keeps the pod (and the DaemonSet) Ready."""
    return {"name": "pause", "image": PAUSE_IMAGE}


def _privileged(name: str, image: str, **fields) -> dict:
    return {"name": name, "image": image, "securityContext": PRIVILEGED, **fields}


def _tcp_plugin_installer(name: str, image: str, stage_dir: str, prelude: str = "") -> tuple[dict, list[dict]]:
    """TCPX and TCPXO install alike: the plugin stages into `stage_dir` on the host, then is copied next to
    the GPU libraries. Returns the init container and the volumes it needs."""
    script = (f"{prelude}set -ex\n"
              "/scripts/container_entry.sh install --install-nccl\n"
              "mkdir -p /usr/local/nvidia/lib64\n"
              f"cp -r {stage_dir}/lib64/. /usr/local/nvidia/lib64\n"
              "echo \"installation finishes\"\n")
    container = _privileged(name, image, resources=INSTALLER_CPU, command=["/bin/sh", "-c"], args=[script],
                            volumeMounts=[{"name": "var-lib", "mountPath": "/var/lib"},
                                          {"name": "library-dir-host", "mountPath": "/usr/local"}])
    volumes = [_host_path("var-lib", "/var/lib"), _host_path(stage_dir.rsplit("/", 1)[1], stage_dir),
               _host_path("library-dir-host", "/home/kubernetes/bin")]
    return container, volumes


def tcpx_installer(pools: list[GpuPool], tolerations: list[dict]) -> dict:
    """A3 High: GPUDirect-TCPX NCCL plugin."""
    installer, volumes = _tcp_plugin_installer("nccl-tcpx-installer", GKE_NCCL_TCPX_INSTALLER_IMAGE, "/var/lib/tcpx")
    return _daemonset("nccl-tcpx-installer", pools, tolerations, [installer], [_pause()], volumes)


# A3 Mega: expose the aperture devices of the TCPXO NICs (PCI id 1ae0:0084) under /dev/aperture_devices and
# load the dma-buf import helper before the plugin is installed.
TCPXO_HOST_SETUP = """/sbin/iptables -I INPUT -p tcp -m tcp -j ACCEPT && modprobe import-helper
sudo mkdir -p /dev/aperture_devices
while IFS= read -r line; do
  BDF=$( echo "$line" | awk '{print $1}' );
  target_aperture_path="/dev/aperture_devices/$BDF"
  host_aperture_device=$(readlink -f "/sys/bus/pci/devices/$BDF");
  sudo mkdir -p $target_aperture_path;
  sudo umount -R $target_aperture_path;
  sudo mount --bind $host_aperture_device $target_aperture_path;
done < <(lspci -nn -D | grep '1ae0:0084')
if [ -d /dev/aperture_devices ]; then
    chmod -R a+r /dev/aperture_devices/
    chmod a+rw /dev/aperture_devices/*/resource*
fi
"""


def tcpxo_installer(pools: list[GpuPool], tolerations: list[dict]) -> dict:
    """A3 Mega: GPUDirect-TCPXO NCCL plugin."""
    host_setup = _privileged("pre-installation", HOST_SHELL_IMAGE,
                             command=["nsenter", "-at", "1", "--", "sh", "-c", TCPXO_HOST_SETUP])
    installer, volumes = _tcp_plugin_installer("nccl-tcpxo-installer", GKE_NCCL_TCPXO_INSTALLER_IMAGE,
                                               "/var/lib/tcpxo", prelude="chmod 755 /scripts/container_entry.sh\n")
    return _daemonset("nccl-tcpxo-installer", pools, tolerations, [host_setup, installer], [_pause()], volumes)


def device_injector(pools: list[GpuPool], tolerations: list[dict]) -> dict:
    """NRI device injector, shared by the A3 High and A3 Mega pools."""
    injector = _privileged("device-injector", GKE_NRI_DEVICE_INJECTOR_IMAGE, resources=INSTALLER_CPU,
                           volumeMounts=[{"name": "dev", "mountPath": "/dev"},
                                         {"name": "nri", "mountPath": "/var/run/nri"}])
    volumes = [_host_path("nri", "/var/run/nri"), _host_path("dev", "/dev")]
    return _daemonset("device-injector", pools, tolerations, [], [injector], volumes)


RDMA_NICS = 8  # A3 Ultra and A4: gpu0rdma0 .. gpu7rdma0


def rdma_installer(pools: list[GpuPool], tolerations: list[dict]) -> dict:
    """A3 Ultra / A4: the gIB NCCL plugin for GPUDirect RDMA over RoCE."""
    # RoCE traffic arrives on interfaces the kernel sees as martian sources; silence the log flood.
    quiet = "\n".join(f"echo 0 > /proc/sys/net/ipv4/conf/gpu{i}rdma0/log_martians" for i in range(RDMA_NICS))
    martians = _privileged("disable-log-martian", HOST_SHELL_IMAGE, command=["/bin/sh", "-c", f"set -e\n{quiet}\n"])
    installer = _privileged(
        "nccl-rdma-installer", GKE_NCCL_RDMA_INSTALLER_IMAGE, resources=INSTALLER_CPU, command=["/bin/sh", "-c"],
        args=["set -ex\n"
              "/scripts/container_entry.sh install --install-nccl\n"
              "cp -r /var/lib/gib/lib64/. /usr/local/home/kubernetes/bin/nvidia/lib64\n"
              "cp -r /var/lib/gib/. /usr/local/home/kubernetes/bin/gib\n"
              "echo \"installation finishes\"\n"],
        volumeMounts=[{"name": "library-dir-host", "mountPath": "/usr/local/home/kubernetes/bin/nvidia/lib64"},
                      {"name": "gib", "mountPath": "/usr/local/home/kubernetes/bin/gib"}])
    volumes = [_host_path("library-dir-host", "/home/kubernetes/bin/nvidia/lib64", "DirectoryOrCreate"),
               _host_path("gib", "/home/kubernetes/bin/gib")]
    return _daemonset("nccl-rdma-installer", pools, tolerations, [martians, installer], [_pause()], volumes)
