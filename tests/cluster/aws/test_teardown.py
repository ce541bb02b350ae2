"""`pulumi destroy` of a production stack must not fail half-way (issue 36): aws.deletionProtection (default on in
prod) drives both EKS's deletion protection and Pulumi's `protect` on the cluster, the system node groups and the
EFS cache, so that a destroy stops at its preview before deleting anything; switched off, one `pulumi up` lifts
both and `pulumi destroy` runs in one go."""
from tests.support.aws import CLUSTER, NG
from tests.support.plans import by_type, one, plan_config
from tests.support.plans import prod_gateway

EFS = "aws:efs/fileSystem:FileSystem"
PROD = {"cloud": "aws", "environment": "prod", "gateway": prod_gateway("aws"),
        "aws": {"region": "us-east-1", "availabilityZones": ["us-east-1a", "us-east-1b", "us-east-1c"],
                "endpointPublicAccessCidrs": ["203.0.113.7/32"]},
        "models": [{"name": "small", "model": "llama-3.1-8b", "instanceTypes": ["g6.xlarge"], "maxModelLen": 8192,
                    "sla": {"concurrency": 4}, "replicas": {"min": 2, "max": 3}}]}


def guarded(res) -> dict[str, tuple[bool, bool]]:
    """name -> (Pulumi protect, EKS deletionProtection or None) of the resources a teardown must not lose half-way,
    and of the GPU groups."""
    out = {r.name: (r.protect, None) for r in by_type(res, NG) + by_type(res, EFS)}
    cluster = one(res, CLUSTER)
    out[cluster.name] = (cluster.protect, cluster.inputs["deletionProtection"])
    return out


def test_production_protects_cluster_system_groups_and_cache_in_pulumi_and_in_eks():
    res, _ = plan_config(PROD)
    assert guarded(res) == {
        "vllm-cluster-eks-cluster": (True, True),
        "vllm-cluster-nodes-system-us-east-1a": (True, None), "vllm-cluster-nodes-system-us-east-1b": (True, None),
        "vllm-cluster-nodes-system-us-east-1c": (True, None),
        "vllm-cluster-cache-fs": (True, None),
        # follows the plan: a model moved to another instance type deletes its group
        "vllm-cluster-nodes-gpu-g6-xlarge": (False, None)}


def test_one_flag_switches_both_off_so_that_an_up_then_a_destroy_runs_in_one_go():
    res, _ = plan_config({**PROD, "aws": {**PROD["aws"], "deletionProtection": False}})
    assert set(guarded(res).values()) == {(False, False), (False, None)}
    dev, _ = plan_config({**PROD, "environment": "dev", "gateway": {}})
    assert set(guarded(dev).values()) == {(False, False), (False, None)}


def test_nothing_of_the_cluster_outlives_a_destroy():
    """No retainOnDelete: the cache is re-downloadable weights, and a resource kept silently past `destroy` is a
    bill nobody sees."""
    res, _ = plan_config(PROD)
    assert [r.name for r in res if r.type.startswith("aws:") and r.retain_on_delete] == []
