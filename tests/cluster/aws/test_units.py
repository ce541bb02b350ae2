"""The pure pieces of the AWS cluster: subnet layout, EFA interfaces, node bootstrap, sizing, IAM, Helm values."""
import pytest
import yaml

from components.catalog import INSTANCE_TYPES
from components.cluster.aws import cache_facts, check
from components.cluster.aws.autoscaling import SERVICE_ACCOUNT, autoscaler_values
from components.cluster.aws.control_plane import endpoint_access, kubeconfig_yaml
from components.cluster.aws.iam import cluster_autoscaler_policy
from components.cluster.aws.network import pick_zones, subnet_layout
from components.cluster.aws.capacity import scaling, uses_efa
from components.cluster.aws.node_pools import (EFA_RESOURCE, NVME_CACHE_PATH, NVME_MOUNT_PATH, capacity,
                                               efa_network_interfaces, gpu_pool_facts, nodeadm_user_data,
                                               placement_group)
from components.cluster.pools import PoolSpec
from components.config import parse
from components.upstream.versions import CLUSTER_AUTOSCALER_TAGS

MODELS = [{"name": "chat", "model": "llama-3.1-8b", "maxModelLen": 8192}]


def settings(**aws):
    return parse({"cloud": "aws", "aws": {"region": "us-east-1", **aws}, "models": MODELS}, {"hfToken"})


def spec(itype, multi_node, min_nodes=1, desired=1, max_nodes=2):
    return PoolSpec(name="gpu-x", instance=INSTANCE_TYPES[itype], min_nodes=min_nodes, desired_nodes=desired,
                    max_nodes=max_nodes, multi_node=multi_node, models=("chat",))


def test_subnet_layout_gives_private_subnets_the_big_blocks_and_never_overlaps():
    layout = subnet_layout("10.0.0.0/16", 3)
    assert layout == [("10.0.0.0/18", "10.0.192.0/20"), ("10.0.64.0/18", "10.0.208.0/20"),
                      ("10.0.128.0/18", "10.0.224.0/20")]
    import ipaddress
    nets = [ipaddress.ip_network(c) for pair in subnet_layout("10.8.0.0/16", 4) for c in pair]
    assert all(not a.overlaps(b) for i, a in enumerate(nets) for b in nets[i + 1:])


def test_zones_default_to_the_regions_first_three_in_name_order():
    assert pick_zones(settings().aws, ["us-east-1c", "us-east-1a", "us-east-1d", "us-east-1b"]) == \
        ["us-east-1a", "us-east-1b", "us-east-1c"]
    assert pick_zones(settings(availabilityZones=["us-east-1d", "us-east-1a"]).aws, ["us-east-1a"]) == \
        ["us-east-1d", "us-east-1a"]


@pytest.mark.parametrize("itype,cards", [("p5.48xlarge", 32), ("p5en.48xlarge", 16), ("p6-b200.48xlarge", 8),
                                         ("p4d.24xlarge", 4), ("g6e.48xlarge", 4)])
def test_efa_devices_one_per_network_card_behind_an_ena_primary(itype, cards):
    nics = efa_network_interfaces(INSTANCE_TYPES[itype].efa_interfaces, ["sg-cluster", "sg-nodes"], "sg-efa")
    primary, efa = nics[0], nics[1:]
    assert primary == {"network_card_index": 0, "device_index": 0, "interface_type": "interface",
                       "security_groups": ["sg-cluster", "sg-nodes", "sg-efa"], "delete_on_termination": "true"}
    assert [n["interface_type"] for n in efa] == ["efa-only"] * cards
    assert sorted(n["network_card_index"] for n in efa) == list(range(cards))
    # card 0's device 0 is the primary; every other card starts at device 0
    assert [(n["network_card_index"], n["device_index"]) for n in efa[:2]] == [(0, 1), (1, 0)]
    assert all(n["security_groups"] == ["sg-efa"] for n in efa)


def test_efa_only_where_a_replica_spans_nodes():
    assert uses_efa(spec("p5.48xlarge", multi_node=True))
    assert not uses_efa(spec("p5.48xlarge", multi_node=False))  # one node: NVLink, no fabric needed
    assert not uses_efa(spec("g6.xlarge", multi_node=True))  # no EFA on the shape


