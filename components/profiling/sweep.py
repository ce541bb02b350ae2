"""Measure `vllm serve` with `vllm bench serve`: the core bench/bench_serve.py runs on a GPU machine and the profile
Job (planning.profile, docs/measurements.md "Profiling on the cluster") runs inside the vLLM image.

Standard library only, and nothing of the project: the Job ships this file as it is in a ConfigMap and runs it with
the image's python3 (`python3 sweep.py SPEC.json`), so it must import nothing the vLLM image lacks.

* bench_command / parse_result / write_rows: one concurrency level's `vllm bench serve` run (vLLM 0.31 flags) and
  the measurements row made of its saved result (the rows file components/catalog/measured.py reads);
* start_engine / stop_engine: `vllm serve` started in its own process group, awaited on GET /health, stopped with
  SIGINT then SIGKILL;
* main(SPEC): the profile Job's entrypoint: for each candidate shape of the spec (components/profiling/plan.py
  writes it), start that shape's `vllm serve` on 127.0.0.1 only (the bench runs in the same container; nothing else
  reaches an engine without an API key), sweep the spec's concurrency levels within the shape's time bound, stop it.
  After every completed level it rewrites the rows files (one per shape and one for every shape) and summary.json in
  the spec's out_dir on the model cache volume, and prints every row so far between BEGIN/END lines (the last such
  block of the Job's log is the result), so a Job ended at its deadline keeps every level it finished.
  Time bound: the Job's activeDeadlineSeconds (env PROFILE_DEADLINE_S) less the time since the pod's first init
  container wrote its start (the file env PROFILE_START_FILE names: the cache gate's wait for the weights counts)
  less a reserve to stop the engine. SIGTERM (the deadline reached, the pod deleted or preempted; the script is the
  container's PID 1) stops the engine, writes what finished and exits 143.
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
ENGINE_HOST = "127.0.0.1"  # the profile's engine answers the bench in its own container only (no API key)
DEADLINE_ENV = "PROFILE_DEADLINE_S"  # the Job's activeDeadlineSeconds
START_ENV = "PROFILE_START_FILE"  # a file holding the epoch second the pod's first init container ran
TERMINATED_RC = 128 + signal.SIGTERM


class Terminated(Exception):
    """SIGTERM arrived (the Job's deadline, the pod deleted or preempted): stop the engine, keep what finished."""


def _on_sigterm(signum, frame):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # once: the shutdown that follows is not interrupted again
    raise Terminated()


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
    _write_atomic(out, json.dumps(rows, indent=2) + "\n")


def _write_atomic(out: Path, text: str) -> None:
    """`text` into `out` by a rename: a kill mid-write leaves the previous file, never half of one."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, out)


def port_of(argv: list[str]) -> int:
    return int(argv[argv.index("--port") + 1])


def host_of(argv: list[str]) -> str:
    """The address a started engine is asked at: its --host, else localhost (vLLM's default binds every address)."""
    return argv[argv.index("--host") + 1] if "--host" in argv else "localhost"


def with_host(argv: list[str], host: str = ENGINE_HOST) -> list[str]:
    """`argv` with --host `host` (replacing any --host it has)."""
    args = list(argv)
    if "--host" in args:
        args[args.index("--host") + 1] = host
        return args
    return [*args, "--host", host]


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
    url = f"http://{host_of(argv)}:{port_of(argv)}/health"
    deadline = time.monotonic() + timeout_s
    try:
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
    except BaseException:  # SIGTERM (Terminated) or ^C while it starts: the engine goes too
        stop_engine(proc)
        raise
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


def profile_shape(spec: dict, shape: dict, out_dir: Path, vllm: str, deadline: float, date: str,
                  on_level=None) -> dict:
    """One candidate shape: serve it on 127.0.0.1, sweep its levels until `deadline` (now()), stop it. Returns the
    shape's summary entry (status measured | bound | failed | terminated, its rows). After every completed level the
    shape's rows file is rewritten and `on_level` (if any) is called with the entry so far (status running)."""
    argv = ["vllm", "serve", *with_host(shape["args"])]
    print(" ".join(argv), flush=True)
    raw = out_dir / "raw" / shape["id"]
    rows: list[dict] = []
    entry = {"id": shape["id"], "tp": shape["tp"], "pp": shape["pp"], "kv_cache_dtype": shape["kv_cache_dtype"],
             "args": argv, "levels": shape["levels"]}
    status, reason, where, engine = "measured", "", "while the engine started", None
    try:
        try:
            engine = start_engine(argv, out_dir / "logs" / f"{shape['id']}.log", max(1.0, deadline - now()),
                                  hint="weights loading? raise planning.profile.maxMinutesPerShape")
        except ServeError as e:
            return {**entry, "status": "failed", "reason": str(e), "rows": rows}
        base_url = f"http://{ENGINE_HOST}:{port_of(argv)}"
        for c in shape["levels"]:
            left = deadline - now()
            if left <= 0:
                status, reason = "bound", f"stopped at the shape's time bound before concurrency {c}"
                break
            where = f"during concurrency {c}"
            cmd = bench_command(spec["served"], spec["tokenizer"], base_url,
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
            where = f"after concurrency {c}"
            write_rows(rows, out_dir / f"{shape['id']}.json")  # each level as it completes: a kill keeps it
            if on_level is not None:
                on_level({**entry, "status": "running", "reason": "", "rows": list(rows)})
    except Terminated:
        status, reason = "terminated", f"SIGTERM {where} (the Job's deadline, or the pod deleted or preempted)"
    finally:
        if engine is not None:
            stop_engine(engine)
    if rows:
        write_rows(rows, out_dir / f"{shape['id']}.json")
    return {**entry, "status": status, "reason": reason, "rows": rows}


class Results:
    """summary.json, rows.json and the log's rows block, rewritten as the Job goes (after every level)."""

    def __init__(self, summary: dict, out_dir: Path):
        self.summary, self.out_dir, self.shown = summary, out_dir, 0

    def flush(self, running: dict | None = None) -> list[dict]:
        """Write summary.json (with `running`, the shape in progress, if any) and rows.json where some shape has
        rows; print the rows block when it holds rows not printed yet. Returns the rows."""
        shapes = [*self.summary["shapes"], *([running] if running else [])]
        summary = {**self.summary, "shapes": shapes}
        rows = [r for s in shapes for r in s["rows"]]
        self.out_dir.mkdir(parents=True, exist_ok=True)
        _write_atomic(self.out_dir / SUMMARY_FILE, json.dumps(summary, indent=2) + "\n")
        if rows:
            write_rows(rows, self.out_dir / ROWS_FILE)
        if len(rows) != self.shown:
            print(f"{BEGIN} {summary['deployment']} ---")
            print(json.dumps(rows, indent=2))
            print(f"{END} ---", flush=True)
            self.shown = len(rows)
        return rows


def spent_before(env: dict, wall: float) -> float:
    """Seconds between the pod's first init container (the epoch second in the file env PROFILE_START_FILE names)
    and `wall` (time.time()); 0 where the file is not there."""
    path = env.get(START_ENV)
    if not path:
        return 0.0
    try:
        started = float(Path(path).read_text().split()[0])
    except (OSError, ValueError, IndexError) as e:
        print(f"no pod start time in {path} ({e}): the time before this script is not counted", flush=True)
        return 0.0
    return max(0.0, wall - started)


def job_budget_s(spec: dict, env: dict, wall: float) -> float:
    """The seconds this script may use: the Job's activeDeadlineSeconds (env PROFILE_DEADLINE_S, else the spec's
    max_minutes) less the time the pod spent before the script (spent_before) less the stop reserve."""
    deadline = float(env.get(DEADLINE_ENV) or spec["max_minutes"] * 60)
    spent = spent_before(env, wall)
    reserve = spec.get("stop_reserve_s", 2 * STOP_GRACE_S)
    budget = deadline - spent - reserve
    print(f"time bound: {budget:.0f} s = the Job's {deadline:.0f} s - {spent:.0f} s since the pod started "
          f"- {reserve:.0f} s to stop the engine", flush=True)
    return budget


def main(argv: list[str] | None = None) -> int:
    """The profile Job: `python3 sweep.py SPEC.json` (the spec components/profiling/plan.py renders). 0: rows
    written; 1: no shape measured; 2: bad input; 143: SIGTERM (what finished is written)."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: sweep.py SPEC.json", file=sys.stderr)
        return 2
    spec = json.loads(Path(args[0]).read_text())
    out_dir = Path(spec["out_dir"])
    total_deadline = now() + job_budget_s(spec, os.environ, time.time())
    date = time.strftime("%Y-%m-%d", time.gmtime())
    summary = {"deployment": spec["deployment"], "model": spec["model"], "gpu": spec["gpu"], "date": date,
               "bounds": {"max_minutes": spec["max_minutes"], "max_minutes_per_shape": spec["max_minutes_per_shape"]},
               "shapes": [dict(s, status="skipped", rows=[]) for s in spec.get("skipped", [])]}
    results = Results(summary, out_dir)
    try:
        previous = signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:  # not the main thread (a test's): no handler
        previous = None
    try:
        terminated = _sweep(spec, summary, results, out_dir, total_deadline, date)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    if terminated is None:
        return 2
    rows = results.flush()
    if terminated:
        print(f"SIGTERM: stopped; {len(rows)} row(s) kept in {out_dir / ROWS_FILE} (summary.json says where)",
              file=sys.stderr, flush=True)
        return TERMINATED_RC
    if not rows:
        print(f"no shape was measured; see {out_dir / SUMMARY_FILE}", file=sys.stderr)
        return 1
    print(f"wrote {len(rows)} rows to {out_dir / ROWS_FILE}; list them under planning.measurements "
          f"(docs/measurements.md)", flush=True)
    return 0


def _sweep(spec: dict, summary: dict, results: Results, out_dir: Path, total_deadline: float,
           date: str) -> bool | None:
    """Every shape of the spec in turn; True when SIGTERM ended it, None when `vllm` is missing."""
    try:
        vllm = installed_vllm(": the profile Job runs in the pinned vLLM image")
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
                                          "reason": f"not started: the Job's {spec['max_minutes']}-minute bound "
                                                    f"is spent"})
            else:
                deadline = now() + min(left, spec["max_minutes_per_shape"] * 60)
                summary["shapes"].append(profile_shape(spec, shape, out_dir, vllm, deadline, date, results.flush))
            entry = summary["shapes"][-1]
            print(f"{shape['id']}: {entry['status']}, {len(entry['rows'])} row(s)"
                  + (f": {entry['reason']}" if entry.get("reason") else ""), flush=True)
            results.flush()  # after every shape too (the levels flushed already)
            if entry["status"] == "terminated":
                raise Terminated()
    except ServeError as e:
        print(e, file=sys.stderr)
        return None
    except Terminated:
        summary["stopped"] = "SIGTERM (the Job's deadline, or the pod deleted or preempted)"
        seen = {x["id"] for x in summary["shapes"]}
        summary["shapes"] += [{**s, "status": "skipped", "rows": [], "reason": "not started: SIGTERM"}
                              for s in spec["shapes"] if s["id"] not in seen]
        return True
    return False


if __name__ == "__main__":
    sys.exit(main())
