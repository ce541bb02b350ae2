"""python -m components: topology | table | stacks | plan | capacity.

Exit codes: 0 ok; 2 bad input (arguments, a stack file's YAML or its config, a catalog data file);
3 no topology fits; 4 a mandatory policy failed.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import sys
import time
from pathlib import Path

from ..catalog.tables import DataError  # reads no table: the catalog's names load on first use
from .permissions import FILE as PERMISSIONS_FILE
from .errors import EXIT_BAD_INPUT, EXIT_NO_FIT, EXIT_POLICY, _fail, data_error  # noqa: F401  (re-exported)

# Everything that reads the catalog's tables is imported where it is used, after main() has started, so that a
# malformed data file is reported by main() (exit 2) and not as a traceback from importing this module (which the
# `vllm-platform` console script does before it calls main).

TABLE_MAX_MODEL_LEN = 32_768
NOT_ON_DEMAND_ROW = "not offered on demand (reservation or Spot only)"


def cmd_capacity(a) -> int:
    from .capacity import capacity_report
    return capacity_report(a)


def table_rows(cloud: str, max_model_len: int = TABLE_MAX_MODEL_LEN,
               kv_cache_dtype: str = "auto") -> list[list[str]]:
    """One row per catalog model and GPU type. The KV cache dtypes are a stack's for kvCacheDtype `kv_cache_dtype`
    (default auto, as a stack's and `topology`'s), so the table and `topology` answer the same question."""
    from ..catalog import ACCELERATORS, MODELS, instance_types, offered
    from ..planner import NoFeasibleTopology, PlanRequest, plan_topology
    from .summary import kv_cache_dtypes

    kv_dtypes = kv_cache_dtypes(kv_cache_dtype)
    rows = []
    for m in MODELS.values():
        for acc in ACCELERATORS:
            cands = tuple(instance_types(cloud, acc))
            if not cands:
                continue
            if not any(offered(i) for i in cands):  # the table prices on demand; a stack on demand refuses these
                rows.append([m.id, m.precisions[0], acc, *["—"] * 9, NOT_ON_DEMAND_ROW])
                continue
            cands = tuple(i for i in cands if offered(i))
            req = PlanRequest(model=m, precision=m.precisions[0], candidates=cands,
                              max_model_len=min(max_model_len, m.max_context), kv_cache_dtypes=kv_dtypes)
            try:
                t = plan_topology(req)
            except NoFeasibleTopology as e:
                binding = sorted({r.constraint for r in e.refusals} & {"memory", "kv-cache", "tpot", "ttft", "fabric",
                                                                       "max-replicas", "tp-fp8-block"})
                rows.append([m.id, m.precisions[0], acc, "—", "—", "—", "—", "—", "—", "—", "—", "—",
                             "refused: " + (", ".join(binding) or "no shape")])
                continue
            rows.append([m.id, t.precision, acc, t.instance_type, str(t.tensor_parallel_size),
                         str(t.pipeline_parallel_size), str(t.nodes_per_replica), f"{t.kv_cache_tokens:,}",
                         t.kv_cache_dtype, str(t.concurrency_per_replica), f"{t.est_tpot_ms:.1f}", f"{t.replicas}",
                         f"${t.cost_per_hour:,.2f}"])
    return rows


TABLE_HEADER = ["model", "precision", "gpu", "instance", "TP", "PP", "nodes/replica", "KV tokens/replica",
                "KV dtype", "max conc./replica", "TPOT ms at that load", "replicas", "$/h"]


def render_table(cloud: str, markdown: bool, kv_cache_dtype: str = "auto") -> str:
    rows = table_rows(cloud, kv_cache_dtype=kv_cache_dtype)
    if markdown:
        lines = ["| " + " | ".join(TABLE_HEADER) + " |", "|" + "---|" * len(TABLE_HEADER)]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        return "\n".join(lines)
    widths = [max(len(x) for x in col) for col in zip(TABLE_HEADER, *rows)]
    fmt = "  ".join("{:<%d}" % w for w in widths)
    return "\n".join(fmt.format(*r) for r in [TABLE_HEADER, *rows])


def cmd_table(a) -> int:
    from ..planner import Sla
    from .summary import kv_dtype_text

    if not a.markdown:
        print(f"# {a.cloud}: native precision, max_model_len min({TABLE_MAX_MODEL_LEN}, model limit), "
              f"default SLA {Sla()}")
        print(f"# {kv_dtype_text(a.kv_cache_dtype)}; chosen: the KV dtype column")
    print(render_table(a.cloud, a.markdown, a.kv_cache_dtype))
    return 0


STACKS_HEADER = ["stack", "cloud", "env", "model", "instance", "parallelism", "nodes/replica",
                 "replicas (min–max)", "GPU nodes (min–max)", "$/h"]


def stacks_rows() -> list[list[str]]:
    """Every shipped stack's plan, read from its file without Pulumi (what `plan` would size)."""
    from ..config import parse
    from ..offline.runner import load_stack_yaml, project_values, stack_file, stack_names
    from ..planning import plan_stack

    rows = []
    for stack in stack_names():
        cfg = parse(project_values(load_stack_yaml(stack_file(stack))), secrets={"hfToken"})
        for name, t in plan_stack(cfg).items():
            par = f"TP {t.tensor_parallel_size}" + (f" × PP {t.pipeline_parallel_size}"
                                                     if t.pipeline_parallel_size > 1 else "")
            instance = t.instance_type if cfg.cloud != "existing" else f"your {t.gpus_per_node}×{t.accelerator} nodes"
            cost = f"${t.cost_per_hour:,.2f}" if cfg.cloud != "existing" else "—"
            rows.append([f"`{stack}`", cfg.cloud, cfg.environment, f"{t.model_name} {t.precision}", instance, par,
                         str(t.nodes_per_replica), f"{t.replicas} ({t.min_replicas}–{t.max_replicas})",
                         f"{t.nodes} ({t.min_nodes}–{t.max_nodes})", cost])
    return rows


