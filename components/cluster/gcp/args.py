"""GcpClusterArgs: what GcpGpuCluster reads, apart from the component so that its parts (control_plane,
node_pools, quotas) import the arguments without importing the component."""
from __future__ import annotations

from dataclasses import dataclass, field

from ...config.schema import ClusterSettings, GcpSettings
from ...config.schema import ModelCache as ModelCacheSettings
from ..pools import PoolSpec
from ..source_access import BucketReader


@dataclass(frozen=True)
class GcpClusterArgs:
    """What GcpGpuCluster reads: the stack's `cluster` and `gcp` blocks, its `modelCache` settings
    (Filestore or local SSD), the environment, the GPU pools of the plan and the size the model cache
    needs (pools.model_cache_gib). Built by components/wiring.py from a StackConfig and the plan."""
    gcp: GcpSettings
    pools: tuple[PoolSpec, ...]
    cache_gib: int = 0
    cluster: ClusterSettings = field(default_factory=ClusterSettings)
    model_cache: ModelCacheSettings = field(default_factory=ModelCacheSettings)
    environment: str = "dev"
    bucket_readers: tuple[BucketReader, ...] = ()  # models[].source kind gcs: who reads which bucket prefix

    @property
    def production(self) -> bool:
        return self.environment == "prod"

    @property
    def deletion_protection(self) -> bool:
        return deletion_protection(self)


def deletion_protection(cfg) -> bool:
    """gcp.deletionProtection, else on in production: GKE's and Filestore's own flags and Pulumi's `protect` on
    the cluster and the cache all follow it (component.py says why not the node pools). `cfg`: anything with
    `gcp` and `production` (the component's arguments, or a StackConfig)."""
    flag = cfg.gcp.deletion_protection
    return cfg.production if flag is None else flag
