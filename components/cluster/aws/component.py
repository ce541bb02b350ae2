"""EKS for the plan: VPC, control plane, system and GPU node groups, add-ons, storage classes and
Cluster Autoscaler, handed over as the same ClusterFacts the GCP and existing-cluster paths return.

Everything that can stop a `pulumi up` half-way or leave it without GPUs (an API the deployer cannot
reach, an instance type a zone does not offer, a reservation of another type or zone, a GPU quota below
the plan's max) is asked of EC2 and Service Quotas and checked before the first resource is registered."""
from __future__ import annotations

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from ...config import ConfigError
from ...upstream.versions import CLUSTER_AUTOSCALER_TAGS
from ..facts import (COREDNS, EKS_FABRIC_SOFTWARE, EKS_GPU_STACK, NEW_GPU_NODE_READY_S, ClusterFacts,
                     LoadBalancerController)
from ..pools import PoolSpec
from .args import AwsClusterArgs, pool_models  # noqa: F401  (re-exported: wiring and tests import them here)
from .autoscaling import ClusterAutoscaler
from . import capacity
from .capacity import PoolPlacement, plan_placement
from .iam import (LB_CONTROLLER_NAMESPACE, LB_CONTROLLER_SERVICE_ACCOUNT, load_balancer_controller_policy,
                  pod_identity_role)
from .control_plane import (EBS_CSI_ADDON, EFS_CSI_ADDON, NODE_ADDONS, NODE_MONITORING_ADDON, WORKLOAD_ADDONS,
                            EksAddons, EksControlPlane, deletion_protection, endpoint_reachability,
                            preview_secret_reader, token_identity)
from .versions_check import addon_versions, eks_version_checks, existing_cluster
from ...upstream import kubernetes_support
from .source_access import s3_readers
from .network import AwsNetwork, network_zones
from .quotas import check_quotas
from .node_pools import SYSTEM_LABELS, AwsNodeGroups, live_scaling
from .storage import BLOCK_STORAGE_CLASS, EFS_CLIENT_READ_GBPS, STORAGE_CLASS, EfsModelCache, block_storage_class

# Model cache on the nodes' NVMe RAID0: the first start downloads from the Hub, later ones read the
# local array. A conservative figure for one instance-store SSD; set modelCache.readGbps to what you measure.
NVME_READ_GBPS = 2.0


def check(args: AwsClusterArgs, specs: list[PoolSpec]) -> list[str]:
    """What the plan and the AWS settings disagree on, as `field: problem` lines (pure: no AWS call)."""
    problems = endpoint_reachability(args.aws)
    minor = args.cluster.kubernetes_version
    if minor not in CLUSTER_AUTOSCALER_TAGS:
        problems.append(f"cluster.kubernetesVersion: {minor} has no pinned Cluster Autoscaler release; "
                        f"allowed: {', '.join(sorted(CLUSTER_AUTOSCALER_TAGS))} (components/upstream/versions.py)")
    if args.aws.capacity_type in ("reservation", "capacityBlock"):
        for spec in specs:
            if spec.instance.name not in args.aws.capacity_reservations:
                problems.append(f"aws.capacityReservations: no reservation for planned instance type "
                                f"{spec.instance.name} ({', '.join(spec.models)}); add `{spec.instance.name}: cr-...`")
    return problems


def installed_addons(args: AwsClusterArgs) -> list[str]:
    """The EKS add-ons EksAddons installs (their builds: versions_check.addon_versions)."""
    return [*NODE_ADDONS, *WORKLOAD_ADDONS, EBS_CSI_ADDON, *([EFS_CSI_ADDON] if uses_efs(args) else []),
            *([NODE_MONITORING_ADDON] if args.aws.node_auto_repair else [])]


def uses_efs(args: AwsClusterArgs) -> bool:
    """EFS unless the cache is node-local or the stack names a StorageClass of its own."""
    return args.model_cache.kind == "rwx" and not args.model_cache.storage_class


def cache_facts(args: AwsClusterArgs) -> tuple[str | None, float]:
    mc = args.model_cache
    if mc.kind == "nvme":
        return None, mc.read_gbps or NVME_READ_GBPS
    return STORAGE_CLASS if uses_efs(args) else mc.storage_class, mc.read_gbps or EFS_CLIENT_READ_GBPS


def _fail(problems: list[str]):
    err = ConfigError(problems)
    raise pulumi.RunError(str(err)) from err


