"""The AWS Load Balancer Controller on EKS: the pinned chart with checked values, the upstream IAM policy
handed to exactly its service account through Pod Identity, the subnet tags it finds load balancer subnets by,
and the fact the gateway reads to ask it for an NLB."""
from __future__ import annotations

import hashlib
import json

import pytest

from components.cluster.aws.iam import load_balancer_controller_policy
from components.cluster.aws.lb_controller_policy import POLICY_JSON
from components.upstream.versions import CHARTS
from tests.support.plans import ROOT, by_type, one, plan_config, planned
from tests.support.aws import G6

RELEASE = "kubernetes:helm.sh/v3:Release"
ASSOCIATION = "aws:eks/podIdentityAssociation:PodIdentityAssociation"
ROLE = "aws:iam/role:Role"
ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
SUBNET = "aws:ec2/subnet:Subnet"
VPC = "aws:ec2/vpc:Vpc"
PROD = "prod-llama70b-aws"
VENDORED_POLICY = ROOT / "schemas" / "charts" / "aws-load-balancer-controller" / "3.5.0" / "iam_policy.json"


def release(resources):
    (found,) = [r for r in by_type(resources, RELEASE) if r.inputs["chart"] == "aws-load-balancer-controller"]
    return found


@pytest.fixture(scope="module")
def dev():
    return plan_config(G6)[0]


@pytest.fixture(scope="module")
def prod():
    return planned(PROD).resources


def test_the_chart_is_pinned_to_3_5_0_from_eks_charts(prod):
    chart = CHARTS["aws-load-balancer-controller"]
    assert (chart.repo, chart.chart, chart.version) == ("https://aws.github.io/eks-charts",
                                                        "aws-load-balancer-controller", "3.5.0")
    r = release(prod)
    assert (r.inputs["version"], r.inputs["repositoryOpts"]["repo"], r.inputs["namespace"]) == \
        ("3.5.0", "https://aws.github.io/eks-charts", "kube-system")


def test_values_name_the_cluster_region_vpc_and_service_account(prod):
    values = release(prod).inputs["values"]
    assert values["clusterName"] == "llama70b-prod"
    assert values["region"] == "us-east-1"
    # the VPC the stack creates (its id, resolved from the Vpc resource), not a lookup through IMDS
    assert values["vpcId"].startswith("vpc-")
    assert f"{VPC}::vllm-cluster-network-vpc" in release(prod).dependencies
    assert values["serviceAccount"] == {"create": True, "name": "aws-load-balancer-controller"}
    # it must not take over every LoadBalancer Service in the cluster
    assert values["enableServiceMutatorWebhook"] is False
    assert values["nodeSelector"] == {"vllm-platform/node-role": "system"}


def test_production_runs_two_replicas_under_a_disruption_budget_dev_one(prod, dev):
    p = release(prod).inputs["values"]
    assert p["replicaCount"] == 2 and p["podDisruptionBudget"] == {"maxUnavailable": 1}
    d = release(dev).inputs["values"]
    assert d["replicaCount"] == 1 and "podDisruptionBudget" not in d


def test_the_upstream_policy_is_vendored_byte_for_byte():
    assert POLICY_JSON == VENDORED_POLICY.read_text()
    assert hashlib.sha256(VENDORED_POLICY.read_bytes()).hexdigest() == \
        "16f232c9d9f79366fe949c4550ad517a202380058a9e48d45a4e215044a20a6a"
    rows = (ROOT / "schemas" / "sources.tsv").read_text()
    assert ("charts/aws-load-balancer-controller/3.5.0/iam_policy.json\tkubernetes-sigs/aws-load-balancer-controller"
            "\tv3.5.0\tdocs/install/iam_policy.json") in rows


def test_the_policy_follows_the_partition():
    china = json.loads(load_balancer_controller_policy("aws-cn"))
    text = json.dumps(china)
    assert "arn:aws:" not in text and "arn:aws-cn:elasticloadbalancing:*:*:targetgroup/*/*" in text
    assert json.loads(load_balancer_controller_policy("aws")) == json.loads(POLICY_JSON)


def test_the_policy_reaches_only_the_controllers_service_account_through_pod_identity(prod):
    assoc = one(prod, ASSOCIATION, "vllm-cluster-lb-controller-identity")
    assert (assoc.inputs["namespace"], assoc.inputs["serviceAccount"]) == ("kube-system", "aws-load-balancer-controller")
    role = one(prod, ROLE, "vllm-cluster-lb-controller-role")
    trust = json.loads(role.inputs["assumeRolePolicy"])["Statement"][0]
    assert trust["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert set(trust["Action"]) == {"sts:AssumeRole", "sts:TagSession"}
    policy = one(prod, ROLE_POLICY, "vllm-cluster-lb-controller-role-policy")
    doc = json.loads(policy.inputs["policy"])
    actions = {a for s in doc["Statement"] for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])}
    # what an NLB for a Service needs: create it, its target groups and listeners, register the pods
    assert {"elasticloadbalancing:CreateLoadBalancer", "elasticloadbalancing:CreateTargetGroup",
            "elasticloadbalancing:CreateListener", "elasticloadbalancing:RegisterTargets",
            "ec2:AuthorizeSecurityGroupIngress", "iam:CreateServiceLinkedRole"} <= actions
    assert doc == json.loads(POLICY_JSON)
    # the association waits for the policy, so the controller's first call is allowed
    assert f"{ROLE_POLICY}::{policy.name}" in assoc.dependencies


