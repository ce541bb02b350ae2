"""The deployer's least-privilege IAM policy (issue 36): generated from what the AWS component registers and asks.
The offline program is run for stacks that exercise every branch of the component; each resource type it registers
and each data source it calls must be in the action tables, and required_policy for that stack's arguments must
hold every action they map to."""
from datetime import datetime, timezone

import pytest

import components.cluster.aws.capacity as capacity
import components.cluster.aws.component as component
import components.offline.aws_stubs as stubs
from components.cluster.aws.permissions import (INVOKE_ACTIONS, RESOURCE_ACTIONS, required_actions, required_policy)
from components.offline.mocks import INVOKES
from tests.cluster.aws.test_capacity import BIG, BLOCK_STACK, ODCR_STACK, config
from tests.support.aws import G6
from tests.support.plans import plan_config

STACKS = {
    "dev-g6": G6,
    "p5-efa-efs-admins": config(models=[BIG], adminRoleArns=["arn:aws:iam::123456789012:role/platform-admin"],
                                viewerRoleArns=["arn:aws:iam::123456789012:role/ci"]),
    "capacity-block": config(models=[BIG], **BLOCK_STACK),
    "reservation": config(models=[BIG], **ODCR_STACK),
    "given-vpc": {**G6, "aws": {**G6["aws"], "vpcId": "vpc-0123456789abcdef0",
                                "subnetIds": ["subnet-0123456789abcdef0", "subnet-0fedcba9876543210"]}},
}


def run(values, monkeypatch, deployed=False):
    """(resource types, invoke tokens, the component's arguments) of one offline `pulumi up`."""
    invokes, seen = set(), {}
    for token, fn in list(INVOKES.items()):
        if token.startswith("aws:"):
            monkeypatch.setitem(INVOKES, token, (lambda t, f: lambda a: invokes.add(t) or f(a))(token, fn))
    init = component.AwsGpuCluster.__init__

    def record(self, name, args, opts=None):
        seen["args"] = args
        init(self, name, args, opts)

    monkeypatch.setattr(component.AwsGpuCluster, "__init__", record)
    monkeypatch.setattr(capacity, "utcnow", lambda: datetime(2027, 2, 1, tzinfo=timezone.utc))
    if deployed:  # a later `pulumi up`: the cluster and a node group exist
        monkeypatch.setitem(stubs.EXISTING_CLUSTERS, "vllm", {"version": "1.35", "tags": {}})
        monkeypatch.setitem(stubs.EXISTING_NODE_GROUPS, "vllm", {"vllm-cluster-nodes-system-x-0a1b2c3": 1})
    res, _ = plan_config(values)
    return {r.type for r in res if r.type.startswith("aws:")}, invokes, seen["args"]


@pytest.mark.parametrize("stack", sorted(STACKS))
@pytest.mark.parametrize("deployed", [False, True])
def test_every_resource_and_invoke_is_covered_and_in_the_stacks_policy(stack, deployed, monkeypatch):
    types, invokes, args = run(STACKS[stack], monkeypatch, deployed)
    assert types - set(RESOURCE_ACTIONS) == set(), "add the new resource types to permissions.RESOURCE_ACTIONS"
    assert invokes - set(INVOKE_ACTIONS) == set(), "add the new data sources to permissions.INVOKE_ACTIONS"
    needed = {a for t in types for a in RESOURCE_ACTIONS[t]} | {a for t in invokes for a in INVOKE_ACTIONS[t]}
    granted = {a for s in required_policy(args)["Statement"] for a in s["Action"]}
    assert needed - granted == set()


def test_the_policy_is_least_privilege_for_the_stack(monkeypatch):
    """A stack on a given VPC gets no VPC-creating action; one without EFS no EFS action; no Capacity Block, no
    scheduled actions."""
    _, _, args = run(STACKS["given-vpc"], monkeypatch)
    actions = required_actions(args)
    assert "ec2:CreateVpc" not in actions and "ec2:CreateNatGateway" not in actions
    assert "autoscaling:PutScheduledUpdateGroupAction" not in actions
    assert "eks:CreateCluster" in actions and "iam:PassRole" in actions
    _, _, args = run(STACKS["capacity-block"], monkeypatch)
    assert "autoscaling:PutScheduledUpdateGroupAction" in required_actions(args)


def test_the_policy_is_an_iam_document_one_statement_per_service(monkeypatch):
    _, _, args = run(STACKS["dev-g6"], monkeypatch)
    policy = required_policy(args)
    assert policy["Version"] == "2012-10-17"
    services = [s["Action"][0].split(":")[0] for s in policy["Statement"]]
    assert services == sorted(set(services))
    assert all(s["Effect"] == "Allow" and s["Resource"] == "*" and s["Action"] == sorted(s["Action"])
               and all(a.startswith(svc + ":") for a in s["Action"])
               for s, svc in zip(policy["Statement"], services))
    assert {"Sid": "Ec2", "Effect": "Allow"}.items() <= policy["Statement"][services.index("ec2")].items()
