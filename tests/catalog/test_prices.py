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
from components.catalog.prices import (AWS_REGIONS_READ, CAPACITY_BLOCKS, PRICE_LEGEND, REGIONAL, REGIONS, SPOT, node_price,
                                       not_offered, priced_regions)
from tests.support.plans import ROOT

W = "⚠"

I = INSTANCE_TYPES


# AWS figures: github.com/skypilot-org/skypilot-catalog catalogs/v8/aws/vms.csv @ 00148f2af367 (read 2026-12-07): on
# demand as its rows list it, spot the median of its per-zone SpotPrice over the region's own zones (the zone
# figures are in the comments; Local Zones such as use1-atl2-az1 are not the region's).
@pytest.mark.parametrize("itype, region, capacity, hour", [
    ("g6.xlarge", "us-east-1", "onDemand", 0.8048),
    ("g6.xlarge", "us-east-1", "reservation", 0.8048),  # an ODCR bills the on-demand rate
    ("g6.xlarge", "us-east-1", "spot", 0.38205),  # zones .4011 .3653 .3490 .3988: median (.3653 + .3988) / 2
    ("g6.xlarge", "us-east-2", "spot", 0.2612),  # zones .2756 .2599 .2612
    ("g6.xlarge", "us-west-2", "spot", 0.43935),  # zones .4250 .4537 .3900 .4541
    ("g6.12xlarge", "us-east-2", "spot", 1.6528),  # zones 1.5184 1.7572 1.6528
    ("g5.xlarge", "us-west-2", "spot", 0.4857),  # zones .4857 .5134 .4829
    ("g6e.12xlarge", "us-east-2", "spot", 2.8739),  # zones 2.9165 2.8567 2.8739
    ("g6e.12xlarge", "eu-north-1", "onDemand", 11.12975),
    ("g6e.12xlarge", "eu-north-1", "spot", 2.59105),  # zones 2.1614 3.0207
    ("g6e.48xlarge", "us-east-1", "spot", 10.37265),  # zones 8.0189 20.64 10.2818 10.4635
    ("p5.48xlarge", "us-east-1", "onDemand", 55.04),  # = karpenter-provider-aws zz_generated.pricing_aws.go @ 6fc13b52
    ("p5.48xlarge", "us-east-1", "spot", 23.45325),  # zones 55.04 19.2531 21.1543 55.04 25.7522 17.6289 (atl2 out)
    ("p5.48xlarge", "us-west-2", "spot", 12.9756),  # zones 12.6935 12.9785 12.9727 16.1301
    ("p5.48xlarge", "eu-north-1", "onDemand", 58.8928),
    ("p5.48xlarge", "eu-north-1", "spot", 28.3188),  # only eun1-az3 lists a spot price
    ("p5.48xlarge", "ap-northeast-1", "onDemand", 68.8),
    # ap-northeast-2 lists p5 with no zone spot price: the us-east-1 row's ratio, 75.9552 x 23.45325 / 55.04 (⚠)
    ("p5.48xlarge", "ap-northeast-2", "spot", 32.3655),
    ("p4d.24xlarge", "us-east-1", "onDemand", 21.957642),  # = karpenter's us-east-1 figure
    ("p4d.24xlarge", "us-east-1", "spot", 8.0001),  # zones 2.4655 8.1915 8.1203 7.8799: never the 2.4655 minimum
    ("p4d.24xlarge", "eu-central-1", "onDemand", 27.43298),
    ("p4d.24xlarge", "eu-central-1", "spot", 27.433),  # zones 13.3383 27.433 27.433 (two zones at the cap)
    ("p4de.24xlarge", "us-east-1", "onDemand", 27.44705),
    ("p5en.48xlarge", "us-east-1", "onDemand", 63.296),
    ("p5en.48xlarge", "us-west-2", "onDemand", 63.296),  # its own row now, no longer us-east-1's rate
    ("p5en.48xlarge", "eu-north-1", "onDemand", 67.72672),
    ("p5.48xlarge", "us-east-1", "capacityBlock", 39.33),  # Capacity Blocks pricing page, until 2025-01-01
    ("p5e.48xlarge", "us-east-2", "capacityBlock", 43.26),
    ("p4d.24xlarge", "us-west-2", "capacityBlock", 14.75),
    # p5e: the source has rows but no on-demand price (Capacity Blocks only): the catalog's figure, spot.csv's 0.60
    ("p5e.48xlarge", "us-east-1", "spot", 0.6 * I["p5e.48xlarge"].price_hour),
    # regional.csv, as karpenter-provider-gcp initial-prices.json @ 373e2baa (2026-08-03) lists them
    ("g2-standard-4", "us-central1", "onDemand", 0.706832),
    ("g2-standard-4", "us-central1", "spot", 0.397336),
    ("a3-highgpu-8g", "us-central1", "onDemand", 88.49),
    ("a3-highgpu-8g", "us-central1", "spot", 50.609541),
    ("a3-highgpu-8g", "europe-west4", "onDemand", 112.540479),
    ("a3-highgpu-8g", "europe-west4", "spot", 44.118779),
    ("a3-highgpu-8g", "asia-northeast1", "onDemand", 126.643391),
    # an AWS region SkyPilot's catalog does not read: us-east-1 rates (⚠)
    ("p5.48xlarge", "il-central-1", "onDemand", 55.04),
    ("a3-ultragpu-8g", "us-central1", "reservation", 84.81),  # a GCP reservation bills on-demand
])
def test_node_price(itype, region, capacity, hour):
    assert node_price(I[itype], region, capacity).hour == pytest.approx(hour, abs=1e-4)


