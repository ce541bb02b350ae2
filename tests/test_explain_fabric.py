"""The refusal message tells the truth about PP across nodes: over Ethernet it is planned when the SLA still
holds (docs/capacity.md), so nodes without a fast fabric are not called unusable for PP; nodes with no network
at all are."""
from __future__ import annotations

from dataclasses import replace

import pytest

from components.catalog import InstanceType
from components.planner import NoFeasibleTopology, plan_topology
from tests.helpers_planner import request


def _refusal(req) -> str:
    with pytest.raises(NoFeasibleTopology) as e:
        plan_topology(req)
    return e.value.message


def test_nodes_without_a_fast_fabric_run_pp_over_ethernet_within_the_sla():
    msg = _refusal(request("llama-3.1-405b", "a10g"))
    assert ("on a10g the most is 8 x 20.1 GiB per node and a10g nodes have no fast fabric (EFA/RDMA): PP across "
            "them runs over 100 Gbps Ethernet, only where the SLA still holds → choose") in msg
    assert "fast fabric (EFA/RDMA) for PP" not in msg  # the old wording said PP was impossible there


def test_nodes_with_no_network_have_none_for_pp():
    bare = InstanceType(cloud="existing", name="existing-a10gx8", accelerator="a10g", gpus=8, vcpu=192,
                        ram_gib=768, nvme_gb=0, network_gbps=0, fabric=None, price_hour=0.0, source="test")
    msg = _refusal(replace(request("llama-3.1-405b", "a10g"), candidates=(bare,)))
    assert "on a10g the most is 8 x 20.1 GiB per node and a10g nodes have no network between them for PP" in msg
