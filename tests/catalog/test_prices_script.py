"""scripts/prices.py reads SkyPilot's AWS catalog (catalogs/v8/aws/vms.csv) into regional.csv rows: the region's
on-demand price and the median Spot price over the region's own zones. The fixture holds rows copied from the file
(tests/fixtures/prices/README.md); the expected figures are the source's, worked by hand in the comments."""
from __future__ import annotations

import importlib.util

import pytest

from tests.support.plans import ROOT

_spec = importlib.util.spec_from_file_location("prices_script", ROOT / "scripts/prices.py")
prices = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(prices)

VMS = (ROOT / "tests/fixtures/prices/skypilot-vms.csv").read_text()
TYPES = {"p5.48xlarge", "p5e.48xlarge", "g6e.12xlarge", "g5.4xlarge"}


def test_on_demand_per_region_and_spot_as_the_median_over_the_regions_own_zones():
    rows, _ = prices.aws_rows(VMS, TYPES)
    assert rows == [
        ("aws", "eu-north-1", "g6e.12xlarge", 11.12975, 2.59105),  # (2.1614 + 3.0207) / 2
        ("aws", "eu-north-1", "p5.48xlarge", 58.8928, 28.3188),  # the one zone with a Spot price
        # zones 55.04 19.2531 21.1543 55.04 25.7522 17.6289: (21.1543 + 25.7522) / 2; not the Local Zone's 10.2397
        # nor the 17.6289 minimum
        ("aws", "us-east-1", "p5.48xlarge", 55.04, 23.45325),
        ("aws", "us-west-2", "g5.4xlarge", 1.624, 0.5863),  # .5516 .6044 .5863; usw2-lax1-az1 is a Local Zone
    ]  # p5e.48xlarge: no on-demand price (Capacity Blocks only), so no row


def test_every_region_the_file_covers_is_reported_even_without_a_catalog_type():
    _, regions = prices.aws_rows(VMS, TYPES)
    assert regions == ["ap-northeast-3", "eu-north-1", "us-east-1", "us-east-2", "us-west-2"]


def test_a_type_outside_the_catalog_is_left_out():
    rows, _ = prices.aws_rows(VMS, {"p5.48xlarge"})
    assert {r[2] for r in rows} == {"p5.48xlarge"}


def test_a_file_that_is_not_skypilots_catalog_is_refused_naming_the_missing_columns():
    with pytest.raises(SystemExit) as err:
        prices.aws_rows("InstanceType,Region\np5.48xlarge,us-east-1\n", TYPES)
    assert "columns AvailabilityZone, Price, SpotPrice missing: not SkyPilot's AWS catalog" in str(err.value)


def test_two_on_demand_prices_for_one_region_are_refused():
    bad = VMS.replace("55.04,19.253100", "56.00,19.253100")
    with pytest.raises(SystemExit) as err:
        prices.aws_rows(bad, TYPES)
    assert "p5.48xlarge in us-east-1 has 2 on-demand prices [55.04, 56.0]; one expected" in str(err.value)


@pytest.mark.parametrize("xs, mid", [([3.0], 3.0), ([4.0, 1.0], 2.5), ([5.0, 1.0, 3.0], 3.0)])
def test_median(xs, mid):
    assert prices.median(xs) == mid
