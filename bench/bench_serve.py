"""Measure a stack's model with `vllm bench serve` and write rows in the shape of
components/catalog/measurements.py, so that new measurements drop into calibration (bench/calibrate.py).

Run it on a machine that reaches the model's endpoint (a GPU node, or through a port-forward):

    .venv/bin/python bench/bench_serve.py STACK [--deployment NAME] [--base-url http://localhost:8000]
        [--out bench/results/STACK.json] [--dry-run]

or, in one command on a GPU machine with vLLM installed and the weights in its Hugging Face cache (a lent device
machine reaches no network: HF_HUB_OFFLINE=1 there), let it start the planned engine itself, measure it and stop it:

    .venv/bin/python bench/bench_serve.py STACK --serve [--port 8000] [--start-timeout 1800] [--out ...]

`--serve` runs exactly the plan's `vllm serve` arguments (the deployment's --max-num-seqs, TP, PP, ...; a
multi-node replica is refused), checks that the machine has the GPUs the replica needs (`nvidia-smi --list-gpus`),
waits for /health, and records the vLLM release that served (`vllm --version`), not the pinned one, in every row:
calibration puts a row in its engine era by that version (components/planner/performance.py ENGINE_ERAS).

For each concurrency 1, 2, 4, ... up to what one replica's KV cache holds at the SLA's prompt/output lengths
(the plan's kv_limit_concurrency), it runs (vLLM 0.31 flags)

    vllm bench serve --backend openai-chat --base-url URL --endpoint /v1/chat/completions --model SERVED
        --tokenizer REPO --dataset-name random --random-input-len P --random-output-len O --ignore-eos
        --max-concurrency C --num-prompts N --request-rate inf --percentile-metrics ttft,tpot,itl
        --metric-percentiles 90,99 --num-warmups C --save-result --result-dir DIR --result-filename c{C}.json

and turns each saved result (keys of vLLM's bench result: completed, total_input_tokens, total_output_tokens,
output_throughput, total_token_throughput, mean_/median_/p99_ ttft_ms and tpot_ms) into a row. Point the
endpoint at ONE replica (a pod's port, not the load-balanced Service), or the figures are the fleet's.
`--num-warmups C` sends C requests before the timed run (vllm/benchmarks/serve.py: `--num-warmups`, int, default
0, "Number of warmup requests."; seen in vllm-project/vllm main and older releases of that file, ⚠ not read at
the v0.31.0 tag itself), so CUDA graph capture and the first batch's allocations stay out of the figures.

The rows file is what `bench/calibrate.py --results PATH` reads (components/catalog/bench_results.py), and what a
stack's `planning.measurements` lists to size that shape from the measurement instead of the estimate
(components/catalog/measured.py, docs/measurements.md).
"""
from __future__ import annotations

import argparse
import datetime
import json
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# The reusable core (the `vllm bench serve` command, the row of a saved result, starting and stopping the engine)
# lives in components/profiling/sweep.py, which the profile Job (planning.profile) also runs inside the vLLM image.
from components.profiling.sweep import (ServeError, bench_command, gpus_here, parse_result,  # noqa: E402
                                        port_of as _port, start_engine, stop_engine, with_port, write_rows)
from components.profiling import sweep as _sweep  # noqa: E402

INSTALL_HINT = ("; install the pinned vLLM on this GPU machine (pip install vllm==0.31.0) or measure a running "
                "endpoint with --base-url")


def serve_argv(t, port: int | None) -> list[str]:
    """`vllm serve` with the plan's arguments; `port` replaces the plan's --port."""
    return ["vllm", "serve", *with_port(list(t.vllm_args), port)]


def installed_vllm() -> str:
    """The release `vllm --version` prints (its last line, e.g. 0.31.0)."""
    try:
        return _sweep.installed_vllm(INSTALL_HINT)
    except ServeError as e:
        raise ServeError(f"--serve: {e}") from None


