"""IAM for the EKS cluster: trust and permission documents (pure), and roles built from them.

Add-ons and controllers get their AWS permissions through EKS Pod Identity, each from its own role;
nodes keep only what a node needs to join, pull images and run the VPC CNI.
"""
from __future__ import annotations

import json

import pulumi
import pulumi_aws as aws

from .lb_controller_policy import POLICY_JSON as LB_CONTROLLER_POLICY_JSON

POD_IDENTITY_PRINCIPAL = "pods.eks.amazonaws.com"
CLUSTER_POLICIES = ("AmazonEKSClusterPolicy",)
# The CNI policy stays on the node role: aws-node must assign pod IPs before anything else on the
# node (the Pod Identity agent included) can run, which is AWS's default setup for managed nodes.
# SSM: a shell on a GPU node (nvidia-smi, dmesg, the NVMe array) through Session Manager, with no SSH key,
# bastion or open port.
NODE_POLICIES = ("AmazonEKSWorkerNodePolicy", "AmazonEC2ContainerRegistryPullOnly", "AmazonEKS_CNI_Policy",
                 "AmazonSSMManagedInstanceCore")
EFS_CSI_POLICY = "service-role/AmazonEFSCSIDriverPolicy"
EBS_CSI_POLICY = "service-role/AmazonEBSCSIDriverPolicy"
# The AWS Load Balancer Controller runs where upstream installs it, under this service account; its Pod
# Identity association names both, and the add-on (components/addons/aws_lb_controller.py) reads them from
# ClusterFacts.load_balancer_controller.
LB_CONTROLLER_NAMESPACE = "kube-system"
LB_CONTROLLER_SERVICE_ACCOUNT = "aws-load-balancer-controller"


def managed_policy_arn(partition: str, name: str) -> str:
    return f"arn:{partition}:iam::aws:policy/{name}"


def trust_policy(service: str, tag_session: bool = True) -> str:
    """Who may assume a role: one AWS service principal (EKS, EC2 or the Pod Identity agent)."""
    actions = ["sts:AssumeRole", "sts:TagSession"] if tag_session else ["sts:AssumeRole"]
    return json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"Service": service}, "Action": actions}]})


def secrets_key_policy(key_arn: str) -> str:
    """What the EKS service role needs on the envelope-encryption key (terraform-aws-eks does the same)."""
    return json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": ["kms:Encrypt", "kms:Decrypt", "kms:ListGrants", "kms:DescribeKey"],
         "Resource": key_arn}]})


def cluster_autoscaler_policy(partition: str, region: str, account: str, cluster: str) -> dict:
    """Least privilege for cluster-autoscaler on managed node groups (kubernetes/autoscaler
    cluster-autoscaler/cloudprovider/aws/README.md, "IAM Policy" and "Auto-Discovery Setup"):
    it may read any Auto Scaling group, but only resize or shrink the ones EKS tagged as this cluster's."""
    return {"Version": "2012-10-17", "Statement": [
        {"Sid": "Discover", "Effect": "Allow", "Resource": "*", "Action": [
            "autoscaling:DescribeAutoScalingGroups", "autoscaling:DescribeAutoScalingInstances",
            "autoscaling:DescribeLaunchConfigurations", "autoscaling:DescribeScalingActivities",
            "autoscaling:DescribeTags", "ec2:DescribeImages", "ec2:DescribeInstanceTypes",
            "ec2:DescribeLaunchTemplateVersions", "ec2:GetInstanceTypesFromInstanceRequirements"]},
        # Labels and taints of a group scaled to zero come from its managed node group.
        {"Sid": "NodeGroupTemplates", "Effect": "Allow", "Action": ["eks:DescribeNodegroup"],
         "Resource": f"arn:{partition}:eks:{region}:{account}:nodegroup/{cluster}/*/*"},
        {"Sid": "ScaleOwnGroups", "Effect": "Allow", "Resource": "*",
         "Action": ["autoscaling:SetDesiredCapacity", "autoscaling:TerminateInstanceInAutoScalingGroup"],
         "Condition": {"StringEquals": {f"aws:ResourceTag/k8s.io/cluster-autoscaler/{cluster}": "owned"}}},
    ]}


def load_balancer_controller_policy(partition: str) -> str:
    """The AWS Load Balancer Controller's policy (upstream docs/install/iam_policy.json, lb_controller_policy.py)
    for this partition. Upstream writes its ARNs for `aws`; its per-partition files (iam_policy_cn.json,
    iam_policy_us-gov.json) lag behind the main one (they lack statements v3.5.0 needs), so the main file is
    used everywhere with the partition of its ARNs replaced."""
    return LB_CONTROLLER_POLICY_JSON.replace("arn:aws:", f"arn:{partition}:")


def pod_identity_role(name: str, cluster: aws.eks.Cluster, namespace: str, service_account: str, policy: str,
                      parent: pulumi.Resource, description: str, depends_on: list | None = None,
                      policy_suffix: str = "policy") -> tuple[aws.iam.Role, aws.eks.PodIdentityAssociation]:
    """A controller's own role, trusted by the Pod Identity agent, with one inline policy, and the association
    that hands it to `namespace/service_account`. The association waits for the policy (the controller's
    first AWS call must not race it) and for `depends_on` (the Pod Identity agent add-on)."""
    opts = pulumi.ResourceOptions(parent=parent)
    role = aws.iam.Role(f"{name}-role", assume_role_policy=trust_policy(POD_IDENTITY_PRINCIPAL),
                        description=description, opts=opts)
    attached = aws.iam.RolePolicy(f"{name}-role-{policy_suffix}", role=role.id, policy=policy, opts=opts)
    association = aws.eks.PodIdentityAssociation(
        f"{name}-identity", cluster_name=cluster.name, namespace=namespace, service_account=service_account,
        role_arn=role.arn, opts=pulumi.ResourceOptions(parent=parent, depends_on=[attached, *(depends_on or [])]))
    return role, association


def service_role(name: str, service: str, partition: str, managed: tuple[str, ...], parent: pulumi.Resource,
                 description: str, tag_session: bool = True) -> tuple[aws.iam.Role, list[aws.iam.RolePolicyAttachment]]:
    """A role for one AWS service principal with AWS-managed policies attached (one attachment each,
    so that a policy added later does not replace the role)."""
    opts = pulumi.ResourceOptions(parent=parent)
    role = aws.iam.Role(name, assume_role_policy=trust_policy(service, tag_session), description=description,
                        opts=opts)
    attachments = [
        aws.iam.RolePolicyAttachment(f"{name}-{policy.rsplit('/', 1)[-1].lower().replace('_', '-')}", role=role.name,
                                     policy_arn=managed_policy_arn(partition, policy), opts=opts)
        for policy in managed]
    return role, attachments