def render_stacks() -> str:
    lines = ["| " + " | ".join(STACKS_HEADER) + " |", "|" + "---|" * len(STACKS_HEADER)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in stacks_rows()])


def cmd_stacks(a) -> int:
    from ..config import ConfigError
    from ..planner import NoFeasibleTopology
    try:
        text = render_stacks()
    except ConfigError as e:
        return _fail(EXIT_BAD_INPUT, str(e))
    except NoFeasibleTopology as e:
        return _fail(EXIT_NO_FIT, f"no topology fits: {e.message}")
    print(text)
    return 0


def cmd_plan(a) -> int:
    from ..config import ConfigError
    from ..offline import diagram, review
    from ..offline.render import resource_rows, write_plan
    from ..offline.runner import DEFAULT_STACK, ROOT, plan_stack_offline
    from ..costs.notes import total_line
    from ..planner import NoFeasibleTopology, Topology
    from .summary import serving_lines, summary

    import pulumi

    stack = source = a.stack or DEFAULT_STACK  # source: the name or the path given (a path outside stacks/)
    started = time.perf_counter()
    problem = _out_problem(Path(a.out)) if a.out else None
    if problem:
        return _fail(EXIT_BAD_INPUT, problem)
    old_rows = None
    if a.diff is not None:  # read before the plan: --diff may name the directory this plan replaces
        try:
            old_rows = review.read_rows(Path(a.diff))
        except (OSError, ValueError) as e:
            return _fail(EXIT_BAD_INPUT, f"--diff: no earlier plan at {a.diff} ({e}); "
                                         f"give a directory an earlier `plan --out DIR` wrote")
    try:
        result = plan_stack_offline(stack)
        stack = result.stack
    except FileNotFoundError as e:
        return _fail(EXIT_BAD_INPUT, str(e))
    except ConfigError as e:
        return _fail(EXIT_BAD_INPUT, f"{stack}: {e}")
    except pulumi.RunError as e:
        cause = e.__cause__
        if isinstance(cause, ConfigError):
            return _fail(EXIT_BAD_INPUT, f"{stack}: {cause}")
        if isinstance(cause, NoFeasibleTopology):
            return _fail(EXIT_NO_FIT, f"{stack}: no topology fits: {cause.message}")
        if isinstance(cause, DataError):  # a table first read by the program (prices, measurements)
            return data_error(cause)
        raise
    topology = result.exports.get("topology", {})
    out = Path(a.out) if a.out else ROOT / "build" / stack
    rows = resource_rows(result.resources)
    picture = diagram.mermaid(stack, rows, topology)
    try:
        objs = write_plan(out, result.resources, topology,
                          extra={"diagram.mmd": picture, "diagram.md": diagram.markdown(stack, picture)})
    except OSError as e:  # what the check before the plan cannot see (a read-only file system, a full disk)
        return _fail(EXIT_BAD_INPUT, f"--out: cannot write the plan to {out}: {e.strerror or e}; "
                                     f"give a directory you can write")
    permissions = _deployer_permissions(source, topology)
    if permissions is not None:  # what the principal running `pulumi up` needs in the account (docs/clusters.md)
        (out / PERMISSIONS_FILE).write_text(json.dumps(permissions, indent=2) + "\n")
    for note in result.notes:
        print(f"note: {note}")
    for warning in result.warnings:  # placeholders to replace, and pulumi.log.warn (what `pulumi up` prints)
        print(f"WARNING: {warning}")
    serving = result.exports.get("serving", {})
    for name, t in topology.items():
        print(summary(Topology.from_dict(t), serving.get(name, {}).get("serve")))
        print(serving_lines(serving.get(name, {})))
    if len(topology) > 1:
        print(total_line({name: Topology.from_dict(t) for name, t in topology.items()}))
    from ..costs.bill import bill_lines  # the whole bill of a cloud stack (components/costs/bill.py)
    for line in bill_lines(result.exports.get("bill")):
        print(line)
    from ..outputs import gateway_lines  # imports Pulumi: not at module level (the pure commands stay light)
    for line in gateway_lines(result.exports.get("gateway")):
        print(line)
    components = sum(1 for r in result.resources if not r.custom)
    print(f"\nResources ({len(rows)}, of which {components} components):")
    for line in review.tree_lines(rows):
        print(f"  {line}")
    if old_rows is not None:
        print(f"\nChanges since {a.diff}:")
        for line in review.diff_lines(old_rows, rows):
            print(f"  {line}")
    print(f"\nwrote {_shown(out, ROOT)}/: resources.json, topology.json, diagram.mmd, diagram.md, "
          f"{PERMISSIONS_FILE + ' (the deployer IAM), ' if permissions is not None else ''}and "
          f"{len(objs)} manifests in {time.perf_counter() - started:.2f} s")
    verdicts = _policy_verdicts(result)
    print(f"policy pack: {len(verdicts)} mandatory violation(s)")
    return EXIT_POLICY if verdicts else 0


