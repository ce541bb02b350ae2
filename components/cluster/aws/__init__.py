"""EKS for the plan (components/cluster/aws/component.py); the same file shape as cluster/gcp."""
from .component import AwsGpuCluster, cache_facts, check, uses_efs

__all__ = ["AwsGpuCluster", "cache_facts", "check", "uses_efs"]
