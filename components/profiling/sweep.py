"""Measure `vllm serve` with `vllm bench serve`: the core bench/bench_serve.py runs on a GPU machine and the profile
Job (planning.profile, docs/measurements.md "Profiling on the cluster") runs inside the vLLM image.

Standard library only, and nothing of the project: the Job ships this file as it is in a ConfigMap and runs it with
the image's python3 (`python3 sweep.py SPEC.json`), so it must import nothing the vLLM image lacks.

* bench_command / parse_result / write_rows: one concurrency level's `vllm bench serve` run (vLLM 0.31 flags) and
  the measurements row made of its saved result (the rows file components/catalog/measured.py reads);
* start_engine / stop_engine: `vllm serve` started in its own process group, awaited on GET /health, stopped with
  SIGINT then SIGKILL;
* main(SPEC): the profile Job's entrypoint: for each candidate shape of the spec (components/profiling/plan.py
  writes it), start that shape's `vllm serve`, sweep the spec's concurrency levels within the shape's time bound,
  stop it, and write the rows (one file per shape and one for every shape) to the spec's out_dir on the model cache
  volume; print the rows between BEGIN/END lines so they can be taken from the Job's log.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

MIN_PROMPTS = 32
PROMPTS_PER_USER = 8  # enough requests at each level that the start-up burst is a small share
ROWS_FILE = "rows.json"  # every profiled shape's rows: what planning.measurements lists
SUMMARY_FILE = "summary.json"  # each shape: measured, stopped at its bound, failed or skipped, and why
BEGIN, END = "--- BEGIN vllm-platform profile rows", "--- END vllm-platform profile rows"
STOP_GRACE_S = 60.0


class ServeError(Exception):
    """The engine could not start or keep running: the message says what to do."""


def bench_command(served: str, tokenizer: str, base_url: str, prompt: int, output: int, concurrency: int,
                  result_dir: str, num_prompts: int | None = None) -> list[str]:
    n = num_prompts or max(MIN_PROMPTS, PROMPTS_PER_USER * concurrency)
    return ["vllm", "bench", "serve", "--backend", "openai-chat", "--base-url", base_url,
            "--endpoint", "/v1/chat/completions", "--model", served, "--tokenizer", tokenizer,
            "--dataset-name", "random", "--random-input-len", str(prompt), "--random-output-len", str(output),
            "--ignore-eos", "--max-concurrency", str(concurrency), "--num-prompts", str(n),
            "--request-rate", "inf", "--percentile-metrics", "ttft,tpot,itl", "--metric-percentiles", "90,99",
            "--num-warmups", str(concurrency), "--save-result", "--result-dir", result_dir,
            "--result-filename", f"c{concurrency}.json"]


def parse_result(doc: dict, *, row_id: str, gpu: str, model: str, precision: str, vllm: str, tp: int, pp: int,
                 concurrency: int, max_model_len: int, source: str, date: str) -> dict:
    """One measurements row from a result JSON that `vllm bench serve --save-result` wrote."""
    done = doc["completed"]
    if not done:
        raise ValueError(f"{row_id}: no request completed ({doc.get('failed', '?')} failed)")
    return {
        "id": row_id, "gpu": gpu, "model": model, "precision": precision, "vllm": vllm, "tp": tp, "pp": pp,
        "prompt_tokens": round(doc["total_input_tokens"] / done, 1),
        "output_tokens": round(doc["total_output_tokens"] / done, 1),
        "mode": "closed", "concurrency": concurrency,
        "tpot_ms": doc["mean_tpot_ms"], "ttft_ms": doc["mean_ttft_ms"],
        "output_tps": doc["output_throughput"], "total_tps": doc["total_token_throughput"],
        "max_model_len": max_model_len, "source": source, "date": date,
        # the p90 figures where the run reported them (--metric-percentiles 90,99): sla.latencyPercentile p90 reads
        # them (components/catalog/measured.py BENCH_NOTES)
        "notes": (f"p90 TPOT {doc.get('p90_tpot_ms')} ms, p90 TTFT {doc.get('p90_ttft_ms')} ms, "
                  if "p90_tpot_ms" in doc or "p90_ttft_ms" in doc else "")
                 + f"p99 TPOT {doc.get('p99_tpot_ms')} ms, p99 TTFT {doc.get('p99_ttft_ms')} ms, "
                   f"{done} requests, {doc.get('failed', 0)} failed",
    }


def write_rows(rows: list[dict], out: Path) -> None:
    """The rows file: a JSON list of measurements rows (components/catalog/bench_results.py reads it back)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=2) + "\n")


