"""AwsClusterArgs: what AwsGpuCluster reads, apart from the component so that its parts (control_plane) import
the arguments without importing the component."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...config.schema import AwsSettings, ClusterSettings
from ...config.schema import ModelCache as ModelCacheSettings
from ...planner import Topology
from ..charts import ChartMirror
from ..pools import PoolSpec, pool_name
from ..source_access import BucketReader


@dataclass(frozen=True)
class AwsClusterArgs:
    """What AwsGpuCluster reads: the stack's `cluster` and `aws` blocks, its `modelCache` settings (EFS or
    node NVMe), the environment, the GPU pools of the plan and the stack's `aws:*` provider settings (for
    the kubeconfig's token identity). Built by components/wiring.py from a StackConfig and the plan."""
    aws: AwsSettings
    pools: tuple[PoolSpec, ...]
    pool_models: dict[str, str] = field(default_factory=dict)  # pool name -> catalog models, for cost tags
    cluster: ClusterSettings = field(default_factory=ClusterSettings)
    model_cache: ModelCacheSettings = field(default_factory=ModelCacheSettings)
    environment: str = "dev"
    provider_config: dict[str, Any] = field(default_factory=dict)  # LoadedConfig.provider_config["aws"]
    bucket_readers: tuple[BucketReader, ...] = ()  # models[].source kind s3: who reads which bucket prefix
    charts: ChartMirror | None = None  # the stack's `charts` block: where the Cluster Autoscaler's chart comes from

    @property
    def production(self) -> bool:
        return self.environment == "prod"


def pool_models(topologies: dict[str, Topology]) -> dict[str, str]:
    """Pool name -> the catalog models it serves, for cost-allocation tags."""
    models: dict[str, set[str]] = {}
    for t in topologies.values():
        models.setdefault(pool_name(t.instance_type), set()).add(t.model)
    return {pool: "+".join(sorted(ms)) for pool, ms in models.items()}
