"""Cluster components. Each returns the same ClusterFacts (facts.py), whichever cloud built it."""
from .facts import ClusterFacts, GpuPool, Taint

__all__ = ["ClusterFacts", "GpuPool", "Taint"]
