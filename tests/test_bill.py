"""The whole bill beside the GPU nodes (issue 24): control plane, system nodes, NAT, file storage, load balancer,
each with its price, source and read date, and a total; negotiated rates (`vllm-platform:pricing`) in the bill
and in the planner's choice of shape. Figures are pinned as `python -m components plan` prints them."""
from __future__ import annotations

import pytest

from components.costs.bill import bill_lines, stack_bill
from components.cli import main
from components.config import ConfigError, parse
from components.costs.notes import cost_lines
from components.offline.runner import load_stack_yaml, stack_file
from components.planning import plan_stack
from tests.support.plans import planned

CIDRS = {"endpointPublicAccessCidrs": ["203.0.113.7/32"]}
SMALL = {"name": "small", "model": "llama-3.1-8b", "maxModelLen": 8192, "sla": {"concurrency": 4},
         "replicas": {"min": 1, "max": 2}}


def aws(models=(SMALL,), pricing=None, gateway=None, **settings):
    raw = {"cloud": "aws", "models": list(models), "aws": {"region": "us-east-1", **CIDRS, **settings}}
    return parse({**raw, **({"pricing": pricing} if pricing else {}), **({"gateway": gateway} if gateway else {})},
                 {"hfToken"})


def gcp(models=(SMALL,), **settings):
    return parse({"cloud": "gcp", "models": list(models), "gcp": {"project": "my-project-1", "region": "us-central1",
                  "zone": "us-central1-a", "kubeconfigEndpoint": "dns", **settings}}, {"hfToken"})


def shipped(stack):
    raw = {k.split(":", 1)[1]: v for k, v in load_stack_yaml(stack_file(stack)).items()
           if k.startswith("vllm-platform:")}
    return parse(raw, secrets={"hfToken"})


def bill_of(cfg):
    return stack_bill(cfg, plan_stack(cfg))


def lines_of(cfg):
    return {x.item: x for x in bill_of(cfg).lines}


def test_an_eks_stack_pays_control_plane_system_nodes_nat_efs_and_nlb():
    bill = bill_of(shipped("prod-llama70b-aws"))
    got = {x.item: (x.quantity, x.unit_price, x.per_hour) for x in bill.lines}
    assert got == {
        "EKS control plane (standard support)": (1, 0.10, 0.1),
        "system nodes (2 x m7i.2xlarge)": (2, 0.4032, 0.8064),
        "NAT gateways (one per zone, aws.availabilityZones)": (3, 0.045, 0.135),
        "public IPv4 addresses (the NAT gateways' Elastic IPs)": (3, 0.005, 0.015),
        "EFS model cache (up to 200 GiB)": (200, 0.30, 0.0822),  # 200 x $0.30 / 730 h
        "gateway NLB (internal)": (1, 0.0225, 0.0225),
    }
    # the shipped TP 4 plan: 4 replicas on 2 p5 nodes, at min 2 replicas on 2 nodes, at max 6 on 3 (3 x $55.04)
    assert (bill.gpu_min, bill.gpu_planned, bill.gpu_max, bill.total) == (110.08, 110.08, 165.12, 111.24)
    d = bill.to_dict()
    assert d["perHour"] == {"min": 111.24, "planned": 111.24, "max": 166.28} and d["perMonth"] == 81205.2
    # the catalog's oldest base-region figure, the platform rows, and regional.csv's read date (its header)
    assert d["pricesRead"] == ["2025-10", "2026-12-04", "2026-12-07"]
    nat = next(x for x in bill.lines if x.item.startswith("NAT"))
    assert nat.extra == "$0.045 per GB processed" and nat.read == "2026-12-04" and nat.estimated
    assert "aws.amazon.com/vpc/pricing" in nat.basis


