"""Hub LoRA adapters and speculative drafts get their own ready markers: a serving pod of a model whose weights
are cached already waits until the prefetch Job has downloaded an adapter added later (no race)."""
import shlex

from components.cache.component import CacheFacts, prefetch_job_spec
from components.cache.sources import WeightsSource, apply_source, extras_by_repo
from components.config import parse
from components.planner import plan_topology
from components.planning import plan_request

LORA = {"adapters": [{"name": "sql", "repo": "example-org/qwen3-sql-lora"}]}
EAGLE = {"method": "eagle3", "model": "example-org/Qwen3-32B-eagle3", "numSpeculativeTokens": 3}


def topologies(*engines):
    cfg = parse({"cloud": "aws", "aws": {"region": "us-east-1"}, "modelCache": {"kind": "rwx"},
                 "models": [{"name": f"chat{i}", "model": "qwen3-32b", "accelerator": "h100", "maxModelLen": 8192,
                             "engine": e} for i, e in enumerate(engines)]}, {"hfToken"})
    return {d.name: plan_topology(plan_request(cfg, d)) for d in cfg.models}


def test_the_serving_pod_waits_for_the_adapter_and_draft_markers_too():
    ts = topologies({"lora": LORA, "speculative": EAGLE})
    facts = CacheFacts("rwx", 1.0, claim="model-cache", extras=extras_by_repo(ts))
    init = facts.init_container("Qwen/Qwen3-32B")
    script = init["command"][2]
    assert script.startswith("until [ -f /models/.ready/qwen-qwen3-32b ] && "
                             "[ -f /models/.ready/example-org-qwen3-sql-lora ] && "
                             "[ -f /models/.ready/example-org-qwen3-32b-eagle3 ]; do")


def test_the_job_writes_each_extras_marker_after_its_download_for_every_deployment_of_the_repo():
    ts = topologies({"lora": LORA}, {"speculative": EAGLE})  # two deployments of one repository
    extras = extras_by_repo(ts)
    assert extras == {"Qwen/Qwen3-32B": ("example-org/qwen3-sql-lora", "example-org/Qwen3-32B-eagle3")}
    job = apply_source(prefetch_job_spec("Qwen/Qwen3-32B", {}, {}), None, extras["Qwen/Qwen3-32B"])
    lines = job["template"]["spec"]["containers"][0]["command"][2].splitlines()
    i = lines.index("hf download example-org/qwen3-sql-lora --max-workers 8")
    assert lines[i + 1] == "mkdir -p /models/.ready && touch /models/.ready/example-org-qwen3-sql-lora"
    j = lines.index("hf download example-org/Qwen3-32B-eagle3 --max-workers 8")
    assert shlex.split(lines[j + 1])[-1] == "/models/.ready/example-org-qwen3-32b-eagle3"


def test_adapters_are_opened_to_the_serving_pods_before_any_early_exit():
    ts = topologies({"lora": LORA})
    for src in (None, WeightsSource("s3", "s3://b/qwen", service_account="reader")):
        job = apply_source(prefetch_job_spec("Qwen/Qwen3-32B", {}, {}), src, extras_by_repo(ts)["Qwen/Qwen3-32B"])
        lines = job["template"]["spec"]["containers"][0]["command"][2].splitlines()
        chmod = lines.index("chmod -R a+rwX /models/hf")
        exit_ = next(i for i, x in enumerate(lines) if x.endswith("is cached\"; exit 0; fi"))
        assert lines.index("hf download example-org/qwen3-sql-lora --max-workers 8") < chmod < exit_