def port_of(argv: list[str]) -> int:
    return int(argv[argv.index("--port") + 1])


def with_port(argv: list[str], port: int | None) -> list[str]:
    """`argv` with its --port replaced by `port` (None: as it is)."""
    args = list(argv)
    if port is not None:
        args[args.index("--port") + 1] = str(port)
    return args


def installed_vllm(hint: str = "") -> str:
    """The release `vllm --version` prints (its last line, e.g. 0.31.0)."""
    try:
        out = subprocess.run(["vllm", "--version"], capture_output=True, text=True, check=True, timeout=120).stdout
    except FileNotFoundError:
        raise ServeError(f"no `vllm` on PATH{hint}") from None
    except subprocess.CalledProcessError as e:
        raise ServeError(f"`vllm --version` failed ({e.returncode}): {e.stderr.strip()[-300:]}") from None
    return out.strip().splitlines()[-1].strip().lstrip("v")


def gpus_here() -> int:
    try:
        out = subprocess.run(["nvidia-smi", "--list-gpus"], capture_output=True, text=True, timeout=60).stdout
    except FileNotFoundError:
        return 0
    return sum(1 for line in out.splitlines() if line.startswith("GPU "))


def start_engine(argv: list[str], log: Path, timeout_s: float, poll_s: float = 2.0,
                 hint: str = "weights loading?") -> subprocess.Popen:
    """Start `argv` with its output in `log`; return once GET /health answers 200. The engine is stopped and the
    log's tail raised if it exits or does not answer within `timeout_s`."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as f:
        proc = subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://localhost:{port_of(argv)}/health"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ServeError(f"`vllm serve` exited with {proc.returncode} before answering {url}; "
                             f"the end of {log}:\n{tail(log)}")
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                if r.status == 200:
                    return proc
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(poll_s)
    stop_engine(proc)
    raise ServeError(f"{url} did not answer within {timeout_s:g} s ({hint}); the end of {log}:\n{tail(log)}")


def stop_engine(proc: subprocess.Popen, grace_s: float = STOP_GRACE_S) -> None:
    """SIGINT to the engine's process group (vLLM shuts its workers down on it), SIGKILL after `grace_s`."""
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGINT)
    try:
        proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def tail(log: Path, lines: int = 20) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:]) if log.exists() else "(no log)"


# --- the profile Job ------------------------------------------------------------------------------------------


def now() -> float:
    """The Job's clock for its bounds (a test moves it on without waiting)."""
    return time.monotonic()


def _row(spec: dict, shape: dict, doc: dict, c: int, vllm: str, date: str) -> dict:
    return parse_result(doc, row_id=f"{spec['deployment']}-{shape['id']}-c{c}", gpu=spec["gpu"], model=spec["model"],
                        precision=spec["precision"], vllm=vllm, tp=shape["tp"], pp=shape["pp"], concurrency=c,
                        max_model_len=spec["max_model_len"],
                        source=f"planning.profile Job on {socket.gethostname()}", date=date)


