"""The Capacity Block rates come from AWS's table valid until 2025-01-01 and no newer table was found: every
price they give says the rate has expired (review of issue 14, item E)."""
from __future__ import annotations

from components.catalog import instance_types
from components.catalog.prices import CAPACITY_BLOCK_SOURCE, node_price
from tests.support.plans import ROOT

P5 = next(i for i in instance_types("aws") if i.name == "p5.48xlarge")
P4D = next(i for i in instance_types("aws") if i.name == "p4d.24xlarge")


def test_a_capacity_block_price_is_marked_expired():
    p = node_price(P5, "us-east-1", "capacityBlock")
    assert (p.hour, p.label) == (39.33, "Capacity Block us-east-1 (rate expired 2025-01-01) ⚠")
    assert node_price(P4D, "us-west-2", "capacityBlock").label == \
        "Capacity Block us-west-2 (rate expired 2025-01-01) ⚠"
    assert p.source.startswith("⚠ EXPIRED 2025-01-01: aws.amazon.com/ec2/capacityblocks/pricing")
    assert CAPACITY_BLOCK_SOURCE == p.source


def test_docs_mark_the_capacity_block_table_expired():
    row = next(line for line in (ROOT / "docs/cost.md").read_text().splitlines()
               if line.startswith("| AWS Capacity Blocks |"))
    assert "⚠ **expired 2025-01-01**" in row and "p5.48xlarge $39.33" in row
