"""bench/bench_serve.py: the `vllm bench serve` command it runs and the rows it makes of a saved result."""
import importlib.util
import json

import pytest

from tests.support.plans import ROOT



def _load(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench_serve = _load("bench_serve")
calibrate = _load("calibrate")


def _flag(cmd, name):
    return cmd[cmd.index(name) + 1]


def test_bench_command_uses_vllm_031_flags():
    cmd = bench_serve.bench_command("llama-70b", "meta-llama/Llama-3.1-70B-Instruct", "http://10.0.0.7:8000",
                                    1024, 256, 16, "/tmp/r")
    assert cmd[:3] == ["vllm", "bench", "serve"]
    assert _flag(cmd, "--backend") == "openai-chat" and _flag(cmd, "--endpoint") == "/v1/chat/completions"
    assert _flag(cmd, "--base-url") == "http://10.0.0.7:8000" and _flag(cmd, "--model") == "llama-70b"
    assert _flag(cmd, "--tokenizer") == "meta-llama/Llama-3.1-70B-Instruct"
    assert _flag(cmd, "--dataset-name") == "random"
    assert (_flag(cmd, "--random-input-len"), _flag(cmd, "--random-output-len")) == ("1024", "256")
    assert _flag(cmd, "--max-concurrency") == "16" and _flag(cmd, "--num-prompts") == "128"
    assert _flag(cmd, "--request-rate") == "inf" and "--ignore-eos" in cmd and "--save-result" in cmd
    assert (_flag(cmd, "--result-dir"), _flag(cmd, "--result-filename")) == ("/tmp/r", "c16.json")
    assert _flag(cmd, "--num-warmups") == "16"  # one warm-up request per concurrent user, outside the figures
    # the p90 and p99 figures: sla.latencyPercentile p90 (the default) and p99 read them from the row's notes
    assert (_flag(cmd, "--percentile-metrics"), _flag(cmd, "--metric-percentiles")) == ("ttft,tpot,itl", "90,99")
    assert _flag(bench_serve.bench_command("m", "r", "u", 8, 8, 1, "d"), "--num-prompts") == "32"


@pytest.fixture
def saved_result(tmp_path):
    """A result in the shape `vllm bench serve --save-result` writes (vllm/benchmarks/serve.py: the result dict
    plus mean_/median_/std_/p99_ of each of --percentile-metrics); figures from a published run."""
    doc = {"date": "20261202-101500", "backend": "openai-chat", "model_id": "Qwen/Qwen3-32B", "num_prompts": 500,
           "max_concurrency": 16, "request_rate": "inf", "duration": 328.04, "completed": 500, "failed": 0,
           "total_input_tokens": 998175, "total_output_tokens": 50000, "request_throughput": 1.52,
           "output_throughput": 152.42, "total_token_throughput": 3195.30, "max_output_tokens_per_s": 359.0,
           "max_concurrent_requests": 16.0, "mean_ttft_ms": 163909.40, "median_ttft_ms": 164148.38,
           "p99_ttft_ms": 322980.86, "mean_tpot_ms": 86.62, "median_tpot_ms": 84.24, "p99_tpot_ms": 131.41,
           "mean_itl_ms": 85.97, "median_itl_ms": 44.80, "p99_itl_ms": 1462.05}
    path = tmp_path / "c16.json"
    path.write_text(json.dumps(doc))
    return path


def test_a_saved_result_becomes_a_measurements_row(saved_result):
    row = bench_serve.parse_result(json.loads(saved_result.read_text()), row_id="chat-h100-tp1-c16", gpu="h100",
                                   model="qwen3-32b", precision="bf16", vllm="0.31.0", tp=1, pp=1, concurrency=16,
                                   max_model_len=40960, source="bench/bench_serve.py on gpu-1", date="2026-12-02")
    assert (row["prompt_tokens"], row["output_tokens"]) == (1996.3, 100.0)  # 998,175 / 500
    assert (row["tpot_ms"], row["ttft_ms"]) == (86.62, 163909.40)
    assert (row["output_tps"], row["total_tps"]) == (152.42, 3195.30)
    assert row["mode"] == "closed" and row["concurrency"] == 16
    assert "p99 TPOT 131.41 ms, p99 TTFT 322980.86 ms, 500 requests, 0 failed" == row["notes"]
    from components.catalog.measurements import Measurement
    m = Measurement(**row)  # the same shape as the published table: drops straight into calibration
    assert m.usable and m.gpu == "h100"


def test_a_run_with_nothing_completed_is_an_error(saved_result):
    doc = {**json.loads(saved_result.read_text()), "completed": 0, "failed": 500}
    with pytest.raises(ValueError, match="no request completed \\(500 failed\\)"):
        bench_serve.parse_result(doc, row_id="x", gpu="h100", model="qwen3-32b", precision="bf16", vllm="0.31.0",
                                 tp=1, pp=1, concurrency=16, max_model_len=40960, source="s", date="d")


def test_dry_run_lists_one_command_per_concurrency(capsys):
    assert bench_serve.main(["dev", "--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines and all(line.startswith("vllm bench serve --backend openai-chat ") for line in lines)
    levels = [int(line.split("--max-concurrency ")[1].split()[0]) for line in lines]
    assert levels[:3] == [1, 2, 4] and levels == sorted(levels)


def _canned(c: int) -> dict:
    """A `vllm bench serve --save-result` result at --max-concurrency c (canned figures, not a measurement)."""
    n, tpot = max(32, 8 * c), 20.0 + 1.5 * c
    return {"date": "20261203-101500", "backend": "openai-chat", "model_id": "Qwen/Qwen3-32B", "num_prompts": n,
            "max_concurrency": c, "request_rate": "inf", "duration": 60.0, "completed": n, "failed": 0,
            "total_input_tokens": 1024 * n, "total_output_tokens": 128 * n, "request_throughput": n / 60,
            "output_throughput": 1000 * c / tpot, "total_token_throughput": 9000 * c / tpot,
            "mean_ttft_ms": 90.0 * c, "median_ttft_ms": 85.0 * c, "p99_ttft_ms": 200.0 * c,
            "mean_tpot_ms": tpot, "median_tpot_ms": tpot, "p99_tpot_ms": tpot * 1.2,
            "mean_itl_ms": tpot, "median_itl_ms": tpot, "p99_itl_ms": tpot * 1.5}


@pytest.fixture
def results_file(tmp_path):
    """A rows file exactly as bench_serve.py writes it (its own parse_result and write_rows): a closed-loop sweep
    of Qwen3-32B on one H100 at 1, 2, 4 and 8 users. A change to either side of the hand-over fails here."""
    rows = [bench_serve.parse_result(_canned(c), row_id=f"chat-h100-tp1-c{c}", gpu="h100", model="qwen3-32b",
                                     precision="bf16", vllm="0.31.0", tp=1, pp=1, concurrency=c, max_model_len=40960,
                                     source="bench/bench_serve.py on gpu-1", date="2026-12-03")
            for c in (1, 2, 4, 8)]
    path = tmp_path / "results" / "dev-chat.json"
    bench_serve.write_rows(rows, path)
    return path


def test_bench_results_load_as_measurements(results_file):
    from components.catalog.bench_results import from_bench_results
    rows = from_bench_results(results_file)
    assert [m.id for m in rows] == ["chat-h100-tp1-c1", "chat-h100-tp1-c2", "chat-h100-tp1-c4", "chat-h100-tp1-c8"]
    m = rows[2]
    assert (m.mode, m.concurrency, m.gpu, m.model, m.tp) == ("closed", 4, "h100", "qwen3-32b", 1)
    assert (m.prompt_tokens, m.output_tokens, m.tpot_ms) == (1024.0, 128.0, 26.0)
    assert m.usable and "32 requests, 0 failed" in m.notes


def test_calibrate_adds_result_rows_to_both_halves_by_the_same_rule(results_file):
    from components.catalog.measurements import usable
    from components.planner.calibration import calibration_rows, split
    fit, test = split(calibration_rows([str(results_file)]))
    sweep = {"chat-h100-tp1-c1", "chat-h100-tp1-c2", "chat-h100-tp1-c4", "chat-h100-tp1-c8"}
    # a stratum of its own (qwen3-32b, h100, closed): two rows each side, chosen by sha256 of the id
    assert {m.id for m in test} & sweep == {"chat-h100-tp1-c1", "chat-h100-tp1-c2"}
    assert {m.id for m in fit} & sweep == {"chat-h100-tp1-c4", "chat-h100-tp1-c8"}
    # the published rows keep their side: the split is stable under additions to another stratum
    before_fit, before_test = split(usable())
    assert [m.id for m in fit if m.id not in sweep] == [m.id for m in before_fit]
    assert [m.id for m in test if m.id not in sweep] == [m.id for m in before_test]


def test_calibrate_check_reports_result_rows(results_file, capsys):
    assert calibrate.main(["--check", "--results", str(results_file)]) == 0
    out = capsys.readouterr().out
    assert "held out (the split's half): 81 points" in out  # the 79 published held-out rows and 2 of the sweep
    held = out.split("held out (the split's half):")[1].split("fresh since")[0]
    assert "chat-h100-tp1-c1" in held and "chat-h100-tp1-c2" in held and "chat-h100-tp1-c4" not in held
    # the held-out error is broken down by concurrency bucket and by TP (the report since the 2026-12-05 rework)
    assert "\n  TPOT error by concurrency: 1: 3 rows" in held and "\n  TPOT error by tp: TP 1: 28 rows" in held


def test_bad_results_files_are_clear_errors(tmp_path, results_file, capsys):
    from components.catalog.bench_results import from_bench_results
    with pytest.raises(ValueError, match="no such file .*bench_serve.py writes"):
        from_bench_results(tmp_path / "missing.json")
    rows = json.loads(results_file.read_text())
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{**rows[0], "tpot": 3}]))
    with pytest.raises(ValueError, match=r"row 0 \(chat-h100-tp1-c1\): unknown field\(s\) tpot"):
        from_bench_results(bad)
    bad.write_text(json.dumps([{**rows[0], "gpu": "h1000"}]))
    with pytest.raises(ValueError, match="gpu 'h1000' is not a catalog accelerator"):
        from_bench_results(bad)
    assert calibrate.main(["--check", "--results", str(results_file), str(results_file)]) == 2
    assert "row id 'chat-h100-tp1-c1' is already in the calibration set" in capsys.readouterr().err


