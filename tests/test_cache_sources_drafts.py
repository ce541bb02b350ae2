"""A speculative draft / EAGLE head from the Hub is downloaded by the prefetch (serving pods run offline), and
refused on a node-local cache whose prefetch fetches the base model only."""
import pytest

from components.cache.component import prefetch_job_spec
from components.cache.sources import WeightsSource, apply_source, hub_extras
from components.config import ConfigError, parse
from components.planner import plan_topology
from components.planning import plan_request
from components.wiring import validated_plan

EAGLE = {"method": "eagle3", "model": "example-org/Qwen3-32B-eagle3", "numSpeculativeTokens": 3}


def config(cache: dict, **engine):
    return parse({"cloud": "aws", "aws": {"region": "us-east-1"}, "modelCache": cache,
                  "models": [{"name": "chat", "model": "qwen3-32b", "accelerator": "h100", "maxModelLen": 8192,
                              "engine": engine}]}, {"hfToken"})


def script(cfg, src=None) -> str:
    t = plan_topology(plan_request(cfg, cfg.models[0]))
    job = apply_source(prefetch_job_spec(t.model_repo, {}, {}), src, hub_extras(t))
    return job["template"]["spec"]["containers"][0]["command"][2]


def test_the_hub_prefetch_downloads_the_eagle_head_before_the_base_marker():
    lines = script(config({"kind": "rwx"}, speculative=EAGLE)).splitlines()
    draft = lines.index("hf download example-org/Qwen3-32B-eagle3 --max-workers 8")
    marker = next(i for i, x in enumerate(lines) if x.startswith("if [ -f /models/.ready/"))
    assert draft < marker  # also when the base model is cached already (the early exit)


def test_an_s3_prefetch_downloads_the_draft_and_the_adapters_once_each():
    cfg = config({"kind": "rwx"}, speculative=EAGLE, lora={"adapters": [
        {"name": "sql", "repo": "example-org/qwen3-sql-lora"}, {"name": "local", "path": "/adapters/x"}]})
    s = script(cfg, WeightsSource("s3", "s3://b/qwen", service_account="reader"))
    assert s.count("hf download example-org/Qwen3-32B-eagle3 ") == 1
    assert s.count("hf download example-org/qwen3-sql-lora ") == 1 and "/adapters/x" not in s


def test_a_node_local_cache_refuses_a_hub_draft_by_field():
    with pytest.raises(ConfigError) as e:
        validated_plan(config({"kind": "nvme"}, speculative=EAGLE))
    line = next(x for x in e.value.errors if x.startswith("models[].engine.speculative.model"))
    assert "models[0] (chat) example-org/Qwen3-32B-eagle3" in line and "use kind rwx" in line
