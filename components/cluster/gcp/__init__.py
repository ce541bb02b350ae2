"""GKE: network, cluster, GPU node pools (GPUDirect / RDMA), Filestore model cache, kubeconfig.

Split by concern like Google's cluster-toolkit: network.py, gke.py, nodepools.py, gpudirect.py,
filestore.py, kubeconfig.py; component.py wires them into GcpGpuCluster.
"""
from .component import GcpGpuCluster

__all__ = ["GcpGpuCluster"]