def test_the_plan_prints_the_bill_with_its_total_and_when_prices_were_read():
    text = "\n".join(bill_lines(bill_of(shipped("prod-llama70b-aws")).to_dict()))
    assert text.startswith("bill (aws us-east-1; prices read 2025-10, 2026-12-04, 2026-12-07; sources per line: "
                           "components/catalog/data/prices/platform.csv, cpu_instances.csv):\n"
                           "  GPU nodes: $110.08/h as planned ($110.08 at min replicas, $165.12 at max)\n")
    assert ("  NAT gateways (one per zone, aws.availabilityZones): $0.14/h (3 x $0.045/gateway-hour ⚠); "
            "plus $0.045 per GB processed (not included)") in text
    # the bill prints ⚠ (NAT, NLB, system nodes), so it says what the mark means, above the total
    assert text.splitlines()[-2].startswith("  ⚠ = not a price read for this region and item from a dated source: ")
    assert text.splitlines()[-1].startswith("  total: $111.24/h as planned (~$81,205 a month at 730 h); $111.24/h at "
                                            "min replicas, $166.28/h at max; not included: data transfer")


def test_plan_prints_the_bill_of_the_stack_output(capsys, monkeypatch, tmp_path):
    import components.offline.runner as runner
    monkeypatch.setattr(runner, "plan_stack_offline", lambda stack, **_: planned("prod-llama70b-aws"))
    assert main(["plan", "prod-llama70b-aws", "--out", str(tmp_path / "plan")]) == 0
    out = capsys.readouterr().out
    assert "\n  EKS control plane (standard support): $0.10/h (1 x $0.1/cluster-hour)" in out
    assert "\n  total: $111.24/h as planned" in out


def test_extended_support_bills_the_standard_rate_until_the_minor_leaves_standard_support(monkeypatch):
    from components.upstream import kubernetes_support
    from datetime import date
    monkeypatch.setattr(kubernetes_support, "today", lambda: date(2026, 12, 4))
    got = lines_of(aws(supportType="EXTENDED"))["EKS control plane (standard support)"]
    assert (got.unit_price, got.per_hour) == (0.10, 0.1)
    assert got.note == "aws.supportType EXTENDED: $0.60/h from 2027-03-27, when 1.35 leaves standard support"


def test_extended_support_bills_the_extended_rate_once_the_minor_left_standard_support(monkeypatch):
    from components.upstream import kubernetes_support
    from datetime import date
    monkeypatch.setattr(kubernetes_support, "today", lambda: date(2027, 3, 27))
    got = lines_of(aws(supportType="EXTENDED"))["EKS control plane (extended support)"]
    assert (got.unit_price, got.per_hour) == (0.60, 0.6)
    assert got.note == "aws.supportType EXTENDED: cluster.kubernetesVersion 1.35 left standard support on 2027-03-27"


def test_a_given_vpc_brings_its_own_nat_and_a_storage_class_its_own_file_system():
    cfg = parse({"cloud": "aws", "models": [SMALL], "modelCache": {"storageClass": "fsx-lustre"},
                 "aws": {"region": "us-east-1", "vpcId": "vpc-0123456789abcdef0", **CIDRS,
                         "subnetIds": ["subnet-0123456789abcdef0", "subnet-0123456789abcdef1"]}}, {"hfToken"})
    assert sorted(lines_of(cfg)) == ["EKS control plane (standard support)", "gateway NLB (internal)",
                                     "system nodes (2 x m7i.2xlarge)"]


def test_zones_and_an_internet_facing_nlb_are_counted():
    items = lines_of(aws(availabilityZones=["us-east-1a", "us-east-1b"],
                         gateway={"scheme": "internet-facing", "tls": {"mode": "none"}}))
    assert items["NAT gateways (one per zone, aws.availabilityZones)"].quantity == 2
    assert items["public IPv4 addresses (the internet-facing NLB, one per zone)"].per_hour == 0.01
    assert "gateway NLB (internal)" not in lines_of(aws(gateway={"enabled": False})) | {}
    assert not any("NLB" in i for i in lines_of(aws(gateway={"enabled": False})))