def _deployer_permissions(stack: str, topology: dict) -> dict | None:
    """The deployer's cloud permissions for the planned stack (components/cli/permissions.py)."""
    from ..config.load import parse
    from ..offline.runner import load_stack_yaml, project_values, resolve_stack
    from ..planner import Topology
    from .permissions import deployer_permissions
    cfg = parse(project_values(load_stack_yaml(resolve_stack(stack)[1])), required=set())
    return deployer_permissions(cfg, {name: Topology.from_dict(t) for name, t in topology.items()})


def _out_problem(out: Path) -> str | None:
    """Why --out cannot take the plan, before planning: a file, a directory that is not a plan (the plan
    replaces it), or a path under a file or an unwritable directory. None: fine (missing parents are made)."""
    if out.exists() and not out.is_dir():
        return f"--out: {out} is a file, not a directory; give a directory for the plan's files"
    if out.is_dir() and any(out.iterdir()) and not (out / "resources.json").exists():
        return (f"--out: {out} exists and holds no earlier plan (resources.json); "
                "the plan replaces its directory, so give a new or a plan directory")
    above = next(p for p in out.absolute().parents if p.exists())  # the filesystem root always exists
    if not above.is_dir():
        return f"--out: {above} is a file, so {out} cannot be made; give a directory for the plan's files"
    if not os.access(above, os.W_OK | os.X_OK):
        return f"--out: {above} is not writable, so the plan cannot be written to {out}; give a directory you can write"
    return None


def _shown(path: Path, root: Path) -> str:
    try:
        return str(path.resolve().relative_to(root))
    except ValueError:
        return str(path)


def _policy_verdicts(result) -> list:
    """Policy pack verdicts (policies/); mandatory violations fail the plan. The rules are plain
    functions over (type, props): the pack needs no extra package here, and a plan is never
    reported clean without them having run."""
    from policies.rules import evaluate_plan

    mandatory = []
    for v in evaluate_plan(result):
        print(f"policy {v.level}: {v.rule}: {v.resource}: {v.message}")
        if v.level == "mandatory":
            mandatory.append(v)
    return mandatory


class _HelpFormatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """The module docstring as written, and each option's default after its help (where it has one
    worth printing: an option without a value, or whose help says its default, gets none)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        if action.default in (None, False) or "default:" in (action.help or ""):
            return action.help or ""
        return super()._get_help_string(action)


def version() -> str:
    """The installed distribution's version, else the source tree's (components.__version__)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    from .. import __version__
    try:
        return dist_version("vllm-platform")
    except PackageNotFoundError:
        return __version__


