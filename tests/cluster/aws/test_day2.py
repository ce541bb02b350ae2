"""Day 2 on EKS: node updates without spare GPUs, repair that sees GPU faults, an explicit upgrade policy,
deletion protection, SSM, a read-only CI identity, cost tags on every GPU instance and volume."""
import functools

from components.upstream.versions import CHARTS
from tests.support.plans import by_type, one, plan_config, planned
from tests.support.aws import ADDON, CLUSTER, G6, LT, NG, P5


@functools.lru_cache(maxsize=None)
def g6(**aws):
    return plan_config({**G6, "aws": {**G6["aws"], **aws}})[0]


def gpu_group(res, suffix="gpu-p5-48xlarge"):
    (found,) = [r for r in by_type(res, NG) if r.name.endswith(suffix)]
    return found


def addon_names(res):
    return {r.inputs["addonName"] for r in by_type(res, ADDON)}


def test_gpu_groups_replace_nodes_in_place_and_system_nodes_may_surge():
    res = planned(P5).resources
    assert gpu_group(res).inputs["updateConfig"] == {"maxUnavailable": 1, "updateStrategy": "MINIMAL"}
    for zone in ("us-east-1a", "us-east-1b", "us-east-1c"):
        assert one(res, NG, f"vllm-cluster-nodes-system-{zone}").inputs["updateConfig"] == {"maxUnavailable": 1}


def test_auto_repair_comes_with_the_agent_that_reports_gpu_faults():
    res = planned(P5).resources
    assert gpu_group(res).inputs["nodeRepairConfig"] == {"enabled": True, "maxParallelNodesRepairedCount": 1}
    (agent,) = [r for r in by_type(res, ADDON) if r.inputs["addonName"] == "eks-node-monitoring-agent"]
    assert agent.inputs["addonVersion"] == "v1.7.0-eksbuild.1"  # EKS's answer in the offline account
    # switched off: no repair claimed, and no agent
    off = g6(nodeAutoRepair=False)
    assert gpu_group(off, "gpu-g6-xlarge").inputs["nodeRepairConfig"] == {"enabled": False}
    assert "eks-node-monitoring-agent" not in addon_names(off)


def test_upgrade_policy_is_explicit_and_production_clusters_cannot_be_deleted():
    prod = one(planned(P5).resources, CLUSTER).inputs
    assert prod["upgradePolicy"] == {"supportType": "STANDARD"} and prod["deletionProtection"] is True
    dev = one(g6(), CLUSTER).inputs
    assert dev["deletionProtection"] is False and dev["upgradePolicy"] == {"supportType": "STANDARD"}
    chosen = one(g6(supportType="EXTENDED", deletionProtection=True), CLUSTER).inputs
    assert chosen["upgradePolicy"] == {"supportType": "EXTENDED"} and chosen["deletionProtection"] is True


def test_nodes_are_reachable_through_ssm():
    res = planned(P5).resources
    arns = {r.inputs["policyArn"] for r in by_type(res, "aws:iam/rolePolicyAttachment:RolePolicyAttachment")
            if r.name.startswith("vllm-cluster-nodes-role-")}
    assert "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore" in arns


def test_the_ci_preview_identity_gets_a_read_only_cluster_wide_entry():
    ci = "arn:aws:iam::123456789012:role/ci-preview"
    res = g6(viewerRoleArns=(ci,))
    (entry,) = [r.inputs for r in by_type(res, "aws:eks/accessEntry:AccessEntry") if r.inputs["principalArn"] == ci]
    assert entry["type"] == "STANDARD"
    (assoc,) = [r.inputs for r in by_type(res, "aws:eks/accessPolicyAssociation:AccessPolicyAssociation")
                if r.inputs["principalArn"] == ci]
    assert assoc["policyArn"] == "arn:aws:eks::aws:cluster-access-policy/AmazonEKSViewPolicy"
    assert assoc["accessScope"] == {"type": "cluster"}
    # preview reads Helm release state and Secrets, which AmazonEKSViewPolicy does not grant: the entry's
    # group gets read-only access to Secrets, and nothing else
    assert entry["kubernetesGroups"] == ["vllm-platform-preview"]
    role = one(res, "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole", "vllm-cluster-preview").inputs
    assert role["rules"] == [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list", "watch"]}]
    binding = one(res, "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding", "vllm-cluster-preview").inputs
    assert binding["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                                    "name": "vllm-platform-preview"}]
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                  "name": "vllm-platform-preview"}
    assert [r for r in by_type(g6(), "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole")
            if r.name == "vllm-cluster-preview"] == []


def test_every_gpu_instance_and_volume_carries_the_cost_tags():
    res = planned(P5).resources
    expected = {"vllm-platform/stack": P5, "vllm-platform/environment": "prod",
                "vllm-platform/pool": "gpu-p5-48xlarge", "vllm-platform/models": "llama-3.1-405b"}
    (lt,) = [r for r in by_type(res, LT) if r.name.endswith("gpu-p5-48xlarge-lt")]
    specs = {s["resourceType"]: s["tags"] for s in lt.inputs["tagSpecifications"]}
    assert set(specs) == {"instance", "volume"}
    for tags in specs.values():
        assert tags == {"Name": "llama405b-prod-gpu-p5-48xlarge", "vllm-platform/stack": P5,
                        "vllm-platform/environment": "prod", "vllm-platform/pool": "gpu-p5-48xlarge"}
    assert gpu_group(res).inputs["tags"] == expected
    # the models tag reaches instances through the node group's Auto Scaling group, not the template
    (models,) = [r for r in by_type(res, "aws:autoscaling/tag:Tag") if r.name.endswith("gpu-p5-48xlarge-models")]
    assert models.inputs["tag"] == {"key": "vllm-platform/models", "value": "llama-3.1-405b",
                                    "propagateAtLaunch": True}
    system = one(res, LT, "vllm-cluster-nodes-system").inputs["tagSpecifications"]
    assert {s["resourceType"] for s in system} == {"instance", "volume"}
    assert all(s["tags"]["vllm-platform/environment"] == "prod" for s in system)


def test_efa_device_plugin_chart_is_current_and_every_value_key_exists_in_it():
    assert CHARTS["aws-efa-k8s-device-plugin"].version == "v0.5.30"
    # top-level keys of aws/eks-charts stable/aws-efa-k8s-device-plugin/values.yaml at chart v0.5.30
    chart_keys = {"image", "securityContext", "supportedInstanceLabels", "resources", "nodeSelector", "updateStrategy",
                  "tolerations", "additionalPodAnnotations", "additionalPodLabels", "nameOverride",
                  "fullnameOverride", "imagePullSecrets"}
    (release,) = [r for r in by_type(planned(P5).resources, "kubernetes:helm.sh/v3:Release")
                  if r.inputs["chart"] == "aws-efa-k8s-device-plugin"]
    assert release.inputs["version"] == "v0.5.30"
    assert set(release.inputs["values"]) <= chart_keys


def test_no_pinned_version_that_nothing_uses():
    import components.upstream.versions as versions
    assert not hasattr(versions, "KARPENTER_VERSION") and not hasattr(versions, "LWS_VERSION")
