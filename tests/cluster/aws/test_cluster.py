"""The EKS cluster the program registers: multi-node p5 over EFA, a single-GPU g6, and the settings around them."""
import base64
import functools
import json

import pulumi
import pytest
import yaml
from pulumi.runtime import rpc

from components.cluster.aws.node_pools import NVME_MOUNT_PATH
from tests.support.plans import by_type, manifests, one, plan_config, planned
from tests.support.aws import CLUSTER, EGRESS, G6, INGRESS, LT, NG, P5, SG


@functools.lru_cache(maxsize=None)
def g6(preview=False):
    return plan_config(G6, preview=preview)[0]


def gpu(resources, typ, suffix="gpu-p5-48xlarge"):
    found = [r for r in by_type(resources, typ) if suffix in r.name]
    assert len(found) == 1, [r.name for r in by_type(resources, typ)]
    return found[0]


def ids(resources, typ):
    """The cloud ids of resources of a type, as other resources received them (the stubs' answers)."""
    from components.offline.mocks import CLOUD_OUTPUTS
    return {r.name: CLOUD_OUTPUTS[typ](r.name, r.inputs)["id"] for r in by_type(resources, typ)}


# --- multi-node p5.48xlarge over EFA -------------------------------------------------------------------

def test_p5_launch_template_carries_all_32_efa_devices_in_one_placement_group():
    res = planned(P5).resources
    lt = gpu(res, LT).inputs
    nics = lt["networkInterfaces"]
    efa = [n for n in nics if n["interfaceType"] == "efa-only"]
    assert len(efa) == 32 and sorted(n["networkCardIndex"] for n in efa) == list(range(32))
    assert [n for n in nics if n["interfaceType"] == "interface"] == [nics[0]]
    assert (nics[0]["networkCardIndex"], nics[0]["deviceIndex"]) == (0, 0)
    assert "vpcSecurityGroupIds" not in lt  # groups sit on the interfaces
    assert lt["instanceType"] == "p5.48xlarge"
    pg = gpu(res, "aws:ec2/placementGroup:PlacementGroup")
    assert pg.inputs["strategy"] == "cluster"
    from components.offline.mocks import CLOUD_OUTPUTS
    assert lt["placement"] == {"groupName": CLOUD_OUTPUTS[pg.type](pg.name, pg.inputs)["name"]}


def test_p5_efa_security_group_admits_all_traffic_from_and_to_itself_only():
    res = planned(P5).resources
    efa_sg = ids(res, SG)[gpu(res, SG, "gpu-p5-48xlarge-efa").name]
    (ingress,) = [r.inputs for r in by_type(res, INGRESS) if r.inputs["securityGroupId"] == efa_sg]
    (egress,) = [r.inputs for r in by_type(res, EGRESS) if r.inputs["securityGroupId"] == efa_sg]
    for rule in (ingress, egress):
        assert rule["ipProtocol"] == "-1" and rule["referencedSecurityGroupId"] == efa_sg
        assert "cidrIpv4" not in rule
    assert all(efa_sg in n["securityGroups"] for n in gpu(res, LT).inputs["networkInterfaces"])