class AwsGpuCluster(pulumi.ComponentResource):
    facts: ClusterFacts

    def __init__(self, name: str, args: AwsClusterArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("vllm-platform:cluster:AwsGpuCluster", name, None, opts)
        specs = list(args.pools)
        # components/wiring.py ran these checks before any resource existed; a direct caller may not have
        profile, role_arn, token_problems = token_identity(args.provider_config or {})
        problems = check(args, specs) + token_problems
        if problems:
            _fail(problems)
        settings, cluster_name, minor = args.aws, args.cluster.name, args.cluster.kubernetes_version
        child = pulumi.ResourceOptions(parent=self)
        invoke = pulumi.InvokeOptions(parent=self)
        partition = aws.get_partition(opts=invoke)
        account = aws.get_caller_identity(opts=invoke).account_id
        placements: dict[str, PoolPlacement] = {}
        # EKS's own answer on the minor, an existing cluster's live version and the pinned add-on builds.
        live = existing_cluster(cluster_name, invoke)
        zones, zones_field, problems_zones, zone_warnings = network_zones(settings, invoke, live, args.production)
        if problems_zones:
            _fail(problems + problems_zones)
        for warning in zone_warnings:
            pulumi.log.warn(warning, resource=self)
        found, warnings = eks_version_checks(cluster_name, minor, settings.support_type, invoke,
                                             kubernetes_support.today(), live)
        problems += found
        # The add-ons' builds: EKS's newest for the minor (asked only of a minor EKS offers).
        addon_builds, found = addon_versions(installed_addons(args), minor, invoke) if not found else ({}, [])
        problems += found
        for warning in warnings:
            pulumi.log.warn(warning, resource=self)
        now = capacity.utcnow()
        for spec in specs:
            placement, found = plan_placement(spec, settings, zones, zones_field, invoke, now)
            problems += found
            if placement:
                placements[spec.name] = placement
        # A new account has no P / G quota: refused here, not as Pending pods after a finished run.
        problems += check_quotas(specs, settings, invoke)
        if problems:
            _fail(problems)

        network = AwsNetwork(f"{name}-network", settings, cluster_name, zones, partition.reverse_dns_prefix,
                             opts=child).facts
        control = EksControlPlane(f"{name}-eks", args, network, partition.partition, opts=child, profile=profile,
                                  role_arn=role_arn, live=live)
        self.cluster, self.kubeconfig = control.cluster, control.kubeconfig
        self.provider = k8s.Provider(f"{name}-k8s", kubeconfig=self.kubeconfig, opts=child)
        tags = {"vllm-platform/stack": pulumi.get_stack(), "vllm-platform/environment": args.environment}
        nodes = AwsNodeGroups(f"{name}-nodes", settings, cluster_name, specs, placements, self.cluster, network,
                              partition.partition, tags, args.pool_models, opts=child,
                              live_sizes=live_scaling(cluster_name, live is not None, invoke),
                              protect=deletion_protection(args))
        addons = EksAddons(f"{name}-addons", self.cluster, addon_builds, partition.partition,
                           nodes.system, efs_csi=uses_efs(args), node_monitoring=settings.node_auto_repair,
                           opts=child).addons
        block_class = block_storage_class(f"{name}-block-class", self.provider, addons[EBS_CSI_ADDON], self)
        # Operators and serving objects need the system nodes, the add-ons and a reachable API, not the GPU
        # groups: pods that ask for GPUs wait as Pending while a GPU group (or its capacity) is still coming.
        # The access entries too: created before, deleted after every Kubernetes object, so that a listed role
        # running `pulumi destroy` does not lose the API half-way (and leave the gateway's NLB behind).
        ready = [*nodes.system, *addons.values(), *control.deployer_rules, *control.access, block_class]
        if uses_efs(args):
            cache = EfsModelCache(f"{name}-cache", cluster_name, network, nodes.node_security_group, self.provider,
                                  addons[EFS_CSI_ADDON], opts=child, protect=deletion_protection(args))
            ready.append(cache.storage_class)
        ClusterAutoscaler(f"{name}-autoscaler", self.cluster, cluster_name, settings.region, minor,
                          partition.partition, account, self.provider,
                          [*nodes.system, addons["eks-pod-identity-agent"], *control.deployer_rules, *control.access],
                          opts=child, charts=args.charts)
        _, lbc_identity = pod_identity_role(
            f"{name}-lb-controller", self.cluster, LB_CONTROLLER_NAMESPACE, LB_CONTROLLER_SERVICE_ACCOUNT,
            load_balancer_controller_policy(partition.partition), self,
            f"AWS Load Balancer Controller of {cluster_name} (Pod Identity)",
            [*nodes.system, addons["eks-pod-identity-agent"], *control.deployer_rules])
        lb_controller = LoadBalancerController(
            cluster_name=cluster_name, region=settings.region, vpc_id=network.vpc_id,
            namespace=LB_CONTROLLER_NAMESPACE, service_account=LB_CONTROLLER_SERVICE_ACCOUNT,
            highly_available=args.production, depends_on=[lbc_identity])
        if settings.viewer_role_arns:
            preview_secret_reader(f"{name}-preview", self.provider, [*control.deployer_rules, *control.access], self)
        weights_access = s3_readers(name, self.cluster, partition.partition, args.bucket_readers, self,
                                    [addons["eks-pod-identity-agent"], *control.deployer_rules])
        storage_class, read_gbps = cache_facts(args)
        self.facts = ClusterFacts(
            cloud="aws", name=cluster_name, provider=self.provider, gpu_pools=nodes.pools,
            system_node_selector=dict(SYSTEM_LABELS), rwx_storage_class=storage_class, cache_read_gbps=read_gbps,
            driver_preinstalled=True, kubeconfig=self.kubeconfig, depends_on=ready,
            block_storage_class=BLOCK_STORAGE_CLASS, network_policy_enforced=True,
            gpu_stack=EKS_GPU_STACK, fabric_software=dict(EKS_FABRIC_SOFTWARE), managed_control_plane=True,
            cluster_dns=COREDNS, gpu_node_ready_s=NEW_GPU_NODE_READY_S, load_balancer_controller=lb_controller,
            weights_access=weights_access)
        self.register_outputs({"clusterName": self.cluster.name, "endpoint": self.cluster.endpoint,
                               "kubeconfig": self.kubeconfig})
