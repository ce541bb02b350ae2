"""The command line: topology, table and plan, in the exact forms the README and CI use."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from components.cli import main
from components.offline.runner import ROOT

TOPOLOGY_KEYS = {"tensor_parallel_size", "pipeline_parallel_size", "gpus_per_replica", "nodes_per_replica",
                 "instance_type", "kv_cache_tokens", "vllm_args"}


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_topology_json(capsys):
    code, out, _ = run(capsys, "topology", "--model", "llama-3.1-70b", "--gpu", "h100", "--tpot-ms", "25", "--json")
    assert code == 0
    t = json.loads(out)
    assert TOPOLOGY_KEYS <= set(t)
    # TP 8: for 16 users one TP 8 replica and two TP 4 replicas both fill one node; TP 8's knee is higher
    assert (t["tensor_parallel_size"], t["pipeline_parallel_size"], t["instance_type"]) == (8, 1, "p5.48xlarge")
    assert (t["latency_percentile"], t["estimator"]) == ("p90", "step-model")
    assert t["vllm_args"][:2] == ["meta-llama/Llama-3.1-70B-Instruct", "--served-model-name"]


def test_topology_refusal_exits_3_with_the_reason(capsys):
    code, _, err = run(capsys, "topology", "--model", "llama-3.1-405b", "--gpu", "a10g")
    assert code == 3
    assert "\n  Llama-3.1-405B bf16 needs 754 GiB of weights; on a10g the most is 8 x 20.1 GiB per node" in err


@pytest.mark.parametrize("argv,field", [
    # The options go through the stack schema (a `models` entry): its words, with the option for the field.
    (["--model", "nope", "--gpu", "h100"],
         "--model: unknown model 'nope': not in the catalog, and 'nope' is not a Hugging Face repo id (ORG/NAME)"),
    (["--model", "llama-3.1-8b", "--gpu", "h900"], "--gpu: unknown accelerator 'h900'; allowed: a10g, l4, "),
    (["--model", "qwen2.5-7b", "--max-model-len", "65536"],
     "--max-model-len: 65536 is above Qwen2.5-7B-Instruct's limit of 32768; set --max-model-len <= 32768"),
    (["--model", "llama-3.1-8b", "--tpot-ms", "-1"], "--tpot-ms: Input should be greater than 0 (got -1.0)"),
    (["--model", "llama-3.1-8b", "--gpu", "l4", "--max-model-len=-5"],
     "--max-model-len: Input should be greater than or equal to 256 (got -5)"),
    (["--model", "llama-3.1-8b", "--gpu", "l4", "--max-model-len", "0"],
     "--max-model-len: Input should be greater than or equal to 256 (got 0)"),
    (["--model", "llama-3.1-8b", "--gpu", "l4", "--max-replicas", "0"],
     "--max-replicas: Input should be greater than or equal to 1 (got 0)"),
    (["--model", "llama-3.1-8b", "--precision", "mxfp4"],
     "--precision: 'mxfp4' is not offered for Llama-3.1-8B; allowed: bf16, fp8"),
    (["--model", "llama-3.1-8b", "--max-model-len", "512"],
     "--max-model-len: --prompt-tokens + --output-tokens (1280) exceed --max-model-len 512; shorten them or raise "
     "--max-model-len"),
    (["--model", "llama-3.1-8b", "--gpu", "a10g", "--cloud", "gcp"], "--gpu: no gcp instance type carries a10g"),
])
def test_topology_bad_input_exits_2_naming_the_flag(capsys, argv, field):
    code, _, err = run(capsys, "topology", *argv)
    assert code == 2 and err.startswith(field)


def test_topology_reports_every_bad_option_at_once_in_the_stack_files_words(capsys):
    code, _, err = run(capsys, "topology", "--model", "llama-3.1-8b", "--gpu", "h900", "--tpot-ms", "0",
                       "--concurrency", "0")
    assert code == 2
    assert err.splitlines() == ["--gpu: unknown accelerator 'h900'; allowed: a10g, l4, l40s, a100-40gb, a100-80gb, "
                                "h100, h200, b200",
                                "--tpot-ms: Input should be greater than 0 (got 0.0)",
                                "--concurrency: Input should be greater than or equal to 1 (got 0)"]
    # the same value in a stack file reads the same, under its field path
    from components.config import ConfigError, parse
    with pytest.raises(ConfigError) as e:
        parse({"cloud": "aws", "aws": {"region": "us-east-1"},
               "models": [{"name": "x", "model": "llama-3.1-8b", "sla": {"tpotMs": 0.0}}]}, {"hfToken"})
    assert e.value.errors == ["models[0].sla.tpotMs: Input should be greater than 0 (got 0.0)"]


def test_topology_plans_what_the_same_stack_entry_plans(capsys):
    """The CLI and a stack file go through one ModelDeployment and one planning request."""
    from components.config import parse
    from components.planning import plan_stack
    code, out, _ = run(capsys, "topology", "--model", "qwen2.5-72b", "--gpu", "h100", "--tpot-ms", "40",
                       "--concurrency", "64", "--prompt-tokens", "2048", "--max-replicas", "8", "--json")
    assert code == 0
    cli = json.loads(out)
    cfg = parse({"cloud": "aws", "aws": {"region": "us-east-1"},
                 "models": [{"name": "qwen", "model": "qwen2.5-72b", "accelerator": "h100",
                             "sla": {"tpotMs": 40, "concurrency": 64, "promptTokens": 2048},
                             "replicas": {"max": 8}}]}, {"hfToken"})
    stack = plan_stack(cfg)["qwen"].to_dict()
    assert cli["served_model_name"] == "qwen2.5-72b" and stack["served_model_name"] == "qwen"
    same = ("instance_type", "tensor_parallel_size", "pipeline_parallel_size", "replicas", "kv_cache_tokens",
            "kv_cache_dtype", "max_model_len", "cost_per_hour")
    assert {k: cli[k] for k in same} == {k: stack[k] for k in same}


def test_table_covers_the_catalog(capsys):
    code, out, _ = run(capsys, "table", "--cloud", "gcp", "--markdown")
    assert code == 0
    lines = [line for line in out.splitlines() if line.startswith("| ") and "model" not in line]
    models = {line.split(" | ")[0].strip("| ") for line in lines}
    assert len(models) == 12
    assert any(line.startswith("| llama-3.1-405b | bf16 | h100 | a3-") for line in lines)


def test_plan_default_stack_writes_files(capsys):
    code, out, _ = run(capsys, "plan")
    assert code == 0
    assert "llama-8b: Llama-3.1-8B fp8" in out and "\nResources (" in out
    build = ROOT / "build" / "dev"
    rows = json.loads((build / "resources.json").read_text())
    assert {"type", "name", "parent", "inputs"} <= set(rows[0])
    assert json.loads((build / "topology.json").read_text())["llama-8b"]["tensor_parallel_size"] == 1
    secret = yaml.safe_load((build / "manifests" / "secret_vllm_hf-token.yaml").read_text())
    assert secret["stringData"] == {"HF_TOKEN": "[secret]"}  # a valid Secret: keys kept, values redacted
    text = (build / "resources.json").read_text() + "".join(
        p.read_text() for p in (build / "manifests").iterdir())
    assert "offline-placeholder-secret" not in text  # secrets never reach the files


def test_plan_bad_config_exits_2_with_field_errors(tmp_path, capsys):
    bad = tmp_path / "Pulumi.broken.yaml"
    bad.write_text(yaml.safe_dump({"config": {
        "vllm-platform:cloud": "existing",
        "vllm-platform:existing": {"gpuNodes": {"accelerator": "l4", "gpusPerNode": 1, "vcpu": 8, "ramGib": 32}},
        "vllm-platform:modelCache": {"storageClass": "nfs"},
        "vllm-platform:models": [{"name": "x", "model": "llama-3.1-8b", "maxModelLen": 999999, "tpu": 1}],
    }}))
    code, _, err = run(capsys, "plan", str(bad))
    assert code == 2
    assert "models[0].maxModelLen: 999999 is above Llama-3.1-8B's limit of 131072" in err
    assert "models[0].tpu: unknown key" in err
    assert "Traceback" not in err


def test_plan_infeasible_stack_exits_3(tmp_path, capsys):
    stack = tmp_path / "Pulumi.toobig.yaml"
    stack.write_text(yaml.safe_dump({"config": {
        "vllm-platform:cloud": "existing",
        "vllm-platform:existing": {"gpuNodes": {"accelerator": "l4", "gpusPerNode": 1, "vcpu": 8, "ramGib": 32},
                                   "blockStorageClass": "fast-block"},
        "vllm-platform:modelCache": {"storageClass": "nfs"},
        "vllm-platform:models": [{"name": "big", "model": "llama-3.1-405b"}],
    }}))
    code, _, err = run(capsys, "plan", str(stack))
    assert code == 3 and "models[0] (big): Llama-3.1-405B bf16: bound by " in err


def test_python_dash_m_entrypoint():
    proc = subprocess.run([sys.executable, "-m", "components", "topology", "--model", "llama-3.1-8b",
                           "--gpu", "l4", "--max-model-len", "8192", "--json"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    # TP 1: one L4 holds the 16 users within the p90 SLA and the dense class's margin (TP 2 under one 35 % margin)
    assert json.loads(proc.stdout)["tensor_parallel_size"] == 1


# --- every door exits with the documented code -----------------------------------------------------------

def test_yaml_syntax_error_is_a_config_error_naming_file_line_and_column(tmp_path, capsys):
    bad = tmp_path / "Pulumi.typo.yaml"
    bad.write_text("config:\n  vllm-platform:cloud: existing\n  vllm-platform:models: [\n    {name: x\n")
    code, out, err = run(capsys, "plan", str(bad))
    assert code == 2
    assert f"{bad}:5:1: YAML syntax error at line 5, column 1:" in err
    assert "Traceback" not in err and out == ""


def test_a_tab_in_a_stack_file_points_at_its_line(tmp_path, capsys):
    bad = tmp_path / "Pulumi.tabs.yaml"
    bad.write_text("config:\n  vllm-platform:cloud: existing\n\tvllm-platform:namespace: llm\n")
    code, _, err = run(capsys, "plan", str(bad))
    assert code == 2 and f"{bad}:3:1: YAML syntax error at line 3, column 1:" in err


def test_a_stack_file_that_is_not_a_mapping_exits_2(tmp_path, capsys):
    bad = tmp_path / "Pulumi.list.yaml"
    bad.write_text("- config\n")
    code, _, err = run(capsys, "plan", str(bad))
    assert code == 2 and "a stack file is a mapping with a `config:` mapping" in err


def test_unknown_stack_and_bad_arguments_exit_2(capsys):
    code, _, err = run(capsys, "plan", "no-such-stack")
    assert code == 2 and "no stack file" in err and "stacks: dev," in err
    with pytest.raises(SystemExit) as e:
        main(["topology", "--model", "llama-3.1-8b", "--max-replicas", "many"])
    assert e.value.code == 2
    with pytest.raises(SystemExit) as e:
        main(["bogus"])
    assert e.value.code == 2


def test_plan_out_refuses_to_replace_a_directory_that_is_not_a_plan(tmp_path, capsys):
    (tmp_path / "keep.txt").write_text("mine")
    code, _, err = run(capsys, "plan", "--out", str(tmp_path))
    assert code == 2 and "holds no earlier plan" in err
    assert (tmp_path / "keep.txt").read_text() == "mine"


def test_plan_diff_without_an_earlier_plan_exits_2(tmp_path, capsys):
    code, _, err = run(capsys, "plan", "--diff", str(tmp_path / "nothing"))
    assert code == 2 and err.startswith("--diff: no earlier plan at")


def package_with_a_row_added(tmp_path, table: str, row: str) -> tuple[Path, int]:
    """A copy of the package whose catalog table `table` (under components/catalog/data/) ends with `row`, as a
    user's edit would; and the line it is on."""
    copy = tmp_path / "copy"
    shutil.copytree(ROOT / "components", copy / "components", ignore=shutil.ignore_patterns("__pycache__"))
    path = copy / "components" / "catalog" / "data" / table
    text = path.read_text(encoding="utf-8")
    path.write_text(text + row + "\n", encoding="utf-8")
    return copy, text.count("\n") + 1


