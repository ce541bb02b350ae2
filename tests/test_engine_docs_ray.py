"""docs/engine.md says what the code does for LoRA adapters on a multi-node (Ray Serve LLM) replica: refused."""
import pytest

from components.config import ConfigError, parse
from components.offline.runner import ROOT
from components.planner import NoFeasibleTopology
from components.wiring import validated_plan

REFUSAL = "a multi-node replica (Ray Serve LLM) cannot take engine.lora.adapters"


def test_adapters_on_a_multi_node_replica_are_refused_as_the_docs_say():
    cfg = parse({"cloud": "aws", "aws": {"region": "us-east-1"}, "environment": "prod",
                 "serving": {"multiNode": "rayservice"},
                 "models": [{"name": "big", "model": "llama-3.1-405b", "precision": "bf16", "accelerator": "h100",
                             "maxModelLen": 8192, "replicas": {"min": 2, "max": 2},
                             "engine": {"lora": {"adapters": [{"name": "sql", "repo": "example-org/sql-lora"}]}}}]},
                {"hfToken"})
    with pytest.raises((ConfigError, NoFeasibleTopology)) as e:
        validated_plan(cfg)
    assert REFUSAL in str(e.value)
    text = " ".join((ROOT / "docs" / "engine.md").read_text().split())
    assert f"is refused at plan time (`{REFUSAL}`)" in text and "not preloaded" not in text
    # the LeaderWorkerSet shape (the default) takes them: its leader runs `vllm serve --lora-modules`
    cfg = cfg.model_copy(update={"serving": cfg.serving.model_copy(update={"multi_node": "lws"})})
    from components.planning import plan_stack
    assert plan_stack(cfg)["big"].multi_node
