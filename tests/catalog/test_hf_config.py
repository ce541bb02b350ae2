"""Models sized from their own config.json (tests/fixtures/hf/*/config.json, each with its SOURCE).

Every expected figure below is computed here by hand from the numbers in the config (written out), or is the
published parameter count with its source; tolerances are stated beside each check.
"""
import json
from pathlib import Path

import pytest

from components.catalog import hub
from components.catalog.hf_config import HfConfigError, check_checkpoint_size, parse
from components.cli import main
from components.planner import memory as mem

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hf"


def load(name: str) -> dict:
    return json.loads((FIXTURES / name / "config.json").read_text())


def described(name: str, cfg: dict | None = None):
    return parse(cfg or load(name), name=name, repo=name.replace("--", "/"), source="test")


def dense(L, H, heads, kv, hd, inter, V, tied=False):
    """A gated-MLP GQA decoder without norms: embedding (+ LM head), attention q/k/v/o, gate/up/down."""
    return V * H * (1 if tied else 2) + L * (H * heads * hd * 2 + 2 * H * kv * hd + 3 * H * inter)


# fixture -> (hand-computed parameters, published total in billions or None, its source, tolerance)
HAND = {
    # 32 layers, hidden 4096, 32 heads, 8 KV heads, head_dim 4096/32, intermediate 14336, vocab 128256
    "meta-llama--Meta-Llama-3.1-8B": (dense(32, 4096, 32, 8, 128, 14336, 128256), 8.03,
                                      "Llama 3.1 model card: 8B (8.03B on the Hub)", 0.005),
    # 126 layers, hidden 16384, 128 heads, 8 KV heads, intermediate 53248, vocab 128256
    "meta-llama--Meta-Llama-3.1-405B": (dense(126, 16384, 128, 8, 128, 53248, 128256), 405.0,
                                        "Llama 3.1 paper: 405B", 0.005),
    # 64 layers, hidden 5120, 64 heads of 128 (not 5120/64), 8 KV heads, intermediate 25600, vocab 151936
    "Qwen--Qwen3-32B": (dense(64, 5120, 64, 8, 128, 25600, 151936), 32.8, "Qwen3 model card: 32.8B", 0.005),
}


def moe(L, H, heads, kv, hd, E, k, moe_inter, V, shared=0, dense_layers=0, dense_inter=0):
    """(total, active) of a gated MoE decoder without norms: router H x E per MoE layer."""
    attn = H * heads * hd * 2 + 2 * H * kv * hd
    expert = 3 * H * moe_inter
    moe_layers = L - dense_layers
    base = 2 * V * H + L * attn + dense_layers * 3 * H * dense_inter + moe_layers * (H * E + shared)
    return base + moe_layers * E * expert, base + moe_layers * k * expert


MOE = {
    # 48 layers, hidden 2048, 32 heads x 128, 4 KV, 128 experts of 768, top 8, vocab 151936
    "Qwen--Qwen3-30B-A3B": (moe(48, 2048, 32, 4, 128, 128, 8, 768, 151936), (30.5, 3.3),
                            "Qwen3 model card: 30.5B total, 3.3B activated", 0.02),
    # 94 layers, hidden 4096, 64 heads x 128, 4 KV, 128 experts of 1536, top 8, vocab 151936
    "Qwen--Qwen3-235B-A22B-FP8": (moe(94, 4096, 64, 4, 128, 128, 8, 1536, 151936), (235, 22),
                                  "Qwen3 model card: 235B total, 22B activated", 0.02),
    # 32 layers, hidden 4096, 32 heads, 8 KV, 8 experts of 14336, top 2, vocab 32000
    "mistralai--Mixtral-8x7B-v0.1": (moe(32, 4096, 32, 8, 128, 8, 2, 14336, 32000), (46.7, 12.9),
                                     "Mistral AI, Mixtral of experts (2023-12-11): 46.7B total, 12.9B per token",
                                     0.01),
    # Llama 4 Scout text tower: 48 layers, hidden 5120, 40 heads x 128, 8 KV, 16 experts of 8192 + one shared
    # expert of 8192 in every layer (interleave_moe_layer_step 1), top 1, vocab 202048
    "meta-llama--Llama-4-Scout-17B-16E-Instruct": (
        moe(48, 5120, 40, 8, 128, 16, 1, 8192, 202048, shared=3 * 5120 * 8192), (109, 17),
        "Meta, Llama 4 (2025-04-05): 17B active, 109B total (with the vision encoder, absent from this config)",
        0.015),
}