# --serve on a GPU machine: a fake `vllm` (serve answers /health and /v1/models, naming its --served-model-name, on
# the port it is given until SIGINT; bench serve needs that endpoint up serving its --model, and writes the result
# file where --result-dir/--result-filename say) and `nvidia-smi`. tests/serving/test_profile.py runs the profile
# Job's entrypoint against the same fake.
FAKE_VLLM = r'''#!PYTHON
import json, os, sys, urllib.request
from http.server import BaseHTTPRequestHandler, HTTPServer
args = sys.argv[1:]
if args == ["--version"]:
    print("INFO 12-05 vllm startup banner")
    print(os.environ.get("FAKE_VLLM_VERSION", "0.31.0"))
elif args[:1] == ["serve"]:
    with open(os.environ["FAKE_VLLM_LOG"], "a") as f:
        f.write(json.dumps(args) + "\n")
    if os.environ.get("FAKE_VLLM_CRASH"):
        print("torch.OutOfMemoryError: CUDA out of memory", flush=True)
        sys.exit(1)
    served = args[args.index("--served-model-name") + 1] if "--served-model-name" in args else args[1]
    class Health(BaseHTTPRequestHandler):
        def do_GET(self):  # /health, and /v1/models naming the served model (what `vllm bench serve` asks for)
            body = json.dumps({"data": [{"id": served}]}).encode() if self.path == "/v1/models" else b""
            self.send_response(200 if self.path in ("/health", "/v1/models") else 404)
            self.end_headers()
            self.wfile.write(body)
        def log_message(self, *a):
            pass
    try:
        HTTPServer(("localhost", int(args[args.index("--port") + 1])), Health).serve_forever()
    except KeyboardInterrupt:
        pass
elif args[:2] == ["bench", "serve"]:
    flag = lambda name: args[args.index(name) + 1]
    urllib.request.urlopen(flag("--base-url") + "/health", timeout=5)  # the engine must be up, on that port
    with urllib.request.urlopen(flag("--base-url") + "/v1/models", timeout=5) as r:  # and serve that --model
        names = [m["id"] for m in json.load(r)["data"]]
    if flag("--model") not in names:
        sys.exit(f"fake vllm bench serve: the server serves {names}, not --model {flag('--model')}")
    c, n = int(flag("--max-concurrency")), int(flag("--num-prompts"))
    p, o = int(flag("--random-input-len")), int(flag("--random-output-len"))
    doc = {"completed": n, "failed": 0, "total_input_tokens": n * p, "total_output_tokens": n * o,
           "output_throughput": 40.0 * c, "total_token_throughput": 200.0 * c, "mean_ttft_ms": 300.0 + c,
           "mean_tpot_ms": 60.0 + c}
    tails = {"90": (600.0 + c, 70.0 + c), "99": (900.0, 90.0)}  # (TTFT, TPOT): p{X} for each --metric-percentiles X
    for x in flag("--metric-percentiles").split(","):
        doc[f"p{x}_ttft_ms"], doc[f"p{x}_tpot_ms"] = tails[x]
    os.makedirs(flag("--result-dir"), exist_ok=True)
    with open(os.path.join(flag("--result-dir"), flag("--result-filename")), "w") as f:
        json.dump(doc, f)
else:
    sys.exit(f"fake vllm: unexpected {args}")
'''


