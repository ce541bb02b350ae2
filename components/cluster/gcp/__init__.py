"""GKE: network, control plane, GPU node pools (GPUDirect / RDMA), Filestore model cache.

The same files per cloud as components/cluster/aws: component.py wires control_plane.py, network.py,
node_pools.py and storage.py into GcpGpuCluster; gpudirect.py holds the GPU NIC network plan per machine
family (cluster-toolkit's split by concern).
"""
from .component import GcpGpuCluster

__all__ = ["GcpGpuCluster"]