def deepseek_v3():
    """DeepSeek-V3: 61 layers, hidden 7168, 128 heads; MLA q_lora 1536, kv_lora 512, nope 128, rope 64, v 128;
    first 3 layers dense (18432), 58 MoE layers of 256 routed + 1 shared expert of 2048, top 8; vocab 129280."""
    H, heads = 7168, 128
    attn = H * 1536 + 1536 * heads * (128 + 64) + H * (512 + 64) + 512 * heads * (128 + 128) + heads * 128 * H
    expert = 3 * H * 2048
    base = 2 * 129280 * H + 61 * attn + 3 * 3 * H * 18432 + 58 * (H * 256 + expert)
    return base + 58 * 256 * expert, base + 58 * 8 * expert


def gpt_oss_120b():
    """gpt-oss-120b: 36 layers, hidden 2880, 64 heads x 64, 8 KV, 128 experts of 2880 with biases, top 4, vocab
    201088; attention and expert biases, router bias, attention sinks."""
    H, hd = 2880, 64
    attn = H * 64 * hd * 2 + 2 * H * 8 * hd + 64 * hd + 2 * 8 * hd + H + 64
    expert = 3 * H * 2880 + 2 * 2880 + H
    base = 2 * 201088 * H + 36 * (attn + H * 128 + 128)
    return base, 36 * 128 * expert, 36 * 4 * expert


@pytest.mark.parametrize("name", sorted(HAND))
def test_dense_parameter_counts(name):
    hand, published, source, tol = HAND[name]
    d = described(name)
    assert d.breakdown.total == pytest.approx(hand, rel=2e-4)  # the hand formula leaves out the norms
    assert d.spec.params_b == pytest.approx(published, rel=tol), source
    assert d.spec.weight_bytes("bf16") == pytest.approx(hand * 2, rel=2e-4)
    assert d.spec.active_params_b is None and d.spec.precisions == ("bf16", "fp8")


@pytest.mark.parametrize("name", sorted(MOE))
def test_moe_total_and_active_parameters(name):
    (total, active), (pub_total, pub_active), source, tol = MOE[name]
    d = described(name)
    assert d.breakdown.total == pytest.approx(total, rel=2e-4)
    assert d.breakdown.active == pytest.approx(active, rel=2e-4)
    assert d.spec.params_b == pytest.approx(pub_total, rel=tol), source
    assert d.spec.active_params_b == pytest.approx(pub_active, rel=max(tol, 0.02)), source


def test_deepseek_v3_mla_moe_fp8_block():
    total, active = deepseek_v3()
    d = described("deepseek-ai--DeepSeek-V3")
    s = d.spec
    assert d.breakdown.total == pytest.approx(total, rel=2e-4) and d.breakdown.active == pytest.approx(active, rel=2e-4)
    # DeepSeek-V3 technical report (arXiv:2412.19437): 671B total, 37B activated per token (the MTP module's
    # 14B are in the checkpoint, not in the served model)
    assert s.params_b == pytest.approx(671, rel=0.002) and s.active_params_b == pytest.approx(37, rel=0.02)
    assert (s.is_mla, s.mla_dim, s.kv_heads, s.precisions, s.fp8_block_quantized) == (True, 576, 1, ("fp8",), True)
    # KV: one latent of kv_lora_rank 512 + qk_rope_head_dim 64 per layer, 2 bytes, 61 layers, at any TP
    for tp in (1, 8):
        assert mem.kv_bytes_per_token_layer(s, tp, "auto") * s.layers == 61 * 576 * 2 == 70_272
    # FP8 block 128x128: 1 byte per linear weight + one fp32 scale per block; embedding, LM head, router 16-bit
    embed, router = 2 * 129280 * 7168, 58 * (7168 * 256 + 256)
    linear = total - embed - router
    assert s.weight_bytes("fp8") == pytest.approx(linear * (1 + 4 / 128**2) + (embed + router) * 2, rel=5e-4)
    assert s.max_context == 4096 * 40  # YaRN: original_max_position_embeddings x factor


