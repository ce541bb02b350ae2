"""The AWS regions there are (data/aws_regions.csv, vendored from botocore's endpoint data), so that a region
name is checked when the stack is loaded: `us-east-9` is refused with the closest real names, instead of
planning invented zones and failing at the first AWS call."""
from __future__ import annotations

import difflib
from dataclasses import dataclass

from .tables import read_table


@dataclass(frozen=True)
class AwsRegion:
    name: str
    partition: str  # aws, aws-cn, aws-us-gov, ...
    description: str
    source: str


AWS_REGIONS: dict[str, AwsRegion] = {r.name: r for r in read_table("aws_regions.csv", AwsRegion)}


def closest_regions(name: str, n: int = 3) -> list[str]:
    """The regions whose names are nearest `name` (difflib's ratio), nearest first (`us-east-9`: us-east-2,
    us-east-1, us-west-2)."""
    return difflib.get_close_matches(name, sorted(AWS_REGIONS), n=n, cutoff=0.0)
