"""Measure a stack's model with `vllm bench serve` and write rows in the shape of
components/catalog/measurements.py, so that new measurements drop into calibration (bench/calibrate.py).

Run it on a machine that reaches the model's endpoint (a GPU node, or through a port-forward):

    .venv/bin/python bench/bench_serve.py STACK [--deployment NAME] [--base-url http://localhost:8000]
        [--out bench/results/STACK.json] [--dry-run]

For each concurrency 1, 2, 4, ... up to what one replica's KV cache holds at the SLA's prompt/output lengths
(the plan's kv_limit_concurrency), it runs (vLLM 0.31 flags)

    vllm bench serve --backend openai-chat --base-url URL --endpoint /v1/chat/completions --model SERVED
        --tokenizer REPO --dataset-name random --random-input-len P --random-output-len O --ignore-eos
        --max-concurrency C --num-prompts N --request-rate inf --percentile-metrics ttft,tpot,itl
        --metric-percentiles 99 --num-warmups C --save-result --result-dir DIR --result-filename c{C}.json

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

MIN_PROMPTS = 32
PROMPTS_PER_USER = 8  # enough requests at each level that the start-up burst is a small share


def bench_command(served: str, tokenizer: str, base_url: str, prompt: int, output: int, concurrency: int,
                  result_dir: str, num_prompts: int | None = None) -> list[str]:
    n = num_prompts or max(MIN_PROMPTS, PROMPTS_PER_USER * concurrency)
    return ["vllm", "bench", "serve", "--backend", "openai-chat", "--base-url", base_url,
            "--endpoint", "/v1/chat/completions", "--model", served, "--tokenizer", tokenizer,
            "--dataset-name", "random", "--random-input-len", str(prompt), "--random-output-len", str(output),
            "--ignore-eos", "--max-concurrency", str(concurrency), "--num-prompts", str(n),
            "--request-rate", "inf", "--percentile-metrics", "ttft,tpot,itl", "--metric-percentiles", "99",
            "--num-warmups", str(concurrency), "--save-result", "--result-dir", result_dir, "--result-filename", f"c{concurrency}.json"]


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
        "notes": f"p99 TPOT {doc.get('p99_tpot_ms')} ms, p99 TTFT {doc.get('p99_ttft_ms')} ms, "
                 f"{done} requests, {doc.get('failed', 0)} failed",
    }


def write_rows(rows: list[dict], out: Path) -> None:
    """The rows file: a JSON list of measurements rows (components/catalog/bench_results.py reads it back)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=2) + "\n")


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
    a = p.parse_args(argv)

    from components.config import parse
    from components.offline.runner import load_stack_yaml, stack_file
    from components.planning import plan_stack
    from components.versions import VLLM_VERSION

    raw = {k.split(":", 1)[1]: v for k, v in load_stack_yaml(stack_file(a.stack)).items()
           if k.startswith("vllm-platform:")}
    plans = plan_stack(parse(raw, secrets={"hfToken"}))
    name = a.deployment or next(iter(plans))
    if name not in plans:
        print(f"--deployment: {name!r} is not in {a.stack} ({', '.join(plans)})", file=sys.stderr)
        return 2
    t = plans[name]
    out = Path(a.out or ROOT / "bench" / "results" / f"{Path(a.stack).stem}-{name}.json")
    result_dir = out.parent / f"{out.stem}-raw"
    date = datetime.date.today().isoformat()
    rows = []
    for c in _levels(t):
        cmd = bench_command(t.served_model_name, t.model_repo, a.base_url, t.prompt_tokens, t.output_tokens, c,
                            str(result_dir))
        print(" ".join(cmd))
        if a.dry_run:
            continue
        result_dir.mkdir(parents=True, exist_ok=True)
        subprocess.run(cmd, check=True)
        doc = json.loads((result_dir / f"c{c}.json").read_text())
        rows.append(parse_result(doc, row_id=f"{name}-{t.accelerator}-tp{t.tensor_parallel_size}-c{c}",
                                 gpu=t.accelerator, model=t.model, precision=t.precision,
                                 vllm=VLLM_VERSION.lstrip("v"), tp=t.tensor_parallel_size,
                                 pp=t.pipeline_parallel_size, concurrency=c, max_model_len=t.max_model_len,
                                 source=f"bench/bench_serve.py on {socket.gethostname()}", date=date))
    if rows:
        write_rows(rows, out)
        print(f"wrote {len(rows)} rows to {out}; size the stack from them with planning.measurements "
              f"(docs/measurements.md), or add them to the fit with bench/calibrate.py --results {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
