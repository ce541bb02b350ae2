"""aws.region is checked against AWS's own list (botocore's endpoint data, vendored): a typo is refused at load with
the closest real names, and every region the price tables name is a real one (issue 36)."""
import pytest

from components.catalog.aws_regions import AWS_REGIONS
from components.catalog.prices import AWS_REGIONS_READ, CAPACITY_BLOCK_RATES, REGIONAL, REGIONS
from components.config import ConfigError, parse
from components.offline.runner import ROOT

MODELS = [{"name": "chat", "model": "llama-3.1-8b", "maxModelLen": 8192}]


def load(region: str):
    return parse({"cloud": "aws", "aws": {"region": region}, "models": MODELS}, {"hfToken"})


def test_an_invented_region_is_refused_with_the_field_and_the_closest_real_names():
    with pytest.raises(ConfigError) as err:
        load("us-east-9")
    assert ("aws.region: us-east-9 is not an AWS region (components/catalog/data/aws_regions.csv, from botocore's "
            "endpoint data); closest: us-east-2, us-east-1, us-west-2") in str(err.value)


def test_every_region_the_price_tables_name_is_a_region_and_loads():
    named = ({name for cloud, name in REGIONS if cloud == "aws"} | {r for c, r, _ in REGIONAL if c == "aws"} | AWS_REGIONS_READ
             | {r for r, _ in CAPACITY_BLOCK_RATES})
    assert named and named <= set(AWS_REGIONS)
    for region in sorted(named):
        assert load(region).aws.region == region


def test_the_vendored_list_is_botocores_with_its_partitions():
    assert {"us-east-1", "eu-west-1", "ap-southeast-7", "mx-central-1"} <= set(AWS_REGIONS)
    assert AWS_REGIONS["us-gov-west-1"].partition == "aws-us-gov" and AWS_REGIONS["cn-north-1"].partition == "aws-cn"
    assert "botocore/data/endpoints.json" in (ROOT / "components/catalog/data/aws_regions.csv").read_text()
