#!/usr/bin/env python3
"""Regenerate components/catalog/data/prices/regional.csv: the on-demand (and, where the source has it, spot)
$/hour of the catalog's GPU instance types in every region a maintained price source lists them, with the
source and the read date in the table's header. Never run at plan or test time: the table is committed.

    python scripts/prices.py --gcp-repo DIR --aws-repo DIR [--read YYYY-MM-DD]

DIR is a git directory (a clone or a bare mirror) of the source repository, read with `git show`:

  --gcp-repo  github.com/cloudpilot-ai/karpenter-provider-gcp: pkg/providers/pricing/initial-prices.json, the
              regional on-demand and Spot prices of every GCE machine type (GPUs included) that its scheduled
              workflow (.github/workflows/update-pricing.yaml) refreshes from the Cloud Billing catalog.
  --aws-repo  github.com/aws/karpenter-provider-aws: pkg/providers/pricing/zz_generated.pricing_aws.go, the
              on-demand Linux prices Karpenter generates from the AWS Price List API ("chore: Update data from
              AWS APIs"); it carries us-east-1 only (other regions are fetched at run time, not committed).

The table keeps only the catalog's own instance types (components/catalog/data/instance_types.csv) and names
each source's commit and its date. Idempotent: the same sources and --read give the same bytes. Also rewrites
the generated block of texts.yaml (the rows' {gcp_regional}/{aws_regional} source texts). docs/cost.md.
"""
from __future__ import annotations

import argparse
import csv
import datetime as dt
import io
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "components" / "catalog" / "data"
OUT = DATA / "prices" / "regional.csv"
TEXTS = DATA / "prices" / "texts.yaml"
GCP_FILE = "pkg/providers/pricing/initial-prices.json"
AWS_FILE = "pkg/providers/pricing/zz_generated.pricing_aws.go"
BEGIN, END = "# --- begin: written by scripts/prices.py ---", "# --- end: written by scripts/prices.py ---"


def git(repo: str, *args: str) -> str:
    r = subprocess.run(["git", "--git-dir", repo, *args], capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"{repo}: git {' '.join(args[:2])} failed ({r.stderr.strip()}); --gcp-repo / --aws-repo take the git "
                 f"directory of a clone of the source repository (docs/cost.md \"Regenerating the price table\")")
    return r.stdout


def git_dir(path: str) -> str:
    p = Path(path)
    return str(p / ".git") if (p / ".git").exists() else str(p)


def last_change(repo: str, path: str) -> tuple[str, str]:
    """(commit, commit date YYYY-MM-DD) of the last commit that changed `path` on HEAD."""
    line = git(repo, "log", "-1", "--format=%H %cs", "HEAD", "--", path).strip()
    if not line:
        sys.exit(f"{repo}: no commit changes {path} (is this the right repository?)")
    commit, day = line.split()
    return commit, day


def catalog_types() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {"aws": set(), "gcp": set()}
    lines = [x for x in (DATA / "instance_types.csv").read_text().splitlines() if x and not x.startswith("#")]
    for row in csv.DictReader(lines):
        out[row["cloud"]].add(row["name"])
    return out


def gcp_rows(repo: str, types: set[str]) -> list[tuple[str, str, str, float, float | None]]:
    prices = json.loads(git(repo, "show", f"HEAD:{GCP_FILE}"))["prices"]
    rows = []
    for region, kinds in prices.items():
        od, spot = kinds.get("on_demand") or {}, kinds.get("spot") or {}
        for name in sorted(types & set(od)):
            rows.append(("gcp", region, name, od[name], spot.get(name)))
    return rows


_AWS_REGION = re.compile(r'^\t"([a-z0-9-]+)": \{', re.M)
_AWS_PRICE = re.compile(r'"([a-z0-9.-]+)": ([0-9.]+)')


def aws_rows(repo: str, types: set[str]) -> list[tuple[str, str, str, float, float | None]]:
    text = git(repo, "show", f"HEAD:{AWS_FILE}")
    starts = list(_AWS_REGION.finditer(text))
    rows = []
    for i, m in enumerate(starts):
        block = text[m.end():starts[i + 1].start() if i + 1 < len(starts) else len(text)]
        found = dict(_AWS_PRICE.findall(block))
        for name in sorted(types & set(found)):
            rows.append(("aws", m.group(1), name, float(found[name]), None))
    return rows


