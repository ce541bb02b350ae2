"""GKE node pools: one system pool and one GPU pool per planned machine type (pools.py sizes them).
The *_args functions are pure; `capacity_errors` says what a stack must add before GKE can place nodes,
`zone_errors` / `reservation_errors` what the zone and the reservation GCE describes disagree with.

Node auto-repair (cloud.google.com/kubernetes-engine/docs/how-to/node-auto-repair, "Repair criteria")
re-creates a node that reports NotReady or no status for ~10 minutes, or whose boot disk stays full for
~30 minutes. It does not look at GPUs: a GPU with an Xid error leaves the node Ready. GKE's device plugin
(GoogleCloudPlatform/container-engine-accelerators, health checking on critical Xids) then withdraws that
GPU from the node's allocatable nvidia.com/gpu, so pods asking for all the node's GPUs stop landing there,
and DCGM (GPU Operator) exports the Xid to Prometheus; replacing the node is an operator's step (docs/clusters.md).
Auto-repair stays on for what it does see (a hung kubelet, a dead VM), as GKE recommends.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pulumi
import pulumi_gcp as gcp

from ...catalog import offered
from ...config.load import ConfigError
from ...upstream.versions import GKE_GPU_DRIVER_VERSION
from ..pools import (CLOUD_TAINT_EFFECTS, GPU_ROOT_DISK_GIB, SYSTEM_POOL, SYSTEM_ROOT_DISK_GIB,
                     SYSTEM_SELECTOR, PoolSpec, api_error, nvme_cache_path)
from .control_plane import CLOUD_PLATFORM_SCOPE
from .gpudirect import MachineFamily, machine_family
from .quotas import PoolNodes, check_quotas

if TYPE_CHECKING:  # the component's own arguments (components/wiring.py builds them)
    from .args import GcpClusterArgs

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


def compact_placement(spec: PoolSpec, family: MachineFamily, cfg: GcpClusterArgs) -> bool:
    """Only where a replica spans nodes, and not with a reservation (it brings its own placement)."""
    return spec.multi_node and family.compact_placement and not cfg.gcp.reservation


def capacity_errors(cfg: GcpClusterArgs, specs: list[PoolSpec]) -> list[str]:
    errors = []
    if cfg.gcp.reservation and len(specs) > 1:
        # A reservation holds VMs of one machine type; every GPU pool would consume it, and GKE cannot
        # create the nodes of a pool whose machine type the reservation does not hold.
        errors.append(f"gcp.reservation: {cfg.gcp.reservation} holds one machine type, but the plan uses "
                      f"{', '.join(s.instance.name for s in specs)}; pin every model's instanceTypes to the "
                      f"reservation's machine type, or drop gcp.reservation")
    for spec in specs:
        if not (cfg.gcp.spot or cfg.gcp.reservation) and not offered(spec.instance, "onDemand"):
            errors.append(f"gcp.reservation: {spec.instance.name} (for {', '.join(spec.models)}) is not offered "
                          f"on demand; set gcp.reservation to a reservation of it, or gcp.spot: true")
        if cfg.model_cache.kind == "nvme" and not bundled_local_ssds(spec):
            errors.append(f"modelCache.kind: nvme needs local SSDs and {spec.instance.name} comes with none; "
                          f"use kind rwx (Filestore), or a machine type with local SSD (a2-ultragpu, a3, a4)")
    return errors


@dataclass(frozen=True)
class Reservation:
    """What compute.getReservation says about gcp.reservation in gcp.zone."""
    project: str
    name: str
    machine_type: str | None  # None: no instance properties (a reservation made from an instance template)
    count: int | None


def reservation_ref(cfg: GcpClusterArgs) -> tuple[str, str]:
    """(project, name) of gcp.reservation: NAME, or projects/PROJECT/reservations/NAME (shared)."""
    ref = cfg.gcp.reservation or ""
    if ref.startswith("projects/"):
        _, project, _, name = ref.split("/")
        return project, name
    return cfg.gcp.project, ref


def zone_errors(cfg: GcpClusterArgs, specs: list[PoolSpec], offered: set[str]) -> list[str]:
    """Machine types (GPU ones carry their accelerators) that gcp.zone does not offer."""
    g = cfg.gcp
    errors = []
    if g.system_machine_type not in offered:
        errors.append(f"gcp.systemMachineType: {g.system_machine_type} is not offered in gcp.zone {g.zone}; "
                      f"pick one that is (`gcloud compute machine-types list --zones={g.zone}`)")
    for spec in specs:
        if spec.instance.name not in offered:
            errors.append(f"gcp.zone: {g.zone} does not offer {spec.instance.name} ({spec.instance.gpus} x "
                          f"{spec.instance.accelerator}, for {', '.join(spec.models)}); set gcp.zone to a zone "
                          f"that does (`gcloud compute machine-types list --filter=name={spec.instance.name}`), "
                          f"or another instance type in the models' instanceTypes")
    return errors


def reservation_errors(cfg: GcpClusterArgs, specs: list[PoolSpec], found: Reservation | None,
                       lookup_error: str | None = None) -> list[str]:
    """The reservation must be in gcp.zone, hold the planned machine type, and fit the nodes a pool may grow to
    (the autoscaler's scale-ups past it would fail: the pool consumes that reservation only)."""
    g = cfg.gcp
    project, name = reservation_ref(cfg)
    if found is None:
        return [f"gcp.reservation: cannot read reservation {name} in gcp.zone {g.zone} of project {project} "
                f"({lookup_error or 'not found'}); a reservation lives in one zone: set gcp.zone to the "
                f"reservation's zone, or name a reservation in {g.zone} (a shared one: "
                f"projects/OWNER/reservations/NAME, readable by the deployer)"]
    errors = []
    for spec in specs:
        if found.machine_type and found.machine_type != spec.instance.name:
            errors.append(f"gcp.reservation: {name} holds {found.machine_type}, but the plan puts "
                          f"{', '.join(spec.models)} on {spec.instance.name}; pin the models' instanceTypes to "
                          f"{found.machine_type}, or name a reservation of {spec.instance.name}")
        elif found.count is not None and spec.max_nodes > found.count:
            errors.append(f"gcp.reservation: {name} holds {found.count} VMs, but the {spec.name} pool may grow to "
                          f"{spec.max_nodes} nodes (the models' replicas.max); lower replicas.max or grow the "
                          f"reservation")
    return errors


def gpu_node_pool_args(spec: PoolSpec, cfg: GcpClusterArgs, cluster_id, service_account, additional_networks: list[dict],
                       labels: dict[str, str] | None = None) -> dict:
    """Arguments of gcp.container.NodePool for one planned machine type."""
    g, inst = cfg.gcp, spec.instance
    family = machine_family(inst)
    ssds = bundled_local_ssds(spec)
    node_config = {
        "machine_type": inst.name,
        "guest_accelerators": [{"type": inst.gke_accelerator, "count": inst.gpus,
                                "gpu_driver_installation_config": {"gpu_driver_version": GKE_GPU_DRIVER_VERSION}}],
        "labels": spec.labels,
        # GCE labels on the VM and its boot disk, for cost allocation (Kubernetes labels are `labels`).
        "resource_labels": dict(labels or {}),
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
        # Created empty: GKE waits for a pool's initial nodes, so a stockout (or a reservation not yet ready)
        # would fail the pool and the run. The cluster autoscaler adds nodes as pods ask (from zero: it knows a
        # pool's labels, taints and GPUs from its template) and owns the count after creation
        # (pool_options). Min 0 as on EKS: the pods of a model's min replicas hold the nodes they run on.
        initial_node_count=0,
        autoscaling={"min_node_count": 0, "max_node_count": spec.max_nodes, "location_policy": "ANY"},
        # Repairs dead or NotReady nodes, not GPU faults (module docstring).
        management={"auto_repair": True, "auto_upgrade": True},
        # No surge: a spare 8-GPU node is rarely there (least of all in a reservation sized to the pool); an
        # update takes one node down at a time and re-creates it in its place. The trade-off: one node's
        # replicas are down while it is replaced (a multi-node replica entirely), and PodDisruptionBudgets
        # hold the drain for up to an hour (GKE's limit) before the node goes anyway.
        upgrade_settings={"strategy": "SURGE", "max_surge": 0, "max_unavailable": 1},
        network_config=network_config,
        node_config=node_config,
    )
    if compact_placement(spec, family, cfg):
        args["placement_policy"] = {"type": "COMPACT"}
    return args


def system_nodes(cfg: GcpClusterArgs) -> int:
    """gcp.systemNodes, else 2 in production (an upgrade or a repair of one node leaves the operators, KEDA's
    metrics API and the webhooks running; as aws.systemNodes) and 1 elsewhere."""
    if cfg.gcp.system_nodes is not None:
        return cfg.gcp.system_nodes
    return 2 if cfg.production else 1


def pool_options(opts: pulumi.ResourceOptions) -> pulumi.ResourceOptions:
    """Every pool has a fixed GKE name, so a change GKE cannot make in place (machine type, disks, networks,
    placement) must delete the old pool before creating the new one; create-then-delete fails with 409
    (already exists). For a GPU pool that means its replicas are down until the new pool's nodes are up; for
    the system pool, the operators and Prometheus reschedule onto the new pool (Pending meanwhile). The
    autoscaler owns the node count after creation; a changed initial count must not replace a pool."""
    return pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(
        delete_before_replace=True, ignore_changes=["initialNodeCount"]))