def profile_shape(spec: dict, shape: dict, out_dir: Path, vllm: str, deadline: float, date: str) -> dict:
    """One candidate shape: serve it, sweep its levels until `deadline` (now()), stop it. Returns the
    shape's summary entry (status measured | bound | failed, its rows)."""
    argv = ["vllm", "serve", *shape["args"]]
    print(" ".join(argv), flush=True)
    raw = out_dir / "raw" / shape["id"]
    rows: list[dict] = []
    entry = {"id": shape["id"], "tp": shape["tp"], "pp": shape["pp"], "kv_cache_dtype": shape["kv_cache_dtype"],
             "args": argv, "levels": shape["levels"]}
    try:
        engine = start_engine(argv, out_dir / "logs" / f"{shape['id']}.log", max(1.0, deadline - now()),
                              hint="weights loading? raise planning.profile.maxMinutesPerShape")
    except ServeError as e:
        return {**entry, "status": "failed", "reason": str(e), "rows": rows}
    status, reason = "measured", ""
    try:
        for c in shape["levels"]:
            left = deadline - now()
            if left <= 0:
                status, reason = "bound", f"stopped at the shape's time bound before concurrency {c}"
                break
            cmd = bench_command(spec["served"], spec["tokenizer"], f"http://localhost:{port_of(argv)}",
                                spec["prompt_tokens"], spec["output_tokens"], c, str(raw))
            print(" ".join(cmd), flush=True)
            try:
                subprocess.run(cmd, check=True, timeout=left)
            except subprocess.TimeoutExpired:
                status, reason = "bound", f"stopped at the shape's time bound during concurrency {c}"
                break
            except subprocess.CalledProcessError as e:
                status, reason = "failed", f"`vllm bench serve` exited with {e.returncode} at concurrency {c}"
                break
            try:
                rows.append(_row(spec, shape, json.loads((raw / f"c{c}.json").read_text()), c, vllm, date))
            except (OSError, ValueError, KeyError) as e:
                status, reason = "failed", f"no usable result at concurrency {c}: {e}"
                break
    finally:
        stop_engine(engine)
    if rows:
        write_rows(rows, out_dir / f"{shape['id']}.json")
    return {**entry, "status": status, "reason": reason, "rows": rows}


def _write(summary: dict, out_dir: Path) -> list[dict]:
    """summary.json, and rows.json where some shape has rows; returns the rows."""
    rows = [r for s in summary["shapes"] for r in s["rows"]]
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / SUMMARY_FILE).write_text(json.dumps(summary, indent=2) + "\n")
    if rows:
        write_rows(rows, out_dir / ROWS_FILE)
    return rows


def main(argv: list[str] | None = None) -> int:
    """The profile Job: `python3 sweep.py SPEC.json` (the spec components/profiling/plan.py renders)."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: sweep.py SPEC.json", file=sys.stderr)
        return 2
    started = now()
    spec = json.loads(Path(args[0]).read_text())
    out_dir = Path(spec["out_dir"])
    total_deadline = started + spec["max_minutes"] * 60 - spec.get("stop_reserve_s", 2 * STOP_GRACE_S)
    date = time.strftime("%Y-%m-%d", time.gmtime())
    summary = {"deployment": spec["deployment"], "model": spec["model"], "gpu": spec["gpu"], "date": date,
               "bounds": {"max_minutes": spec["max_minutes"], "max_minutes_per_shape": spec["max_minutes_per_shape"]},
               "shapes": [dict(s, status="skipped", rows=[]) for s in spec.get("skipped", [])]}
    try:
        vllm = installed_vllm(": the profile Job runs in the pinned vLLM image")
    except ServeError as e:
        print(e, file=sys.stderr)
        return 2
    have = gpus_here() or spec["gpus"]  # no nvidia-smi in the image: the pod's GPU limit
    for shape in spec["shapes"]:
        need = shape["tp"] * shape["pp"]
        left = total_deadline - now()
        if need > have:
            summary["shapes"].append({**shape, "status": "skipped", "rows": [],
                                      "reason": f"TP {shape['tp']} x PP {shape['pp']} needs {need} GPU(s); "
                                                f"`nvidia-smi --list-gpus` shows {have} in the pod"})
        elif left <= 0:
            summary["shapes"].append({**shape, "status": "skipped", "rows": [],
                                      "reason": f"not started: the Job's {spec['max_minutes']}-minute bound is spent"})
        else:
            deadline = now() + min(left, spec["max_minutes_per_shape"] * 60)
            summary["shapes"].append(profile_shape(spec, shape, out_dir, vllm, deadline, date))
        entry = summary["shapes"][-1]
        print(f"{shape['id']}: {entry['status']}, {len(entry['rows'])} row(s)"
              + (f": {entry['reason']}" if entry.get("reason") else ""), flush=True)
        rows = _write(summary, out_dir)  # after every shape: a Job ended at its deadline keeps what it finished
    rows = _write(summary, out_dir)
    if not rows:
        print(f"no shape was measured; see {out_dir / SUMMARY_FILE}", file=sys.stderr)
        return 1
    print(f"{BEGIN} {spec['deployment']} ---")
    print(json.dumps(rows, indent=2))
    print(f"{END} ---")
    print(f"wrote {len(rows)} rows to {out_dir / ROWS_FILE}; list them under planning.measurements "
          f"(docs/measurements.md)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
