"""Day 0 on EKS: whoever runs `pulumi up` can reach the Kubernetes API, and a stack that never could is
refused before anything is created."""
import pulumi
import pytest

from components.cluster.aws.control_plane import deployer_rules, endpoint_reachability
from components.config import ConfigError, parse
from components.offline.mocks import CLOUD_OUTPUTS
from tests.support.plans import by_type, one, plan_config

CLUSTER = "aws:eks/cluster:Cluster"
INGRESS = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
MODELS = [{"name": "small", "model": "llama-3.1-8b", "instanceTypes": ["g6.xlarge"], "maxModelLen": 8192,
           "sla": {"concurrency": 4}, "replicas": {"min": 1, "max": 3}}]
VPC = {"vpcId": "vpc-0123456789abcdef0", "subnetIds": ["subnet-0123456789abcdef0", "subnet-0fedcba9876543210"]}
FIRST_RUN = ("aws.endpointPublicAccessCidrs: empty while the stack creates its VPC, so the first `pulumi up` "
             "cannot reach the Kubernetes API")
NOTHING = "aws.deployerCidrs / aws.deployerSecurityGroupIds: both empty and aws.endpointPublicAccessCidrs is empty"


def aws(**settings):
    return parse({"cloud": "aws", "aws": {"region": "us-east-1", **settings}, "models": MODELS}, {"hfToken"}).aws


@pytest.mark.parametrize("settings,problem", [
    ({}, FIRST_RUN),  # a new VPC, private endpoint only: nothing exists that could reach it
    ({"deployerCidrs": ["10.100.0.0/24"]}, FIRST_RUN),  # no VPN / peering into a VPC that does not exist yet
    ({"endpointPublicAccessCidrs": ["203.0.113.7/32"]}, None),  # bootstrap over the public endpoint
    ({"bootstrapped": True}, NOTHING),
    ({"bootstrapped": True, "deployerSecurityGroupIds": ["sg-0123456789abcdef0"]}, None),  # then private
    ({"bootstrapped": True, "deployerCidrs": ["10.100.0.0/24"]}, None),
    ({**VPC}, NOTHING),
    ({**VPC, "deployerSecurityGroupIds": ["sg-0123456789abcdef0"]}, None),
    ({**VPC, "deployerCidrs": ["10.100.0.0/24"]}, None),
    ({**VPC, "endpointPublicAccessCidrs": ["203.0.113.7/32"]}, None),
])
def test_only_stacks_some_deployer_can_reach_pass(settings, problem):
    problems = endpoint_reachability(aws(**settings))
    if problem is None:
        assert problems == []
    else:
        (line,) = problems
        assert line.startswith(problem)


@pytest.mark.parametrize("settings,message", [
    ({"deployerSecurityGroupIds": ["sg-0123456789abcdef0"], "endpointPublicAccessCidrs": ["203.0.113.7/32"]},
     "aws.deployerSecurityGroupIds: given while this stack creates the VPC: no security group can be in a VPC "
     "that does not exist yet"),
    ({**VPC, "bootstrapped": True}, "aws.bootstrapped: only for a VPC this stack creates"),
    ({**VPC, "deployerSecurityGroupIds": ["sg-xyz"]}, "aws.deployerSecurityGroupIds: not a security group id: sg-xyz"),
    ({**VPC, "deployerCidrs": ["10.100.0.7/24"]}, "aws.deployerCidrs: not an IPv4 CIDR block: 10.100.0.7/24"),
    ({**VPC, "deployerSecurityGroupIds": ["sg-0123456789abcdef0", "sg-0123456789abcdef0"]},
     "aws.deployerSecurityGroupIds: sg-0123456789abcdef0 listed more than once"),
])
def test_deployer_settings_that_cannot_work_are_config_errors(settings, message):
    with pytest.raises(ConfigError) as err:
        aws(**settings)
    assert message in str(err.value)


def test_rules_are_named_by_their_source_so_reordering_replaces_nothing():
    rules = deployer_rules(aws(**VPC, deployerCidrs=["10.100.0.0/24"], deployerSecurityGroupIds=["sg-0123456789abcdef0"]))
    assert rules == {"10-100-0-0-24": {"cidr_ipv4": "10.100.0.0/24", "description": "Kubernetes API from deployer "
                                                                                    "10.100.0.0/24"},
                     "sg-0123456789abcdef0": {"referenced_security_group_id": "sg-0123456789abcdef0",
                                              "description": "Kubernetes API from deployer sg-0123456789abcdef0"}}


def test_an_unreachable_stack_stops_before_any_resource_with_the_fields_named():
    with pytest.raises(pulumi.RunError) as err:
        plan_config({"cloud": "aws", "aws": {"region": "us-east-1"}, "models": MODELS})
    assert isinstance(err.value.__cause__, ConfigError)
    assert FIRST_RUN in str(err.value)