def money(x: float | None) -> str:
    return "" if x is None else f"{x:.6f}".rstrip("0").rstrip(".")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gcp-repo", required=True, help="git dir of github.com/cloudpilot-ai/karpenter-provider-gcp")
    ap.add_argument("--aws-repo", required=True, help="git dir of github.com/aws/karpenter-provider-aws")
    ap.add_argument("--read", default=dt.date.today().isoformat(), help="the read date to print (YYYY-MM-DD)")
    a = ap.parse_args(argv)
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", a.read):
        ap.error(f"--read {a.read!r}: a date as YYYY-MM-DD")
    gcp, aws = git_dir(a.gcp_repo), git_dir(a.aws_repo)
    gcp_commit, gcp_day = last_change(gcp, GCP_FILE)
    aws_commit, aws_day = last_change(aws, AWS_FILE)
    generated = re.search(r"generated at (\S+) for (\S+)", git(aws, "show", f"HEAD:{AWS_FILE}"))
    types = catalog_types()
    rows = sorted(gcp_rows(gcp, types["gcp"]) + aws_rows(aws, types["aws"]))
    covered = {c: sorted({r[2] for r in rows if r[0] == c}) for c in ("aws", "gcp")}
    missing = {c: sorted(types[c] - set(covered[c])) for c in ("aws", "gcp")}
    regions = {c: sorted({r[1] for r in rows if r[0] == c}) for c in ("aws", "gcp")}

    head = [
        "# On-demand (and Spot, where the source has it) $/hour of the catalog's GPU instance types per region, Linux,",
        "# GPUs included. Written by scripts/prices.py from the sources below; do not edit by hand: rerun it (docs/cost.md).",
        f"# read: {a.read}",
        f"# gcp: github.com/cloudpilot-ai/karpenter-provider-gcp {GCP_FILE} @ {gcp_commit[:12]} ({gcp_day}), refreshed",
        "#   from the Cloud Billing catalog by the repository's scheduled workflow; on_demand and spot per region.",
        f"#   {len(regions['gcp'])} regions; types it does not list, so not in this table: {', '.join(missing['gcp']) or 'none'}.",
        f"# aws: github.com/aws/karpenter-provider-aws {AWS_FILE} @ {aws_commit[:12]} ({aws_day}),",
        f"#   {'generated ' + generated.group(1) + ' for ' + generated.group(2) if generated else 'generated'} from the AWS Price List API;"
        " on-demand only, and only us-east-1:",
        "#   no maintained per-region AWS price source could be reached (docs/cost.md), so the other AWS regions keep",
        "#   regions.csv's factors, marked ⚠. Types it does not list in us-east-1: "
        f"{', '.join(missing['aws']) or 'none'}.",
        "# A (cloud, region, type) absent where the cloud's region has rows and the type has rows elsewhere is not",
        "# offered there: the planner does not pick it (components/catalog/prices.py offered_in).",
        "cloud,region,instance_type,on_demand,spot,source",
    ]
    body = io.StringIO()
    w = csv.writer(body, lineterminator="\n")
    for cloud, region, name, od, spot in rows:
        w.writerow([cloud, region, name, money(od), money(spot), "{%s_regional}" % cloud])
    OUT.write_text("\n".join(head) + "\n" + body.getvalue())

    block = [BEGIN,
             f"gcp_regional: 'github.com/cloudpilot-ai/karpenter-provider-gcp {GCP_FILE} @ {gcp_commit[:12]} ({gcp_day}; "
             f"Cloud Billing catalog), read {a.read}'",
             f"aws_regional: 'github.com/aws/karpenter-provider-aws {AWS_FILE} @ {aws_commit[:12]} ({aws_day}; "
             f"AWS Price List API), read {a.read}'",
             END]
    text = TEXTS.read_text()
    if BEGIN in text:
        text = text[:text.index(BEGIN)] + "\n".join(block) + text[text.index(END) + len(END):]
    else:
        text = text.rstrip("\n") + "\n" + "\n".join(block) + "\n"
    TEXTS.write_text(text)
    print(f"{OUT.relative_to(ROOT)}: {len(rows)} rows; gcp {len(regions['gcp'])} regions, aws {regions['aws']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
