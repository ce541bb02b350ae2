"""Benchmark: planner time over the whole catalog x accelerators x clouds, and `plan` wall time and
peak memory for each shipped stack (each in a fresh process, as a user runs it).

    .venv/bin/python bench/bench.py            # prints a Markdown table for docs/development.md
"""
from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def bench_planner(repeats: int = 3) -> dict:
    from components.catalog import MODELS, instance_types
    from components.planner import NoFeasibleTopology, PlanRequest, plan_topology

    cases = []
    for cloud in ("aws", "gcp"):
        for m in MODELS.values():
            for acc in sorted({i.accelerator for i in instance_types(cloud)}):
                cases.append(PlanRequest(model=m, precision=m.precisions[0],
                                         candidates=tuple(instance_types(cloud, acc)),
                                         max_model_len=min(32768, m.max_context)))
    runs = []
    for _ in range(repeats):
        started = time.perf_counter()
        for req in cases:
            try:
                plan_topology(req)
            except NoFeasibleTopology:
                pass
        runs.append(time.perf_counter() - started)
    best = min(runs)
    return {"plans": len(cases), "total_s": best, "per_plan_ms": best / len(cases) * 1e3}


def _child(stack: str) -> None:
    """Run one offline plan in this process and print its wall time and peak RSS as JSON."""
    import contextlib
    import io

    started = time.perf_counter()
    from components.cli import main
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(["plan", stack])
    wall = time.perf_counter() - started
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"stack": stack, "code": code, "wall_s": wall, "peak_mib": peak_mib}))


def bench_stacks() -> list[dict]:
    from components.offline.runner import stack_names

    rows = []
    for stack in stack_names():
        started = time.perf_counter()
        proc = subprocess.run([sys.executable, __file__, "--child", stack], cwd=ROOT, capture_output=True,
                              text=True, timeout=300)
        process_s = time.perf_counter() - started
        if proc.returncode != 0:
            rows.append({"stack": stack, "error": proc.stderr.strip().splitlines()[-1:]})
            continue
        row = json.loads(proc.stdout.strip().splitlines()[-1])
        row["process_s"] = process_s
        rows.append(row)
    return rows


def main() -> None:
    p = bench_planner()
    print(f"planner: {p['plans']} plans (12 models x every accelerator x aws/gcp) in {p['total_s']:.2f} s, "
          f"{p['per_plan_ms']:.1f} ms per plan (best of 3)\n")
    print("| stack | plan (in-process) s | whole command s | peak memory MiB | exit |")
    print("|---|---|---|---|---|")
    for r in bench_stacks():
        if "error" in r:
            print(f"| {r['stack']} | error: {r['error']} | | | |")
        else:
            print(f"| {r['stack']} | {r['wall_s']:.2f} | {r['process_s']:.2f} | {r['peak_mib']:.0f} | {r['code']} |")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        _child(sys.argv[2])
    else:
        main()