def test_a_gke_stack_pays_the_filestore_tier_minimum_and_no_free_tier():
    items = lines_of(shipped("prod-qwen72b-gcp"))
    fs = items["Filestore model cache (BASIC_SSD, 2560 GiB)"]
    assert (fs.quantity, fs.unit_price, fs.per_hour) == (2560, 0.30, 1.0521)  # 2560 x 0.30 / 730
    assert fs.note.startswith("the tier's minimum capacity: 2560 GiB provisioned for 210 GiB of cache")
    fee = items["GKE cluster management fee (regional cluster)"]
    assert fee.per_hour == 0.1 and "applies to zonal and Autopilot clusters only" in fee.note
    assert items["Cloud NAT (4 VM(s) at planned replicas, rate capped at 32)"].per_hour == 0.0056
    assert items["gateway load balancer forwarding rule (internal)"].unit_price == 0.025
    # 2 x a3-highgpu-8g at $88.49 (regional.csv, us-central1) = $176.98 + $1.72 beside the GPU nodes
    assert bill_of(shipped("prod-qwen72b-gcp")).total == 178.70
    hdd = lines_of(gcp(filestoreTier="BASIC_HDD"))["Filestore model cache (BASIC_HDD, 1024 GiB)"]
    assert (hdd.unit_price, hdd.per_hour) == (0.20, 0.2805)


def test_an_existing_cluster_has_no_cloud_bill_and_keeps_its_gpu_hour_basis():
    cfg = parse({"cloud": "existing", "models": [SMALL], "modelCache": {"kind": "nvme"},
                 "existing": {"blockStorageClass": "local-path", "gpuNodes": {
                     "accelerator": "l4", "gpusPerNode": 1, "vcpu": 8, "ramGib": 32, "pricePerNodeHour": 2.5}}},
                {"hfToken"})
    assert stack_bill(cfg, plan_stack(cfg)) is None and bill_lines(None) == []
    assert planned("dev").exports.get("bill") is None
    assert "; $2.50/node-hour existing.gpuNodes.pricePerNodeHour; " in cost_lines(plan_stack(cfg)["small"])[0]


def test_a_system_type_without_a_price_row_is_unpriced_not_free():
    bill = bill_of(aws(systemInstanceType="c7a.2xlarge"))
    line = next(x for x in bill.lines if x.item == "system nodes (2 x c7a.2xlarge)")
    assert line.per_hour is None and "set pricing.instanceTypes.c7a.2xlarge" in line.basis
    assert bill.unpriced == ["system nodes (2 x c7a.2xlarge)"]
    assert " + unpriced: system nodes (2 x c7a.2xlarge);" in bill_lines(bill.to_dict())[-1]


def test_a_region_without_price_rows_is_marked():
    fee = lines_of(aws(region="eu-west-1"))["EKS control plane (standard support)"]
    assert fee.estimated and fee.basis.startswith("cluster-hour eu-west-1 at us-east-1 rates (no eu-west-1 prices)")


# --- negotiated rates: vllm-platform:pricing -------------------------------------------------------------

def test_a_negotiated_rate_changes_the_planners_choice_consistently():
    # Under the dense 10 % margin one L4 holds all 4 of SMALL's users (12 at its knee), so at list prices one L4
    # (g6.xlarge, $0.8048) beats one A10G (g5.xlarge, $1.006); a negotiated A10G rate of $0.50 turns the choice to
    # g5.xlarge. (Before the class margins an L4 held 2 users and the list choice was g5.xlarge, so the negotiated
    # rate is now on g5.xlarge instead of g6.xlarge, to still move the choice.)
    listed = plan_stack(aws())["small"]
    assert (listed.instance_type, listed.price_per_node_hour) == ("g6.xlarge", 0.8048)
    cheap = plan_stack(aws(pricing={"instanceTypes": {"g5.xlarge": 0.5}}))["small"]
    assert (cheap.instance_type, cheap.price_per_node_hour, cheap.price_basis) == (
        "g5.xlarge", 0.5, "negotiated (pricing.instanceTypes)")
    assert (cheap.cost_min_per_hour, cheap.cost_max_per_hour) == (0.5, 1.0)  # 1 / 2 replicas of one node
    assert bill_of(aws(pricing={"instanceTypes": {"g5.xlarge": 0.5}})).gpu_max == 1.0


