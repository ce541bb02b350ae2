"""Every claim binds and every NetworkPolicy is enforced on EKS; a created VPC reaches S3 without the NAT."""
import functools
import json

import pytest

from components.cluster import facts as facts_module
from components.offline.mocks import CLOUD_OUTPUTS
from tests.support.plans import by_type, manifests, one, plan_config, planned
from tests.support.aws import ADDON, G6, P5


def addon(resources, name):
    (found,) = [r for r in by_type(resources, ADDON) if r.inputs["addonName"] == name]
    return found


def out(r, key):
    return CLOUD_OUTPUTS[r.type](r.name, r.inputs)[key]


@functools.lru_cache(maxsize=None)
def facts_of(values_json: str):
    """The ClusterFacts the AWS component hands over, recorded while the program runs."""
    import components.cluster.aws.component as component
    seen = []

    class Recording(facts_module.ClusterFacts):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            seen.append(self)

    original = component.ClusterFacts
    component.ClusterFacts = Recording
    try:
        plan_config(json.loads(values_json))
    finally:
        component.ClusterFacts = original
    (facts,) = seen
    return facts


def test_ebs_csi_driver_runs_under_its_own_pod_identity_role():
    res = planned(P5).resources
    ebs = addon(res, "aws-ebs-csi-driver")
    assert ebs.inputs["addonVersion"] == "v1.63.1-eksbuild.1"
    (assoc,) = ebs.inputs["podIdentityAssociations"]
    assert assoc["serviceAccount"] == "ebs-csi-controller-sa"
    role = one(res, "aws:iam/role:Role", "vllm-cluster-addons-ebs-csi")
    assert assoc["roleArn"] == out(role, "arn")
    assert json.loads(role.inputs["assumeRolePolicy"])["Statement"][0]["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    (policy,) = [r.inputs["policyArn"] for r in by_type(res, "aws:iam/rolePolicyAttachment:RolePolicyAttachment")
                 if r.inputs["role"] == out(role, "name")]
    assert policy == "arn:aws:iam::aws:policy/service-role/AmazonEBSCSIDriverPolicy"
    # the controller is a Deployment: it needs the system nodes and the Pod Identity agent first
    deps = set(ebs.dependencies)
    assert {f"aws:eks/nodeGroup:NodeGroup::vllm-cluster-nodes-system-us-east-1{z}" for z in "abc"} <= deps
    assert "aws:eks/addon:Addon::vllm-cluster-addons-eks-pod-identity-agent" in deps


def test_the_default_storage_class_is_encrypted_gp3_waiting_for_the_consumer_and_comes_after_the_driver():
    res = planned(P5).resources
    sc = manifests(res)["storageclass_cluster_ebs-gp3.yaml"]
    assert sc["metadata"]["annotations"] == {"storageclass.kubernetes.io/is-default-class": "true"}
    assert sc["provisioner"] == "ebs.csi.aws.com"
    assert sc["parameters"] == {"type": "gp3", "encrypted": "true", "csi.storage.k8s.io/fstype": "ext4"}
    assert sc["volumeBindingMode"] == "WaitForFirstConsumer" and sc["allowVolumeExpansion"] is True
    assert sc["reclaimPolicy"] == "Delete"
    (obj,) = [r for r in by_type(res, "kubernetes:storage.k8s.io/v1:StorageClass") if r.inputs["metadata"]["name"]
              == "ebs-gp3"]
    assert "aws:eks/addon:Addon::vllm-cluster-addons-aws-ebs-csi-driver" in obj.dependencies
    defaults = [m for m in manifests(res).values() if m.get("kind") == "StorageClass"
                and (m["metadata"].get("annotations") or {}).get("storageclass.kubernetes.io/is-default-class") == "true"]
    assert len(defaults) == 1


def test_facts_name_the_block_class_and_an_enforcing_cni():
    facts = facts_of(json.dumps(G6))
    assert facts.block_storage_class == "ebs-gp3"
    assert facts.network_policy_enforced is True
    # the class exists in that very plan, so any claim naming it binds
    res, _ = plan_config(G6)
    assert "storageclass_cluster_ebs-gp3.yaml" in manifests(res)


def test_vpc_cni_enforces_network_policies():
    cni = addon(planned(P5).resources, "vpc-cni")
    assert json.loads(cni.inputs["configurationValues"]) == {"enableNetworkPolicy": "true"}


def test_a_created_vpc_has_an_s3_gateway_on_every_private_route_table():
    res = planned(P5).resources
    endpoint = one(res, "aws:ec2/vpcEndpoint:VpcEndpoint").inputs
    assert endpoint["serviceName"] == "com.amazonaws.us-east-1.s3" and endpoint["vpcEndpointType"] == "Gateway"
    private = {out(r, "id") for r in by_type(res, "aws:ec2/routeTable:RouteTable") if "-private-" in r.name}
    assert len(private) == 3 and set(endpoint["routeTableIds"]) == private
    assert endpoint["vpcId"] == out(one(res, "aws:ec2/vpc:Vpc"), "id")


@pytest.mark.parametrize("stack", ["prod-llama70b-aws", "prod-llama405b-fp8-h200-aws"])
def test_every_shipped_aws_stack_gets_the_driver_the_class_and_policy_enforcement(stack):
    res = planned(stack).resources
    assert "storageclass_cluster_ebs-gp3.yaml" in manifests(res)
    assert json.loads(addon(res, "vpc-cni").inputs["configurationValues"])["enableNetworkPolicy"] == "true"
