"""The catalog: every fact carries its source, and the tables hold together."""
import pytest

from components.catalog import ACCELERATORS, INSTANCE_TYPES, MODELS, find_model


@pytest.mark.parametrize("table", [MODELS, ACCELERATORS, INSTANCE_TYPES], ids=["models", "accelerators", "instances"])
def test_every_row_names_its_source(table):
    for row in table.values():
        assert row.source.strip(), row


def test_the_catalog_holds_what_sizing_facts_lists():
    assert len(MODELS) >= 12 and len(ACCELERATORS) == 8
    assert {m.id for m in MODELS.values() if m.is_moe} >= {"qwen3-235b-a22b", "mixtral-8x7b", "deepseek-v3",
                                                           "gpt-oss-120b"}
    assert [m.id for m in MODELS.values() if m.is_mla] == ["deepseek-v3"]
    assert MODELS["llama-3.1-405b"].kv_heads == 8  # not the 16 of old mirrors
    assert MODELS["qwen3-32b"].head_dim == 128  # from the config, not hidden / heads


def test_instance_types_reference_known_accelerators_and_carry_prices():
    for i in INSTANCE_TYPES.values():
        assert i.accelerator in ACCELERATORS
        assert i.price_hour > 0 and i.gpus >= 1
        assert (i.efa_interfaces > 0) == (i.fabric == "efa") or i.cloud == "gcp"


@pytest.mark.parametrize("name,efa", [("p5.48xlarge", 32), ("p5e.48xlarge", 32), ("p5en.48xlarge", 16),
                                      ("p6-b200.48xlarge", 8), ("p4d.24xlarge", 4), ("g6e.48xlarge", 4),
                                      ("g6.xlarge", 0)])
def test_efa_interface_counts(name, efa):
    assert INSTANCE_TYPES[name].efa_interfaces == efa


def test_fast_fabric_only_on_shapes_built_for_multi_node():
    fast = {i.name for i in INSTANCE_TYPES.values() if i.fast_fabric}
    assert {"p5.48xlarge", "p4d.24xlarge", "a3-highgpu-8g", "a3-ultragpu-8g", "g6e.48xlarge"} <= fast
    assert not fast & {"g5.48xlarge", "g6.xlarge", "a2-ultragpu-8g", "g2-standard-96"}


def test_visible_memory_is_what_torch_reports():
    assert round(ACCELERATORS["a10g"].visible_gib, 2) == 22.30  # SIZING-FACTS: an A10G shows 22.30 GiB


def test_find_model_by_id_or_repo():
    assert find_model("Meta-Llama/Llama-3.1-8B-Instruct").id == "llama-3.1-8b"
    assert find_model("meta-llama/Llama-3.1-405B-Instruct-FP8").id == "llama-3.1-405b"
    assert find_model("nobody/nothing") is None


def test_moe_split_reproduces_total_and_active_parameters():
    for m in MODELS.values():
        if m.is_moe:
            dense, expert = m.expert_split()
            assert dense > 0
            assert abs(dense + m.experts * expert - m.params_b * 1e9) < 1e6
            assert abs(dense + m.experts_per_token * expert - m.active_params_b * 1e9) < 1e6


@pytest.mark.parametrize("gpu,torch_gib", [("h100", 79.18), ("h200", 139.81), ("a100-80gb", 79.25),
                                           ("a100-40gb", 39.39), ("l40s", 44.39), ("b200", 178.35)])
def test_big_gpus_budget_from_what_torch_reports_not_the_nominal_size(gpu, torch_gib):
    # vLLM multiplies torch.cuda.mem_get_info's total by gpu_memory_utilization; on HBM parts that total is
    # 0.5-1.2 GiB below the EC2 figure (an H100 shows 79.18 GiB, not 80 - 0.05)
    acc = ACCELERATORS[gpu]
    assert acc.visible_gib == torch_gib < acc.reported_mib / 1024 - 0.2
    assert "torch total" in acc.source


@pytest.mark.parametrize("ref,model_id", [
    ("Qwen/Qwen3-235B-A22B-Instruct-2507", "qwen3-235b-a22b"), ("QWEN/QWEN3-235B-A22B-INSTRUCT-2507-FP8", "qwen3-235b-a22b"),
    ("Qwen3-235B-A22B-Instruct-2507", "qwen3-235b-a22b"), ("meta-llama/Meta-Llama-3.1-8B-Instruct", "llama-3.1-8b"),
    ("Qwen/Qwen2.5-72B-Instruct-FP8", "qwen2.5-72b"), ("mistralai/Mixtral-8x7B-v0.1", "mixtral-8x7b"),
])
def test_find_model_accepts_every_hub_id_of_a_known_model(ref, model_id):
    assert find_model(ref).id == model_id


def test_an_organisation_given_must_be_the_models_own():
    assert find_model("acme/Qwen3-235B-A22B-Instruct-2507") is None  # a fine-tune under another name is not ours


def test_closest_names_for_an_unknown_model():
    from components.catalog import closest_models
    assert closest_models("Qwen/Qwen3-235B-A22B-Instruct")[0] == "Qwen/Qwen3-235B-A22B-Instruct-2507"
    assert closest_models("llama-3.1-7b")[:2] == ["llama-3.1-70b", "llama-3.1-8b"]
    assert closest_models("zzz/zzz") == []


# catalog id -> its model's real config.json among the test fixtures (tests/fixtures/hf/*/SOURCE)
CURATED_VS_CONFIG = {"llama-3.1-8b": "meta-llama--Meta-Llama-3.1-8B", "llama-3.1-405b": "meta-llama--Meta-Llama-3.1-405B",
                     "qwen3-32b": "Qwen--Qwen3-32B", "qwen3-235b-a22b": "Qwen--Qwen3-235B-A22B-FP8",
                     "mixtral-8x7b": "mistralai--Mixtral-8x7B-v0.1", "deepseek-v3": "deepseek-ai--DeepSeek-V3",
                     "gpt-oss-120b": "openai--gpt-oss-120b"}


@pytest.mark.parametrize("model_id", sorted(CURATED_VS_CONFIG))
def test_curated_rows_agree_with_the_models_config_json(model_id):
    import json
    from pathlib import Path

    from components.catalog.hf_config import parse
    path = Path(__file__).resolve().parents[1] / "fixtures" / "hf" / CURATED_VS_CONFIG[model_id] / "config.json"
    got = parse(json.loads(path.read_text()), name=model_id, repo="x", source="test").spec
    row = MODELS[model_id]
    fields = ("layers", "hidden", "heads", "kv_heads", "vocab", "experts", "experts_per_token", "moe_intermediate",
              "mla_dim", "sliding_window", "sliding_layers")
    assert {f: getattr(got, f) for f in fields} == {f: getattr(row, f) for f in fields}
    assert got.head_dim == row.head_dim or row.is_mla  # the catalog's MLA row keeps the latent width there
    assert got.params_b == pytest.approx(row.params_b, rel=0.01)
    if row.is_moe:
        assert got.active_params_b == pytest.approx(row.active_params_b, rel=0.13)  # gpt-oss: 5.1B without embedding
