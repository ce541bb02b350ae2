"""models[].engine / extraArgs / kvCacheDtype: typed vLLM options, their flags in both serving shapes, their memory."""
import json
import warnings

import pytest

from components.catalog import MODELS, instance_types
from components.config import ConfigError, parse
from components.upstream.vllm_registry import VLLM_SERVE_FLAGS
from components.planner import PlanRequest, plan_topology
from components.planner.engine_args import EngineOptions, LoraSlots, Speculation
from components.planner.extras import draft_weight_bytes, kv_share, lora_bytes_per_gpu
from components.planning import plan_request

BASE = {"cloud": "aws", "aws": {"region": "us-east-1"},
        "models": [{"name": "chat", "model": "qwen3-32b", "maxModelLen": 8192, "accelerator": "h100"}]}


def model(**kw):
    return {**BASE, "models": [{**BASE["models"][0], **kw}]}


def errors(values):
    with pytest.raises(ConfigError) as e:
        parse(values, {"hfToken"})
    return e.value.errors


def topo(**kw):
    cfg = parse(model(**kw), {"hfToken"})
    return plan_topology(plan_request(cfg, cfg.models[0]))


def arg(args, flag):
    return args[args.index(flag) + 1]


def test_tool_calling_reasoning_prefix_caching_become_vllm_flags():
    t = topo(engine={"toolCallParser": "hermes", "reasoningParser": "qwen3", "prefixCaching": False})
    a = list(t.vllm_args)
    assert "--enable-auto-tool-choice" in a and arg(a, "--tool-call-parser") == "hermes"
    assert arg(a, "--reasoning-parser") == "qwen3" and "--no-enable-prefix-caching" in a
    assert "tool calling (hermes)" in t.engine_notes[0]
    kw = t.engine.to_engine_kwargs()
    assert kw["tool_call_parser"] == "hermes" and kw["enable_prefix_caching"] is False
    assert kw["max_model_len"] == 8192 and isinstance(kw["gpu_memory_utilization"], float)


def test_unknown_parser_names_the_field_and_the_closest_registered_names():
    errs = errors(model(engine={"toolCallParser": "hermess", "reasoningParser": "deepseek-r1"}))
    tool = next(e for e in errs if e.startswith("models[0].engine.toolCallParser"))
    assert "did you mean hermes" in tool and "llama3_json" in tool  # the allowed list
    assert any(e.startswith("models[0].engine.reasoningParser") and "deepseek_r1" in e for e in errs)