def test_a_discount_comes_off_every_list_price_but_not_a_negotiated_rate():
    cfg = aws(pricing={"discountPercent": 10, "instanceTypes": {"m7i.2xlarge": 0.3}})
    t = plan_stack(cfg)["small"]
    # the planner's g6.xlarge: $0.8048 less 10 %
    assert (t.price_per_node_hour, t.price_basis) == (0.7243, "on-demand us-east-1 less 10 % (pricing.discountPercent)")
    items = lines_of(cfg)
    assert items["EKS control plane (standard support)"].per_hour == 0.09
    system = items["system nodes (2 x m7i.2xlarge)"]
    assert (system.unit_price, system.per_hour, system.read) == (0.3, 0.6, "stack file")


@pytest.mark.parametrize("cloud_block, pricing, error", [
    ({"cloud": "aws", "aws": {"region": "us-east-1", **CIDRS}}, {"instanceTypes": {"g2-standard-8": 0.5}},
     "pricing.instanceTypes: g2-standard-8: a GCP type, and this stack runs on AWS; list only the types whose rate "
     "you negotiated"),
    ({"cloud": "aws", "aws": {"region": "us-east-1", **CIDRS}}, {"instanceTypes": {"p9.huge": 1}},
     "pricing.instanceTypes: p9.huge: not a type this AWS stack can run (the GPU types of "
     "components/catalog/data/instance_types.csv, the CPU types of data/prices/cpu_instances.csv, the system pool's "
     "type); list only the types whose rate you negotiated"),
    ({"cloud": "aws", "aws": {"region": "us-east-1", **CIDRS}}, {"instanceTypes": {"g5.xlarge": 0}},
     "pricing.instanceTypes: g5.xlarge: 0: a rate is $ per node-hour above 0, e.g. `p5.48xlarge: 41.5`"),
    ({"cloud": "aws", "aws": {"region": "us-east-1", **CIDRS}}, {"discountPercent": 100},
     "pricing.discountPercent: Input should be less than 100 (got 100)"),
    ({"cloud": "aws", "aws": {"region": "us-east-1", **CIDRS}}, {"discount": 5},
     "pricing.discount: unknown key; allowed: discountPercent, instanceTypes"),
    ({"cloud": "existing", "modelCache": {"kind": "nvme"}, "existing": {"blockStorageClass": "local-path", "gpuNodes": {
        "accelerator": "l4", "gpusPerNode": 1, "vcpu": 8, "ramGib": 32}}}, {"discountPercent": 5},
     "pricing: an existing cluster has no cloud bill to discount; price its GPU nodes with "
     "existing.gpuNodes.pricePerNodeHour and remove `pricing`"),
])
def test_bad_pricing_is_refused_naming_the_field(cloud_block, pricing, error):
    with pytest.raises(ConfigError) as e:
        parse({**cloud_block, "models": [SMALL], "pricing": pricing}, {"hfToken"})
    assert e.value.errors == [error]


def test_docs_show_the_bill_the_plan_prints():
    from tests.support.plans import ROOT
    doc = (ROOT / "docs" / "cost.md").read_text()
    shown = doc.split("## The whole bill", 1)[1].split("```\n", 2)[1]
    assert shown == "\n".join(bill_lines(bill_of(shipped("prod-qwen72b-gcp")).to_dict())) + "\n"