def test_the_price_says_what_it_is_and_marks_estimates():
    assert node_price(I["g6.xlarge"], "us-east-1", "spot").label == "spot us-east-1 ⚠"
    assert node_price(I["p5.48xlarge"], "us-east-1", "capacityBlock").label == \
        "Capacity Block us-east-1 (rate expired 2025-01-01) ⚠"
    assert node_price(I["g6.xlarge"], "us-east-1").label == "on-demand us-east-1"
    assert node_price(I["g6.xlarge"], "us-west-2").label == "on-demand us-west-2"  # read from its own row
    assert node_price(I["p5.48xlarge"], "eu-north-1").label == "on-demand eu-north-1"
    assert node_price(I["p5.48xlarge"], "eu-north-1", "spot").label == "spot eu-north-1 ⚠"  # spot moves
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
    p = node_price(I["g6.xlarge"], "il-central-1", "spot")  # SkyPilot's catalog does not read il-central-1
    assert p.hour == pytest.approx(0.38205, abs=1e-4) and p.estimated  # us-east-1's median spot
    assert p.label == "spot il-central-1 at us-east-1 rates (no il-central-1 prices) ⚠"
    assert ("⚠ no il-central-1 row in components/catalog/data/prices/regional.csv nor in "
            "components/catalog/data/prices/regions.csv (priced: af-south-1, ap-east-1, ") in p.source
    assert "eu-west-3, me-central-1, me-south-1, us-east-1, us-east-2, us-west-1, us-west-2); us-east-1 rates shown" \
        in p.source
    assert "the us-east-1 g6.xlarge spot/on-demand ratio ($0.38205 / $0.8048)" in p.source
    # a3-ultragpu-8g: the GCP source lists no price for it anywhere; europe-west4 has rows, but not for this type
    g = node_price(I["a3-ultragpu-8g"], "europe-west4", "spot")
    assert g.label == "spot europe-west4 at us-central1 rates (no europe-west4 prices) ⚠"


def test_a_region_outside_the_us_is_priced_from_its_own_row_not_the_base_regions():
    for itype, region, base, source in [("a3-highgpu-8g", "europe-west4", "us-central1", "karpenter-provider-gcp"),
                                        ("g2-standard-8", "asia-northeast1", "us-central1", "karpenter-provider-gcp"),
                                        ("p5.48xlarge", "eu-north-1", "us-east-1", "skypilot-catalog")]:
        own, home = node_price(I[itype], region), node_price(I[itype], base)
        assert own.hour == REGIONAL[(I[itype].cloud, region, itype)].on_demand != home.hour
        assert (own.basis, own.estimated) == (f"on-demand {region}", False)
        assert source in own.source and "read 2026-12-07" in own.source
    assert node_price(I["g2-standard-8"], "asia-northeast1").hour == pytest.approx(1.096224, abs=1e-6)  # initial-prices.json: 1.096224308


def test_a_type_not_offered_in_a_region_is_refused_naming_the_region():
    why = not_offered(I["a3-highgpu-8g"], "me-west1")
    assert why.startswith("a3-highgpu-8g is not offered in me-west1: its price source lists it in asia-east1, ")
    assert not_offered(I["a3-highgpu-8g"], "europe-west4") is None
    assert not_offered(I["a3-ultragpu-8g"], "me-west1") is None  # the source lists no a3-ultragpu: it cannot say
    # AWS: SkyPilot's catalog reads eu-west-1 and lists no p5 there; af-south-1 has no catalog type at all
    assert not_offered(I["p5.48xlarge"], "eu-west-1").startswith(
        "p5.48xlarge is not offered in eu-west-1: its price source lists it in ap-northeast-1, ap-northeast-2, ")
    assert not_offered(I["g5.xlarge"], "af-south-1").startswith("g5.xlarge is not offered in af-south-1")
    assert not_offered(I["p5.48xlarge"], "il-central-1") is None  # a region SkyPilot does not read: it cannot say
    assert not_offered(I["p5e.48xlarge"], "us-east-1") is None  # no on-demand price anywhere: it cannot say
    pinned = node_price(I["a3-highgpu-8g"], "me-west1")  # a stack that pins it anyway sees why
    assert pinned.estimated and pinned.label == \
        "on-demand me-west1 at us-central1 rates (not listed in me-west1 by the price source) ⚠"
    assert "a3-highgpu-8g is not offered in me-west1" in pinned.source


def test_the_regional_table_names_its_sources_and_read_date_and_holds_only_catalog_types():
    head = [x for x in (ROOT / "components/catalog/data/prices/regional.csv").read_text().splitlines()
            if x.startswith("#")]
    text = "\n".join(head)
    assert "# read: 2026-12-07" in head
    assert ("github.com/cloudpilot-ai/karpenter-provider-gcp pkg/providers/pricing/initial-prices.json @ 373e2baa9665 "
            "(2026-08-03)") in text
    assert "github.com/skypilot-org/skypilot-catalog catalogs/v8/aws/vms.csv @ 00148f2af367" in text
    assert "spot the median over the region's zones" in text
    assert "no on-demand price in it, so not in this table: p5e.48xlarge." in text
    assert "scripts/prices.py" in text
    assert {t for _, _, t in REGIONAL} <= set(INSTANCE_TYPES)
    assert {r for c, r, _ in REGIONAL if c == "aws"} == {
        "ap-east-1", "ap-northeast-1", "ap-northeast-2", "ap-south-1", "ap-southeast-1", "ap-southeast-2",
        "ap-southeast-3", "ca-central-1", "eu-central-1", "eu-north-1", "eu-south-2", "eu-west-1", "eu-west-2",
        "eu-west-3", "me-central-1", "us-east-1", "us-east-2", "us-west-1", "us-west-2"}
    assert "af-south-1" in AWS_REGIONS_READ and "il-central-1" not in AWS_REGIONS_READ and len(AWS_REGIONS_READ) == 24
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