def test_speculative_ngram_renders_vllm_speculative_config_json():
    t = topo(engine={"speculative": {"method": "ngram", "numSpeculativeTokens": 4, "promptLookupMax": 3}})
    cfg = json.loads(arg(list(t.vllm_args), "--speculative-config"))
    assert cfg == {"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 3, "prompt_lookup_min": 3}
    assert t.engine.to_engine_kwargs()["speculative_config"] == cfg


def test_mtp_is_refused_for_a_model_without_mtp_layers():
    errs = errors(model(engine={"speculative": {"method": "mtp", "numSpeculativeTokens": 1}}))
    assert any(e.startswith("models[0].engine.speculative.method") and "num_nextn_predict_layers" in e for e in errs)


def test_eagle_needs_its_head_and_lookup_is_ngram_only():
    errs = errors(model(engine={"speculative": {"method": "eagle", "numSpeculativeTokens": 3,
                                                "promptLookupMax": 2}}))
    assert any(e.startswith("models[0].engine.speculative.model") for e in errs) or \
        any(e.startswith("models[0].engine.speculative.promptLookupMax") for e in errs)


def test_lora_flags_and_bad_rank():
    t = topo(engine={"lora": {"maxLoras": 4, "maxLoraRank": 32, "adapters": [{"name": "sql", "repo": "org/sql"}]}})
    a = list(t.vllm_args)
    assert "--enable-lora" in a and arg(a, "--max-loras") == "4" and arg(a, "--max-lora-rank") == "32"
    assert arg(a, "--lora-modules") == "sql=org/sql"
    errs = errors(model(engine={"lora": {"maxLoraRank": 24, "maxLoras": 4, "maxCpuLoras": 2}}))
    assert any(e.startswith("models[0].engine.lora.maxLoraRank") and "320" in e for e in errs)


def test_lora_memory_formula_for_qwen3_32b():
    # independent count: Qwen3-32B hidden 5120, 64 heads, 8 KV heads, head_dim 128, 64 layers; TP 2, 4 slots x rank 16
    # intermediate_size 25600 from Qwen/Qwen3-32B config.json; the planner derives ~25,640 from 32.8B parameters
    m, inter = MODELS["qwen3-32b"], 25600
    attn = 3 * 5120 + (64 + 16) * 128 / 2 + 64 * 128 / 2 + 5120
    mlp = 3 * 5120 + 3 * inter / 2
    want = 4 * 16 * (attn + mlp) * 64 * 2
    got = lora_bytes_per_gpu(m, 2, 1, EngineOptions(lora=LoraSlots(4, 16)))
    assert got == pytest.approx(want, rel=0.01) and 0.67e9 < got < 0.70e9


def test_draft_memory_shrinks_the_kv_cache_and_adds_weights():
    m = MODELS["llama-3.1-70b"]
    cands = tuple(i for i in instance_types("aws") if i.name == "p5.48xlarge")
    base = PlanRequest(model=m, precision="bf16", candidates=cands, max_model_len=8192, tensor_parallel_size=4,
                       kv_cache_dtypes=("auto",))
    draft = EngineOptions(speculative=Speculation("draft_model", 4, "meta-llama/Llama-3.1-8B-Instruct"))
    assert draft_weight_bytes(m, "bf16", draft) == pytest.approx(8.03e9 * 2)
    # 8B: 32 layers x 8 KV heads; 70B: 80 layers x 8 KV heads -> the target keeps 80 / 112 of the pool
    assert kv_share(m, 4, 1, "auto", draft) == pytest.approx(80 / 112)
    from dataclasses import replace
    t0, t1 = plan_topology(base), plan_topology(replace(base, engine=draft))
    assert t1.kv_cache_tokens < t0.kv_cache_tokens * 80 / 112 * 0.99
    assert json.loads(arg(list(t1.vllm_args), "--speculative-config"))["model"] == "meta-llama/Llama-3.1-8B-Instruct"


def test_max_num_seqs_override_caps_the_batch_and_reaches_vllm():
    t = topo(engine={"maxNumSeqs": 7, "maxNumBatchedTokens": 4096})
    assert arg(list(t.vllm_args), "--max-num-seqs") == "7" and t.concurrency_per_replica <= 7
    assert arg(list(t.vllm_args), "--max-num-batched-tokens") == "4096"


def test_extra_args_unknown_flag_names_closest_and_owned_flag_names_the_field():
    errs = errors(model(extraArgs={"--enforce-eagre": True, "--max-num-seqs": 8, "--kv-cache-dtype": "fp8"}))
    line = next(e for e in errs if e.startswith("models[0].extraArgs"))
    assert "--enforce-eagre: not a vLLM 0.31" in line and "--enforce-eager" in line
    assert "--max-num-seqs: set by the platform; use engine.maxNumSeqs" in line
    assert "--kv-cache-dtype: set by the platform; use kvCacheDtype" in line


def test_extra_args_render_with_their_yaml_types():
    t = topo(extraArgs={"--enforce-eager": True, "--max-logprobs": 40, "--compilation-config": {"mode": 3}})
    a = list(t.vllm_args)
    assert "--enforce-eager" in a and arg(a, "--max-logprobs") == "40"
    assert arg(a, "--compilation-config") == '{"mode":3}'
    kw = t.engine.to_engine_kwargs()
    assert kw["max_logprobs"] == 40 and kw["enforce_eager"] is True


def test_every_rendered_flag_is_a_vllm_0_31_flag():
    t = topo(engine={"toolCallParser": "hermes", "prefixCaching": True, "quantization": "fp8",
                     "chatTemplate": {"inline": "{{ messages }}"},
                     "speculative": {"method": "ngram", "numSpeculativeTokens": 2},
                     "lora": {"maxLoras": 1, "maxLoraRank": 8, "maxCpuLoras": 2}})
    flags = [a for a in t.vllm_args[1:] if a.startswith("--")]
    assert set(flags) <= VLLM_SERVE_FLAGS and len(flags) == len(set(flags))
    assert arg(list(t.vllm_args), "--chat-template") == "/etc/vllm-platform/chat-template/template.jinja"


def test_kv_cache_dtype_auto_is_the_default_and_any_is_allow_fp8_with_a_warning():
    assert parse(model(), {"hfToken"}).models[0].kv_cache_dtype == "auto"
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        cfg = parse(model(kvCacheDtype="any"), {"hfToken"})
    assert cfg.models[0].kv_cache_dtype == "allow-fp8" and "allow-fp8" in str(w[-1].message)
    assert plan_request(cfg, cfg.models[0]).kv_cache_dtypes == ("auto", "fp8")
    auto = parse(model(), {"hfToken"})
    assert plan_request(auto, auto.models[0]).kv_cache_dtypes == ("auto",)


def test_allow_fp8_shows_in_the_plan_when_the_planner_used_it():
    # Llama-3.1-70B BF16 at 131,072 tokens on L40S: with FP8 allowed, 4 GPUs (g6e.12xlarge) hold it; without, 8 (TP 4
    # x PP 2 over two g6e.24xlarge since the class margins: one 8-GPU g6e.48xlarge before)
    values = {**BASE, "models": [{"name": "chat", "model": "llama-3.1-70b", "accelerator": "l40s"}]}
    allowed = parse({**values, "models": [{**values["models"][0], "kvCacheDtype": "allow-fp8"}]}, {"hfToken"})
    t = plan_topology(plan_request(allowed, allowed.models[0]))
    assert (t.kv_cache_dtype, t.instance_type) == ("fp8", "g6e.12xlarge")
    assert "FP8 KV cache chosen by the planner (kvCacheDtype: allow-fp8)" in t.engine_notes[0]
    assert arg(list(t.vllm_args), "--kv-cache-dtype") == "fp8"
    auto = parse(values, {"hfToken"})
    t = plan_topology(plan_request(auto, auto.models[0]))
    assert (t.kv_cache_dtype, t.instance_type, t.tensor_parallel_size, t.pipeline_parallel_size) == (
        "auto", "g6e.24xlarge", 4, 2) and not t.engine_notes


def test_extra_args_that_change_the_sized_shape_are_refused():
    from components.config.engine import OWNED_FLAGS
    assert set(OWNED_FLAGS) <= VLLM_SERVE_FLAGS  # every refusal names a real flag
    (line,) = [e for e in errors(model(extraArgs={"--block-size": 32})) if e.startswith("models[0].extraArgs")]
    assert "--block-size: refused: it changes the GPUs or the memory the planner sized" in line
    # data parallelism is planned (wide expert parallelism for MoE models, docs/wide-ep.md), not passed through
    (line,) = [e for e in errors(model(extraArgs={"--data-parallel-size": 2})) if e.startswith("models[0].extraArgs")]
    assert "--data-parallel-size: set by the platform; use parallelism.mode: wide-ep (docs/wide-ep.md)" in line
    (line,) = [e for e in errors(model(extraArgs={"--port": 9000})) if e.startswith("models[0].extraArgs")]
    assert line.endswith("--port: set by the platform (fixed: the Service and probes use 8000)")


def test_kv_offload_and_runtime_lora_are_typed_fields():
    cfg = parse(model(engine={"kvOffloadGiB": 64, "lora": {"runtimeUpdates": True}}), {"hfToken"})
    e = cfg.models[0].engine
    assert e.kv_offload_gib == 64 and e.lora.runtime_updates is True
    assert parse(model(engine={"lora": {}}), {"hfToken"}).models[0].engine.lora.runtime_updates is False
    errs = errors(model(engine={"kvOffloadGiB": 0}))
    assert any(e.startswith("models[0].engine.kvOffloadGiB") for e in errs), errs
    errs = errors(model(engine={"lora": {"runtimeUpdates": "sometimes"}}))
    assert any(e.startswith("models[0].engine.lora.runtimeUpdates") for e in errs), errs


def test_kv_offload_flags_in_both_serving_shapes():
    t = topo(engine={"kvOffloadGiB": 64.5})
    a = list(t.vllm_args)
    assert arg(a, "--kv-offloading-size") == "64.5" and arg(a, "--kv-offloading-backend") == "native"
    kw = t.engine.to_engine_kwargs()
    assert (kw["kv_offloading_size"], kw["kv_offloading_backend"]) == (64.5, "native")
