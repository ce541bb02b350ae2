"""Provider configuration follows Pulumi: `aws:region`, `aws:profile`, `gcp:project`, `gcp:region` and
`gcp:zone` in a stack file configure the cloud, the project's own keys default from them, and the explicit
providers built at the top of the program carry every `aws:*` / `gcp:*` setting down to the components."""
from __future__ import annotations

import copy
import json

import pytest

from components.config import ConfigError, parse
from components.offline.runner import OFFLINE_PEM, OFFLINE_SECRET, load_stack_yaml, run_program, stack_file
from tests.support.plans import one


def stack(name: str) -> dict:
    """A shipped stack file's vllm-platform keys (without the prefix)."""
    return {k.split(":", 1)[1]: v for k, v in load_stack_yaml(stack_file(name)).items()
            if k.startswith("vllm-platform:")}


def without(raw: dict, block: str, *keys: str) -> dict:
    raw = copy.deepcopy(raw)
    for key in keys:
        raw[block].pop(key)
    return raw


AWS = without(stack("prod-llama70b-aws"), "aws", "availabilityZones")  # us-east-1's, pinned in the file
GCP = stack("prod-qwen72b-gcp")


def test_aws_region_defaults_from_the_provider_key():
    cfg = parse(without(AWS, "aws", "region"), {"hfToken"}, provider={"aws:region": "eu-west-1"})
    assert cfg.aws.region == "eu-west-1"
    # a defaulted region is checked like a written one: prod-llama405b-aws lists us-east-1's zones
    with pytest.raises(ConfigError, match=r"aws.availabilityZones: us-east-1a, us-east-1b, us-east-1c not in "
                                          r"region eu-west-1"):
        parse(without(stack("prod-llama405b-aws"), "aws", "region"), {"hfToken"}, provider={"aws:region": "eu-west-1"})


def test_a_cloud_block_may_be_left_out_when_the_provider_keys_say_it_all():
    raw = {k: v for k, v in AWS.items() if k != "aws"}
    cfg = parse(raw, {"hfToken"}, provider={"aws:region": "us-west-2"})
    assert (cfg.aws.region, cfg.aws.capacity_type) == ("us-west-2", "onDemand")
    # project, region and zone come from the provider keys; the block keeps only what they do not say
    raw = {**{k: v for k, v in GCP.items() if k != "gcp"}, "gcp": {"kubeconfigEndpoint": "dns"}}
    cfg = parse(raw, {"hfToken"}, provider={"gcp:project": "ml-platform-prod", "gcp:region": "europe-west4",
                                            "gcp:zone": "europe-west4-b"})
    assert (cfg.gcp.project, cfg.gcp.region, cfg.gcp.zone) == ("ml-platform-prod", "europe-west4", "europe-west4-b")


def test_both_keys_set_and_apart_is_a_config_error_naming_both():
    with pytest.raises(ConfigError) as err:
        parse(AWS, {"hfToken"}, provider={"aws:region": "us-west-2"})
    assert err.value.errors == [
        "aws.region: 'us-east-1' disagrees with aws:region 'us-west-2' in the stack file; set it once "
        "(remove vllm-platform:aws.region: it defaults from aws:region)"]
    with pytest.raises(ConfigError) as err:
        parse(GCP, {"hfToken"}, provider={"gcp:project": GCP["gcp"]["project"], "gcp:zone": "us-central1-c"})
    assert [e.split(";")[0] for e in err.value.errors] == [
        f"gcp.zone: '{GCP['gcp']['zone']}' disagrees with gcp:zone 'us-central1-c' in the stack file"]
    # equal values are fine, and another cloud's keys are ignored
    assert parse(AWS, {"hfToken"}, provider={"aws:region": "us-east-1", "gcp:region": "x"}).aws.region == "us-east-1"


def program_config(raw: dict, **provider: str) -> dict[str, str]:
    config = {f"vllm-platform:{k}": v if isinstance(v, str) else json.dumps(v) for k, v in raw.items()}
    config["vllm-platform:hfToken"] = OFFLINE_SECRET
    # the gateway's API keys (one placeholder per default client; components/config/gateway.py)
    config["vllm-platform:gatewayApiKeys"] = json.dumps({"default": f"{OFFLINE_SECRET}-default"})
    if ((raw.get("gateway") or {}).get("tls") or {}).get("mode") == "certificate":  # prod-qwen72b-gcp: the PEM pair
        config.update({f"vllm-platform:{k}": v for k, v in OFFLINE_PEM.items()})
    config.update(provider)
    return config


def run(raw: dict, **provider: str):
    config = program_config(raw, **provider)
    return run_program(config, [k for k in config if k.split(":", 1)[1] in
                                ("hfToken", "gatewayApiKeys", *OFFLINE_PEM)], "provider-test")


def test_the_explicit_aws_provider_gets_the_stack_files_aws_settings():
    resources, exports = run(without(AWS, "aws", "region"), **{
        "aws:region": "us-west-2", "aws:profile": "platform-prod",
        "aws:allowedAccountIds": json.dumps(["123456789012"]),
        "aws:defaultTags": json.dumps({"tags": {"cost-center": "ml"}})})
    provider = one(resources, "pulumi:providers:aws", "aws")
    assert provider.inputs["region"] == "us-west-2"
    assert provider.inputs["profile"] == "platform-prod"
    assert json.loads(provider.inputs["allowedAccountIds"]) == ["123456789012"]
    tags = json.loads(provider.inputs["defaultTags"])["tags"]
    assert tags["cost-center"] == "ml" and tags["managed-by"] == "pulumi" and tags["cluster"] == "llama70b-prod"
    assert exports["apiEndpoint"].endswith(".us-west-2.eks.amazonaws.com")
    # one provider, at the top; every cloud resource below the Platform uses it (inherited from the parent)
    assert [r.name for r in resources if r.type.startswith("pulumi:providers:aws")] == ["aws"]
    assert one(resources, "pulumi:providers:aws").parent is None


def test_the_explicit_gcp_provider_gets_project_region_zone_and_impersonation():
    resources, _ = run({**{k: v for k, v in GCP.items() if k != "gcp"}, "gcp": {"kubeconfigEndpoint": "dns"}}, **{
        "gcp:project": "ml-platform-prod", "gcp:region": "us-central1", "gcp:zone": "us-central1-a",
        "gcp:impersonateServiceAccount": "deployer@ml-platform-prod.iam.gserviceaccount.com"})
    provider = one(resources, "pulumi:providers:gcp", "gcp")
    assert (provider.inputs["project"], provider.inputs["region"], provider.inputs["zone"]) == \
        ("ml-platform-prod", "us-central1", "us-central1-a")
    assert provider.inputs["impersonateServiceAccount"] == "deployer@ml-platform-prod.iam.gserviceaccount.com"


def test_an_unknown_provider_key_is_a_config_error():
    with pytest.raises(Exception, match=r"aws:regoin: not a setting of the aws provider"):
        run(AWS, **{"aws:regoin": "us-east-1"})
