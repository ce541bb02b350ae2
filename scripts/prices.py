#!/usr/bin/env python3
"""Regenerate components/catalog/data/prices/regional.csv: the on-demand (and, where the source has it, spot)
$/hour of the catalog's GPU instance types in every region a maintained price source lists them, with the
source and the read date in the table's header. Never run at plan or test time: the table is committed.

    python scripts/prices.py --gcp-repo DIR --aws-repo DIR [--read YYYY-MM-DD]

DIR is a git directory (a clone or a bare mirror) of the source repository, read with `git show`:

  --gcp-repo  github.com/cloudpilot-ai/karpenter-provider-gcp: pkg/providers/pricing/initial-prices.json, the
              regional on-demand and Spot prices of every GCE machine type (GPUs included) that its scheduled
              workflow (.github/workflows/update-pricing.yaml) refreshes from the Cloud Billing catalog.
  --aws-repo  github.com/skypilot-org/skypilot-catalog: catalogs/v8/aws/vms.csv (v8 = the CATALOG_SCHEMA_VERSION
              SkyPilot reads, sky/skylet/constants.py), one row per (instance type, availability zone) with the
              region's on-demand Linux price (Price, from the AWS Price List API bulk offer file) and the zone's
              current Spot price (SpotPrice, from DescribeSpotPriceHistory); written by sky/catalog/data_fetchers/
              fetch_aws.py, run by the repository's scheduled workflow .github/workflows/update-aws-catalog.yml.
              Instead of a git directory, --aws-vms FILE with --aws-commit SHA --aws-date YYYY-MM-DD reads a copy
              of that file (the repository's history is 1.7 GB; a shallow clone of its head is enough for --aws-repo).

On demand: the region's Price (the same on every zone row of the region). Spot: the median of the SpotPrice over the
region's availability zones that list one (Local and Wavelength Zones, ids like use1-atl2-az1, left out): a zone
where Spot capacity is short shows the on-demand price as its Spot price and a single cheap zone may have no
capacity, so neither the minimum nor one zone's figure is what a Karpenter pool spread over the zones pays. A type
whose rows carry no Price (p5e.48xlarge: Capacity Blocks only) is not in the table. The regions the file covers (any
row, any type) are written to the header: there, a catalog type without a row is not offered.

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
AWS_FILE = "catalogs/v8/aws/vms.csv"  # v8: sky/skylet/constants.py CATALOG_SCHEMA_VERSION
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


_AZ = re.compile(r"^[a-z]+[0-9]+-az[0-9]+$")  # a Region's own zone id (use1-az4); Local Zones read use1-atl2-az1


def median(xs: list[float]) -> float:
    xs = sorted(xs)
    mid = len(xs) // 2
    return xs[mid] if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2


def aws_rows(text: str, types: set[str]) -> tuple[list[tuple[str, str, str, float, float | None]], list[str]]:
    """(rows, every region the file covers) from the text of SkyPilot's catalogs/v8/aws/vms.csv."""
    reader = csv.DictReader(io.StringIO(text))
    need = {"InstanceType", "Price", "SpotPrice", "Region", "AvailabilityZone"}
    if not need <= set(reader.fieldnames or ()):
        sys.exit(f"{AWS_FILE}: columns {', '.join(sorted(need - set(reader.fieldnames or ())))} missing: not "
                 f"SkyPilot's AWS catalog (docs/cost.md \"Regenerating the price table\")")
    regions: set[str] = set()
    od: dict[tuple[str, str], set[float]] = {}
    spot: dict[tuple[str, str], list[float]] = {}
    for row in reader:
        regions.add(row["Region"])
        name = row["InstanceType"]
        if name not in types or not row["Price"] or not _AZ.match(row["AvailabilityZone"]):
            continue
        key = (row["Region"], name)
        od.setdefault(key, set()).add(float(row["Price"]))
        spot.setdefault(key, [])
        if row["SpotPrice"]:
            spot[key].append(float(row["SpotPrice"]))
    rows = []
    for (region, name), prices in sorted(od.items()):
        if len(prices) != 1:
            sys.exit(f"{AWS_FILE}: {name} in {region} has {len(prices)} on-demand prices {sorted(prices)}; one expected")
        zones = spot[(region, name)]
        rows.append(("aws", region, name, prices.pop(), round(median(zones), 6) if zones else None))
    return rows, sorted(regions)


def money(x: float | None) -> str:
    return "" if x is None else f"{x:.6f}".rstrip("0").rstrip(".")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gcp-repo", required=True, help="git dir of github.com/cloudpilot-ai/karpenter-provider-gcp")
    ap.add_argument("--aws-repo", help="git dir of github.com/skypilot-org/skypilot-catalog")
    ap.add_argument("--aws-vms", help="a copy of skypilot-catalog's catalogs/v8/aws/vms.csv (with --aws-commit, --aws-date)")
    ap.add_argument("--aws-commit", help="the skypilot-catalog commit --aws-vms was read at")
    ap.add_argument("--aws-date", help="that commit's date (YYYY-MM-DD), or 'unknown'")
    ap.add_argument("--read", default=dt.date.today().isoformat(), help="the read date to print (YYYY-MM-DD)")
    a = ap.parse_args(argv)
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", a.read):
        ap.error(f"--read {a.read!r}: a date as YYYY-MM-DD")
    if bool(a.aws_repo) == bool(a.aws_vms):
        ap.error("one of --aws-repo DIR or --aws-vms FILE")
    if a.aws_vms and not (a.aws_commit and a.aws_date):
        ap.error("--aws-vms needs --aws-commit and --aws-date (the skypilot-catalog commit the file was read at)")
    gcp = git_dir(a.gcp_repo)
    gcp_commit, gcp_day = last_change(gcp, GCP_FILE)
    if a.aws_repo:
        aws = git_dir(a.aws_repo)
        aws_commit, aws_day = last_change(aws, AWS_FILE)
        aws_text = git(aws, "show", f"HEAD:{AWS_FILE}")
    else:
        aws_commit, aws_day, aws_text = a.aws_commit, a.aws_date, Path(a.aws_vms).read_text()
    types = catalog_types()
    aws, aws_read = aws_rows(aws_text, types["aws"])
    rows = sorted(gcp_rows(gcp, types["gcp"]) + aws)
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
        f"# aws: github.com/skypilot-org/skypilot-catalog {AWS_FILE} @ {aws_commit[:12]} ({aws_day}), written by its",
        "#   scheduled workflow from the AWS Price List API (on demand, Linux) and EC2 Spot price history (per zone);",
        "#   on_demand is the region's price, spot the median over the region's zones that list one.",
        f"#   Types with no on-demand price in it, so not in this table: {', '.join(missing['aws']) or 'none'}.",
        f"# aws regions read: {' '.join(aws_read)}",
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
             f"aws_regional: 'github.com/skypilot-org/skypilot-catalog {AWS_FILE} @ {aws_commit[:12]} ({aws_day}; "
             f"AWS Price List API, Spot median over zones), read {a.read}'",
             END]
    text = TEXTS.read_text()
    if BEGIN in text:
        text = text[:text.index(BEGIN)] + "\n".join(block) + text[text.index(END) + len(END):]
    else:
        text = text.rstrip("\n") + "\n" + "\n".join(block) + "\n"
    TEXTS.write_text(text)
    print(f"{OUT.relative_to(ROOT)}: {len(rows)} rows; gcp {len(regions['gcp'])} regions, aws {len(regions['aws'])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
