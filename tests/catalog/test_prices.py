"""The price tables (components/catalog/data/prices/*.csv, applied by components/catalog/prices.py): what a node
costs per region and capacity type.

Expected figures are pinned here as read from the sources docs/cost.md names, never re-derived from the
table under test.
"""
from __future__ import annotations

import re

import pytest
import yaml

from components.catalog import INSTANCE_TYPES
from components.catalog.prices import (CAPACITY_BLOCKS, PRICE_LEGEND, REGIONAL, REGIONS, SPOT, SPOT_OBSERVED, node_price,
                                       not_offered, priced_regions)
from tests.support.plans import ROOT

W = "⚠"

I = INSTANCE_TYPES


@pytest.mark.parametrize("itype, region, capacity, hour", [
    ("g6.xlarge", "us-east-1", "onDemand", 0.8048),
    ("g6.xlarge", "us-east-1", "reservation", 0.8048),  # an ODCR bills the on-demand rate
    ("g6.xlarge", "us-east-1", "spot", 0.4077),  # skypilot-catalog snapshot: mean of 4 zones
    ("g6.xlarge", "us-east-2", "spot", 0.3112),  # mean of 3 zones
    ("g6.xlarge", "us-west-2", "spot", 0.4486),
    ("g6.12xlarge", "us-east-2", "spot", 1.7793),  # the g6 family's us-east-2 ratio (0.3112 / 0.8048)
    ("g5.xlarge", "us-west-2", "spot", 0.3651),
    ("g6e.12xlarge", "us-east-2", "spot", 4.1602),  # the us-east-2 ratio x regional.csv's us-east-1 $10.49264
    ("p5.48xlarge", "us-east-1", "spot", 33.024),  # 0.60 x 55.04 (⚠ estimate: no current P-family snapshot)
    ("p5.48xlarge", "us-west-2", "spot", 33.024),
    ("p5.48xlarge", "us-east-1", "capacityBlock", 39.33),  # Capacity Blocks pricing page, until 2025-01-01
    ("p5e.48xlarge", "us-east-2", "capacityBlock", 43.26),
    ("p4d.24xlarge", "us-west-2", "capacityBlock", 14.75),
    # regional.csv, as karpenter-provider-gcp initial-prices.json @ 373e2baa (2026-08-03) lists them
    ("g2-standard-4", "us-central1", "onDemand", 0.706832),
    ("g2-standard-4", "us-central1", "spot", 0.397336),
    ("a3-highgpu-8g", "us-central1", "onDemand", 88.49),
    ("a3-highgpu-8g", "us-central1", "spot", 50.609541),
    ("a3-highgpu-8g", "europe-west4", "onDemand", 112.540479),
    ("a3-highgpu-8g", "europe-west4", "spot", 44.118779),
    ("a3-highgpu-8g", "asia-northeast1", "onDemand", 126.643391),
    # regional.csv, as karpenter-provider-aws zz_generated.pricing_aws.go @ 6fc13b52 (2026-07-20) lists them
    ("p5.48xlarge", "us-east-1", "onDemand", 55.04),
    ("p5en.48xlarge", "us-east-1", "onDemand", 63.296),
    ("p4de.24xlarge", "us-east-1", "onDemand", 27.44705),
    # AWS outside us-east-1: no regional source; the us-east-1 row x regions.csv's factor (⚠)
    ("p5en.48xlarge", "us-west-2", "onDemand", 63.296),
    ("p5.48xlarge", "ap-northeast-1", "onDemand", 55.04),  # no row anywhere: us-east-1 rates, marked
    ("a3-ultragpu-8g", "us-central1", "reservation", 84.81),  # a GCP reservation bills on-demand
])
def test_node_price(itype, region, capacity, hour):
    assert node_price(I[itype], region, capacity).hour == pytest.approx(hour, abs=1e-4)