def test_private_endpoint_admits_the_deployer_cidrs_and_groups_on_443_before_kubernetes_objects():
    values = {"cloud": "aws", "models": MODELS,
              "aws": {"region": "us-east-1", **VPC, "deployerCidrs": ["10.100.0.0/24"],
                      "deployerSecurityGroupIds": ["sg-0123456789abcdef0"]}}
    res, _ = plan_config(values)
    cluster = one(res, CLUSTER)
    vpc = cluster.inputs["vpcConfig"]
    assert vpc["endpointPrivateAccess"] is True and vpc["endpointPublicAccess"] is False
    cluster_sg = CLOUD_OUTPUTS[CLUSTER](cluster.name, cluster.inputs)["vpcConfig"]["clusterSecurityGroupId"]
    rules = {r.name: r for r in by_type(res, INGRESS) if r.inputs["securityGroupId"] == cluster_sg}
    assert {n: (r.inputs["ipProtocol"], r.inputs["fromPort"], r.inputs["toPort"],
                r.inputs.get("cidrIpv4") or r.inputs.get("referencedSecurityGroupId")) for n, r in rules.items()} == {
        "vllm-cluster-eks-deployer-10-100-0-0-24": ("tcp", 443, 443, "10.100.0.0/24"),
        "vllm-cluster-eks-deployer-sg-0123456789abcdef0": ("tcp", 443, 443, "sg-0123456789abcdef0")}
    # Kubernetes objects wait for the rules: without them the provider's first call times out.
    namespace = one(res, "kubernetes:core/v1:Namespace", "vllm-ns")
    assert {f"{INGRESS}::{n}" for n in rules} <= set(namespace.dependencies)


def test_a_public_endpoint_lists_only_the_given_cidrs_and_adds_no_rule():
    res, _ = plan_config({"cloud": "aws", "models": MODELS,
                          "aws": {"region": "us-east-1", "endpointPublicAccessCidrs": ["203.0.113.7/32"]}})
    vpc = one(res, CLUSTER).inputs["vpcConfig"]
    assert vpc["endpointPublicAccess"] is True and vpc["publicAccessCidrs"] == ["203.0.113.7/32"]
    assert [r.name for r in by_type(res, INGRESS) if "deployer" in r.name] == []


# --- the kubeconfig's token identity -------------------------------------------------------------------

def _kubeconfig_exec(**provider: str) -> dict:
    """The exec section of the kubeconfig the stack's Kubernetes provider gets, under these `aws:*` keys."""
    import json

    import yaml

    from components.offline.runner import OFFLINE_SECRET, run_program
    config = {"vllm-platform:cloud": "aws", "vllm-platform:hfToken": OFFLINE_SECRET,
              "vllm-platform:models": json.dumps(MODELS),
              "vllm-platform:aws": json.dumps({"region": "us-east-1", "endpointPublicAccessCidrs": ["203.0.113.7/32"]}),
              # the gateway's API keys (a secret every non-dev gateway needs; components/config/gateway.py)
              "vllm-platform:gatewayApiKeys": json.dumps({"default": f"{OFFLINE_SECRET}-default"}),
              **provider}
    _, exports = run_program(config, ["vllm-platform:hfToken", "vllm-platform:gatewayApiKeys"], "token-test")
    return yaml.safe_load(exports["kubeconfig"])["users"][0]["user"]["exec"]


ROLE = "arn:aws:iam::123456789012:role/platform-deployer"


def test_the_kubeconfig_gets_its_token_as_the_aws_providers_profile_and_role():
    """The cluster creator (the only admin at first) is the provider's identity; `aws eks get-token` as any
    other identity gets 401 from the API on every Kubernetes call."""
    ex = _kubeconfig_exec(**{"aws:profile": "platform-prod", "aws:assumeRoles": f'[{{"roleArn": "{ROLE}"}}]'})
    assert ex["command"] == "aws"
    assert ex["args"] == ["eks", "get-token", "--cluster-name", "vllm", "--region", "us-east-1", "--output",
                          "json", "--role-arn", ROLE, "--profile", "platform-prod"]
    assert ex["env"] == [{"name": "AWS_PROFILE", "value": "platform-prod"}]
    plain = _kubeconfig_exec()
    assert "--profile" not in plain["args"] and "--role-arn" not in plain["args"] and "env" not in plain


def test_a_chain_of_assumed_roles_is_a_config_error():
    chain = f'[{{"roleArn": "{ROLE}"}}, {{"roleArn": "{ROLE}-2"}}]'
    with pytest.raises(pulumi.RunError, match=r"aws:assumeRoles: the kubeconfig's `aws eks get-token --role-arn` "
                                              r"assumes one role"):
        _kubeconfig_exec(**{"aws:assumeRoles": chain})


# --- the cluster creator's access entry ------------------------------------------------------------------

ENTRY = "aws:eks/accessEntry:AccessEntry"
ASSOC = "aws:eks/accessPolicyAssociation:AccessPolicyAssociation"
ADMIN = "arn:aws:iam::123456789012:role/platform-admin"
CI = "arn:aws:iam::123456789012:role/ci-deploy"
VIEWER = "arn:aws:iam::123456789012:role/ci-preview"


