"""EC2 vCPU quotas the GPU node groups draw on, checked through Service Quotas before anything is created.

EC2 counts running instances per instance family in vCPUs, separately for on-demand and Spot, per region,
and a new account starts at 0 for the P and G families. `aws.capacityType: reservation` and
`capacityBlock` are not checked: an On-Demand Capacity Reservation could only be created within the
account's on-demand limit (EC2 API reference, CreateCapacityReservation: "could also fail if the
requested quantity exceeds your On-Demand Instance limit"), so one that exists already holds the quota
its instances use; for a Capacity Block, AWS documents no instance quota at all (⚠ not verified either way),
and refusing a block the account has paid for on a quota it may not need would be worse than not checking.
"""
from __future__ import annotations

import re

import pulumi
import pulumi_aws as aws

from ...config.schema import AwsSettings
from ..pools import PoolSpec, Quota, QuotaNeed, api_error, checked_needs, quota_needs, quota_problem, quota_shortfall

SERVICE_CODE = "ec2"
# (instance family, aws.capacityType) -> the Service Quotas quota, in vCPUs. Codes: Service Quotas console,
# Amazon EC2 (docs.aws.amazon.com/ec2/latest/instancetypes/ec2-instance-quotas.html lists the names;
# `aws service-quotas list-service-quotas --service-code ec2` the codes), checked 2026-12 against public
# quota tooling that names the same code for the same quota.
EC2_GPU_QUOTAS: dict[tuple[str, str], Quota] = {
    ("p", "onDemand"): Quota("L-417A185B", "Running On-Demand P instances", "vCPUs"),
    ("g", "onDemand"): Quota("L-DB2E81BA", "Running On-Demand G and VT instances", "vCPUs"),
    ("p", "spot"): Quota("L-7212CCBC", "All P Spot Instance Requests", "vCPUs"),
    ("g", "spot"): Quota("L-3819A6DF", "All G and VT Spot Instance Requests", "vCPUs"),
}
CHECKED_CAPACITY = ("onDemand", "spot")  # the module docstring says why reservations are not checked


def family(instance_type: str) -> str:
    """p5.48xlarge -> p, g6e.xlarge -> g, p6-b200.48xlarge -> p"""
    return re.match(r"[a-z]+", instance_type).group(0)


def gpu_quota_needs(specs: list[PoolSpec], capacity_type: str) -> list[QuotaNeed]:
    """vCPUs per quota at the pools' max node counts; none for reserved capacity."""
    if capacity_type not in CHECKED_CAPACITY:
        return []
    return quota_needs(specs, lambda s: [(EC2_GPU_QUOTAS[(family(s.instance.name), capacity_type)],
                                          s.instance.vcpu, ())])


def increase_request(quota: Quota, need: int, region: str) -> str:
    return (f"`aws service-quotas request-service-quota-increase --service-code {SERVICE_CODE} --quota-code "
            f"{quota.code} --desired-value {need} --region {region}` (console: Service Quotas > AWS services > "
            f"Amazon Elastic Compute Cloud (Amazon EC2) > {quota.name} > Request increase at account level)")


def quota_problems(needs: list[QuotaNeed], values: dict[Quota, float | None], region: str) -> list[str]:
    """Pure: an `aws.region` line per quota below the need, with the request to file."""
    problems = []
    for need in needs:
        short = quota_shortfall(need, values)
        if short is not None:
            problems.append(quota_problem("aws.region", region, need, short,
                                          increase_request(need.quota, need.need, region)))
    return problems


def check_quotas(specs: list[PoolSpec], settings: AwsSettings, invoke: pulumi.InvokeOptions) -> list[str]:
    """Ask Service Quotas (servicequotas:GetServiceQuota, and GetAWSDefaultServiceQuota for a quota never
    changed) for each quota the pools draw on, in the provider's region."""
    needs = gpu_quota_needs(specs, settings.capacity_type)
    values: dict[Quota, float | None] = {}
    problems = []
    for need in needs:
        try:
            values[need.quota] = aws.servicequotas.get_service_quota(
                service_code=SERVICE_CODE, quota_code=need.quota.code, opts=invoke).value
        except Exception as e:  # no servicequotas:GetServiceQuota, or the service unreachable
            problems.append(f"aws.region: cannot read EC2 quota {need.quota.code} ({need.quota.name}) in "
                            f"{settings.region}: {api_error(e)}; the deployer needs "
                            f"servicequotas:GetServiceQuota and servicequotas:GetAWSDefaultServiceQuota")
    if problems:
        return problems
    # the offline plan compares only what its account lists (pools.checked_needs); a real run every quota
    return quota_problems(checked_needs("aws", needs, lambda q: settings.region), values, settings.region)