def _levels(t) -> list[int]:
    from components.planner.capacity import sweep_levels
    return sweep_levels(max(1, t.kv_limit_concurrency))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("stack", help="stack name (stacks/Pulumi.STACK.yaml) or a stack file")
    p.add_argument("--deployment", help="the model deployment to measure (default: the first)")
    p.add_argument("--base-url", default="http://localhost:8000", help="one replica's OpenAI endpoint")
    p.add_argument("--out", help="rows JSON to write (default bench/results/STACK-DEPLOYMENT.json)")
    p.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    p.add_argument("--serve", action="store_true",
                   help="start the plan's `vllm serve` on this GPU machine, measure it, stop it")
    p.add_argument("--port", type=int, help="with --serve: the port to serve on (default: the plan's)")
    p.add_argument("--start-timeout", type=float, default=1800.0,
                   help="with --serve: seconds to wait for /health (default 1800: weights load first)")
    a = p.parse_args(argv)
    try:
        return _run(a)
    except ServeError as e:
        print(e, file=sys.stderr)
        return 2


def _run(a) -> int:

    from components.config import parse
    from components.offline.runner import load_stack_yaml, project_values, stack_file
    from components.planning import plan_stack
    from components.upstream.versions import VLLM_VERSION

    plans = plan_stack(parse(project_values(load_stack_yaml(stack_file(a.stack))), secrets={"hfToken"}))
    name = a.deployment or next(iter(plans))
    if name not in plans:
        print(f"--deployment: {name!r} is not in {a.stack} ({', '.join(plans)})", file=sys.stderr)
        return 2
    t = plans[name]
    out = Path(a.out or ROOT / "bench" / "results" / f"{Path(a.stack).stem}-{name}.json")
    result_dir = out.parent / f"{out.stem}-raw"
    date = datetime.date.today().isoformat()
    vllm, base_url, engine = VLLM_VERSION.lstrip("v"), a.base_url, None
    if a.serve:
        if t.nodes_per_replica > 1:
            raise ServeError(f"--serve: {name} is a {t.nodes_per_replica}-node replica (TP {t.tensor_parallel_size} x "
                             f"PP {t.pipeline_parallel_size}); --serve starts one node's engine: measure the deployed "
                             "replica with --base-url instead")
        argv = serve_argv(t, a.port)
        print(" ".join(argv))
        need = t.tensor_parallel_size * t.pipeline_parallel_size
        if not a.dry_run:
            have = gpus_here()
            if have < need:
                raise ServeError(f"--serve: the replica needs {need} GPU(s) (TP {t.tensor_parallel_size} x PP "
                                 f"{t.pipeline_parallel_size}); `nvidia-smi --list-gpus` shows {have} here")
            vllm = installed_vllm()
            if vllm != VLLM_VERSION.lstrip("v"):
                print(f"note: vLLM {vllm} is installed, not the pinned {VLLM_VERSION.lstrip('v')}: the rows say "
                      f"{vllm}, and calibration counts them in that release's engine era", file=sys.stderr)
            try:
                engine = start_engine(argv, out.parent / f"{out.stem}-server.log", a.start_timeout,
                                      hint="weights loading? raise --start-timeout")
            except ServeError as e:
                raise ServeError(f"--serve: {e}") from None
        base_url = f"http://localhost:{_port(argv)}"
    rows = []
    try:
        for c in _levels(t):
            cmd = bench_command(t.served_model_name, t.model_repo, base_url, t.prompt_tokens, t.output_tokens, c,
                                str(result_dir))
            print(" ".join(cmd))
            if a.dry_run:
                continue
            result_dir.mkdir(parents=True, exist_ok=True)
            subprocess.run(cmd, check=True)
            doc = json.loads((result_dir / f"c{c}.json").read_text())
            rows.append(parse_result(doc, row_id=f"{name}-{t.accelerator}-tp{t.tensor_parallel_size}-c{c}",
                                     gpu=t.accelerator, model=t.model, precision=t.precision,
                                     vllm=vllm, tp=t.tensor_parallel_size,
                                     pp=t.pipeline_parallel_size, concurrency=c, max_model_len=t.max_model_len,
                                     source=f"bench/bench_serve.py on {socket.gethostname()}", date=date))
    finally:
        if engine is not None:
            stop_engine(engine)
    if rows:
        write_rows(rows, out)
        print(f"wrote {len(rows)} rows to {out}; size the stack from them with planning.measurements "
              f"(docs/measurements.md), or add them to the fit with bench/calibrate.py --results {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
