"""Print what the last real-engine run (scripts/e2e) measured: per stack the resources deployed and the seconds of
each `pulumi` step; the control plane's start; the cold build time of each tool (the seconds its last build took:
a first run on a fresh machine builds them all) and whether this run reused them. Figures, not assertions.

    .venv/bin/python bench/e2e_report.py [--report PATH]     # default: ~/.cache/vllm-platform-e2e/run/report.json
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

CACHE = Path(os.environ.get("VLLM_PLATFORM_E2E_CACHE", Path.home() / ".cache" / "vllm-platform-e2e"))


def render(report: dict) -> str:
    lines = []
    tools = report.get("tools") or {}
    if tools:
        # each tool's builds: [seconds, when, cold|warm]; the longest is the cold build (an empty build cache)
        cold = {name: max((int(b[0]) for b in builds), default=0) for name, builds in tools.items()}
        last = {name: builds[-1] for name, builds in tools.items() if builds}
        lines.append(f"tool builds: cold {sum(cold.values())} s in all (the longest build of each); last build:")
        lines += [f"  {name:22s} cold {cold[name]:>6} s   last {last[name][0]:>5} s ({last[name][2]}, {last[name][1]})"
                  for name in sorted(last)]
    if "control_plane_start_s" in report:
        lines.append(f"control plane up in {report['control_plane_start_s']} s")
    for name, st in report.get("stacks", {}).items():
        status = "ok" if st.get("ok") else "FAILED"
        lines.append(f"{name}: {status}, {st.get('resources', '?')} resources, {st.get('seconds', '?')} s, "
                     f"nodes {st.get('nodes', {}).get('gpu', '?')} GPU + {st.get('nodes', {}).get('system', '?')} system")
        for step in st.get("steps", []):
            if step["command"] in ("preview", "up", "destroy"):
                changes = step.get("changes") or {}
                what = ", ".join(f"{k} {v}" for k, v in sorted(changes.items()))
                lines.append(f"  {step['step']:48s} {step['seconds']:>7} s  {what}")
        for c in st.get("changes", []):
            lines.append(f"  change {c['change']!r}: {len(c['actual'])} resources changed, as the offline plan said"
                         if set(c["actual"]) == set(c["expected"]) else
                         f"  change {c['change']!r}: preview {sorted(c['actual'])} vs plan {sorted(c['expected'])}")
        left = st.get("left_after_destroy")
        if left:
            lines.append(f"  after destroy: {len(left['unexpected'])} unexpected, {len(left['retained_crds'])} chart "
                         f"CRDs retained")
    for f in report.get("failures", []):
        lines.append(f"FAILURE [{f['stack']} / {f['step']}] {f.get('urn') or '(no URN)'}: {f['message'][:400]}")
    if "seconds" in report:
        lines.append(f"whole run: {report['seconds']} s")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--report", type=Path, default=CACHE / "run" / "report.json")
    a = ap.parse_args(argv)
    if not a.report.exists():
        print(f"no report at {a.report}: run scripts/e2e first", file=sys.stderr)
        return 2
    print(render(json.loads(a.report.read_text())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
