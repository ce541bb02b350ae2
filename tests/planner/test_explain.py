"""The refusal message tells the truth about PP across nodes: over Ethernet it is planned when the SLA still
holds (docs/capacity.md), so nodes without a fast fabric are not called unusable for PP; nodes with no network
at all are."""
from __future__ import annotations

from dataclasses import replace

import pytest

from components.catalog import InstanceType
from components.planner import NoFeasibleTopology, plan_topology
from tests.support.planner import request


def _refusal(req) -> str:
    with pytest.raises(NoFeasibleTopology) as e:
        plan_topology(req)
    return e.value.message


def test_nodes_without_a_fast_fabric_run_pp_over_ethernet_within_the_sla():
    msg = _refusal(request("llama-3.1-405b", "a10g"))
    assert ("on a10g the most is 8 x 20.1 GiB per node and a10g nodes have no fast fabric (EFA/RDMA): PP across "
            "them runs over 100 Gbps Ethernet, only where the SLA still holds") in msg
    assert "fast fabric (EFA/RDMA) for PP" not in msg  # the old wording said PP was impossible there


def test_nodes_with_no_network_have_none_for_pp():
    bare = InstanceType(cloud="existing", name="existing-a10gx8", accelerator="a10g", gpus=8, vcpu=192,
                        ram_gib=768, nvme_gb=0, network_gbps=0, fabric=None, price_hour=0.0, source="test")
    msg = _refusal(replace(request("llama-3.1-405b", "a10g"), candidates=(bare,)))
    assert "on a10g the most is 8 x 20.1 GiB per node and a10g nodes have no network between them for PP" in msg


def test_pp_over_ethernet_is_a_last_resort_not_a_saving():
    """Llama-3.1-70B at its full 131,072-token context on L40S for 8 users: two g6e.12xlarge (TP 4 x PP 2 over
    100 Gbps Ethernet, 13 users at the knee) would cost $20.99/h, one g6e.48xlarge (TP 8) $30.13/h. A model one node
    holds is served by one node; PP over Ethernet is planned only where no single-node or fast-fabric shape fits.
    (8 users, not the default 16: since the 2026-12-05 refit the PP replica's knee is 13, so 16 users need two of
    them at $41.97/h and the split would no longer be the cheaper one.)"""
    req = request("llama-3.1-70b", "l40s", kv_cache_dtypes=("auto",),  # the stack default (kvCacheDtype auto)
                  concurrency=8)
    t = plan_topology(req)
    assert (t.instance_type, t.tensor_parallel_size, t.pipeline_parallel_size, t.cost_per_hour) == \
        ("g6e.48xlarge", 8, 1, 30.13)
    only_small = replace(req, candidates=tuple(i for i in req.candidates if i.name == "g6e.12xlarge"))
    t = plan_topology(only_small)  # with no node that holds it, the cheaper split is planned
    assert (t.instance_type, t.tensor_parallel_size, t.pipeline_parallel_size, t.cost_per_hour) == \
        ("g6e.12xlarge", 4, 2, 20.99)
