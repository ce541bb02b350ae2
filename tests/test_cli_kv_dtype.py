"""`table`, `topology` and `capacity` ask the planner the question a stack's `plan` asks about the KV cache dtype
(issue 38): by default the model's own dtype (kvCacheDtype auto), FP8 only with --kv-cache-dtype allow-fp8 / fp8, and
each header says which dtypes were considered and which was chosen. Before, `table` let the planner pick an FP8 KV
cache (PlanRequest's default) while `topology` did not, and neither said so: Qwen2.5-32B on H100 was TP 1 with an FP8
KV cache in the table and TP 2 with the model's dtype in `topology`."""
from __future__ import annotations

from components.cli import main, table_rows

KV_AUTO = "# KV cache dtype considered: auto (--kv-cache-dtype auto)"
KV_ALLOW = "# KV cache dtype considered: auto or fp8 (--kv-cache-dtype allow-fp8)"


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def row(rows, model: str, gpu: str) -> list[str]:
    return next(r for r in rows if r[0] == model and r[2] == gpu)


def test_the_default_is_a_stacks_default_kv_cache_dtype():
    from components.cli.summary import DEFAULT_KV_CACHE_DTYPE, kv_cache_dtypes
    from components.config.schema import ModelDeployment
    assert ModelDeployment.model_fields["kv_cache_dtype"].default == DEFAULT_KV_CACHE_DTYPE == "auto"
    assert kv_cache_dtypes("auto") == ("auto",)  # what planning.deployment_request asks for a stack's default
    assert kv_cache_dtypes("allow-fp8") == ("auto", "fp8")


def test_table_and_topology_give_the_same_shape_and_kv_dtype_by_default(capsys):
    # the row that differed: the table had TP 1, 61,968 tokens of FP8 KV; topology TP 2, 308,896 tokens of bf16 KV
    r = row(table_rows("aws"), "qwen2.5-32b", "h100")
    assert r[3:9] == ["p5.48xlarge", "2", "1", "1", "308,896", "auto"], r
    code, out, _ = run(capsys, "topology", "--model", "qwen2.5-32b", "--gpu", "h100", "--max-model-len", "32768")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == f"{KV_AUTO}; chosen: auto"
    assert lines[2].startswith("  TP 2 = 2 GPU(s)/replica")
    assert lines[3].startswith("  KV cache 308,896 tokens/replica (auto)")


def test_allow_fp8_lets_both_choose_fp8_and_says_so(capsys):
    r = row(table_rows("aws", kv_cache_dtype="allow-fp8"), "qwen2.5-32b", "h100")
    assert r[3:9] == ["p5.48xlarge", "1", "1", "1", "61,968", "fp8"], r
    code, out, _ = run(capsys, "topology", "--model", "qwen2.5-32b", "--gpu", "h100", "--max-model-len", "32768",
                        "--kv-cache-dtype", "allow-fp8")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == f"{KV_ALLOW}; chosen: fp8"
    assert lines[3].startswith("  KV cache 61,968 tokens/replica (fp8)")


def test_the_table_header_names_the_dtypes_considered(capsys):
    code, out, _ = run(capsys, "table", "--cloud", "gcp")
    assert code == 0
    assert out.splitlines()[1] == f"{KV_AUTO}; chosen: the KV dtype column"
    rows = [line.split() for line in out.splitlines()[3:]]
    assert "fp8" not in {r[8] for r in rows if len(r) > 8 and r[3] != "—"}, "no row may choose FP8 KV by default"
    code, out, _ = run(capsys, "table", "--cloud", "gcp", "--kv-cache-dtype", "allow-fp8")
    assert out.splitlines()[1] == f"{KV_ALLOW}; chosen: the KV dtype column"


def test_capacity_asks_the_same_question_and_says_so(capsys):
    code, out, _ = run(capsys, "capacity", "--model", "qwen2.5-32b", "--gpu", "h100", "--max-model-len", "32768")
    assert code == 0
    first = out.splitlines()[0]
    assert first.startswith("Qwen2.5-32B-Instruct bf16 on p5.48xlarge (TP 2, KV auto, 308,896 tokens)"), first
    assert first.endswith("KV cache dtype considered: auto (--kv-cache-dtype auto); chosen: auto")
    code, out, _ = run(capsys, "capacity", "--model", "qwen2.5-32b", "--gpu", "h100", "--max-model-len", "32768",
                       "--kv-cache-dtype", "allow-fp8")
    first = out.splitlines()[0]
    assert first.startswith("Qwen2.5-32B-Instruct bf16 on p5.48xlarge (TP 1, KV fp8, 61,968 tokens)"), first
    assert first.endswith("KV cache dtype considered: auto or fp8 (--kv-cache-dtype allow-fp8); chosen: fp8")