def system_node_pool_args(cfg: GcpClusterArgs, cluster_id, service_account, labels: dict[str, str] | None = None) -> dict:
    """One zone, gcp.zone, like the cluster's node locations: Prometheus' volume (standard-rwo, a zonal
    pd-balanced disk, bound WaitForFirstConsumer in the zone of its first node) can follow its pod to any system
    node a drain or a repair moves it to, and the autoscaler (one node group per pool and zone on GKE) only ever
    adds system nodes there. Spreading this pool over zones would need a regional or zone-following volume first
    (tests/cluster/gcp/test_zones.py pins the pair)."""
    g = cfg.gcp
    n = system_nodes(cfg)
    return dict(
        name=SYSTEM_POOL, cluster=cluster_id, location=g.region, node_locations=[g.zone],
        initial_node_count=n,
        autoscaling={"min_node_count": n, "max_node_count": n + 2, "location_policy": "BALANCED"},
        management={"auto_repair": True, "auto_upgrade": True},
        network_config={"enable_private_nodes": True},
        node_config={
            "machine_type": g.system_machine_type,
            "labels": SYSTEM_SELECTOR,
            "resource_labels": dict(labels or {}),
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


# --- what GCE says about the zone and the reservation -------------------------------------------------

def _reservation(cfg: GcpClusterArgs, opts: pulumi.InvokeOptions) -> tuple[Reservation | None, str | None]:
    project, name = reservation_ref(cfg)
    try:
        r = gcp.compute.get_reservation(name=name, project=project, zone=cfg.gcp.zone, opts=opts)
    except Exception as e:  # GCE answers 404 for a reservation of another zone
        return None, api_error(e)
    specific = (r.specific_reservations or [None])[0]
    props = (specific.instance_properties or [None])[0] if specific else None
    return Reservation(project, name, props.machine_type if props else None,
                       specific.count if specific else None), None


def pool_nodes(cfg: GcpClusterArgs, specs: list[PoolSpec], vcpus: dict[str, int]) -> list[PoolNodes]:
    """What each pool draws at its max node count, with the vCPUs GCE gives each machine type."""
    system = system_node_pool_args(cfg, None, None)
    nodes = [PoolNodes(SYSTEM_POOL, cfg.gcp.system_machine_type, system["autoscaling"]["max_node_count"],
                       vcpus.get(cfg.gcp.system_machine_type, 0), system["node_config"]["disk_type"],
                       system["node_config"]["disk_size_gb"], system=True)]
    for spec in specs:
        nodes.append(PoolNodes(spec.name, spec.instance.name, spec.max_nodes, vcpus.get(spec.instance.name, 0),
                               machine_family(spec.instance).boot_disk_type, GPU_BOOT_DISK_GB))
    return nodes


def capacity_checks(cfg: GcpClusterArgs, specs: list[PoolSpec], opts: pulumi.InvokeOptions) -> list[str]:
    """Ask GCE (compute.getZones of the region, compute.getMachineTypes per machine type, compute.getReservation)
    whether gcp.zone is up and what it offers, and the project's quotas what it may still run (quotas.py)."""
    g = cfg.gcp
    try:
        up = list(gcp.compute.get_zones(project=g.project, region=g.region, status="UP", opts=opts).names or [])
    except Exception as e:  # a region the project cannot use (one Google opens on request), or no access
        return [f"gcp.region: cannot list the zones of {g.region} in project {g.project}: {api_error(e)}"]
    if g.zone not in up:
        return [f"gcp.zone: GCE lists {g.zone} as not up in project {g.project} (zones of {g.region} that are up: "
                f"{', '.join(sorted(up)) or 'none'}); the node pools stay in gcp.zone and never follow a live "
                f"answer, so wait for the zone or set gcp.zone to one of those (a new zone replaces the node pools "
                f"and a zonal Filestore cache)"]
    vcpus: dict[str, int] = {}
    for machine in sorted({g.system_machine_type, *(s.instance.name for s in specs)}):
        try:
            found = gcp.compute.get_machine_types(filter=f'name = "{machine}"', project=g.project, zone=g.zone,
                                                  opts=opts).machine_types
        except Exception as e:
            return [f"gcp.zone: cannot list the machine types of {g.zone} in project {g.project}: "
                    f"{api_error(e)}"]
        vcpus |= {m.name: m.guest_cpus for m in found or []}
    errors = zone_errors(cfg, specs, set(vcpus))
    if g.reservation:
        errors += reservation_errors(cfg, specs, *_reservation(cfg, opts))
    if errors:
        return errors
    # A new project has no GPU quota and few vCPUs: refused here, not as Pending pods after a finished run.
    return check_quotas(cfg, specs, pool_nodes(cfg, specs, vcpus), opts)


class CapacityError(ConfigError, pulumi.RunError):
    """Raised inside an apply: Pulumi re-raises it as its own cause, so it must be both the RunError that
    `pulumi up` prints without a traceback and the ConfigError the offline plan reports as bad input."""


def check_capacity(cfg: GcpClusterArgs, specs: list[PoolSpec], parent: pulumi.Resource) -> None:
    """What GCE and the project's quotas say about the plan, asked before the first resource is registered
    (component.py): the zone offers the machine types, the reservation holds them, the quotas have room. A
    RunError caused by a ConfigError (`pulumi up` prints it without a traceback; the offline plan reports bad
    input) stops the program with nothing created. The node pools take gcp.zone itself, never a live answer."""
    errors = capacity_checks(cfg, specs, pulumi.InvokeOptions(parent=parent))
    if errors:
        err = ConfigError(errors)
        raise pulumi.RunError(str(err)) from err