def test_pool_facts_ask_for_every_efa_device_and_point_at_the_nvme_array():
    multi = gpu_pool_facts(spec("p5.48xlarge", multi_node=True))
    assert multi.fabric == "efa" and multi.fabric_resources == {EFA_RESOURCE: 32}
    assert multi.nvme_path == NVME_CACHE_PATH and NVME_CACHE_PATH.startswith(NVME_MOUNT_PATH + "/0/")
    single = gpu_pool_facts(spec("p5.48xlarge", multi_node=False))
    assert single.fabric is None and single.fabric_resources == {}
    assert [t.toleration() for t in single.taints] == [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}]


def test_user_data_is_a_nodeadm_nodeconfig_that_raids_the_instance_store():
    text = nodeadm_user_data()
    assert text.startswith('MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="BOUNDARY"\n')
    part = text.split("--BOUNDARY\n")[1].split("\n--BOUNDARY--")[0]
    header, body = part.split("\n\n", 1)
    assert header == "Content-Type: application/node.eks.aws"
    assert yaml.safe_load(body) == {"apiVersion": "node.eks.aws/v1alpha1", "kind": "NodeConfig", "spec": {
        "instance": {"localStorage": {"strategy": "RAID0", "mountPath": NVME_MOUNT_PATH}}}}


def test_a_gpu_group_is_created_empty_with_the_plans_max():
    """Created at its planned size, a group would fail the run on InsufficientInstanceCapacity; min 0 because EKS
    refuses min > desired and desired is the autoscaler's (ignore_changes)."""
    assert scaling(spec("p5.48xlarge", True, min_nodes=2, desired=2, max_nodes=4)) == \
        {"min_size": 0, "desired_size": 0, "max_size": 4}
    assert scaling(spec("p5.48xlarge", True, min_nodes=0, desired=0, max_nodes=0))["max_size"] == 1  # EKS's least


def test_capacity_types():
    p5 = spec("p5.48xlarge", multi_node=False)
    assert capacity(p5, settings().aws) == ("ON_DEMAND", {})
    assert capacity(p5, settings(capacityType="spot").aws) == ("SPOT", {})
    odcr = settings(capacityType="reservation", capacityReservations={"p5.48xlarge": "cr-0123456789abcdef0"}).aws
    assert capacity(p5, odcr) == ("ON_DEMAND", {"capacity_reservation_specification": {
        "capacity_reservation_target": {"capacity_reservation_id": "cr-0123456789abcdef0"}}})
    block = settings(capacityType="capacityBlock", capacityReservations={"p5.48xlarge": "cr-0123456789abcdef0"}).aws
    kind, lt = capacity(p5, block)
    assert kind == "CAPACITY_BLOCK" and lt["instance_market_options"] == {"market_type": "capacity-block"}
    # reserved capacity brings its own placement; a new placement group is only ours to make on demand / spot
    efa_pool = spec("p5.48xlarge", multi_node=True)
    assert placement_group(efa_pool, settings().aws) == "new"
    assert placement_group(efa_pool, settings(capacityType="spot").aws) == "new"
    assert placement_group(efa_pool, block) is None and placement_group(efa_pool, odcr) is None
    assert placement_group(p5, settings().aws) is None
    # an existing group named in config: EFA pools use it, and so does every pool of an ODCR created in it
    named = settings(placementGroup="p5-odcr-pg", capacityType="reservation",
                     capacityReservations={"p5.48xlarge": "cr-0123456789abcdef0"}).aws
    assert placement_group(p5, named) == "existing" and placement_group(efa_pool, named) == "existing"
    assert placement_group(efa_pool, settings(placementGroup="p5-pg").aws) == "existing"
    assert placement_group(p5, settings(placementGroup="p5-pg").aws) is None


def test_endpoint_is_private_unless_cidrs_are_listed():
    assert endpoint_access(settings().aws) == {"endpoint_private_access": True, "endpoint_public_access": False}
    assert endpoint_access(settings(endpointPublicAccessCidrs=["203.0.113.7/32"]).aws) == {
        "endpoint_private_access": True, "endpoint_public_access": True, "public_access_cidrs": ["203.0.113.7/32"]}


def test_kubeconfig_gets_tokens_from_the_aws_cli():
    kc = yaml.safe_load(kubeconfig_yaml("c1", "https://x.eks.amazonaws.com", "Q0E=", "eu-west-1"))
    assert kc["clusters"][0]["cluster"] == {"server": "https://x.eks.amazonaws.com", "certificate-authority-data": "Q0E="}
    assert kc["users"][0]["user"]["exec"]["args"] == ["eks", "get-token", "--cluster-name", "c1", "--region",
                                                      "eu-west-1", "--output", "json"]


