"""Renames keep resources: every resource of a released stack keeps its address (parent, type, name),
or its new registration carries `aliases=` to the old one and UPGRADING.md says so. Without that,
`pulumi up` on an existing stack deletes the resource and creates a new one (a new EKS cluster, a new
EFS file system with none of the cached weights)."""
from __future__ import annotations

import json

import pytest

from components.offline.runner import ROOT, stack_names
from tests.support.plans import planned

BASELINE = json.loads((ROOT / "tests" / "resource_addresses.json").read_text())["stacks"]
# old address -> new address, for each resource renamed on purpose; the new one declares
# aliases=[pulumi.Alias(name=..., parent=...)] for the old, and UPGRADING.md names the change.
RENAMES: dict[str, str] = {
    # issue 36: one EKS system node group per zone; the first zone's group carries the old group's address
    # (replaced: subnets change), UPGRADING.md "EKS: one system node group per zone".
    "vllm-platform:aws:NodeGroups::vllm-cluster-nodes>aws:eks/nodeGroup:NodeGroup::vllm-cluster-nodes-system":
        "vllm-platform:aws:NodeGroups::vllm-cluster-nodes>aws:eks/nodeGroup:NodeGroup::"
        "vllm-cluster-nodes-system-us-east-1a",
}


def addresses(stack: str) -> set[str]:
    return {f"{r.parent}>{r.type}::{r.name}" for r in planned(stack).resources}


def test_the_baseline_covers_every_shipped_stack():
    assert set(BASELINE) <= set(stack_names())
    assert "None>vllm-platform:index:Platform::vllm" in BASELINE["dev"]
    assert "vllm-platform:aws:EksControlPlane::vllm-cluster-eks>aws:eks/cluster:Cluster::vllm-cluster-eks-cluster" \
        in BASELINE["prod-llama70b-aws"]


@pytest.mark.parametrize("stack", sorted(BASELINE))
def test_released_resources_keep_their_addresses(stack):
    now = addresses(stack)
    missing = [a for a in BASELINE[stack] if a not in now and a not in RENAMES]
    assert missing == [], (f"{stack}: these resources would be replaced on `pulumi up` of an existing stack; keep "
                           f"their names and parents, or add aliases= and list them in RENAMES and UPGRADING.md")
    assert [new for old, new in RENAMES.items() if old in BASELINE[stack] and new not in now] == []


def test_upgrading_notes_exist_for_the_renames_and_the_current_release():
    text = (ROOT / "UPGRADING.md").read_text()
    from components import __version__
    assert f"## {__version__}" in text
    for old, new in RENAMES.items():
        assert old.split("::")[-1] in text and new.split("::")[-1] in text