def test_gpt_oss_120b_mxfp4_experts_and_sliding_layers():
    base, experts, active_experts = gpt_oss_120b()
    d = described("openai--gpt-oss-120b")
    s = d.spec
    assert d.breakdown.total == pytest.approx(base + experts, rel=2e-4)
    # OpenAI gpt-oss model card (2025-08-05): 116.83B total, 5.13B active (active without the input embedding)
    assert s.params_b == pytest.approx(116.83, rel=0.001)
    assert (d.breakdown.active - d.breakdown.embedding) / 1e9 == pytest.approx(5.13, rel=0.005)
    # MXFP4: 4 bits + one 8-bit scale per 32 values (4.25 bits) for the experts only, the rest bf16
    assert s.weight_bytes("mxfp4") == pytest.approx(experts * 4.25 / 8 + base * 2, rel=2e-4)
    assert s.weight_bytes("mxfp4") / 1e9 == pytest.approx(65.3, rel=0.01)  # the catalog's checkpoint size
    assert (s.sliding_window, s.sliding_layers, s.precisions) == (128, 18, ("mxfp4",))
    per_layer = 2 * 8 * 64 * 2  # K and V, 8 KV heads of 64, bf16
    assert mem.kv_bytes_per_token_layer(s, 1, "auto") == per_layer
    assert mem.kv_bytes_for_request(s, 1, 1, "auto", 100_000, 8192) == per_layer * (18 * 100_000 + 18 * (127 + 8192))


def test_gemma3_27b_text_tower_sliding_window_and_vision_estimate():
    d = described("google--gemma-3-27b-it")
    s, b = d.spec, d.breakdown
    # Gemma 3 technical report (arXiv:2503.19786) Table 1, 27B: embedding 1,416M, non-embedding 25,600M,
    # vision encoder 417M. Hand: 62 layers, hidden 5376, 32 heads x 128, 16 KV, intermediate 21504
    assert b.embedding == 262208 * 5376 and b.lm_head == 0  # tie_word_embeddings (class default)
    assert b.embedding / 1e6 == pytest.approx(1416, rel=0.005)
    non_embedding = 62 * (5376 * 32 * 128 * 2 + 2 * 5376 * 16 * 128 + 3 * 5376 * 21504)
    assert b.attention + b.dense_mlp == pytest.approx(non_embedding, rel=1e-5)  # + q/k norms of 128
    assert non_embedding / 1e6 == pytest.approx(25_600, rel=0.005)
    assert b.vision / 1e6 == pytest.approx(417, rel=0.02)  # ViT estimate: 27 layers, 1152 wide, 4304 MLP
    # sliding_window_pattern 6 (class default): every 6th layer global -> 62 - 10 = 52 layers slide over 1024
    assert (s.sliding_window, s.sliding_layers, s.max_context) == (1024, 52, 131072)
    per_layer = 2 * 16 * 128 * 2
    assert mem.kv_bytes_per_token_layer(s, 1, "auto") * s.layers == 62 * per_layer == 507_904
    assert mem.kv_bytes_for_request(s, 1, 1, "auto", 131072, 2048) == per_layer * (10 * 131072 + 52 * (1023 + 2048))
    assert any("vision tower estimated" in n for n in s.notes)


def test_llama4_scout_chunked_attention_and_missing_vision_config():
    s = described("meta-llama--Llama-4-Scout-17B-16E-Instruct").spec
    # attention_chunk_size 8192 on 3 of every 4 layers (no_rope_layer_interval 4): 36 chunked, 12 global
    assert (s.sliding_window, s.sliding_layers, s.max_context) == (8192, 36, 10_485_760)
    assert mem.kv_bytes_per_token_layer(s, 1, "auto") * s.layers == 48 * 2 * 8 * 128 * 2 == 196_608
    assert any("no vision tower is counted" in n for n in s.notes)


