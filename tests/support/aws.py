"""What the AWS test files share: type tokens and the small single-GPU EKS stack they plan."""
from __future__ import annotations

P5 = "prod-llama405b-aws"
NG = "aws:eks/nodeGroup:NodeGroup"
LT = "aws:ec2/launchTemplate:LaunchTemplate"
CLUSTER = "aws:eks/cluster:Cluster"
ADDON = "aws:eks/addon:Addon"
SG = "aws:ec2/securityGroup:SecurityGroup"
INGRESS = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
EGRESS = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"

# Llama-3.1-8B on one g6.xlarge (L4), dev, a VPC the stack creates, the public endpoint from one deployer IP.
G6 = {"cloud": "aws", "environment": "dev",
      "aws": {"region": "eu-west-1", "endpointPublicAccessCidrs": ["203.0.113.7/32"]},
      "models": [{"name": "small", "model": "llama-3.1-8b", "instanceTypes": ["g6.xlarge"], "maxModelLen": 8192,
                  "sla": {"concurrency": 4}, "replicas": {"min": 1, "max": 3}}]}