def test_p5_nodes_in_one_subnet_with_gpu_taint_labels_and_planned_max():
    res = planned(P5).resources
    ng = gpu(res, NG).inputs
    cluster_subnets = one(res, CLUSTER).inputs["vpcConfig"]["subnetIds"]
    assert len(cluster_subnets) == 3 and ng["subnetIds"] == cluster_subnets[:1]
    assert ng["amiType"] == "AL2023_x86_64_NVIDIA" and ng["capacityType"] == "ON_DEMAND"
    assert ng["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}]
    assert ng["labels"] == {"vllm-platform/gpu-pool": "gpu-p5-48xlarge", "vllm-platform/accelerator": "h100",
                            "k8s.amazonaws.com/accelerator": "h100"}
    # TP 8 x PP 2: 2 nodes per replica, at most 4 replicas (replicas.max); created empty, Cluster Autoscaler adds the nodes
    assert ng["scalingConfig"] == {"minSize": 0, "desiredSize": 0, "maxSize": 8}
    (tag,) = [r.inputs["tag"] for r in by_type(res, "aws:autoscaling/tag:Tag") if r.name.endswith("-ca-efa")]
    assert tag == {"key": "k8s.io/cluster-autoscaler/node-template/resources/vpc.amazonaws.com/efa",
                   "value": "32", "propagateAtLaunch": False}


def test_imdsv2_required_on_every_node_and_one_hop_on_gpu_nodes():
    res = planned(P5).resources
    for lt in by_type(res, LT):
        assert lt.inputs["metadataOptions"]["httpTokens"] == "required", lt.name
    assert gpu(res, LT).inputs["metadataOptions"]["httpPutResponseHopLimit"] == 1


def test_gpu_nodes_raid_the_nvme_and_boot_from_a_large_encrypted_root():
    lt = gpu(planned(P5).resources, LT).inputs
    user_data = base64.b64decode(lt["userData"]).decode()
    config = yaml.safe_load(user_data.split("Content-Type: application/node.eks.aws\n\n")[1].split("\n--BOUNDARY--")[0])
    assert config["spec"]["instance"]["localStorage"] == {"strategy": "RAID0", "mountPath": NVME_MOUNT_PATH}
    (root,) = lt["blockDeviceMappings"]
    assert root["deviceName"] == "/dev/xvda" and root["ebs"]["volumeSize"] >= 200
    assert root["ebs"]["encrypted"] == "true" and root["ebs"]["volumeType"] == "gp3"


# --- single-GPU g6 -------------------------------------------------------------------------------------

def test_g6_has_no_efa_no_placement_group_and_spans_every_zone():
    res = g6()
    lt = gpu(res, LT, "gpu-g6-xlarge").inputs
    assert "networkInterfaces" not in lt and "placement" not in lt
    assert len(lt["vpcSecurityGroupIds"]) == 2  # the cluster's and the nodes' groups
    assert by_type(res, "aws:ec2/placementGroup:PlacementGroup") == []
    assert by_type(res, EGRESS) == []
    assert [r.name for r in by_type(res, "aws:autoscaling/tag:Tag")] == ["vllm-cluster-nodes-gpu-g6-xlarge-models"]
    ng = gpu(res, NG, "gpu-g6-xlarge").inputs
    assert ng["subnetIds"] == one(res, CLUSTER).inputs["vpcConfig"]["subnetIds"]
    assert ng["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}]


def test_renaming_a_model_writes_no_new_launch_template_version():
    """Any change to a template (its description included) is a new version, and the node group then
    replaces every node of the pool: a model's name must not be part of it."""
    renamed = {**G6, "models": [{**G6["models"][0], "name": "renamed"}]}
    assert gpu(plan_config(renamed)[0], LT, "gpu-g6-xlarge").inputs == gpu(g6(), LT, "gpu-g6-xlarge").inputs


def test_changing_a_pools_models_rolls_no_node_and_re_tags_its_auto_scaling_group():
    """The models tag is not in the launch template (a new version would replace every GPU node of the pool)."""
    qwen = {**G6["models"][0], "name": "qwen", "model": "qwen2.5-7b"}
    added = plan_config({**G6, "models": [*G6["models"], qwen]})[0]
    assert gpu(added, LT, "gpu-g6-xlarge").inputs == gpu(g6(), LT, "gpu-g6-xlarge").inputs
    tag = gpu(added, "aws:autoscaling/tag:Tag", "gpu-g6-xlarge-models").inputs["tag"]
    assert tag == {"key": "vllm-platform/models", "value": "llama-3.1-8b+qwen2.5-7b", "propagateAtLaunch": True}
    assert gpu(added, NG, "gpu-g6-xlarge").inputs["tags"]["vllm-platform/models"] == "llama-3.1-8b+qwen2.5-7b"


def test_node_groups_follow_the_cluster_version():
    res = planned(P5).resources
    version = one(res, CLUSTER).inputs["version"]
    assert version == "1.35"
    assert [ng.inputs["version"] for ng in by_type(res, NG)] == [version] * 4  # three system groups (one per zone), p5


def test_g6_program_registers_the_same_resources_in_preview_and_update():
    assert {(r.type, r.name) for r in g6(preview=True)} == {(r.type, r.name) for r in g6()}


# --- control plane ------------------------------------------------------------------------------------

def test_shipped_stack_bootstraps_over_a_public_endpoint_limited_to_the_deployer():
    vpc = one(planned(P5).resources, CLUSTER).inputs["vpcConfig"]
    assert vpc["endpointPrivateAccess"] is True and vpc["endpointPublicAccess"] is True
    assert vpc["publicAccessCidrs"] == ["203.0.113.10/32"]
    vpc = one(g6(), CLUSTER).inputs["vpcConfig"]
    assert vpc["endpointPublicAccess"] is True and vpc["publicAccessCidrs"] == ["203.0.113.7/32"]


def test_secrets_are_envelope_encrypted_with_a_rotating_kms_key():
    res = planned(P5).resources
    key = one(res, "aws:kms/key:Key")
    assert key.inputs["enableKeyRotation"] is True
    key_id = ids(res, key.type)[key.name]
    cluster = one(res, CLUSTER).inputs
    assert cluster["encryptionConfig"] == {
        "provider": {"keyArn": f"arn:aws:kms:us-east-1:123456789012:key/{key_id}"}, "resources": ["secrets"]}
    key_arn = cluster["encryptionConfig"]["provider"]["keyArn"]
    assert cluster["accessConfig"]["authenticationMode"] == "API"
    assert cluster["enabledClusterLogTypes"] == ["api", "audit", "authenticator", "controllerManager", "scheduler"]
    assert cluster["name"] == "llama405b-prod" and cluster["version"] == "1.35"
    grants = [r.inputs["policy"] for r in by_type(res, "aws:iam/rolePolicy:RolePolicy") if key_arn in r.inputs["policy"]]
    assert len(grants) == 1 and "kms:Decrypt" in grants[0]


def test_addons_follow_eks_and_admins_get_access_entries():
    res = planned(P5).resources
    versions = {r.inputs["addonName"]: r.inputs["addonVersion"] for r in by_type(res, "aws:eks/addon:Addon")}
    # EKS's newest build per add-on for 1.35, as getAddonVersion answers (the offline account: EKS's documented builds)
    assert versions == {"vpc-cni": "v1.21.2-eksbuild.2", "kube-proxy": "v1.35.3-eksbuild.13",
                        "eks-pod-identity-agent": "v1.3.10-eksbuild.3", "coredns": "v1.14.3-eksbuild.3",
                        "aws-ebs-csi-driver": "v1.63.1-eksbuild.1", "aws-efs-csi-driver": "v2.3.0-eksbuild.1",
                        "eks-node-monitoring-agent": "v1.7.0-eksbuild.1"}
    efs = next(r for r in by_type(res, "aws:eks/addon:Addon") if r.inputs["addonName"] == "aws-efs-csi-driver")
    assert efs.inputs["podIdentityAssociations"][0]["serviceAccount"] == "efs-csi-controller-sa"
    assoc = one(res, "aws:eks/accessPolicyAssociation:AccessPolicyAssociation").inputs
    assert assoc["policyArn"] == "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
    assert assoc["principalArn"] == "arn:aws:iam::123456789012:role/platform-admin"


def test_kubeconfig_reaches_the_kubernetes_provider_as_a_secret():
    res = planned(P5).resources
    provider = one(res, "pulumi:providers:kubernetes")
    assert rpc.is_rpc_secret(provider.inputs["kubeconfig"])
    kc = yaml.safe_load(planned(P5).exports["kubeconfig"])
    assert kc["current-context"] == "llama405b-prod" and kc["clusters"][0]["cluster"]["server"].startswith("https://")


# --- model cache and autoscaling ----------------------------------------------------------------------

def test_efs_is_encrypted_elastic_with_a_mount_target_per_node_subnet_and_nfs_from_nodes_only():
    res = planned(P5).resources
    fs = one(res, "aws:efs/fileSystem:FileSystem").inputs
    assert fs["encrypted"] is True and fs["throughputMode"] == "elastic"
    sgs = ids(res, SG)
    nfs_sg, node_sg = sgs["vllm-cluster-cache-nfs"], sgs["vllm-cluster-nodes-nodes"]
    targets = by_type(res, "aws:efs/mountTarget:MountTarget")
    assert sorted(t.inputs["subnetId"] for t in targets) == sorted(one(res, CLUSTER).inputs["vpcConfig"]["subnetIds"])
    assert all(t.inputs["securityGroups"] == [nfs_sg] for t in targets)
    (rule,) = [r.inputs for r in by_type(res, INGRESS) if r.inputs["securityGroupId"] == nfs_sg]
    assert (rule["ipProtocol"], rule["fromPort"], rule["toPort"]) == ("tcp", 2049, 2049)
    assert rule["referencedSecurityGroupId"] == node_sg
    sc = manifests(res)["storageclass_cluster_efs-model-cache.yaml"]
    assert sc["provisioner"] == "efs.csi.aws.com" and sc["parameters"] == {
        "provisioningMode": "efs-ap", "fileSystemId": ids(res, "aws:efs/fileSystem:FileSystem")["vllm-cluster-cache-fs"],
        "directoryPerms": "700", "basePath": "/model-cache"}


def test_cluster_autoscaler_runs_under_its_own_pod_identity_role():
    res = planned(P5).resources
    release = one(res, "kubernetes:helm.sh/v3:Release", "vllm-cluster-autoscaler-release").inputs
    assert release["chart"] == "cluster-autoscaler" and release["namespace"] == "kube-system"
    assert release["values"]["autoDiscovery"] == {"clusterName": "llama405b-prod"}
    assoc = one(res, "aws:eks/podIdentityAssociation:PodIdentityAssociation",
                "vllm-cluster-autoscaler-identity").inputs
    assert (assoc["namespace"], assoc["serviceAccount"]) == ("kube-system", "cluster-autoscaler")
    role = one(res, "aws:iam/role:Role", "vllm-cluster-autoscaler-role")
    assert json.loads(role.inputs["assumeRolePolicy"])["Statement"][0]["Principal"] == {
        "Service": "pods.eks.amazonaws.com"}
    from components.offline.mocks import CLOUD_OUTPUTS
    assert assoc["roleArn"] == CLOUD_OUTPUTS[role.type](role.name, role.inputs)["arn"]
    role_id = CLOUD_OUTPUTS[role.type](role.name, role.inputs)["id"]
    (policy,) = [r.inputs for r in by_type(res, "aws:iam/rolePolicy:RolePolicy") if r.inputs["role"] == role_id]
    from components.cluster.aws.iam import cluster_autoscaler_policy
    assert json.loads(policy["policy"]) == cluster_autoscaler_policy("aws", "us-east-1", "123456789012",
                                                                     "llama405b-prod")


# --- other settings -----------------------------------------------------------------------------------

def test_existing_vpc_and_no_efs_for_a_named_storage_class():
    values = {**G6, "aws": {"region": "us-east-1", "vpcId": "vpc-0123456789abcdef0",
                            "subnetIds": ["subnet-0123456789abcdef0", "subnet-0fedcba9876543210"],
                            "deployerSecurityGroupIds": ["sg-0123456789abcdef0"]},
              "modelCache": {"kind": "rwx", "storageClass": "fsx-lustre"}}
    res, _ = plan_config(values)
    assert by_type(res, "aws:ec2/vpc:Vpc") == [] and by_type(res, "aws:ec2/subnet:Subnet") == []
    assert by_type(res, "aws:ec2/vpcEndpoint:VpcEndpoint") == []  # a given VPC's routes are its owner's
    assert one(res, CLUSTER).inputs["vpcConfig"]["subnetIds"] == values["aws"]["subnetIds"]
    ng = gpu(res, NG, "gpu-g6-xlarge").inputs
    assert ng["capacityType"] == "ON_DEMAND" and sorted(ng["subnetIds"]) == sorted(values["aws"]["subnetIds"])
    assert by_type(res, "aws:efs/fileSystem:FileSystem") == []
    assert "aws-efs-csi-driver" not in {r.inputs["addonName"] for r in by_type(res, "aws:eks/addon:Addon")}
    classes = {r.inputs["metadata"]["name"] for r in by_type(res, "kubernetes:storage.k8s.io/v1:StorageClass")}
    assert classes == {"ebs-gp3"}  # the block class only: the cache names a class of the cluster's


def test_a_planned_type_without_its_reservation_stops_the_program_with_the_field_named():
    values = {**G6, "aws": {"region": "us-east-1", "capacityType": "reservation", "endpointPublicAccessCidrs": ["203.0.113.7/32"],
                            "capacityReservations": {"p5.48xlarge": "cr-0123456789abcdef0"}}}
    with pytest.raises(pulumi.RunError, match=r"aws\.capacityReservations: no reservation for planned instance "
                                              r"type g6\.xlarge \(small\)"):
        plan_config(values)