def test_multimodal_qwen3_vl_sizes_the_text_tower_and_estimates_the_vision_tower():
    d = described("Qwen--Qwen3-VL-30B-A3B-Instruct")
    text_total, _ = moe(48, 2048, 32, 4, 128, 128, 8, 768, 151936)
    assert d.breakdown.total - d.breakdown.vision == pytest.approx(text_total, rel=2e-4)
    # vision_config: depth 27, hidden 1152, intermediate 4304 -> 27 x (4 x 1152² + 2 x 1152 x 4304) ~ 0.41B
    assert d.breakdown.vision / 1e9 == pytest.approx(27 * (4 * 1152**2 + 2 * 1152 * 4304) / 1e9, rel=0.03)
    assert d.spec.max_context == 262144 and d.spec.kv_heads == 4


@pytest.mark.parametrize("name,kv", [("meta-llama--Meta-Llama-3.1-8B", 32 * 2 * 8 * 128 * 2),
                                     ("meta-llama--Meta-Llama-3.1-405B", 126 * 2 * 8 * 128 * 2),
                                     ("Qwen--Qwen3-32B", 64 * 2 * 8 * 128 * 2),
                                     ("Qwen--Qwen3-30B-A3B", 48 * 2 * 4 * 128 * 2),
                                     ("Qwen--Qwen3-235B-A22B-FP8", 94 * 2 * 4 * 128 * 2),
                                     ("mistralai--Mixtral-8x7B-v0.1", 32 * 2 * 8 * 128 * 2)])
def test_kv_bytes_per_token(name, kv):
    s = described(name).spec
    assert mem.kv_bytes_per_token_layer(s, 1, "auto") * s.layers == kv
    assert mem.kv_bytes_per_token_layer(s, 1, "fp8") * s.layers == kv // 2
    assert s.sliding_layers == 0  # sliding_window null / use_sliding_window false


def test_qwen3_235b_fp8_checkpoint_is_block_quantized_and_fp8_only():
    (total, _), *_ = MOE["Qwen--Qwen3-235B-A22B-FP8"]
    s = described("Qwen--Qwen3-235B-A22B-FP8").spec
    embed, router = 2 * 151936 * 4096, 94 * 4096 * 128
    assert s.precisions == ("fp8",) and s.fp8_block_quantized
    assert s.weight_bytes("fp8") == pytest.approx((total - embed - router) * (1 + 4 / 128**2) + (embed + router) * 2,
                                                  rel=5e-4)


def with_quant(name: str, q: dict) -> dict:
    return {**load(name), "quantization_config": q}


def test_awq_gptq_int4_with_group_size():
    hand = HAND["meta-llama--Meta-Llama-3.1-8B"][0]
    embed = 2 * 128256 * 4096
    for method in ("awq", "gptq"):
        s = described("x", with_quant("meta-llama--Meta-Llama-3.1-8B",
                                      {"quant_method": method, "bits": 4, "group_size": 128})).spec
        # 4 bits + a 16-bit scale and a 4-bit zero point per group of 128; embedding and LM head in bf16
        assert s.precisions == ("int4",)
        assert s.weight_bytes("int4") == pytest.approx((hand - embed) * (4 + 20 / 128) / 8 + embed * 2, rel=2e-4)
    with pytest.raises(HfConfigError, match="quantization_config.bits: 8-bit awq is not sized"):
        described("x", with_quant("meta-llama--Meta-Llama-3.1-8B", {"quant_method": "awq", "bits": 8}))


def test_compressed_tensors_fp8_int4_and_nvfp4():
    def ct(bits, kind, strategy="channel", group=None):
        w = {"num_bits": bits, "type": kind, "strategy": strategy, "group_size": group}
        return {"quant_method": "compressed-tensors", "config_groups": {"group_0": {"weights": w}}, "ignore": ["lm_head"]}
    base = "meta-llama--Meta-Llama-3.1-8B"
    assert described("x", with_quant(base, ct(8, "float"))).spec.precisions == ("fp8",)
    assert described("x", with_quant(base, ct(8, "int"))).spec.precisions == ("int8",)
    assert described("x", with_quant(base, ct(4, "int", "group", 128))).spec.precisions == ("int4",)
    nv = described("x", with_quant(base, ct(4, "float", "tensor_group", 16))).spec
    assert nv.precisions == ("nvfp4",)
    embed = 2 * 128256 * 4096
    assert nv.weight_bytes("nvfp4") == pytest.approx((HAND[base][0] - embed) * 4.5 / 8 + embed * 2, rel=2e-4)


