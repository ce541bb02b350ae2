"""Issue 36: gcp.region and gcp.zone are checked against Google Cloud's list when the config is loaded, with the
field and the closest valid names; the list is a sourced table (components/config/gcp_regions.py)."""
from __future__ import annotations

import re

import pytest

from components.config import ConfigError
from components.config.gcp_regions import GCP_ZONES, SOURCE, closest, zones
from components.config.load import parse

MODEL = [{"name": "llama-8b", "model": "llama-3.1-8b", "maxModelLen": 8192}]


def errors(region: str, zone: str) -> list[str]:
    gcp = {"project": "my-proj-123", "region": region, "zone": zone, "kubeconfigEndpoint": "dns"}
    try:
        parse({"cloud": "gcp", "gcp": gcp, "models": MODEL}, {"hfToken"})
    except ConfigError as e:
        return e.errors
    return []


def test_an_invented_region_is_refused_at_load_with_the_closest_real_ones():
    (message,) = errors("us-east9", "us-east9-a")
    assert message.startswith("gcp.region: us-east9 is not a Google Cloud region; closest: ")
    named = message.split("closest: ", 1)[1].split(" (", 1)[0].split(", ")
    assert set(named) <= {"us-east1", "us-east4", "us-east5"} and len(named) == 3


def test_a_zone_the_region_does_not_have_is_refused_with_its_zones():
    assert errors("us-central1", "us-central1-d") == [
        "gcp.zone: us-central1-d is not a zone of region us-central1; its zones: us-central1-a, us-central1-b, "
        "us-central1-c, us-central1-f"]
    assert errors("europe-west1", "europe-west1-a") == [
        "gcp.zone: europe-west1-a is not a zone of region europe-west1; its zones: europe-west1-b, europe-west1-c, "
        "europe-west1-d"]


def test_a_zone_of_another_region_is_refused_naming_the_regions_zones():
    assert errors("us-central1", "us-east1-b") == [
        "gcp.zone: us-east1-b is not in region us-central1; its zones: us-central1-a, us-central1-b, us-central1-c, "
        "us-central1-f"]


@pytest.mark.parametrize("region, zone", [("us-central1", "us-central1-f"), ("europe-west10", "europe-west10-a"),
                                          ("northamerica-south1", "northamerica-south1-c"), ("us-east1", "us-east1-b")])
def test_real_regions_and_zones_load(region, zone):
    assert errors(region, zone) == []


def test_the_table_is_well_formed_and_names_its_source():
    assert SOURCE.startswith("https://cloud.google.com/compute/docs/regions-zones")
    assert len(GCP_ZONES) >= 40
    for region, suffixes in GCP_ZONES.items():
        assert re.fullmatch(r"[a-z]+-[a-z]+\d+", region), region
        assert suffixes and all(re.fullmatch(r"[a-z]", z) for z in suffixes), region
        assert len(set(suffixes)) == len(suffixes)
    assert zones("us-central1") == ["us-central1-a", "us-central1-b", "us-central1-c", "us-central1-f"]


def test_closest_never_comes_back_empty():
    assert closest("zz-nowhere42", GCP_ZONES)