@pytest.fixture
def gpu_machine(tmp_path, monkeypatch):
    import socket
    import sys
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "vllm").write_text(FAKE_VLLM.replace("PYTHON", sys.executable, 1))
    (bin_dir / "nvidia-smi").write_text("#!/bin/sh\n[ \"$1\" = --list-gpus ] || exit 9\n"
                                        "i=0; while [ $i -lt ${FAKE_GPUS:-1} ]; do "
                                        "echo \"GPU $i: NVIDIA L4 (UUID: GPU-$i)\"; i=$((i+1)); done\n")
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{__import__('os').environ['PATH']}")
    monkeypatch.setenv("FAKE_VLLM_LOG", str(tmp_path / "served.jsonl"))
    with socket.socket() as s:
        s.bind(("localhost", 0))
        port = s.getsockname()[1]
    return tmp_path, port


def _up(port):
    import socket
    try:
        socket.create_connection(("localhost", port), timeout=1).close()
        return True
    except OSError:
        return False


def test_serve_starts_the_planned_engine_measures_it_and_stops_it(gpu_machine, capsys):
    tmp, port = gpu_machine
    out = tmp / "results" / "dev.json"
    assert bench_serve.main(["dev", "--serve", "--port", str(port), "--out", str(out), "--start-timeout", "60"]) == 0
    (served,) = [json.loads(line) for line in (tmp / "served.jsonl").read_text().splitlines()]
    # exactly the dev plan's engine (FP8 weights on one L4, --max-num-seqs 53), on the port asked for
    assert served == ["serve", "RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8", "--served-model-name", "llama-8b",
                      "--tensor-parallel-size", "1", "--pipeline-parallel-size", "1", "--max-model-len", "8192",
                      "--gpu-memory-utilization", "0.90", "--max-num-seqs", "53", "--max-num-batched-tokens", "2048",
                      "--port", str(port)]
    rows = json.loads(out.read_text())
    assert [r["id"] for r in rows][:3] == ["llama-8b-l4-tp1-c1", "llama-8b-l4-tp1-c2", "llama-8b-l4-tp1-c4"]
    assert {r["vllm"] for r in rows} == {"0.31.0"} and rows[0]["tpot_ms"] == 61.0
    assert not _up(port), "the engine is still serving after the sweep"
    assert (tmp / "results" / "dev-server.log").exists()