def test_unsized_configs_are_refused_with_the_key_named():
    with pytest.raises(HfConfigError, match="quant_method: 'bitsandbytes' is not sized, and vLLM 0.31 cannot load it"):
        described("x", with_quant("Qwen--Qwen3-32B", {"quant_method": "bitsandbytes"}))
    with pytest.raises(HfConfigError) as e:
        described("x", {"model_type": "llama", "hidden_size": 4096})
    assert "num_hidden_layers: missing" in str(e.value) and "num_attention_heads: missing" in str(e.value)
    assert "vocab_size: missing" in str(e.value)  # every problem at once
    with pytest.raises(HfConfigError, match="model_type: 'qwen3_next' is not a decoder the planner sizes"):
        described("x", {**load("Qwen--Qwen3-32B"), "model_type": "qwen3_next"})
    with pytest.raises(HfConfigError, match="block_configs: layers of different shapes"):
        described("x", {**load("Qwen--Qwen3-32B"), "block_configs": [{"attention": {}}]})
    with pytest.raises(HfConfigError, match="a key has a shape the planner does not know"):
        described("x", {**load("Qwen--Qwen3-30B-A3B"), "decoder_sparse_step": [1, 2]})
    with pytest.raises(HfConfigError, match="layer_types: linear_attention layers"):
        described("x", {**load("Qwen--Qwen3-32B"), "layer_types": ["linear_attention", "full_attention"] * 32})


def test_tied_embeddings_count_once_and_go_to_both_pipeline_ends():
    s = described("x", {**load("meta-llama--Meta-Llama-3.1-8B"), "tie_word_embeddings": True}).spec
    untied = HAND["meta-llama--Meta-Llama-3.1-8B"][0]
    assert s.params_b * 1e9 == pytest.approx(untied - 128256 * 4096, rel=2e-4)
    # PP 2: each stage holds half the layers and one 128256 x 4096 bf16 matrix (embedding / tied LM head copy)
    layers_bytes = (s.params_b * 1e9 - 128256 * 4096) * 2
    assert mem.weight_bytes_per_gpu(s, "bf16", 1, 2) == pytest.approx(layers_bytes / 2 + 128256 * 4096 * 2, rel=1e-9)


def test_qwen2_style_sliding_window_switch():
    cfg = {**load("Qwen--Qwen3-32B"), "sliding_window": 4096, "use_sliding_window": True, "max_window_layers": 48}
    s = described("x", cfg).spec
    assert (s.sliding_window, s.sliding_layers) == (4096, 16)  # layers 48..63 slide


def test_safetensors_index_total_size_is_checked():
    d = described("meta-llama--Meta-Llama-3.1-8B")
    computed = d.spec.weight_bytes("bf16")
    assert check_checkpoint_size(d, {"metadata": {"total_size": computed * 1.02}}) is None
    warning = check_checkpoint_size(d, {"metadata": {"total_size": computed * 1.10}})
    assert warning.startswith("checkpoint size check: computed 16.1 GB of weights, the safetensors index says "
                              "17.7 GB (-9.1%)")
    with pytest.raises(HfConfigError, match=r"beyond ±20%, the config does not describe these weights"):
        check_checkpoint_size(d, {"metadata": {"total_size": computed * 2}})
    with pytest.raises(HfConfigError, match="no metadata.total_size"):
        check_checkpoint_size(d, {"weight_map": {}})


def test_llama_8b_computed_size_is_the_published_index_total_size():
    # metadata.total_size of Meta-Llama-3(.1)-8B's model.safetensors.index.json, 16,060,522,496 bytes, as quoted
    # in several public repositories (code search, 2026-12-02; ⚠ the Hub file itself was not reachable)
    d = described("meta-llama--Meta-Llama-3.1-8B")
    assert d.spec.weight_bytes("bf16") == 16_060_522_496
    assert check_checkpoint_size(d, {"metadata": {"total_size": 16_060_522_496}}) is None


