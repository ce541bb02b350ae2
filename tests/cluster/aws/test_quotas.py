"""A new AWS account has no P or G vCPU quota: what the GPU node groups may grow to (every pool at its max
node count) is checked against Service Quotas before anything is created, and a shortfall is refused with
the exact request to file."""
from __future__ import annotations

import grpc

from components.cluster.aws.quotas import gpu_quota_needs
from components.catalog import INSTANCE_TYPES
from components.cluster.pools import PoolSpec
import components.offline.aws_stubs as stubs
from components.offline.mocks import INVOKES
from tests.cluster.aws.test_capacity import BIG, BLOCK_STACK, ODCR_STACK, at, config, config_error
from tests.support.plans import by_type, plan_config


class grpc_error(grpc.RpcError):
    def __init__(self, message: str):
        super().__init__(message)
        self._details = f"invocation of aws:servicequotas/getServiceQuota:getServiceQuota returned an error: {message}"

    def code(self):
        return grpc.StatusCode.UNKNOWN

    def details(self):
        return self._details


def quota(monkeypatch, code: str, value: float):
    monkeypatch.setitem(stubs.QUOTAS, ("ec2", code), value)


def test_a_new_accounts_p_quota_refuses_the_plan_with_the_request_to_file(monkeypatch):
    # Llama-3.1-405B: up to 3 replicas of 2 p5.48xlarge (TP 8 x PP 2; 192 vCPUs each) = 1152 vCPUs
    quota(monkeypatch, "L-417A185B", 0.0)
    assert ("aws.region: quota L-417A185B (Running On-Demand P instances) in us-east-1 is 0 vCPUs; the GPU pools "
            "(gpu-p5-48xlarge) need 1152 vCPUs at their max node counts. Request 1152: `aws service-quotas "
            "request-service-quota-increase --service-code ec2 --quota-code L-417A185B --desired-value 1152 "
            "--region us-east-1` (console: Service Quotas > AWS services > Amazon Elastic Compute Cloud (Amazon EC2) "
            "> Running On-Demand P instances > Request increase at account level); or lower the models' "
            "replicas.max") in config_error(config(models=[BIG]))


def test_a_quota_of_exactly_the_need_passes_and_one_vcpu_less_is_refused(monkeypatch):
    quota(monkeypatch, "L-417A185B", 1152.0)  # 3 replicas x 2 p5.48xlarge x 192 vCPUs
    res, _ = plan_config(config(models=[BIG]))
    assert by_type(res, "aws:eks/nodeGroup:NodeGroup")
    quota(monkeypatch, "L-417A185B", 1151.0)
    assert "quota L-417A185B (Running On-Demand P instances) in us-east-1 is 1151 vCPUs" in config_error(config(models=[BIG]))


def test_spot_and_g_instances_are_checked_against_their_own_quotas(monkeypatch):
    quota(monkeypatch, "L-7212CCBC", 0.0)
    assert "quota L-7212CCBC (All P Spot Instance Requests) in us-east-1 is 0 vCPUs" in \
        config_error(config(models=[BIG], capacityType="spot"))
    quota(monkeypatch, "L-DB2E81BA", 0.0)
    assert "quota L-DB2E81BA (Running On-Demand G and VT instances) in us-east-1 is 0 vCPUs" in \
        config_error(config("g6.xlarge"))
    quota(monkeypatch, "L-3819A6DF", 0.0)
    assert "quota L-3819A6DF (All G and VT Spot Instance Requests) in us-east-1 is 0 vCPUs" in \
        config_error(config("g6.xlarge", capacityType="spot"))


def test_reserved_capacity_is_not_checked(monkeypatch):
    """An ODCR was created within the on-demand limit; a Capacity Block documents no instance quota."""
    quota(monkeypatch, "L-417A185B", 0.0)
    plan_config(config(models=[BIG], **ODCR_STACK))
    at(monkeypatch, "2027-02-01T00:00:00")
    plan_config(config(models=[BIG], **BLOCK_STACK))


def test_pools_of_one_family_add_up_at_their_max_node_counts():
    def pool(itype, max_nodes):
        return PoolSpec(name=f"gpu-{itype}", instance=INSTANCE_TYPES[itype], min_nodes=1, desired_nodes=1,
                        max_nodes=max_nodes, multi_node=False, models=("m",))
    needs = gpu_quota_needs([pool("p5.48xlarge", 2), pool("p4d.24xlarge", 3), pool("g6e.xlarge", 5)], "onDemand")
    assert {(n.quota.code, n.need, n.pools) for n in needs} == {
        ("L-417A185B", 2 * 192 + 3 * 96, ("gpu-p5.48xlarge", "gpu-p4d.24xlarge")),
        ("L-DB2E81BA", 5 * 4, ("gpu-g6e.xlarge",))}
    assert gpu_quota_needs([pool("p5.48xlarge", 2)], "reservation") == []


def test_an_unreadable_quota_names_the_permissions(monkeypatch):
    def denied(args):  # as the engine answers an invoke the provider failed
        raise grpc_error("operation error Service Quotas: GetServiceQuota, AccessDeniedException: not authorized")
    monkeypatch.setitem(INVOKES, "aws:servicequotas/getServiceQuota:getServiceQuota", denied)
    message = config_error(config(models=[BIG]))
    assert ("aws.region: cannot read EC2 quota L-417A185B (Running On-Demand P instances) in us-east-1: operation "
            "error Service Quotas: GetServiceQuota, AccessDeniedException: not authorized; the deployer needs "
            "servicequotas:GetServiceQuota and servicequotas:GetAWSDefaultServiceQuota") in message