def test_the_price_says_what_it_is_and_marks_estimates():
    assert node_price(I["g6.xlarge"], "us-east-1", "spot").label == "spot us-east-1 ⚠"
    assert node_price(I["p5.48xlarge"], "us-east-1", "capacityBlock").label == \
        "Capacity Block us-east-1 (rate expired 2025-01-01) ⚠"
    assert node_price(I["g6.xlarge"], "us-east-1").label == "on-demand us-east-1"
    assert node_price(I["g6.xlarge"], "us-west-2").label == "on-demand us-west-2 ⚠"
    assert node_price(I["a3-highgpu-8g"], "europe-west4").label == "on-demand europe-west4"  # read, no mark
    assert node_price(I["a3-highgpu-8g"], "europe-west4", "spot").label == "spot europe-west4 ⚠"  # spot moves
    assert node_price(I["a3-ultragpu-8g"], "us-central1", "reservation").label == \
        "reserved (on-demand rate) us-central1 ⚠"  # the catalog marks a3-ultragpu's figure ⚠


def test_a_region_change_changes_a_capacity_block_price():
    east = node_price(I["p5.48xlarge"], "us-east-1", "capacityBlock")
    west = node_price(I["p5.48xlarge"], "us-west-2", "capacityBlock")
    assert (east.hour, west.hour) == (39.33, 55.04)
    assert west.basis == "on-demand us-west-2 (no Capacity Block rate known)" and west.estimated
    # the missing figure is a row of the CSV table, so the text names that file (not the module applying it)
    assert west.source.endswith("; no Capacity Block rate for p5.48xlarge in us-west-2 in "
                                "components/catalog/data/prices/capacity_blocks.csv, on-demand shown")


def test_an_unpriced_region_shows_the_base_rates_marked_and_names_the_priced_regions():
    p = node_price(I["g6.xlarge"], "eu-west-1", "spot")
    assert p.hour == pytest.approx(0.4077, abs=1e-4) and p.estimated
    assert p.label == "spot eu-west-1 at us-east-1 rates (no eu-west-1 prices) ⚠"
    assert ("⚠ no eu-west-1 row in components/catalog/data/prices/regional.csv nor in "
            "components/catalog/data/prices/regions.csv (priced: us-east-1, us-east-2, us-west-2); us-east-1 rates "
            "shown") in p.source
    # a3-ultragpu-8g: the GCP source lists no price for it anywhere; europe-west4 has rows, but not for this type
    g = node_price(I["a3-ultragpu-8g"], "europe-west4", "spot")
    assert g.label == "spot europe-west4 at us-central1 rates (no europe-west4 prices) ⚠"


def test_a_region_outside_the_us_is_priced_from_its_own_row_not_the_base_regions():
    for itype, region, base in [("a3-highgpu-8g", "europe-west4", "us-central1"),
                                ("g2-standard-8", "asia-northeast1", "us-central1")]:
        own, home = node_price(I[itype], region), node_price(I[itype], base)
        assert own.hour == REGIONAL[("gcp", region, itype)].on_demand != home.hour
        assert (own.basis, own.estimated) == (f"on-demand {region}", False)
        assert "karpenter-provider-gcp" in own.source and "read 2026-12-06" in own.source
    assert node_price(I["g2-standard-8"], "asia-northeast1").hour == pytest.approx(1.096224, abs=1e-6)  # initial-prices.json: 1.096224308


def test_a_type_not_offered_in_a_region_is_refused_naming_the_region():
    why = not_offered(I["a3-highgpu-8g"], "me-west1")
    assert why.startswith("a3-highgpu-8g is not offered in me-west1: its price source lists it in asia-east1, ")
    assert not_offered(I["a3-highgpu-8g"], "europe-west4") is None
    assert not_offered(I["a3-ultragpu-8g"], "me-west1") is None  # the source lists no a3-ultragpu: it cannot say
    assert not_offered(I["p5.48xlarge"], "eu-west-1") is None  # no AWS source outside us-east-1: it cannot say
    pinned = node_price(I["a3-highgpu-8g"], "me-west1")  # a stack that pins it anyway sees why
    assert pinned.estimated and pinned.label == \
        "on-demand me-west1 at us-central1 rates (not listed in me-west1 by the price source) ⚠"
    assert "a3-highgpu-8g is not offered in me-west1" in pinned.source


