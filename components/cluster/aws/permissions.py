"""The least-privilege IAM policy for the principal that runs `pulumi up` on an EKS stack, generated from what the
AWS component (components/cluster/aws) creates and asks for that stack's arguments. Pure: no AWS call.

RESOURCE_ACTIONS maps every pulumi-aws resource type the component registers to the IAM actions its provider calls
to create, read, update, tag and delete it; INVOKE_ACTIONS maps every data source (invoke) the component calls to
the actions behind it. Source: the AWS Service Authorization Reference (docs.aws.amazon.com/service-authorization/
latest/reference/: list_amazonec2.html, list_amazonelastickubernetesservice.html, list_awsidentityandaccess
management.html, list_awskeymanagementservice.html, list_amazoncloudwatchlogs.html, list_amazonelasticfilesystem.html,
list_amazonec2autoscaling.html, list_servicequotas.html, list_awscloudcontrolapi.html), which names each API's
action and the actions it depends on, matched to the API calls of the provider's resource (the Terraform AWS provider
that pulumi-aws 7.51 bridges: Create*/Describe*/Modify*/Delete* of each resource, tags on create). ⚠ Not replayed
against a live account (CloudTrail of a real `pulumi up` / `destroy`); docs/clusters.md says how to check.

tests/cluster/aws/test_permissions.py runs the offline program and fails when the component registers a resource
type or calls an invoke that these tables do not cover, or when required_policy leaves out one a stack uses.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .capacity import reserved, uses_efa

if TYPE_CHECKING:
    from .args import AwsClusterArgs

_EC2_TAGS = ("ec2:CreateTags", "ec2:DeleteTags")
_EKS_TAGS = ("eks:TagResource", "eks:UntagResource", "eks:ListTagsForResource")

RESOURCE_ACTIONS: dict[str, tuple[str, ...]] = {
    # VPC (components/cluster/aws/network.py), only for a VPC the stack creates
    "aws:ec2/vpc:Vpc": ("ec2:CreateVpc", "ec2:DeleteVpc", "ec2:DescribeVpcs", "ec2:DescribeVpcAttribute",
                        "ec2:ModifyVpcAttribute", "ec2:DescribeRouteTables", "ec2:DescribeNetworkAcls",
                        "ec2:DescribeSecurityGroups", *_EC2_TAGS),
    "aws:ec2/internetGateway:InternetGateway": ("ec2:CreateInternetGateway", "ec2:AttachInternetGateway",
                                                "ec2:DetachInternetGateway", "ec2:DeleteInternetGateway",
                                                "ec2:DescribeInternetGateways", *_EC2_TAGS),
    "aws:ec2/routeTable:RouteTable": ("ec2:CreateRouteTable", "ec2:DeleteRouteTable", "ec2:DescribeRouteTables",
                                      "ec2:CreateRoute", "ec2:ReplaceRoute", "ec2:DeleteRoute", *_EC2_TAGS),
    "aws:ec2/routeTableAssociation:RouteTableAssociation": ("ec2:AssociateRouteTable", "ec2:DisassociateRouteTable",
                                                            "ec2:ReplaceRouteTableAssociation",
                                                            "ec2:DescribeRouteTables"),
    "aws:ec2/subnet:Subnet": ("ec2:CreateSubnet", "ec2:DeleteSubnet", "ec2:DescribeSubnets",
                              "ec2:ModifySubnetAttribute", *_EC2_TAGS),
    "aws:ec2/eip:Eip": ("ec2:AllocateAddress", "ec2:ReleaseAddress", "ec2:DescribeAddresses",
                        "ec2:DescribeAddressesAttribute", *_EC2_TAGS),
    "aws:ec2/natGateway:NatGateway": ("ec2:CreateNatGateway", "ec2:DeleteNatGateway", "ec2:DescribeNatGateways",
                                      *_EC2_TAGS),
    "aws:ec2/vpcEndpoint:VpcEndpoint": ("ec2:CreateVpcEndpoint", "ec2:ModifyVpcEndpoint", "ec2:DeleteVpcEndpoints",
                                        "ec2:DescribeVpcEndpoints", "ec2:DescribePrefixLists", *_EC2_TAGS),
    # Security groups and rules (nodes, EFA, the EFS cache, the deployer's way to the API)
    "aws:ec2/securityGroup:SecurityGroup": ("ec2:CreateSecurityGroup", "ec2:DeleteSecurityGroup",
                                            "ec2:DescribeSecurityGroups", "ec2:RevokeSecurityGroupEgress",
                                            "ec2:AuthorizeSecurityGroupEgress", "ec2:DescribeNetworkInterfaces",
                                            *_EC2_TAGS),
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule": (
        "ec2:AuthorizeSecurityGroupIngress", "ec2:RevokeSecurityGroupIngress", "ec2:ModifySecurityGroupRules",
        "ec2:DescribeSecurityGroupRules", *_EC2_TAGS),
    "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule": (
        "ec2:AuthorizeSecurityGroupEgress", "ec2:RevokeSecurityGroupEgress", "ec2:ModifySecurityGroupRules",
        "ec2:DescribeSecurityGroupRules", *_EC2_TAGS),
    # Nodes (node_pools.py)
    "aws:ec2/launchTemplate:LaunchTemplate": ("ec2:CreateLaunchTemplate", "ec2:CreateLaunchTemplateVersion",
                                              "ec2:ModifyLaunchTemplate", "ec2:DeleteLaunchTemplate",
                                              "ec2:DescribeLaunchTemplates", "ec2:DescribeLaunchTemplateVersions",
                                              *_EC2_TAGS),
    "aws:ec2/placementGroup:PlacementGroup": ("ec2:CreatePlacementGroup", "ec2:DeletePlacementGroup",
                                              "ec2:DescribePlacementGroups", *_EC2_TAGS),
    "aws:eks/nodeGroup:NodeGroup": ("eks:CreateNodegroup", "eks:DescribeNodegroup", "eks:UpdateNodegroupConfig",
                                    "eks:UpdateNodegroupVersion", "eks:DeleteNodegroup", "eks:DescribeUpdate",
                                    "iam:PassRole", "iam:GetRole", "iam:CreateServiceLinkedRole",
                                    "ec2:DescribeSubnets", "ec2:DescribeLaunchTemplateVersions", *_EKS_TAGS),
    "aws:autoscaling/tag:Tag": ("autoscaling:CreateOrUpdateTags", "autoscaling:DeleteTags",
                                "autoscaling:DescribeTags"),
    "aws:autoscaling/schedule:Schedule": ("autoscaling:PutScheduledUpdateGroupAction",
                                          "autoscaling:DescribeScheduledActions",
                                          "autoscaling:DeleteScheduledAction"),
    # Control plane (control_plane.py): the envelope key, the log group, the cluster, access entries, add-ons
    "aws:kms/key:Key": ("kms:CreateKey", "kms:DescribeKey", "kms:GetKeyPolicy", "kms:PutKeyPolicy",
                        "kms:GetKeyRotationStatus", "kms:EnableKeyRotation", "kms:UpdateKeyDescription",
                        "kms:ListResourceTags", "kms:TagResource", "kms:UntagResource", "kms:ScheduleKeyDeletion"),
    "aws:kms/alias:Alias": ("kms:CreateAlias", "kms:UpdateAlias", "kms:DeleteAlias", "kms:ListAliases"),
    "aws:cloudwatch/logGroup:LogGroup": ("logs:CreateLogGroup", "logs:DeleteLogGroup", "logs:DescribeLogGroups",
                                         "logs:PutRetentionPolicy", "logs:DeleteRetentionPolicy",
                                         "logs:ListTagsForResource", "logs:TagResource", "logs:UntagResource"),
    # EKS checks the caller may use the key (CreateGrant) and pass the cluster role; it creates its
    # service-linked role on an account's first cluster.
    "aws:eks/cluster:Cluster": ("eks:CreateCluster", "eks:DescribeCluster", "eks:UpdateClusterConfig",
                                "eks:UpdateClusterVersion", "eks:DeleteCluster", "eks:DescribeUpdate",
                                "iam:PassRole", "iam:GetRole", "iam:CreateServiceLinkedRole", "kms:CreateGrant",
                                "kms:DescribeKey", "ec2:DescribeSubnets", "ec2:DescribeSecurityGroups",
                                *_EKS_TAGS),
    "aws:eks/accessEntry:AccessEntry": ("eks:CreateAccessEntry", "eks:DescribeAccessEntry", "eks:UpdateAccessEntry",
                                        "eks:DeleteAccessEntry", *_EKS_TAGS),
    "aws:eks/accessPolicyAssociation:AccessPolicyAssociation": ("eks:AssociateAccessPolicy",
                                                                "eks:DisassociateAccessPolicy",
                                                                "eks:ListAssociatedAccessPolicies"),
    "aws:eks/addon:Addon": ("eks:CreateAddon", "eks:DescribeAddon", "eks:UpdateAddon", "eks:DeleteAddon",
                            "eks:DescribeAddonVersions", "eks:DescribeAddonConfiguration", "eks:DescribeUpdate",
                            "iam:PassRole", "iam:GetRole", *_EKS_TAGS),
    "aws:eks/podIdentityAssociation:PodIdentityAssociation": ("eks:CreatePodIdentityAssociation",
                                                              "eks:DescribePodIdentityAssociation",
                                                              "eks:UpdatePodIdentityAssociation",
                                                              "eks:DeletePodIdentityAssociation",
                                                              "iam:PassRole", "iam:GetRole", *_EKS_TAGS),
    # IAM roles of the cluster, nodes, CSI drivers, Cluster Autoscaler, LB controller, weights readers (iam.py)
    "aws:iam/role:Role": ("iam:CreateRole", "iam:GetRole", "iam:UpdateRole", "iam:UpdateRoleDescription",
                          "iam:UpdateAssumeRolePolicy", "iam:DeleteRole", "iam:TagRole", "iam:UntagRole",
                          "iam:ListRolePolicies", "iam:ListAttachedRolePolicies", "iam:ListInstanceProfilesForRole"),
    "aws:iam/rolePolicy:RolePolicy": ("iam:PutRolePolicy", "iam:GetRolePolicy", "iam:DeleteRolePolicy"),
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment": ("iam:AttachRolePolicy", "iam:DetachRolePolicy",
                                                          "iam:ListAttachedRolePolicies"),
    # The EFS model cache (storage.py): a mount target is a network interface EFS creates as the caller.
    "aws:efs/fileSystem:FileSystem": ("elasticfilesystem:CreateFileSystem", "elasticfilesystem:DescribeFileSystems",
                                      "elasticfilesystem:UpdateFileSystem", "elasticfilesystem:DeleteFileSystem",
                                      "elasticfilesystem:DescribeLifecycleConfiguration",
                                      "elasticfilesystem:PutLifecycleConfiguration",
                                      "elasticfilesystem:DescribeBackupPolicy", "elasticfilesystem:TagResource",
                                      "elasticfilesystem:UntagResource", "elasticfilesystem:ListTagsForResource",
                                      "iam:CreateServiceLinkedRole", "kms:DescribeKey"),
    "aws:efs/mountTarget:MountTarget": ("elasticfilesystem:CreateMountTarget", "elasticfilesystem:DescribeMountTargets",
                                        "elasticfilesystem:DeleteMountTarget",
                                        "elasticfilesystem:DescribeMountTargetSecurityGroups",
                                        "elasticfilesystem:ModifyMountTargetSecurityGroups", "ec2:DescribeSubnets",
                                        "ec2:CreateNetworkInterface", "ec2:DescribeNetworkInterfaces",
                                        "ec2:DeleteNetworkInterface"),
}

INVOKE_ACTIONS: dict[str, tuple[str, ...]] = {
    "aws:index/getPartition:getPartition": (),  # answered by the provider from its region
    "aws:index/getCallerIdentity:getCallerIdentity": (),  # sts:GetCallerIdentity needs no permission
    "aws:iam/getSessionContext:getSessionContext": ("iam:GetRole",),
    "aws:index/getAvailabilityZones:getAvailabilityZones": ("ec2:DescribeAvailabilityZones",),
    "aws:ec2/getSubnet:getSubnet": ("ec2:DescribeSubnets",),
    "aws:ec2/getInstanceTypeOfferings:getInstanceTypeOfferings": ("ec2:DescribeInstanceTypeOfferings",),
    "aws:ec2/getCapacityBlockReservation:getCapacityBlockReservation": ("ec2:DescribeCapacityReservations",),
    "aws:cloudcontrol/getResource:getResource": ("cloudformation:GetResource", "ec2:DescribeCapacityReservations"),
    "aws:servicequotas/getServiceQuota:getServiceQuota": ("servicequotas:GetServiceQuota",
                                                          "servicequotas:GetAWSDefaultServiceQuota"),
    "aws:eks/getClusterVersions:getClusterVersions": ("eks:DescribeClusterVersions",),
    "aws:eks/getClusters:getClusters": ("eks:ListClusters",),
    "aws:eks/getCluster:getCluster": ("eks:DescribeCluster",),
    "aws:eks/getNodeGroups:getNodeGroups": ("eks:ListNodegroups",),
    "aws:eks/getNodeGroup:getNodeGroup": ("eks:DescribeNodegroup",),
    "aws:eks/getAddonVersion:getAddonVersion": ("eks:DescribeAddonVersions",),
}

_NETWORK = ("aws:ec2/vpc:Vpc", "aws:ec2/internetGateway:InternetGateway", "aws:ec2/routeTable:RouteTable",
            "aws:ec2/routeTableAssociation:RouteTableAssociation", "aws:ec2/subnet:Subnet", "aws:ec2/eip:Eip",
            "aws:ec2/natGateway:NatGateway", "aws:ec2/vpcEndpoint:VpcEndpoint")
_ALWAYS = ("aws:ec2/securityGroup:SecurityGroup", "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
           "aws:ec2/launchTemplate:LaunchTemplate", "aws:eks/nodeGroup:NodeGroup", "aws:kms/key:Key",
           "aws:kms/alias:Alias", "aws:cloudwatch/logGroup:LogGroup", "aws:eks/cluster:Cluster", "aws:eks/addon:Addon",
           "aws:eks/podIdentityAssociation:PodIdentityAssociation", "aws:iam/role:Role",
           "aws:iam/rolePolicy:RolePolicy", "aws:iam/rolePolicyAttachment:RolePolicyAttachment")


def resource_types(args: AwsClusterArgs) -> set[str]:
    """The pulumi-aws resource types AwsGpuCluster registers for these arguments."""
    from .component import uses_efs  # the component's own rule; imported late (the component imports pulumi_k8s)
    types = set(_ALWAYS)
    if not args.aws.vpc_id:
        types.update(_NETWORK)
    if args.pools:
        types.add("aws:autoscaling/tag:Tag")
    efa = [spec for spec in args.pools if uses_efa(spec)]
    if efa:
        types.add("aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule")
        if not reserved(args.aws) and not args.aws.placement_group:
            types.add("aws:ec2/placementGroup:PlacementGroup")
    if uses_efs(args):
        types.update(("aws:efs/fileSystem:FileSystem", "aws:efs/mountTarget:MountTarget"))
    if args.aws.admin_role_arns or args.aws.viewer_role_arns:
        types.update(("aws:eks/accessEntry:AccessEntry", "aws:eks/accessPolicyAssociation:AccessPolicyAssociation"))
    if args.aws.capacity_type == "capacityBlock":
        types.add("aws:autoscaling/schedule:Schedule")
    return types


def invoke_tokens(args: AwsClusterArgs) -> set[str]:
    """The data sources AwsGpuCluster asks before (and while) registering resources, for these arguments."""
    tokens = {"aws:index/getPartition:getPartition", "aws:index/getCallerIdentity:getCallerIdentity",
              "aws:iam/getSessionContext:getSessionContext", "aws:ec2/getSubnet:getSubnet",
              "aws:eks/getClusterVersions:getClusterVersions", "aws:eks/getClusters:getClusters",
              "aws:eks/getCluster:getCluster", "aws:eks/getNodeGroups:getNodeGroups",
              "aws:eks/getNodeGroup:getNodeGroup", "aws:eks/getAddonVersion:getAddonVersion"}
    if not args.aws.vpc_id:
        tokens.add("aws:index/getAvailabilityZones:getAvailabilityZones")
    kind = args.aws.capacity_type
    if kind == "capacityBlock":
        tokens.add("aws:ec2/getCapacityBlockReservation:getCapacityBlockReservation")
    elif kind == "reservation":
        tokens.add("aws:cloudcontrol/getResource:getResource")
    else:
        tokens.update(("aws:ec2/getInstanceTypeOfferings:getInstanceTypeOfferings",
                       "aws:servicequotas/getServiceQuota:getServiceQuota"))
    return tokens


def required_actions(args: AwsClusterArgs) -> set[str]:
    return ({a for t in resource_types(args) for a in RESOURCE_ACTIONS[t]}
            | {a for t in invoke_tokens(args) for a in INVOKE_ACTIONS[t]})


def required_policy(args: AwsClusterArgs) -> dict:
    """The IAM policy document (JSON-ready dict) the principal running `pulumi up`, `preview` and `destroy` of the
    EKS stack with these arguments needs: one statement per AWS service, actions sorted. Resources are "*": the
    physical names are generated at creation (docs/clusters.md, "The deployer's IAM policy", says how to narrow
    them). The Kubernetes objects need no IAM action: the deployer reaches the cluster through its EKS access
    entry (the cluster creator's, or aws.adminRoleArns)."""
    by_service: dict[str, set[str]] = {}
    for action in required_actions(args):
        by_service.setdefault(action.split(":", 1)[0], set()).add(action)
    return {"Version": "2012-10-17", "Statement": [
        {"Sid": "".join(c for c in service.title() if c.isalnum()), "Effect": "Allow", "Action": sorted(actions),
         "Resource": "*"}
        for service, actions in sorted(by_service.items())]}