def _entries(caller: str, existing: dict | None, monkeypatch) -> tuple[dict, dict, dict]:
    """({entry name: principal}, {association name: principal}, cluster tags) of a plan run as `caller` (an
    assumed role), in an account whose EKS clusters are `existing` ({name: tags})."""
    from components.offline import aws_stubs
    monkeypatch.setitem(aws_stubs.CALLER, "role", caller)
    monkeypatch.setattr(aws_stubs, "EXISTING_CLUSTERS",
                        {name: {"version": "1.35", "tags": tags} for name, tags in (existing or {}).items()})
    res, _ = plan_config({"cloud": "aws", "models": MODELS,
                          "aws": {"region": "us-east-1", "endpointPublicAccessCidrs": ["203.0.113.7/32"],
                                  "adminRoleArns": [ADMIN, CI], "viewerRoleArns": [VIEWER]}})
    return ({r.name: r.inputs["principalArn"] for r in by_type(res, ENTRY)},
            {r.name: r.inputs["principalArn"] for r in by_type(res, ASSOC)}, one(res, CLUSTER).inputs.get("tags"))


def test_the_deployer_that_creates_the_cluster_gets_no_second_access_entry(monkeypatch):
    """EKS gives the creator an entry of its own; another one for it fails with 409 ResourceInUseException."""
    entries, assocs, tags = _entries("platform-admin", None, monkeypatch)
    expected = {"vllm-cluster-eks-admin-1": CI, "vllm-cluster-eks-viewer-0": VIEWER}
    assert entries == expected and assocs == expected
    assert tags == {"vllm-platform/cluster-creator": ADMIN}


def test_a_later_run_by_another_listed_role_keeps_every_entry_as_it_was(monkeypatch):
    """CI deploys a cluster a human created: the creator comes from the cluster's tag, not from the caller,
    so CI's own entry stays and no entry for the creator is attempted."""
    entries, _, tags = _entries("ci-deploy", {"vllm": {"vllm-platform/cluster-creator": ADMIN}}, monkeypatch)
    assert entries == {"vllm-cluster-eks-admin-1": CI, "vllm-cluster-eks-viewer-0": VIEWER}
    assert tags == {"vllm-platform/cluster-creator": ADMIN}


def test_an_unlisted_deployer_changes_nothing_and_is_recorded_as_the_creator(monkeypatch):
    entries, _, tags = _entries("alice", None, monkeypatch)
    assert entries == {"vllm-cluster-eks-admin-0": ADMIN, "vllm-cluster-eks-admin-1": CI,
                       "vllm-cluster-eks-viewer-0": VIEWER}
    assert tags == {"vllm-platform/cluster-creator": "arn:aws:iam::123456789012:role/alice"}


def test_a_cluster_deployed_before_the_creator_tag_keeps_all_its_entries_and_gets_no_tag(monkeypatch):
    """Nothing is known about its creator: the entries stay as deployed, and the cluster is not updated."""
    entries, _, tags = _entries("platform-admin", {"vllm": {"team": "ml"}}, monkeypatch)
    assert entries == {"vllm-cluster-eks-admin-0": ADMIN, "vllm-cluster-eks-admin-1": CI,
                       "vllm-cluster-eks-viewer-0": VIEWER}
    assert tags is None


def test_the_offline_caller_is_an_assumed_role_resolved_to_its_role():
    from components.offline.aws_stubs import _caller, _session_context
    arn = _caller({})["arn"]
    assert arn == "arn:aws:sts::123456789012:assumed-role/platform-deployer/offline-plan"
    assert _session_context({"arn": arn})["issuerArn"] == "arn:aws:iam::123456789012:role/platform-deployer"
    user = "arn:aws:iam::123456789012:user/alice"
    assert _session_context({"arn": user})["issuerArn"] == user


def test_a_creator_role_with_a_path_is_the_listed_role_without_it():
    """The session issuer ARN carries the role's path; a stack file usually names the role without it. Compared
    as written, the creator would get a second entry again: 409 ResourceInUseException."""
    from components.cluster.aws.control_plane import access_entries, principal
    from components.config.schema import AwsSettings
    settings = AwsSettings(region="us-east-1", endpointPublicAccessCidrs=["203.0.113.7/32"],
                           adminRoleArns=[ADMIN, CI], viewerRoleArns=[VIEWER])
    pathed = "arn:aws:iam::123456789012:role/teams/ml/platform-admin"
    assert principal(pathed) == principal(ADMIN)
    assert [arn for *_, arn in access_entries(settings, pathed)] == [CI, VIEWER]
    other_account = "arn:aws:iam::210987654321:role/platform-admin"
    assert [arn for *_, arn in access_entries(settings, other_account)] == [ADMIN, CI, VIEWER]
