"""The GCP IAM the principal that runs `pulumi up` (and `preview`, `refresh`, `destroy`) needs for a GKE stack,
derived from what GcpGpuCluster creates and asks: a data table from each resource type / function token (and the
two Compute Engine REST reads of the quota check) to the predefined role that carries it and the permissions a
custom role would need instead. Pure: no Pulumi, no GCP call.

Sources: cloud.google.com/iam/docs/roles-permissions (the predefined roles' permission lists: compute, container,
file, iam, resourcemanager, serviceusage, storage, cloudquotas), and each API's method reference for the
permission a call checks; read 2026-12-06 (⚠ re-check the lists on a provider bump: a Terraform resource may call
one more method, e.g. a `get` after a `create`). tests/cluster/gcp/test_permissions.py runs the mocked program
and fails when it creates a type or calls a function this table does not cover.

Least privilege, as far as predefined roles go: each role is the narrowest predefined one that holds the
permissions (Compute Network Admin, not Compute Admin; Project IAM Admin, not Owner). Kubernetes objects go through
the GKE API, authorised by IAM: Kubernetes Engine Admin (container.*) grants what every chart and object needs, on
every cluster of the project (a project per stack keeps it to this one).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .args import GcpClusterArgs


@dataclass(frozen=True)
class Grant:
    role: str
    permissions: tuple[str, ...]


COMPUTE_VIEWER = "roles/compute.viewer"
CONTAINER_ADMIN = "roles/container.admin"
_CRUD_OPS = ("compute.regionOperations.get", "compute.globalOperations.get")

# Resource type token -> the grant that creates, reads, updates and deletes it.
RESOURCES: dict[str, Grant] = {
    "gcp:projects/service:Service": Grant("roles/serviceusage.serviceUsageAdmin", (
        "serviceusage.services.enable", "serviceusage.services.get", "serviceusage.services.list",
        "serviceusage.operations.get")),
    "gcp:serviceaccount/account:Account": Grant("roles/iam.serviceAccountAdmin", (
        "iam.serviceAccounts.create", "iam.serviceAccounts.get", "iam.serviceAccounts.update",
        "iam.serviceAccounts.delete")),
    # The node pools run as the stack's node service account: creating them acts as it.
    "gcp:container/nodePool:NodePool": Grant("roles/iam.serviceAccountUser", ("iam.serviceAccounts.actAs",)),
    "gcp:projects/iAMMember:IAMMember": Grant("roles/resourcemanager.projectIamAdmin", (
        "resourcemanager.projects.getIamPolicy", "resourcemanager.projects.setIamPolicy")),
    "gcp:compute/network:Network": Grant("roles/compute.networkAdmin", (
        "compute.networks.create", "compute.networks.get", "compute.networks.update", "compute.networks.delete",
        *_CRUD_OPS)),
    "gcp:compute/subnetwork:Subnetwork": Grant("roles/compute.networkAdmin", (
        "compute.subnetworks.create", "compute.subnetworks.get", "compute.subnetworks.update",
        "compute.subnetworks.delete", "compute.subnetworks.use", "compute.networks.updatePolicy", *_CRUD_OPS)),
    "gcp:compute/router:Router": Grant("roles/compute.networkAdmin", (
        "compute.routers.create", "compute.routers.get", "compute.routers.update", "compute.routers.delete",
        *_CRUD_OPS)),
    "gcp:compute/routerNat:RouterNat": Grant("roles/compute.networkAdmin", (
        "compute.routers.get", "compute.routers.update", *_CRUD_OPS)),
    # Firewall rules are the Security Admin's, not the Network Admin's ("except for firewall rules").
    "gcp:compute/firewall:Firewall": Grant("roles/compute.securityAdmin", (
        "compute.firewalls.create", "compute.firewalls.get", "compute.firewalls.update", "compute.firewalls.delete",
        "compute.networks.updatePolicy", *_CRUD_OPS)),
    "gcp:container/cluster:Cluster": Grant(CONTAINER_ADMIN, (
        "container.clusters.create", "container.clusters.get", "container.clusters.update",
        "container.clusters.delete", "container.operations.get")),
    "gcp:filestore/instance:Instance": Grant("roles/file.editor", (
        "file.instances.create", "file.instances.get", "file.instances.update", "file.instances.delete",
        "file.operations.get")),
    "gcp:storage/bucketIAMMember:BucketIAMMember": Grant("roles/storage.admin", (
        "storage.buckets.getIamPolicy", "storage.buckets.setIamPolicy")),
}
# Every Kubernetes object and Helm release of the stack, through the cluster's API (GKE maps IAM to the API).
KUBERNETES = Grant(CONTAINER_ADMIN, ("container.*",))
# Types that are the engine's or ours: no cloud call.
NO_CALL_PREFIXES = ("pulumi:providers:", "vllm-platform:", "pulumi-python:dynamic:")

# Function (invoke) token -> the grant its read needs.
FUNCTIONS: dict[str, Grant] = {
    "gcp:compute/getZones:getZones": Grant(COMPUTE_VIEWER, ("compute.zones.list",)),
    "gcp:compute/getMachineTypes:getMachineTypes": Grant(COMPUTE_VIEWER, ("compute.machineTypes.list",)),
    "gcp:compute/getReservation:getReservation": Grant(COMPUTE_VIEWER, ("compute.reservations.get",)),
    "gcp:cloudquota/getSQuotaInfo:getSQuotaInfo": Grant("roles/cloudquotas.viewer", ("cloudquotas.quotas.get",)),
    "gcp:container/getCluster:getCluster": Grant(CONTAINER_ADMIN, ("container.clusters.get",)),
    "gcp:container/getEngineVersions:getEngineVersions": Grant(CONTAINER_ADMIN, ("container.clusters.list",)),
    "gcp:organizations/getProject:getProject": Grant("roles/browser", ("resourcemanager.projects.get",)),
    # The provider's own token and project: no API call.
    "gcp:organizations/getClientConfig:getClientConfig": Grant("", ()),
}
# The quota check's Compute Engine REST reads (quotas.compute_usage): regions.get and projects.get.
REST_READS: dict[str, Grant] = {
    "compute.regions.get": Grant(COMPUTE_VIEWER, ("compute.regions.get",)),
    "compute.projects.get": Grant(COMPUTE_VIEWER, ("compute.projects.get",)),
}


def grant_of_type(type_token: str) -> Grant | None:
    """The grant a resource type needs; Grant("", ()) for the engine's and the project's own types; None: not
    covered (a new type the table must learn)."""
    if type_token.startswith(NO_CALL_PREFIXES) or type_token == "pulumi:pulumi:Stack":
        return Grant("", ())
    if type_token.startswith("kubernetes:"):
        return KUBERNETES
    return RESOURCES.get(type_token)


def created_types(args: GcpClusterArgs) -> set[str]:
    """The GCP resource types GcpGpuCluster creates for these arguments (component.py, network.py, gpudirect.py,
    storage.py, source_access.py)."""
    from .gpudirect import fabric_vpcs, machine_family
    types = {"gcp:projects/service:Service", "gcp:serviceaccount/account:Account",
             "gcp:projects/iAMMember:IAMMember", "gcp:container/cluster:Cluster", "gcp:container/nodePool:NodePool"}
    if not args.gcp.network:
        types |= {"gcp:compute/network:Network", "gcp:compute/subnetwork:Subnetwork", "gcp:compute/router:Router",
                  "gcp:compute/routerNat:RouterNat", "gcp:compute/firewall:Firewall"}
    if fabric_vpcs(args.cluster.name, args.gcp.zone, [machine_family(s.instance) for s in args.pools if s.multi_node]):
        types |= {"gcp:compute/network:Network", "gcp:compute/subnetwork:Subnetwork", "gcp:compute/firewall:Firewall"}
    if args.model_cache.kind == "rwx":
        types.add("gcp:filestore/instance:Instance")
    if any(r.kind == "gcs" for r in args.bucket_readers):
        types.add("gcp:storage/bucketIAMMember:BucketIAMMember")
    return types


def called_functions(args: GcpClusterArgs) -> set[str]:
    """The function tokens the component calls for these arguments (node_pools.capacity_checks, quotas.py,
    versions_check.py, source_access.py)."""
    calls = {"gcp:compute/getZones:getZones", "gcp:compute/getMachineTypes:getMachineTypes",
             "gcp:organizations/getClientConfig:getClientConfig", "gcp:container/getCluster:getCluster",
             "gcp:container/getEngineVersions:getEngineVersions"}
    if args.gcp.reservation:
        calls.add("gcp:compute/getReservation:getReservation")
    else:
        calls.add("gcp:cloudquota/getSQuotaInfo:getSQuotaInfo")
    if any(r.kind == "gcs" for r in args.bucket_readers):
        calls.add("gcp:organizations/getProject:getProject")
    return calls


def _grants(args: GcpClusterArgs) -> list[Grant]:
    return [*(RESOURCES[t] for t in sorted(created_types(args))), KUBERNETES,
            *(FUNCTIONS[f] for f in sorted(called_functions(args))), *REST_READS.values()]


def required_roles(args: GcpClusterArgs) -> list[str]:
    """The predefined roles to grant the deployer on the project (sorted, each once)."""
    return sorted({g.role for g in _grants(args) if g.role})


def required_permissions(args: GcpClusterArgs) -> list[str]:
    """The permissions of a custom role that replaces required_roles (sorted, each once); container.* stands for
    Kubernetes Engine Admin's permissions on the cluster's objects."""
    return sorted({p for g in _grants(args) for p in g.permissions})
