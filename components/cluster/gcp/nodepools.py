"""GKE node pools: one system pool and one GPU pool per planned machine type (pools.py sizes them).
The *_args functions are pure; `capacity_errors` says what a stack must add before GKE can place nodes."""
from __future__ import annotations

from ...config.schema import StackConfig
from ...versions import GKE_GPU_DRIVER_VERSION
from ..pools import (CLOUD_TAINT_EFFECTS, GPU_ROOT_DISK_GIB, SYSTEM_POOL, SYSTEM_ROOT_DISK_GIB,
                     SYSTEM_SELECTOR, PoolSpec, nvme_cache_path)
from .gke import CLOUD_PLATFORM_SCOPE
from .gpudirect import MachineFamily, machine_family

LOCAL_SSD_GB = 375  # one local SSD (cloud.google.com/compute/docs/disks/local-ssd)
# Where GKE mounts the local SSD RAID-0 that backs ephemeral storage (node label
# cloud.google.com/gke-ephemeral-storage-local-ssd=true); the NVMe model cache lives under it.
EPHEMERAL_SSD_MOUNT = "/mnt/stateful_partition/kube-ephemeral-ssd"
NVME_CACHE_PATH = nvme_cache_path(EPHEMERAL_SSD_MOUNT)
GPU_BOOT_DISK_GB = GPU_ROOT_DISK_GIB  # COS + the vLLM image (~10 GB compressed, more unpacked) + logs
RESERVATION_KEY = "compute.googleapis.com/reservation-name"
TAINT_EFFECTS = CLOUD_TAINT_EFFECTS
# Reading a local NVMe SSD RAID-0, MiB/s by disk count (cloud.google.com/compute/docs/disks/local-ssd,
# NVMe performance table ⚠ re-check); more disks than the last row read no faster.
LOCAL_SSD_READ_MIBPS = ((1, 660), (2, 1320), (4, 2650), (8, 4690), (16, 9360))


def bundled_local_ssds(spec: PoolSpec) -> int:
    """Local SSDs that come with the machine type (A2 Ultra, A3, A4); G2 / A2 High come with none."""
    return spec.instance.nvme_gb // LOCAL_SSD_GB


def local_ssd_read_gbps(disks: int) -> float:
    mibps = max((m for n, m in LOCAL_SSD_READ_MIBPS if n <= disks), default=0)
    return round(mibps * 2**20 / 1e9, 2)


def compact_placement(spec: PoolSpec, family: MachineFamily, cfg: StackConfig) -> bool:
    """Only where a replica spans nodes, and not with a reservation (it brings its own placement)."""
    return spec.multi_node and family.compact_placement and not cfg.gcp.reservation


def capacity_errors(cfg: StackConfig, specs: list[PoolSpec]) -> list[str]:
    errors = []
    if cfg.gcp.reservation and len(specs) > 1:
        # A reservation holds VMs of one machine type; every GPU pool would consume it, and GKE cannot
        # create the nodes of a pool whose machine type the reservation does not hold.
        errors.append(f"gcp.reservation: {cfg.gcp.reservation} holds one machine type, but the plan uses "
                      f"{', '.join(s.instance.name for s in specs)}; pin every model's instanceTypes to the "
                      f"reservation's machine type, or drop gcp.reservation")
    for spec in specs:
        family = machine_family(spec.instance)
        if not family.on_demand and not (cfg.gcp.spot or cfg.gcp.reservation):
            errors.append(f"gcp.reservation: {spec.instance.name} (for {', '.join(spec.models)}) is not offered "
                          f"on demand; set gcp.reservation to a reservation of it, or gcp.spot: true")
        if cfg.model_cache.kind == "nvme" and not bundled_local_ssds(spec):
            errors.append(f"modelCache.kind: nvme needs local SSDs and {spec.instance.name} comes with none; "
                          f"use kind rwx (Filestore), or a machine type with local SSD (a2-ultragpu, a3, a4)")
    return errors


def gpu_node_pool_args(spec: PoolSpec, cfg: StackConfig, cluster_id, service_account, additional_networks: list[dict]
                       ) -> dict:
    """Arguments of gcp.container.NodePool for one planned machine type."""
    g, inst = cfg.gcp, spec.instance
    family = machine_family(inst)
    ssds = bundled_local_ssds(spec)
    node_config = {
        "machine_type": inst.name,
        "guest_accelerators": [{"type": inst.gke_accelerator, "count": inst.gpus,
                                "gpu_driver_installation_config": {"gpu_driver_version": GKE_GPU_DRIVER_VERSION}}],
        "labels": spec.labels,
        "taints": [{"key": t.key, "value": t.value, "effect": TAINT_EFFECTS[t.effect]} for t in spec.taints],
        "service_account": service_account,
        "oauth_scopes": [CLOUD_PLATFORM_SCOPE],
        "image_type": "COS_CONTAINERD",
        "disk_type": family.boot_disk_type,
        "disk_size_gb": GPU_BOOT_DISK_GB,
        "gvnic": {"enabled": True},  # GPUDirect-TCPX(O) needs it; faster host networking everywhere
        "shielded_instance_config": {"enable_secure_boot": True, "enable_integrity_monitoring": True},
        "workload_metadata_config": {"mode": "GKE_METADATA"},
        "metadata": {"disable-legacy-endpoints": "true"},
    }
    if ssds:
        node_config["ephemeral_storage_local_ssd_config"] = {"local_ssd_count": ssds}
    if g.spot:
        node_config["spot"] = True
    if g.reservation:
        node_config["reservation_affinity"] = {"consume_reservation_type": "SPECIFIC_RESERVATION",
                                               "key": RESERVATION_KEY, "values": [g.reservation]}
    network_config: dict = {"enable_private_nodes": True}
    if additional_networks:
        network_config["additional_node_network_configs"] = additional_networks
    args = dict(
        name=spec.name, cluster=cluster_id, location=g.region, node_locations=[g.zone],
        initial_node_count=spec.desired_nodes,
        autoscaling={"min_node_count": spec.min_nodes, "max_node_count": spec.max_nodes, "location_policy": "ANY"},
        management={"auto_repair": True, "auto_upgrade": True},
        # No surge: a spare 8-GPU node is rarely there (least of all in a reservation); replace in place.
        upgrade_settings={"strategy": "SURGE", "max_surge": 0, "max_unavailable": 1},
        network_config=network_config,
        node_config=node_config,
    )
    if compact_placement(spec, family, cfg):
        args["placement_policy"] = {"type": "COMPACT"}
    return args


def system_node_pool_args(cfg: StackConfig, cluster_id, service_account) -> dict:
    g = cfg.gcp
    return dict(
        name=SYSTEM_POOL, cluster=cluster_id, location=g.region, node_locations=[g.zone],
        initial_node_count=1,
        autoscaling={"min_node_count": 1, "max_node_count": 3, "location_policy": "BALANCED"},
        management={"auto_repair": True, "auto_upgrade": True},
        network_config={"enable_private_nodes": True},
        node_config={
            "machine_type": g.system_machine_type,
            "labels": SYSTEM_SELECTOR,
            "service_account": service_account,
            "oauth_scopes": [CLOUD_PLATFORM_SCOPE],
            "image_type": "COS_CONTAINERD",
            "disk_type": "pd-balanced",
            "disk_size_gb": SYSTEM_ROOT_DISK_GIB,
            "shielded_instance_config": {"enable_secure_boot": True, "enable_integrity_monitoring": True},
            "workload_metadata_config": {"mode": "GKE_METADATA"},
            "metadata": {"disable-legacy-endpoints": "true"},
        },
    )