MODULE = ["-m", "components"]
CONSOLE_SCRIPT = ["-c", "import sys; from components.cli import main; sys.exit(main())"]  # what vllm-platform runs


@pytest.mark.parametrize("table, row, door, argv, error", [
    # a price row with a typo: first read while the plan runs (components/catalog/prices.py)
    ("prices/regions.csv", 'aws,eu-west-1,1.O8,true,"⚠ same rate card as us-east-1, 2026-12"', MODULE, ["plan"],
     "(aws eu-west-1): column factor: '1.O8' is not a number (write it plain: 0.8048, 8192)"),
    # an instance type whose GPU is not in accelerators.csv yet: read as the command line is built
    ("instance_types.csv", "aws,g4dn.xlarge,t4,1,4,16,125,25,,0.526,shape: karpenter; price: aws.amazon.com,0,,,"
                           "2026-12",
     CONSOLE_SCRIPT, ["plan", "prod-llama70b-aws"],
     "(g4dn.xlarge): column accelerator: unknown accelerator 't4' (one of: a100-40gb, a100-80gb, a10g, b200, h100, "
     "h200, l4, l40s)"),
])
def test_a_malformed_data_file_exits_2_naming_file_line_column_and_the_fix(tmp_path, table, row, door, argv, error):
    """A user's typo in a catalog table is bad input: the file, line and column and what to do, no traceback."""
    copy, line = package_with_a_row_added(tmp_path, table, row)
    out = tmp_path / "plan"
    proc = subprocess.run([sys.executable, *door, *argv, "--out", str(out)], cwd=copy, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "VLLM_PLATFORM_PROJECT": str(ROOT)})  # the copy is imported
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == (f"components/catalog/data/{table}: line {line} {error}\n"
                           f"fix: correct that line of the catalog's data file (the header line is the table's schema; "
                           f"docs/development.md \"Adding a data row\" has the rules), then run the command again\n")
    assert "Traceback" not in proc.stderr + proc.stdout and proc.stdout == ""
    assert not out.exists()  # nothing planned