def test_serve_records_the_vllm_that_served_not_the_pinned_one(gpu_machine, monkeypatch, capsys):
    tmp, port = gpu_machine
    monkeypatch.setenv("FAKE_VLLM_VERSION", "0.11.0")
    out = tmp / "dev.json"
    assert bench_serve.main(["dev", "--serve", "--port", str(port), "--out", str(out)]) == 0
    assert {r["vllm"] for r in json.loads(out.read_text())} == {"0.11.0"}
    assert "vLLM 0.11.0 is installed, not the pinned 0.31.0" in capsys.readouterr().err


def test_serve_says_why_the_engine_did_not_start(gpu_machine, monkeypatch, capsys):
    tmp, port = gpu_machine
    monkeypatch.setenv("FAKE_VLLM_CRASH", "1")
    assert bench_serve.main(["dev", "--serve", "--port", str(port), "--out", str(tmp / "dev.json")]) == 2
    err = capsys.readouterr().err
    assert "`vllm serve` exited with 1 before answering" in err and "CUDA out of memory" in err
    assert not (tmp / "dev.json").exists()


def test_serve_refuses_a_machine_short_of_gpus_and_a_multi_node_replica(gpu_machine, monkeypatch, capsys):
    tmp, port = gpu_machine
    monkeypatch.setenv("FAKE_GPUS", "0")
    assert bench_serve.main(["dev", "--serve", "--out", str(tmp / "dev.json")]) == 2
    assert "the replica needs 1 GPU(s) (TP 1 x PP 1); `nvidia-smi --list-gpus` shows 0 here" in capsys.readouterr().err
    assert not (tmp / "served.jsonl").exists()
    assert bench_serve.main(["prod-llama405b-aws", "--serve"]) == 2
    assert "is a 2-node replica (TP 8 x PP 2)" in capsys.readouterr().err
