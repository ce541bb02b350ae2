"""tests/stacks/Pulumi.engine-aws.yaml: tool calling + LoRA + n-gram speculation + S3 weights plan, render, show."""
import json

import yaml

from components.cli import main
from components.offline.runner import ROOT

STACK = ROOT / "tests" / "stacks" / "Pulumi.engine-aws.yaml"


def test_engine_stack_plans_and_shows_its_options(tmp_path, capsys):
    assert main(["plan", str(STACK), "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "  engine: tool calling (hermes); reasoning parser qwen3; prefix caching on; speculative ngram x4; " \
           "LoRA 2 x rank 16, 1 adapter(s); extra --enable-chunked-prefill --max-logprobs; memory: LoRA slots" in out
    args = json.loads((tmp_path / "topology.json").read_text())["qwen-tools"]["vllm_args"]
    assert args[0] == "/models/sources/s3-example-models-qwen3-32b"
    assert args[args.index("--speculative-config") + 1] == \
        '{"method":"ngram","num_speculative_tokens":4,"prompt_lookup_max":4,"prompt_lookup_min":2}'
    assert args[args.index("--lora-modules") + 1] == "sql=example-org/qwen3-32b-sql-lora"
    job = yaml.safe_load((tmp_path / "manifests" / "job_llm_prefetch-qwen-tools.yaml").read_text())
    pod = job["spec"]["template"]["spec"]
    script = pod["containers"][0]["command"][2]
    assert pod["serviceAccountName"] == "model-reader"
    assert {"name": "AWS_REGION", "value": "us-east-1"} in pod["containers"][0]["env"]  # the stack's aws.region
    assert "hf download example-org/qwen3-32b-sql-lora" in script and "runai_model_streamer" in script
    dep = yaml.safe_load((tmp_path / "manifests" / "deployment_llm_qwen-tools.yaml").read_text())
    served = dep["spec"]["template"]["spec"]["containers"][0]["args"]
    assert served[:len(args)] == args  # the planner's arguments, then the cache's and the drain