FIX_LINE = ("fix: correct that line of the catalog's data file (the header line is the table's schema; "
            "docs/development.md \"Adding a data row\" has the rules), then run the command again")
# The rows above: a price row read by the program's `components.platform` import, an instance type row read by its
# first import (components.config), as in the fresh process `pulumi up` runs the program in.
PRICE_TYPO = ("prices/regions.csv", 'aws,eu-west-1,1.O8,true,"⚠ same rate card as us-east-1, 2026-12"',
              "(aws eu-west-1): column factor: '1.O8' is not a number (write it plain: 0.8048, 8192)")
TYPE_TYPO = ("instance_types.csv", "aws,g4dn.xlarge,t4,1,4,16,125,25,,0.526,shape: karpenter; price: aws.amazon.com,0,"
                                   ",,2026-12",
             "(g4dn.xlarge): column accelerator: unknown accelerator 't4' (one of: a100-40gb, a100-80gb, a10g, b200, "
             "h100, h200, l4, l40s)")

# What Pulumi's language host does with the root __main__.py on `pulumi up` / `preview`: a fresh process, the
# program run under the Pulumi runtime; a RunError is printed as its message and fails the run (no traceback),
# anything else is printed with its traceback. Mocks stand in for the engine.
PULUMI_RUN = """
import runpy, sys
import pulumi
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

class Mocks(pulumi.runtime.Mocks):
    def new_resource(self, args):
        return [args.name, args.inputs]
    def call(self, args):
        return {}

pulumi.runtime.set_mocks(Mocks(), project="vllm-platform", stack="prod")
assert "components" not in sys.modules  # the program is the first to import the package
try:
    _sync_await(run_pulumi_func(lambda: runpy.run_path(sys.argv[1], run_name="__main__")))
except pulumi.RunError as e:
    print(f"{type(e.__cause__).__name__}: {e}", file=sys.stderr)
    sys.exit(32)
"""