def parser() -> argparse.ArgumentParser:
    from .capacity import capacity_arguments
    from .summary import DEFAULT_KV_CACHE_DTYPE, KV_CACHE_DTYPE_CHOICES

    f = _HelpFormatter
    # `vllm-platform` when run as the installed console script, else the module form the README uses.
    prog = "vllm-platform" if os.path.basename(sys.argv[0] or "") == "vllm-platform" else "python -m components"
    p = argparse.ArgumentParser(prog=prog, description=__doc__, formatter_class=f)
    p.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND")
    from .topology import add_topology_parser
    add_topology_parser(sub, f)
    tb = sub.add_parser("table", help="the model-to-topology table over the catalog", formatter_class=f,
                        description="Every catalog model on every GPU type of one cloud.")
    tb.add_argument("--cloud", choices=["aws", "gcp"], default="aws", help="whose instance types to table")
    tb.add_argument("--markdown", action="store_true", help="print a Markdown table (as in docs/planner.md)")
    tb.add_argument("--kv-cache-dtype", choices=list(KV_CACHE_DTYPE_CHOICES), default=DEFAULT_KV_CACHE_DTYPE,
                    help="KV cache, as a stack's kvCacheDtype and `topology --kv-cache-dtype`: the model's dtype, FP8 "
                         "(lower quality), or let the planner choose FP8 when cheaper")
    tb.set_defaults(fn=cmd_table)
    st = sub.add_parser("stacks", help="the shipped stacks and their plans, as a Markdown table", formatter_class=f)
    st.set_defaults(fn=cmd_stacks)
    cp = sub.add_parser("capacity", help="one replica's latency and throughput over concurrency, and its knee",
                        formatter_class=f,
                        description="TPOT and TTFT (mean and p99 model), output and total tokens/s of one replica "
                                    "at concurrency 1, 2, 4, ... up to what its KV cache holds, whether the SLA "
                                    "holds, and the knee (the highest concurrency that meets it with the planning "
                                    "margin: estimate x (1 + margin) <= SLA, the calibration's margin for the model's "
                                    "class and load, planner/margins.py; a stack sets its own "
                                    "with planning.latencyMargin, docs/measurements.md). The replica is "
                                    "the shape the planner picks for the model on that GPU (or --tp).")
    capacity_arguments(cp)
    cp.set_defaults(fn=cmd_capacity)
    pl = sub.add_parser("plan", help="evaluate __main__.py offline for stacks/Pulumi.STACK.yaml", formatter_class=f,
                        description="Run the Pulumi program in-process under mocks (no cloud, no Pulumi CLI): "
                                    "print the topology and the resource tree, write the plan (resources.json, "
                                    "topology.json, diagram.mmd/.md, manifests/) and run the policy pack.")
    pl.add_argument("stack", nargs="?", help="stack name (stacks/Pulumi.STACK.yaml) or a stack file path; "
                                             "default: dev (the README's quick start)")
    pl.add_argument("--out", metavar="DIR", help="directory to write the plan to (replaced); default: build/STACK")
    pl.add_argument("--diff", metavar="OLD_DIR",
                    help="also show what changed since an earlier plan written to OLD_DIR "
                         "(added, removed and changed resources with the changed input paths)")
    pl.set_defaults(fn=cmd_plan)
    return p


class _ClosedPipeSafe(io.TextIOBase):
    """stdout that, once its reader has gone (`... | head -1`), drops further output instead of raising
    BrokenPipeError: the command still finishes (a plan still writes its files) and exits with its own
    code. Python's documented pattern: point the descriptor at /dev/null so the final flush succeeds."""

    def __init__(self, stream):
        self._stream = stream
        self.closed_pipe = False

    def _devnull(self) -> None:
        self.closed_pipe = True
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)
        except (OSError, ValueError, io.UnsupportedOperation):
            pass

    def write(self, text: str) -> int:
        if not self.closed_pipe:
            try:
                return self._stream.write(text)
            except BrokenPipeError:
                self._devnull()
        return len(text)

    def flush(self) -> None:
        if not self.closed_pipe:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._devnull()

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._stream.fileno()


def main(argv: list[str] | None = None) -> int:
    """The command line; returns the exit code (0 ok, 2 bad input or a malformed catalog data file, 3 no fit,
    4 mandatory policy)."""
    stdout = sys.stdout
    sys.stdout = _ClosedPipeSafe(stdout)
    try:
        a = parser().parse_args(argv)  # --help, --version and bad arguments (exit 2) end here
        return a.fn(a)
    except DataError as e:  # the catalog's tables are read on first use: building the parser reads most of them
        return data_error(e)
    finally:
        sys.stdout.flush()
        sys.stdout = stdout
