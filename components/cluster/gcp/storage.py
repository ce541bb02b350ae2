"""The RWX model cache on GCP: a Filestore instance sized from the weights it holds, and a
pre-provisioned PersistentVolume (Filestore CSI driver) behind a StorageClass of its own.

Tiers, capacity steps and read throughput from cloud.google.com/filestore/docs/service-tiers and
cloud.google.com/filestore/docs/performance (maximum read MiB/s at a capacity; ZONAL, REGIONAL
and ENTERPRISE scale linearly with capacity inside a band).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s


TIB = 1024  # GiB
SHARE = "models"
CSI_DRIVER = "filestore.csi.storage.gke.io"
STORAGE_CLASS = "filestore-model-cache"
# What non-RWX claims (Prometheus) name: GKE installs it with the Compute Engine PD CSI driver, which
# cluster_args enables (cloud.google.com/kubernetes-engine/docs/how-to/persistent-volumes/gce-pd-csi-driver:
# standard-rwo = pd-balanced, premium-rwo = pd-ssd). pd-balanced attaches to the system nodes (E2/N2);
# A3 Ultra and A4 take Hyperdisk only, so no such claim may land on those GPU nodes.
BLOCK_STORAGE_CLASS = "standard-rwo"


@dataclass(frozen=True)
class Band:
    min_gib: int
    max_gib: int
    step_gib: int
    read_mibps: float  # fixed, or per TiB when per_tib
    per_tib: bool = False


@dataclass(frozen=True)
class Tier:
    name: str
    regional: bool  # location is the region (else the zone)
    bands: tuple[Band, ...]
    # What one NFS client (one node loading weights) gets, whatever the instance's total; the
    # performance page gives ~450 MiB/s for a single client on the zonal/regional tiers (⚠ with
    # `nconnect` it can be more; taken conservatively: start-up budgets may only err long).
    per_client_mibps: float | None = None


TIERS: dict[str, Tier] = {t.name: t for t in [
    Tier("BASIC_HDD", False, (Band(1 * TIB, 10 * TIB - 1, 1, 100), Band(10 * TIB, 65_433, 1, 180))),
    Tier("BASIC_SSD", False, (Band(2560, 65_433, 1, 1200),)),
    Tier("ZONAL", False, (Band(1 * TIB, 9984, 256, 260, True), Band(10 * TIB, 100 * TIB, 2560, 260, True)), 450),
    Tier("REGIONAL", True, (Band(1 * TIB, 9984, 256, 120, True), Band(10 * TIB, 100 * TIB, 2560, 260, True)), 450),
    Tier("ENTERPRISE", True, (Band(1 * TIB, 10 * TIB, 256, 120, True),), 450),
]}


def capacity_gib(tier: str, need_gib: int) -> int:
    """The smallest capacity the tier provisions that holds `need_gib`."""
    for band in TIERS[tier].bands:
        gib = max(band.min_gib, math.ceil(need_gib / band.step_gib) * band.step_gib)
        if gib <= band.max_gib:
            return gib
    top = TIERS[tier].bands[-1].max_gib
    raise ValueError(f"gcp.filestoreTier: {tier} holds at most {top} GiB; the cache needs {need_gib} GiB")


def read_gbps(tier: str, gib: int) -> float:
    """Read throughput one node gets from an instance of this capacity, GB/s: the documented
    instance maximum, capped at the tier's single-client figure."""
    band = next(b for b in TIERS[tier].bands if b.min_gib <= gib <= b.max_gib)
    mibps = band.read_mibps * gib / TIB if band.per_tib else band.read_mibps
    if TIERS[tier].per_client_mibps:
        mibps = min(mibps, TIERS[tier].per_client_mibps)
    return round(mibps * 2**20 / 1e9, 2)


def location(tier: str, region: str, zone: str) -> str:
    return region if TIERS[tier].regional else zone


def persistent_volume(name: str, loc: str, instance: str, ip, gib: int) -> dict:
    """A PV for an existing Filestore share (cloud.google.com/kubernetes-engine/docs/how-to/
    persistent-volumes/filestore-csi-driver#access): the cache's claim binds to it by class."""
    return {
        "metadata": {"name": name, "labels": {"app.kubernetes.io/part-of": "vllm-platform"}},
        "spec": {
            "storageClassName": STORAGE_CLASS,
            "capacity": {"storage": f"{gib}Gi"},
            "accessModes": ["ReadWriteMany"],
            "persistentVolumeReclaimPolicy": "Retain",
            "volumeMode": "Filesystem",
            "csi": {"driver": CSI_DRIVER, "volumeHandle": f"modeInstance/{loc}/{instance}/{SHARE}",
                    "volumeAttributes": {"ip": ip, "volume": SHARE}},
        },
    }


def storage_class() -> dict:
    # No provisioner: a claim of this class binds to the PV above and never creates a second instance.
    return {"metadata": {"name": STORAGE_CLASS, "labels": {"app.kubernetes.io/part-of": "vllm-platform"}},
            "provisioner": "kubernetes.io/no-provisioner", "reclaim_policy": "Retain",
            "volume_binding_mode": "Immediate"}


class FilestoreCache:
    """The instance (GCP provider) and its StorageClass + PersistentVolume (Kubernetes provider)."""

    def __init__(self, name: str, cluster_name: str, tier: str, gib: int, region: str, zone: str, network,
                 protected: bool, gcp_opts: pulumi.ResourceOptions, k8s_opts: pulumi.ResourceOptions,
                 labels: dict[str, str] | None = None):
        self.location = location(tier, region, zone)
        self.instance_name = f"{cluster_name}-models"
        self.capacity_gib = gib
        self.instance = gcp.filestore.Instance(
            f"{name}-filestore", name=self.instance_name, location=self.location, tier=tier,
            file_shares={"name": SHARE, "capacity_gb": gib},
            networks=[{"network": network, "modes": ["MODE_IPV4"], "connect_mode": "DIRECT_PEERING"}],
            deletion_protection_enabled=protected, description="vllm-platform model cache",
            labels=dict(labels or {}),
            # Pulumi's `protect` follows Filestore's flag: with the flag alone the engine would delete every
            # Kubernetes object and node pool first and fail at the instance. No retain_on_delete: the cache
            # holds weights the prefetch Job downloads again, and a retained instance would keep billing
            # (2.5 TiB of BASIC_SSD and up) outside any stack, silently; turning deletionProtection off is
            # the one deliberate way to let it go.
            opts=pulumi.ResourceOptions.merge(gcp_opts, pulumi.ResourceOptions(protect=protected)))
        ip = self.instance.networks.apply(lambda nets: nets[0].ip_addresses[0])
        self.storage_class = k8s.storage.v1.StorageClass(f"{name}-filestore-sc", **storage_class(), opts=k8s_opts)
        self.volume = k8s.core.v1.PersistentVolume(
            f"{name}-filestore-pv", **persistent_volume(STORAGE_CLASS, self.location, self.instance_name, ip, gib),
            opts=pulumi.ResourceOptions.merge(k8s_opts, pulumi.ResourceOptions(depends_on=[self.storage_class])))