@pytest.mark.parametrize("table, row, error", [PRICE_TYPO, TYPE_TYPO])
def test_pulumi_up_fails_on_a_malformed_data_file_with_its_message_not_a_traceback(tmp_path, table, row, error):
    """The root __main__.py turns a DataError into a RunError, as it does a config error: the run fails with the
    file, line, column and the fix."""
    copy, line = package_with_a_row_added(tmp_path, table, row)
    proc = subprocess.run([sys.executable, "-c", PULUMI_RUN, str(ROOT / "__main__.py")], cwd=copy,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "VLLM_PLATFORM_PROJECT": str(ROOT)})  # the copy is imported
    assert proc.returncode == 32, proc.stderr
    assert proc.stderr == f"DataError: components/catalog/data/{table}: line {line} {error}\n{FIX_LINE}\n"


def test_a_data_file_first_read_by_the_plan_fails_the_run_with_its_message(monkeypatch):
    """A table read while planning (not at import) is reported the same way: the whole program is covered."""
    import pulumi
    from components import wiring
    from components.catalog.tables import DataError
    from components.offline.runner import plan_stack_offline

    message = "components/catalog/data/measurements/published.csv: line 9 (x): column tp: 'two' is not a number"

    def broken(*args, **kwargs):
        raise DataError(message)

    monkeypatch.setattr(wiring, "validated_plan", broken)  # the program imports it from there when it runs
    with pytest.raises(pulumi.RunError) as e:
        plan_stack_offline("dev")
    assert str(e.value) == f"{message}\n{FIX_LINE}" and isinstance(e.value.__cause__, DataError)