def test_the_release_waits_for_its_identity_and_the_cluster(prod):
    deps = release(prod).dependencies
    assert f"{ASSOCIATION}::vllm-cluster-lb-controller-identity" in deps
    assert any(d.startswith("aws:eks/nodeGroup:NodeGroup::") and "system" in d for d in deps)
    assert any(d.startswith("aws:eks/addon:Addon::") and "eks-pod-identity-agent" in d for d in deps)


def test_the_cluster_autoscaler_keeps_its_own_role_and_association(prod):
    """Both controllers' roles come from the one Pod Identity helper; neither lends the other its policy."""
    ca = one(prod, ASSOCIATION, "vllm-cluster-autoscaler-identity")
    assert (ca.inputs["namespace"], ca.inputs["serviceAccount"]) == ("kube-system", "cluster-autoscaler")
    ca_policy = json.loads(one(prod, ROLE_POLICY, "vllm-cluster-autoscaler-role-scaling").inputs["policy"])
    assert "elasticloadbalancing:CreateLoadBalancer" not in json.dumps(ca_policy)


def test_subnets_carry_the_elb_role_tags(dev):
    subnets = by_type(dev, SUBNET)
    public = [s for s in subnets if "-public-" in s.name]
    private = [s for s in subnets if "-private-" in s.name]
    assert public and private and len(public) == len(private)
    for s in public:
        assert s.inputs["tags"]["kubernetes.io/role/elb"] == "1"
        assert "kubernetes.io/role/internal-elb" not in s.inputs["tags"]
    for s in private:
        assert s.inputs["tags"]["kubernetes.io/role/internal-elb"] == "1"
        assert "kubernetes.io/role/elb" not in s.inputs["tags"]


def test_only_eks_gets_the_controller():
    for stack in ("prod-qwen72b-gcp", "prod-llama405b-onprem"):
        assert not [r for r in by_type(planned(stack).resources, RELEASE)
                    if r.inputs["chart"] == "aws-load-balancer-controller"]


def recorded_cluster_facts(values: dict):
    """The ClusterFacts ClusterAddons receives (what the gateway reads too), recorded while the program runs."""
    import components.addons.component as component
    seen = []
    original = component.ClusterAddons.__init__

    def recording(self, name, cluster, settings, opts=None, **kw):
        seen.append(cluster)
        original(self, name, cluster, settings, opts, **kw)

    component.ClusterAddons.__init__ = recording
    try:
        plan_config(values)
    finally:
        component.ClusterAddons.__init__ = original
    (facts,) = seen
    return facts


def test_eks_tells_the_gateway_an_nlb_controller_is_there():
    lbc = recorded_cluster_facts(G6).load_balancer_controller
    assert lbc is not None
    assert (lbc.namespace, lbc.service_account, lbc.region, lbc.highly_available) == \
        ("kube-system", "aws-load-balancer-controller", "eu-west-1", False)


def test_an_existing_cluster_has_no_nlb_controller():
    from components.offline.runner import load_stack_yaml, stack_file
    raw = {k.split(":", 1)[1]: v for k, v in load_stack_yaml(stack_file("prod-llama405b-onprem")).items()
           if k.startswith("vllm-platform:")}
    assert recorded_cluster_facts(raw).load_balancer_controller is None


def test_destroy_removes_the_gateways_nlb_service_while_the_controller_still_runs(prod):
    """`pulumi destroy` deletes dependents first. The Gateway (from which Envoy Gateway makes the LoadBalancer
    Service), its EnvoyProxy (the NLB annotations) and the namespace the Service lives in (whose deletion Pulumi
    awaits, and which waits on the controller's finalizer service.k8s.aws/resources) depend on the controller's
    release, so the controller is still there to delete the NLB, its target groups and security groups; the
    release goes before the system nodes and the VPC (test_values_name_the_cluster_region_vpc_and_service_account,
    test_the_release_waits_for_its_identity_and_the_cluster)."""
    lbc = f"{RELEASE}::vllm-addons-aws-load-balancer-controller"
    for type_, name in (("kubernetes:gateway.networking.k8s.io/v1:Gateway", "vllm-gateway-gateway"),
                        ("kubernetes:gateway.envoyproxy.io/v1alpha1:EnvoyProxy", "vllm-gateway-envoyproxy"),
                        ("kubernetes:core/v1:Namespace", "vllm-gateway-ns-envoy-gateway-system")):
        assert lbc in one(prod, type_, name).dependencies, name


def test_kubernetes_objects_keep_the_api_until_they_are_deleted(prod):
    """A listed admin (here aws.adminRoleArns' platform-admin, not the offline deployer) running `pulumi destroy`
    keeps its access entry until the Kubernetes objects are gone: without the dependency Pulumi may delete the
    entry first, every later Kubernetes delete fails with 401 and the NLB stays behind."""
    access = "aws:eks/accessPolicyAssociation:AccessPolicyAssociation::vllm-cluster-eks-admin-0"
    for type_, name in ((RELEASE, "vllm-addons-aws-load-balancer-controller"),
                        ("kubernetes:core/v1:Namespace", "vllm-gateway-ns-envoy-gateway-system")):
        assert access in one(prod, type_, name).dependencies, name
