"""A multi-node replica (Ray Serve LLM) gets the same typed engine options as engine_kwargs, or a clear refusal."""
import pytest

from components.config import parse
from components.planner import NoFeasibleTopology
from components.planning import plan_stack
from components.serving.rayservice import llm_config

MODEL = {"name": "big", "model": "llama-3.1-405b", "precision": "bf16", "instanceTypes": ["p5.48xlarge"],
         "maxModelLen": 16384, "sla": {"ttftMs": 5000, "tpotMs": 100, "concurrency": 8},
         "replicas": {"min": 1, "max": 2}}


def plan(**kw):
    # the Ray Serve LLM shape (a LeaderWorkerSet's leader runs `vllm serve` and takes every option)
    cfg = parse({"cloud": "aws", "aws": {"region": "us-east-1"}, "serving": {"multiNode": "rayservice"},
                 "models": [{**MODEL, **kw}]}, {"hfToken"})
    return plan_stack(cfg)["big"]


def test_engine_kwargs_are_typed_from_the_plan_not_parsed_from_strings():
    t = plan(engine={"toolCallParser": "llama3_json", "maxNumSeqs": 64,
                     "speculative": {"method": "ngram", "numSpeculativeTokens": 3}},
             extraArgs={"--max-logprobs": 5})
    assert t.multi_node
    cfg = llm_config(t, extra_args=["--safetensors-load-strategy", "eager"])
    kw = cfg["engine_kwargs"]
    assert cfg["model_loading_config"] == {"model_id": "big", "model_source": "meta-llama/Llama-3.1-405B-Instruct"}
    assert kw["tool_call_parser"] == "llama3_json" and kw["enable_auto_tool_choice"] is True
    assert kw["max_num_seqs"] == 64 and kw["max_logprobs"] == 5 and kw["pipeline_parallel_size"] == 2
    assert kw["speculative_config"] == {"method": "ngram", "num_speculative_tokens": 3,
                                        "prompt_lookup_max": 5, "prompt_lookup_min": 5}
    assert kw["safetensors_load_strategy"] == "eager" and "served_model_name" not in kw and "port" not in kw
    assert kw["gpu_memory_utilization"] == 0.9 and kw["distributed_executor_backend"] == "ray"


@pytest.mark.parametrize("kw,named", [
    ({"engine": {"chatTemplate": {"inline": "{{ x }}"}}}, "engine.chatTemplate"),
    ({"engine": {"lora": {"adapters": [{"name": "a", "repo": "org/a"}]}}}, "engine.lora.adapters"),
    ({"extraArgs": {"--api-server-count": 2}}, "extraArgs --api-server-count"),
])
def test_options_serve_llm_cannot_take_are_refused_by_name(kw, named):
    with pytest.raises(NoFeasibleTopology) as e:
        plan(**kw)
    assert e.value.message.startswith("models[0] (big): a multi-node replica (Ray Serve LLM) cannot take " + named)