def test_policy_facts_write_exits_2_on_a_malformed_data_file(tmp_path):
    """`python -m components.policy_facts --write` (run after a price change) reports a broken row, writes nothing."""
    table, row, error = TYPE_TYPO
    copy, line = package_with_a_row_added(tmp_path, table, row)
    proc = subprocess.run([sys.executable, "-m", "components.policy_facts", "--write"], cwd=copy, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == f"components/catalog/data/{table}: line {line} {error}\n{FIX_LINE}\n"
    assert proc.stdout == "" and not (copy / "policies").exists()  # facts.py not written


@pytest.mark.parametrize("argv", [["table"], ["topology", "--model", "llama-3.1-8b", "--gpu", "l4", "--json"],
                                  ["topology", "--model", "nope"]])
def test_output_into_a_closed_pipe_does_not_traceback(argv):
    """`python -m components table | head -1`: the reader is gone before the output is written."""
    proc = subprocess.Popen([sys.executable, "-m", "components", *argv], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # no reader at all: the first flush meets EPIPE
    err = proc.stderr.read().decode()
    code = proc.wait(timeout=60)
    assert "Traceback" not in err and "BrokenPipeError" not in err and "Exception ignored" not in err, err
    assert code == (2 if "nope" in argv else 0)  # the command's own exit code, not the pipe's


def test_closed_pipe_keeps_the_commands_exit_code(monkeypatch):
    class Gone:
        def write(self, text):
            raise BrokenPipeError

        def flush(self):
            raise BrokenPipeError

        def fileno(self):
            raise OSError("no descriptor")  # the /dev/null redirect is best-effort

    monkeypatch.setattr(sys, "stdout", Gone())
    assert main(["topology", "--model", "llama-3.1-405b", "--gpu", "a10g"]) == 3
    assert main(["table", "--cloud", "gcp"]) == 0


@pytest.mark.parametrize("command, option, text", [
    ("topology", "--tpot-ms", "SLA: time per output token, ms (default: 100.0)"),
    ("topology", "--max-replicas", "most replicas the fleet may scale to (default: 64)"),
    ("topology", "--cloud", "whose instance types to consider (default: aws)"),
    ("topology", "--gpu", "default: the cheapest that"),
    ("table", "--cloud", "whose instance types to table (default: aws)"),
    ("plan", "--out", "default:"),
    ("plan", "--diff", "changed input paths"),
    ("plan", "stack", "default: dev"),
])
def test_help_shows_each_options_meaning_and_default(capsys, command, option, text):
    with pytest.raises(SystemExit) as e:
        main([command, "--help"])
    assert e.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert option in out and text in out


def test_every_option_has_help():
    from components.cli import parser
    sub = next(a for a in parser()._actions if a.dest == "cmd")
    for name, p in sub.choices.items():
        for action in p._actions:
            assert action.help, f"{name} {action.option_strings or action.dest}: no help text"


def test_version_is_the_projects(capsys):
    import components
    assert components.__version__ == "0.1.0"
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out.strip() == "python -m components 0.1.0"


def test_version_says_the_console_scripts_name(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["/usr/local/bin/vllm-platform", "--version"])
    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out.strip() == "vllm-platform 0.1.0"