def test_autoscaler_may_only_resize_this_clusters_groups():
    doc = cluster_autoscaler_policy("aws", "us-east-1", "123456789012", "c1")
    scale = next(s for s in doc["Statement"] if "autoscaling:SetDesiredCapacity" in s["Action"])
    assert scale["Condition"] == {"StringEquals": {"aws:ResourceTag/k8s.io/cluster-autoscaler/c1": "owned"}}
    writes = {a for s in doc["Statement"] for a in s["Action"]
              if not a.split(":")[1].startswith(("Describe", "Get"))}
    assert writes == {"autoscaling:SetDesiredCapacity", "autoscaling:TerminateInstanceInAutoScalingGroup"}
    describe_ng = next(s for s in doc["Statement"] if s["Action"] == ["eks:DescribeNodegroup"])
    assert describe_ng["Resource"] == "arn:aws:eks:us-east-1:123456789012:nodegroup/c1/*/*"


def test_autoscaler_values_match_the_cluster_minor_and_run_on_system_nodes():
    v = autoscaler_values("c1", "us-east-1", "1.34")
    assert v["image"]["tag"] == "v1.34.2" and v["autoDiscovery"] == {"clusterName": "c1"}
    assert v["rbac"]["serviceAccount"] == {"create": True, "name": SERVICE_ACCOUNT}
    assert v["nodeSelector"] == {"vllm-platform/node-role": "system"}
    assert v["extraArgs"]["skip-nodes-with-local-storage"] is False
    for minor, tag in CLUSTER_AUTOSCALER_TAGS.items():
        assert tag.startswith(f"v{minor}.")  # CA's minor must equal the cluster's


def test_every_accepted_minor_has_a_support_window_and_1_36_ships_before_1_35_ends():
    from components.upstream.kubernetes_support import END_OF_STANDARD_SUPPORT
    assert set(CLUSTER_AUTOSCALER_TAGS) <= set(END_OF_STANDARD_SUPPORT["aws"])
    assert "1.36" in CLUSTER_AUTOSCALER_TAGS
    assert str(END_OF_STANDARD_SUPPORT["aws"]["1.35"]) == "2027-03-27"


def test_check_names_the_field():
    cfg = parse({"cloud": "aws", "aws": {"region": "us-east-1", "endpointPublicAccessCidrs": ["203.0.113.7/32"]},
                 "cluster": {"kubernetesVersion": "1.29"}, "models": MODELS}, {"hfToken"})
    (problem,) = check(cfg, [])
    assert problem == ("cluster.kubernetesVersion: 1.29 has no pinned Cluster Autoscaler release; allowed: 1.33, 1.34, "
                       "1.35, 1.36 (components/upstream/versions.py)")
    cfg = parse({"cloud": "aws", "cluster": {"kubernetesVersion": "1.35"}, "models": MODELS,
                 "aws": {"region": "us-east-1", "capacityType": "reservation", "endpointPublicAccessCidrs": ["203.0.113.7/32"],
                         "capacityReservations": {"p5e.48xlarge": "cr-0123456789abcdef0"}}}, {"hfToken"})
    (problem,) = check(cfg, [spec("p5.48xlarge", True)])
    assert problem == ("aws.capacityReservations: no reservation for planned instance type p5.48xlarge (chat); "
                       "add `p5.48xlarge: cr-...`")


def test_cache_facts():
    assert cache_facts(settings()) == ("efs-model-cache", 1.5)
    nvme = parse({"cloud": "aws", "aws": {"region": "us-east-1"}, "models": MODELS,
                  "modelCache": {"kind": "nvme", "readGbps": 4}}, {"hfToken"})
    assert cache_facts(nvme) == (None, 4)


@pytest.mark.parametrize("aws,message", [
    ({"availabilityZones": ["us-east-1a", "us-east-1b", "us-east-1a"]},
     "aws.availabilityZones: us-east-1a listed more than once; list each zone once"),
    ({"vpcId": "vpc-0123456789abcdef0", "subnetIds": ["subnet-0123456789abcdef0", "subnet-0123456789abcdef0"]},
     "aws.subnetIds: subnet-0123456789abcdef0 listed more than once; list each subnet once, one per zone"),
])
def test_a_zone_or_subnet_listed_twice_is_a_config_error(aws, message):
    from components.config import ConfigError
    with pytest.raises(ConfigError) as err:
        settings(**aws)
    assert message in str(err.value)
