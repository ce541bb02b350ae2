"""IAM for the EKS cluster: trust and permission documents (pure), and roles built from them.

Add-ons and controllers get their AWS permissions through EKS Pod Identity, each from its own role;
nodes keep only what a node needs to join, pull images and run the VPC CNI.
"""
from __future__ import annotations

import json

import pulumi
import pulumi_aws as aws

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