def test_the_regional_table_names_its_sources_and_read_date_and_holds_only_catalog_types():
    head = [x for x in (ROOT / "components/catalog/data/prices/regional.csv").read_text().splitlines()
            if x.startswith("#")]
    text = "\n".join(head)
    assert "# read: 2026-12-06" in head
    assert ("github.com/cloudpilot-ai/karpenter-provider-gcp pkg/providers/pricing/initial-prices.json @ 373e2baa9665 "
            "(2026-08-03)") in text
    assert ("github.com/aws/karpenter-provider-aws pkg/providers/pricing/zz_generated.pricing_aws.go @ 6fc13b5236fd "
            "(2026-07-20)") in text
    assert "scripts/prices.py" in text
    assert {t for _, _, t in REGIONAL} <= set(INSTANCE_TYPES)
    assert {r for c, r, _ in REGIONAL if c == "aws"} == {"us-east-1"}
    assert len({r for c, r, _ in REGIONAL if c == "gcp"}) == 25


def test_the_legend_explains_the_mark():
    assert PRICE_LEGEND.startswith("⚠ = not a price read for this region and item from a dated source: an estimate")
    for what in ("spot prices move", "another region's rate", "expired Capacity Block rate",
                 "does not list in this region", "marked for re-check", "unpriced"):
        assert what in PRICE_LEGEND
    assert PRICE_LEGEND in (ROOT / "docs/cost.md").read_text().replace("\n", " ")


def test_every_row_names_its_source_and_estimates_carry_the_mark():
    for r in REGIONS.values():
        assert re.search(r"(aws\.amazon\.com|cloud\.google\.com)", r.source), r
        assert re.search(r"20\d\d-\d\d", r.source), r  # dated
        assert ("⚠" in r.source) == r.estimated, r
    for s in SPOT.values():
        assert s.source.startswith("⚠ estimate") and re.search(r"20\d\d-\d\d|edition", s.source)
    for o in SPOT_OBSERVED.values():
        assert 0 < o.spot_mean < o.on_demand and o.itype.startswith(o.family + ".")
        assert INSTANCE_TYPES[o.itype].price_hour == pytest.approx(o.on_demand, abs=1e-3)  # G rates unchanged
    assert "skypilot-catalog" in node_price(I["g6.xlarge"], "us-east-2", "spot").source
    assert all(rate > 0 for rate in CAPACITY_BLOCKS.values())


def _stack_regions() -> set[tuple[str, str]]:
    out = set()
    for f in [*ROOT.glob("stacks/Pulumi.*.yaml"), *ROOT.glob("tests/stacks/Pulumi.*.yaml")]:
        config = yaml.safe_load(f.read_text())["config"]
        for cloud in ("aws", "gcp"):
            block = config.get(f"vllm-platform:{cloud}") or {}
            region = block.get("region") or config.get(f"{cloud}:region")
            if region:
                out.add((cloud, region))
    return out


def test_the_shipped_stacks_regions_are_priced_plus_two_more_per_cloud():
    used = _stack_regions()
    assert used >= {("aws", "us-east-1"), ("gcp", "us-central1")}
    assert used <= set(REGIONS)
    for cloud in ("aws", "gcp"):
        assert len(set(priced_regions(cloud)) - {r for c, r in used if c == cloud}) >= 2


def test_every_catalog_type_is_priced_or_not_offered_in_every_priced_region_and_capacity_type():
    for cloud in ("aws", "gcp"):
        for region in priced_regions(cloud):
            for i in INSTANCE_TYPES.values():
                if i.cloud != cloud:
                    continue
                for capacity in ("onDemand", "spot", "reservation", "capacityBlock"):
                    p = node_price(i, region, capacity)
                    assert p.hour > 0 and (p.estimated or (cloud, region, i.name) in REGIONAL), (i.name, region)
                    assert (W in p.label) == p.estimated and (not not_offered(i, region) or p.estimated)
