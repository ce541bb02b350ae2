"""Google Cloud's regions and their zones: what `gcp.region` and `gcp.zone` are checked against when the stack's
config is loaded (config/clouds.py GcpSettings), before any API is asked.

Source: the "Available regions and zones" table of cloud.google.com/compute/docs/regions-zones (the same names
`gcloud compute zones list` prints), compiled 2026-12-06 from that table as published (⚠ the page itself was not
re-fetched that day) and cross-checked zone by zone against a public tool's vendored list of GCP zones (127 zones,
the same names). Regions Google only opens on request (me-central2 Dammam) are listed:
a project may still lack access, which the live check (components/cluster/gcp/node_pools.py: compute.getZones)
reports. A region or zone Google adds later is refused until a row is added here, with the source re-read.
"""
from __future__ import annotations

import difflib

SOURCE = "https://cloud.google.com/compute/docs/regions-zones (Available regions and zones), compiled 2026-12-06"

# region -> its zones' suffixes (zone = f"{region}-{suffix}")
GCP_ZONES: dict[str, tuple[str, ...]] = {
    "africa-south1": ("a", "b", "c"),
    "asia-east1": ("a", "b", "c"),
    "asia-east2": ("a", "b", "c"),
    "asia-northeast1": ("a", "b", "c"),
    "asia-northeast2": ("a", "b", "c"),
    "asia-northeast3": ("a", "b", "c"),
    "asia-south1": ("a", "b", "c"),
    "asia-south2": ("a", "b", "c"),
    "asia-southeast1": ("a", "b", "c"),
    "asia-southeast2": ("a", "b", "c"),
    "australia-southeast1": ("a", "b", "c"),
    "australia-southeast2": ("a", "b", "c"),
    "europe-central2": ("a", "b", "c"),
    "europe-north1": ("a", "b", "c"),
    "europe-north2": ("a", "b", "c"),
    "europe-southwest1": ("a", "b", "c"),
    "europe-west1": ("b", "c", "d"),
    "europe-west2": ("a", "b", "c"),
    "europe-west3": ("a", "b", "c"),
    "europe-west4": ("a", "b", "c"),
    "europe-west6": ("a", "b", "c"),
    "europe-west8": ("a", "b", "c"),
    "europe-west9": ("a", "b", "c"),
    "europe-west10": ("a", "b", "c"),
    "europe-west12": ("a", "b", "c"),
    "me-central1": ("a", "b", "c"),
    "me-central2": ("a", "b", "c"),
    "me-west1": ("a", "b", "c"),
    "northamerica-northeast1": ("a", "b", "c"),
    "northamerica-northeast2": ("a", "b", "c"),
    "northamerica-south1": ("a", "b", "c"),
    "southamerica-east1": ("a", "b", "c"),
    "southamerica-west1": ("a", "b", "c"),
    "us-central1": ("a", "b", "c", "f"),
    "us-east1": ("b", "c", "d"),
    "us-east4": ("a", "b", "c"),
    "us-east5": ("a", "b", "c"),
    "us-south1": ("a", "b", "c"),
    "us-west1": ("a", "b", "c"),
    "us-west2": ("a", "b", "c"),
    "us-west3": ("a", "b", "c"),
    "us-west4": ("a", "b", "c"),
}


def zones(region: str) -> list[str]:
    return [f"{region}-{z}" for z in GCP_ZONES.get(region, ())]


def closest(name: str, names, n: int = 3) -> list[str]:
    """The listed names nearest to a mistyped one (difflib's ratio), best first; never empty while names is not."""
    names = sorted(names)
    found = difflib.get_close_matches(name, names, n=n, cutoff=0.6)
    return found or difflib.get_close_matches(name, names, n=n, cutoff=0.0)


def region_problem(region: str) -> str | None:
    if region in GCP_ZONES:
        return None
    return (f"{region} is not a Google Cloud region; closest: {', '.join(closest(region, GCP_ZONES))} (the list: "
            f"components/config/gcp_regions.py; a region Google opened since goes in there as a row)")


def zone_problem(region: str, zone: str) -> str | None:
    if region not in GCP_ZONES or zone in zones(region):
        return None
    return f"{zone} is not a zone of region {region}; its zones: {', '.join(zones(region))}"