def test_deepseek_checkpoint_size_counts_the_mtp_layer():
    d = described("deepseek-ai--DeepSeek-V3")
    # the MTP module (num_nextn_predict_layers 1): ~14B more in the checkpoint (technical report: 685B on the Hub)
    assert (d.breakdown.total + d.breakdown.mtp) / 1e9 == pytest.approx(685, rel=0.01)


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.iterdir()))
def test_every_fixture_names_its_source_and_sizes_on_h100(name, capsys):
    source = (FIXTURES / name / "SOURCE").read_text()
    assert "github.com/" in source or "RECONSTRUCTED" in source
    code = main(["topology", "--model-config", str(FIXTURES / name / "config.json"), "--gpu", "h100", "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    t = json.loads(out.out)
    assert t["accelerator"] == "h100" and t["kv_cache_tokens"] >= t["max_model_len"]
    assert t["vllm_args"][0] == name.replace("--", "/", 1)


def test_model_config_errors_name_the_option(tmp_path, capsys):
    assert main(["topology", "--model-config", str(tmp_path / "none.json")]) == 2
    assert f"--model-config: {tmp_path / 'none.json'}: cannot read it (No such file or directory)" in capsys.readouterr().err
    bad = tmp_path / "config.json"
    bad.write_text(json.dumps({"model_type": "llama"}))
    assert main(["topology", "--model-config", str(bad)]) == 2
    assert "num_hidden_layers: missing (required to size the model)" in capsys.readouterr().err


def fake_fetcher(files: dict, calls: list):
    def fetch(repo, revision, filename, token):
        calls.append((repo, revision, filename, token))
        if filename not in files:
            raise hub.NotFound(filename)
        return files[filename]
    return fetch


def test_hub_config_is_cached_and_read_back_offline(tmp_path, monkeypatch):
    monkeypatch.setenv("VLLM_PLATFORM_CACHE", str(tmp_path))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_TOKEN", "hf_test")
    calls = []
    raw = (FIXTURES / "Qwen--Qwen3-32B" / "config.json").read_bytes()
    rev = "a" * 40
    spec = hub.spec_from_hub("acme/Qwen3-32B-Finetune", rev, fetcher=fake_fetcher({"config.json": raw}, calls))
    assert spec.params_b == pytest.approx(32.76, rel=0.001) and spec.hf_repo == "acme/Qwen3-32B-Finetune"
    # anonymous first (a public repo needs no token; a 401/403 would be retried with HF_TOKEN and the repo
    # marked gated: tests/catalog/test_hub_gated.py)
    assert calls[0] == ("acme/Qwen3-32B-Finetune", rev, "config.json", None)
    cached = tmp_path / "hub" / "acme--Qwen3-32B-Finetune" / rev / "config.json"
    assert cached.read_bytes() == raw
    # offline now: the cache answers, the fetcher is not called
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    again = hub.spec_from_hub("acme/Qwen3-32B-Finetune", rev, fetcher=fake_fetcher({}, calls))
    assert again.params_b == spec.params_b and len(calls) == 2  # config + index on the first run only


def test_hub_offline_without_cache_names_both_ways_out(tmp_path, monkeypatch):
    monkeypatch.setenv("VLLM_PLATFORM_CACHE", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(hub.HubUnavailable) as e:
        hub.spec_from_hub("acme/Private-7B", None, fetcher=fake_fetcher({}, []))
    msg = str(e.value)
    assert msg.startswith("offline (HF_HUB_OFFLINE / VLLM_PLATFORM_OFFLINE) and no cached config.json")
    assert "give a local copy of its config.json (models[].configFile, or --model-config PATH on `topology`)" in msg
    assert f"plan once with network access so that it is cached at {tmp_path}/hub/acme--Private-7B/main/config.json" in msg

    def unreachable(*_):
        raise ConnectionError("HTTP 401: gated or private: set HF_TOKEN to a token with access")
    monkeypatch.delenv("HF_HUB_OFFLINE")
    with pytest.raises(hub.HubUnavailable, match="HTTP 401: gated or private: set HF_TOKEN"):
        hub.spec_from_hub("acme/Private-7B", None, fetcher=unreachable)
