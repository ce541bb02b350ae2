"""models[].source: S3 / GCS / PVC weights copied into the cache by the prefetch Job; hfToken only for gated repos."""
import shlex

import pytest

from components.cache.component import prefetch_job_spec
from components.cache.sources import WeightsSource, apply_source, pull_script
from components.config import ConfigError, parse

BASE = {"cloud": "aws", "aws": {"region": "us-east-1"},
        "models": [{"name": "chat", "model": "qwen3-32b", "maxModelLen": 8192}]}


def model(**kw):
    return {**BASE, "models": [{**BASE["models"][0], **kw}]}


def errors(values, secrets=frozenset({"hfToken"})):
    with pytest.raises(ConfigError) as e:
        parse(values, set(secrets))
    return e.value.errors


def test_s3_source_needs_uri_and_service_account_named_by_field():
    errs = errors(model(source={"kind": "s3", "uri": "https://bucket/x"}))
    assert any(e.startswith("models[0].source.uri") and "s3://BUCKET/PREFIX" in e for e in errs)
    errs = errors(model(source={"kind": "s3", "uri": "s3://my-bucket/qwen"}))
    assert any(e.startswith("models[0].source.serviceAccount") and "never keys" in e for e in errs)
    errs = errors(model(source={"kind": "pvc"}))
    assert any(e.startswith("models[0].source.claimName") for e in errs)


def test_s3_prefetch_pulls_with_the_runai_streamer_as_the_service_account():
    src = WeightsSource("s3", "s3://my-bucket/qwen", service_account="model-reader")
    job = apply_source(prefetch_job_spec("Qwen/Qwen3-32B", {}, {}), src)
    pod = job["template"]["spec"]
    script = pod["containers"][0]["command"][2]
    assert pod["serviceAccountName"] == "model-reader"
    line = next(x for x in script.splitlines() if x.startswith("python3 -c"))
    assert shlex.split(line)[2] == ("from runai_model_streamer import pull_files; "
                                    "pull_files('s3://my-bucket/qwen', '/models/sources/s3-my-bucket-qwen', None, ['qwen/original/*'])")
    assert "touch /models/.ready/models-sources-s3-my-bucket-qwen" in script and "hf download" not in script


def test_pvc_prefetch_copies_from_the_claim_read_only():
    src = WeightsSource("pvc", claim_name="weights", path="qwen3")
    job = apply_source(prefetch_job_spec("Qwen/Qwen3-32B", {}, {}), src)
    pod = job["template"]["spec"]
    assert {"name": "weights-source", "persistentVolumeClaim": {"claimName": "weights", "readOnly": True}} \
        in pod["volumes"]
    assert "cp -a /weights-source/qwen3/. /models/sources/pvc-weights-qwen3/" in pull_script(src)


def test_serving_loads_the_cached_copy_of_an_s3_source():
    from components.planner import plan_topology
    from components.planning import plan_request
    cfg = parse(model(source={"kind": "gcs", "uri": "gs://models/qwen", "serviceAccount": "reader"}, accelerator="h100"),
                {"hfToken"})
    t = plan_topology(plan_request(cfg, cfg.models[0]))
    assert t.vllm_args[0] == "/models/sources/gs-models-qwen" == t.model_repo


def test_hf_token_only_for_gated_repositories():
    parse(model(), set())  # Qwen3-32B is not gated
    errs = errors({**BASE, "models": [{"name": "chat", "model": "llama-3.1-8b", "maxModelLen": 8192}]}, set())
    assert len(errs) == 1 and errs[0].startswith("hfToken: missing; set the Hugging Face token")
    assert "models[0] (chat) downloads meta-llama/Llama-3.1-8B-Instruct is a gated repository" in errs[0]
    errs = errors(model(engine={"lora": {"adapters": [{"name": "a", "repo": "meta-llama/some-lora"}]}}), set())
    assert any("meta-llama/some-lora" in e for e in errs)


def test_adapters_are_prefetched_before_the_cached_check():
    job = apply_source(prefetch_job_spec("Qwen/Qwen3-32B", {}, {}), None, ("org/sql-lora",))
    script = job["template"]["spec"]["containers"][0]["command"][2]
    assert script.index("hf download org/sql-lora") < script.index("is cached")


def test_pvc_path_and_revision_problems_are_reported_together():
    errs = errors(model(revision="a" * 40, source={"kind": "pvc", "claimName": "w", "path": "../x"}))
    assert "models[0].source.path: '../x' leaves the claim; give a directory inside it" in errs
    assert "models[0].revision: pins a Hugging Face commit; source kind pvc has no revisions" in errs


def test_nvme_cache_refuses_other_sources_by_name():
    from components.cache.sources import check_sources
    cfg = parse(model(source={"kind": "gcs", "uri": "gs://bkt/p", "serviceAccount": "r"}), {"hfToken"})
    assert check_sources(cfg.models, "rwx") is None
    assert check_sources(cfg.models, "nvme").startswith("models[].source: models[0] (chat) copy their weights")


def test_nvme_cache_refuses_hub_adapters_it_cannot_prefetch():
    from components.cache.sources import check_sources
    cfg = parse(model(engine={"lora": {"adapters": [{"name": "a", "repo": "org/a"}]}}), {"hfToken"})
    assert check_sources(cfg.models, "nvme").startswith("models[].engine.lora.adapters: models[0] (chat) name Hub adapters")
    cfg = parse(model(engine={"lora": {"adapters": [{"name": "a", "path": "/models/a"}]}}), {"hfToken"})
    assert check_sources(cfg.models, "nvme") is None
