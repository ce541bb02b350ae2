"""The Pulumi program itself: conventions every component keeps, on every shipped stack."""
import pytest

from components.offline.runner import stack_names
from tests.conftest import planned


@pytest.mark.parametrize("stack", stack_names())
def test_same_resources_in_preview_and_update(stack):
    """Nothing is created inside .apply(): preview (unknowns, callbacks skipped) registers the same set."""
    update = {(r.type, r.name) for r in planned(stack).resources}
    preview = {(r.type, r.name) for r in planned(stack, preview=True).resources}
    assert preview == update


@pytest.mark.parametrize("stack", stack_names())
def test_components_follow_the_house_conventions(stack):
    resources = planned(stack).resources
    components = [r for r in resources if not r.custom]
    for c in components:
        assert c.type.startswith("vllm-platform:") and c.type.count(":") == 2, c.type
    roots = [r for r in resources if r.parent is None]
    # only the Platform and the cloud providers __main__ builds hang off the stack itself
    assert {r.type for r in roots} <= {"vllm-platform:index:Platform", "pulumi:providers:aws", "pulumi:providers:gcp"}
    names = [(r.type, r.name) for r in resources]
    assert len(names) == len(set(names))
    for r in resources:
        if r.parent:
            assert r.name.startswith("vllm") or r.name.startswith(r.parent.split("::")[1]), (r.name, r.parent)


def test_topology_is_exported_per_model():
    t = planned("dev").exports["topology"]
    assert list(t) == ["llama-8b"] and t["llama-8b"]["instance_type"] == "existing-l4x1"
    assert planned("dev").exports["namespace"] == "vllm"
