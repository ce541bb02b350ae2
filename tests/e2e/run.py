"""The real-engine run: the real Pulumi CLI, language host and pulumi-kubernetes provider (scripts/e2e builds them
from the Go module proxy) deploy stacks of this project to a real Kubernetes control plane with fake nodes
(tests/e2e/cluster.py), with charts from a local chart repository through the `charts.mirror` stack setting
(tests/e2e/standin_charts.py), a local file backend and secrets set with `pulumi config set --secret`.

For every stack, in order: `pulumi preview --policy-pack policies`, `pulumi up --yes --policy-pack policies`,
`pulumi preview --expect-no-changes`, the stack's weekly changes (each: `pulumi preview --json` must change exactly
the resources the offline plans before and after the change differ in, then `pulumi up`), `pulumi destroy --yes`,
then the cluster must hold nothing of the stack but what docs/e2e.md says is retained. Every failure is reported
with its URN; the report (timings, resources, failures) is written as JSON for bench/e2e_report.py.

    scripts/e2e run [--stacks dev,pd-onprem] [--lanes 2] [--keep] [--work DIR]

The stacks are split between --lanes control planes that run side by side (each its own etcd, API server,
controllers, KWOK and Pulumi file backend, under WORK/lane-N), about equal in time by what each took when it last passed (CACHE/stack-seconds.json).
"""
from __future__ import annotations

import argparse
import copy
import functools
import http.server
import json
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

from tests.e2e import expectations  # noqa: E402
from tests.e2e.cluster import ControlPlane, node  # noqa: E402
from tests.e2e.standin_charts import CRDS, crd_files, write_mirror  # noqa: E402

NS = "vllm-platform"
PASSPHRASE = "e2e-only-passphrase"  # the file backend's secrets provider; the state lives in the run's work dir
COMMAND_TIMEOUT_S = 1200


def chart_crd_names() -> set[str]:
    """metadata.name of every CRD a (stand-in) chart installs: Helm keeps them on uninstall."""
    return {d["metadata"]["name"] for chart in CRDS for f in crd_files(chart)
            for d in yaml.safe_load_all(f.read_text()) if d}


@dataclass
class Change:
    """A change a user makes every week: an edit of the stack's config (the parsed YAML's `config` map)."""
    title: str
    edit: Callable[[dict], None]


@dataclass
class StackSpec:
    name: str
    file: str  # relative to the repository
    changes: list[Change] = field(default_factory=list)
    # the secrets a user of this stack sets, as its file's header says: dev's FP8 checkpoint is open (no hfToken)
    # and dev uses the ambient kubeconfig (no kubeconfig secret); the production stacks set both
    hf_token: bool = True
    kubeconfig_secret: bool = True


def _bump_max(cfg: dict) -> None:
    cfg[f"{NS}:models"][0]["replicas"]["max"] += 1


def _add_model(cfg: dict) -> None:
    first = cfg[f"{NS}:models"][0]
    cfg[f"{NS}:models"].append({**copy.deepcopy(first), "name": "qwen-7b", "model": "qwen2.5-7b",
                                "replicas": {"min": 1, "max": 1}})


STACKS = {
    "dev": StackSpec("dev", "stacks/Pulumi.dev.yaml",
                     [Change("raise models[0].replicas.max by one", _bump_max),
                      Change("add a model (qwen-7b)", _add_model)], hf_token=False, kubeconfig_secret=False),
    "prod-llama405b-onprem": StackSpec("prod-llama405b-onprem", "stacks/Pulumi.prod-llama405b-onprem.yaml"),
    "lws-onprem": StackSpec("lws-onprem", "tests/stacks/Pulumi.lws-onprem.yaml"),
    "pd-onprem": StackSpec("pd-onprem", "tests/stacks/Pulumi.pd-onprem.yaml"),
    "wide-ep-onprem": StackSpec("wide-ep-onprem", "tests/stacks/Pulumi.wide-ep-onprem.yaml"),
    "tenants-onprem": StackSpec("tenants-onprem", "tests/stacks/Pulumi.tenants-onprem.yaml"),
    "routing-onprem": StackSpec("routing-onprem", "tests/stacks/Pulumi.routing-onprem.yaml"),
}


class Failure(Exception):
    pass


class Report:
    """The run's JSON report; the lanes (threads) write it in turn."""
    def __init__(self, path: Path):
        self.path = path
        self.data: dict = {"stacks": {}, "failures": [], "started": time.time()}
        self.lock = threading.RLock()

    def stack(self, name: str) -> dict:
        with self.lock:
            return self.data["stacks"].setdefault(name, {"steps": []})

    def fail(self, stack: str, step: str, message: str, urn: str | None = None) -> None:
        with self.lock:
            self.data["failures"].append({"stack": stack, "step": step, "urn": urn, "message": message})
            self.save()

    def save(self) -> None:
        with self.lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(self.data, indent=1))
            tmp.replace(self.path)


# What a stack took in the last run (report.json), for splitting the stacks between lanes; a stack never run
# weighs this much.
DEFAULT_STACK_S = 600.0
# Where this machine has no record yet (a fresh CI runner): seconds each stack took in the run of 2026-12-07 on
# 2 cores beside the suite (bench/e2e_report.py). Only the split between lanes reads them.
TYPICAL_S = {"dev": 1576, "prod-llama405b-onprem": 825, "lws-onprem": 481, "pd-onprem": 782,
             "wide-ep-onprem": 680, "tenants-onprem": 519, "routing-onprem": 470}


def split_lanes(names: list[str], lanes: int, seconds: dict[str, float]) -> list[list[str]]:
    """The stacks in `lanes` groups of about equal time (longest first onto the least loaded lane); each lane keeps
    the order the stacks were given in."""
    load = [0.0] * lanes
    assigned: dict[str, int] = {}
    for name in sorted(names, key=lambda n: -seconds.get(n, DEFAULT_STACK_S)):
        lane = min(range(lanes), key=lambda i: (load[i], i))
        assigned[name] = lane
        load[lane] += seconds.get(name, DEFAULT_STACK_S)
    return [[n for n in names if assigned[n] == i] for i in range(lanes) if any(assigned[n] == i for n in names)]


def last_seconds(path: Path) -> dict[str, float]:
    """Each stack's seconds in the file the runs keep (CACHE/stack-seconds.json: a stack's last successful run)."""
    try:
        return {name: float(v) for name, v in json.loads(path.read_text()).items()}
    except (OSError, ValueError, AttributeError, TypeError):
        return {}


def keep_seconds(path: Path, report: Report) -> None:
    """Remember what each stack that passed took (the next run splits its lanes by it)."""
    kept = last_seconds(path)
    kept.update({name: st["seconds"] for name, st in report.data["stacks"].items() if st.get("ok")})
    path.write_text(json.dumps(kept, indent=1, sort_keys=True) + "\n")


def serve_directory(directory: Path) -> tuple[str, http.server.ThreadingHTTPServer]:
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}", server


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def events(path: Path) -> list[dict]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


def failures_from(evts: list[dict]) -> list[tuple[str | None, str]]:
    """(URN, message) of every error diagnostic and failed resource operation in an event log."""
    out = []
    for e in evts:
        d = e.get("diagnosticEvent")
        if d and d.get("severity") == "error":
            out.append((d.get("urn"), d.get("message", "").strip()))
        f = e.get("resOpFailedEvent")
        if f:
            out.append((f.get("metadata", {}).get("urn"), f"operation {f.get('metadata', {}).get('op')} failed"))
    return out


class StackRun:
    def __init__(self, spec: StackSpec, cluster: ControlPlane, bin_dir: Path, work: Path, mirror: str,
                 report: Report):
        self.spec, self.cluster, self.bin, self.mirror, self.report = spec, cluster, bin_dir, mirror, report
        self.dir = work / "project" / spec.name
        self.state = work / "state"
        self.logs = work / "logs" / spec.name
        self.plans = work / "plans" / spec.name
        self.rec = report.stack(spec.name)
        self.step_no = 0

    # -- the project a user would have: Pulumi.yaml, __main__.py, the stack file, the virtualenv ---------------------
    def prepare(self) -> dict:
        shutil.rmtree(self.dir, ignore_errors=True)
        self.state.mkdir(parents=True, exist_ok=True)
        (self.dir / "stacks").mkdir(parents=True)
        for name in ("Pulumi.yaml", "__main__.py"):
            shutil.copy(ROOT / name, self.dir / name)
        (self.dir / ".venv").symlink_to(ROOT / ".venv")
        raw = yaml.safe_load((ROOT / self.spec.file).read_text())
        raw["config"][f"{NS}:charts"] = {"mirror": self.mirror}
        return raw

    def write_config(self, raw: dict) -> None:
        """The stack file a user keeps in git (no secrets: those are set with --secret below)."""
        self.stack_file().write_text(yaml.safe_dump(raw, sort_keys=False))

    def stack_file(self) -> Path:
        return self.dir / "stacks" / f"Pulumi.{self.spec.name}.yaml"

    def env(self) -> dict[str, str]:
        env = self.cluster.env()
        env.update({
            # not the virtualenv: the engine finds it from Pulumi.yaml (runtime virtualenv), as on a user's machine
            "PATH": f"{self.bin}:{env.get('PATH', '')}",
            "PULUMI_HOME": str(self.state.parent / "pulumi-home"),
            "PULUMI_BACKEND_URL": f"file://{self.state}",
            "PULUMI_CONFIG_PASSPHRASE": PASSPHRASE,
            "PULUMI_SKIP_UPDATE_CHECK": "true",
            "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
            "PULUMI_SKIP_CONFIRMATIONS": "true",
            "PULUMI_DEBUG_COMMANDS": "true",  # enables --event-log (the JSON engine events: URNs of failures)
            "PULUMI_DIY_BACKEND_NO_LEGACY_WARNING": "true",
            "PYTHONDONTWRITEBYTECODE": "1",
        })
        return env

    def fail(self, step: str, message: str) -> Failure:
        """Record a failure of this stack (no URN) in the report; the caller raises what this returns."""
        self.report.fail(self.spec.name, step, message)
        return Failure(f"{self.spec.name}: {message}")

    def pulumi(self, *args: str, step: str, expect_fail: bool = False, stdin: str | None = None,
               timeout: float = COMMAND_TIMEOUT_S) -> subprocess.CompletedProcess:
        self.step_no += 1
        self.logs.mkdir(parents=True, exist_ok=True)
        tag = f"{self.step_no:02d}-{step.replace(' ', '-')}"
        event_log = self.logs / f"{tag}.events.json"
        uses_events = args[0] in ("preview", "up", "destroy")
        cmd = [str(self.bin / "pulumi"), *args, "--stack", self.spec.name, "--non-interactive"]
        if uses_events:
            cmd += ["--event-log", str(event_log)]
        t0 = time.monotonic()
        try:
            proc = subprocess.run(cmd, cwd=self.dir, env=self.env(), text=True, capture_output=True, input=stdin,
                                  timeout=timeout)
        except subprocess.TimeoutExpired as err:
            (self.logs / f"{tag}.log").write_text(f"$ {' '.join(cmd)}\n{err.stdout or ''}\n{err.stderr or ''}")
            self.report.fail(self.spec.name, step, f"timed out after {timeout:.0f} s")
            raise Failure(f"{self.spec.name}: {step}: timed out after {timeout:.0f} s") from err
        seconds = time.monotonic() - t0
        (self.logs / f"{tag}.log").write_text(f"$ {' '.join(cmd)}\n{proc.stdout}\n{proc.stderr}")
        evts = events(event_log) if uses_events else []
        summary = next((e["summaryEvent"] for e in evts if "summaryEvent" in e), {})
        self.rec["steps"].append({"step": step, "command": " ".join(args[:1]), "seconds": round(seconds, 1),
                                  "exit": proc.returncode, "changes": summary.get("resourceChanges")})
        self.report.save()
        if proc.returncode != 0 and not expect_fail:
            found = failures_from(evts) or [(None, (proc.stderr or proc.stdout).strip()[-2000:])]
            for urn, message in found:
                self.report.fail(self.spec.name, step, message, urn)
            detail = "\n".join(f"  {urn or '(no URN)'}: {message[:600]}" for urn, message in found)
            raise Failure(f"{self.spec.name}: {step} exited {proc.returncode} (log {self.logs / tag}.log):\n{detail}")
        print(f"  {step}: {seconds:.0f} s", flush=True)
        return proc

    # -- the plan (offline, this project's own tool) of a config: the shapes of the fake nodes, the expected diff -------
    def offline_plan(self, raw: dict, label: str) -> Path:
        out = self.plans / label
        src = self.plans / f"Pulumi.{self.spec.name}.yaml"
        src.parent.mkdir(parents=True, exist_ok=True)
        src.write_text(yaml.safe_dump(raw, sort_keys=False))
        proc = subprocess.run([str(ROOT / ".venv" / "bin" / "python"), "-m", "components", "plan", str(src),
                               "--out", str(out)], cwd=ROOT, text=True, capture_output=True)
        if proc.returncode not in (0,):
            raise Failure(f"{self.spec.name}: offline plan ({label}) exited {proc.returncode}:\n"
                          f"{(proc.stdout + proc.stderr)[-3000:]}")
        return out

    def make_nodes(self, raw: dict, plans: list[Path]) -> None:
        """Fake nodes shaped like the plan's pools: the GPU node type the stack describes (labels, taints,
        nvidia.com/gpu, the RDMA device), as many as the largest plan needs at its maximum replicas plus one
        for a rolling update's surge; three system nodes for the operators."""
        gpu = raw["config"][f"{NS}:existing"]["gpuNodes"]
        count = max(expectations.gpu_nodes_needed(p) for p in plans) + 1
        extended = set().union(*(expectations.extended_resources(p) for p in plans))
        self.cluster.kubectl("delete", "nodes", "-l", "type=kwok", "--wait=false", check=False)
        capacity = {"cpu": str(gpu["vcpu"]), "memory": f"{int(gpu['ramGib'])}Gi", "pods": "110",
                    "ephemeral-storage": "3Ti", "nvidia.com/gpu": str(gpu["gpusPerNode"])}
        for res in extended - set(capacity):
            capacity[res] = "64"
        if gpu.get("fabric", "none") != "none":
            capacity[gpu.get("rdmaResource", "rdma/rdma_shared_device_a")] = "64"
        taints = gpu.get("taints", [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}])
        labels = {"nvidia.com/gpu.present": "true", **gpu.get("nodeSelector", {})}
        nodes = [node(f"gpu-{i}", labels, capacity, [{"effect": "NoSchedule", **t} for t in taints])
                 for i in range(count)]
        system = {"cpu": "64", "memory": "256Gi", "pods": "250", "ephemeral-storage": "1Ti"}
        nodes += [node(f"system-{i}", {"node-role.e2e/system": "true"}, system, []) for i in range(3)]
        self.cluster.apply(nodes)
        self.rec["nodes"] = {"gpu": count, "system": 3, "gpu_capacity": capacity}

    def cluster_prerequisites(self, raw: dict) -> None:
        """What the stack's docs say an existing cluster already has: the StorageClasses it names."""
        classes = expectations.storage_classes(raw["config"])
        self.cluster.apply([{"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                             "metadata": {"name": c}, "provisioner": "e2e.vllm-platform/kwok",
                             "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate",
                             "allowVolumeExpansion": True} for c in classes])

    def set_secrets(self, raw: dict) -> None:
        if self.spec.kubeconfig_secret:
            self.pulumi("config", "set", "--secret", "kubeconfig", step="config set --secret kubeconfig",
                        stdin=self.cluster.kubeconfig_path.read_text())
        if self.spec.hf_token:
            self.pulumi("config", "set", "--secret", "hfToken", step="config set --secret hfToken",
                        stdin="hf_e2e_not_a_real_token")
        clients = [c if isinstance(c, str) else c["name"]  # a name, or {name, priority} (tenant priority)
                   for c in raw["config"].get(f"{NS}:gateway", {}).get("clients", ["default"])]
        keys = {c: f"e2e-key-{c}-0123456789abcdef" for c in clients}
        self.pulumi("config", "set", "--secret", "gatewayApiKeys", step="config set --secret gatewayApiKeys",
                    stdin=json.dumps(keys))

    def run(self) -> None:
        try:
            self._run()
        except Failure:
            self.clean_up()
            raise

    def fresh_cluster(self) -> None:
        """Delete what destroy retains by design (the charts' CRDs, the program's InferencePool CRD), so the next
        stack starts on a cluster that never had this one: a retained CRD would make its `up` adopt, not create,
        with the 4.25 provider built here (docs/e2e.md)."""
        names = [c["metadata"]["name"] for c in self.cluster.get_json("customresourcedefinitions")["items"]]
        if names:
            self.cluster.kubectl("delete", "customresourcedefinitions", *names, "--wait=true", "--timeout=120s",
                                 check=False)

    def clean_up(self) -> None:
        """After a failure: `pulumi destroy` (best effort), then whatever is left of the stack's namespaces, so the
        next stack starts on an empty cluster as it would on a user's."""
        try:
            self.pulumi("destroy", "--yes", "--skip-preview", "--continue-on-error", step="destroy after failure",
                        expect_fail=True)
        except Failure:
            pass
        for ns in self.cluster.get_json("namespaces")["items"]:
            name = ns["metadata"]["name"]
            if name not in expectations.SYSTEM_NAMESPACES:
                self.cluster.kubectl("delete", "namespace", name, "--wait=true", "--timeout=120s", check=False)
        self.cluster.kubectl("delete", "clusterroles,clusterrolebindings,validatingwebhookconfigurations,"
                             "mutatingwebhookconfigurations,gatewayclasses", "-l",
                             "app.kubernetes.io/part-of=vllm-platform", check=False)
        self.fresh_cluster()

    def _run(self) -> None:
        t0 = time.monotonic()
        print(f"== {self.spec.name}", flush=True)
        raw = self.prepare()
        configs = [raw]
        for change in self.spec.changes:
            nxt = copy.deepcopy(configs[-1])
            change.edit(nxt["config"])
            configs.append(nxt)
        plans = [self.offline_plan(c, f"plan-{i}") for i, c in enumerate(configs)]
        self.make_nodes(raw, plans)
        self.cluster_prerequisites(raw)
        self.write_config(raw)
        self.pulumi("stack", "init", step="stack init")
        self.set_secrets(raw)
        policy = ["--policy-pack", str(ROOT / "policies")]
        self.pulumi("preview", *policy, step="preview")
        self.pulumi("up", "--yes", "--skip-preview", *policy, step="up")
        self.check_deployed()
        self.pulumi("preview", "--expect-no-changes", step="preview --expect-no-changes")
        for i, change in enumerate(self.spec.changes, start=1):
            # the change as a user makes it: `pulumi config set --path ...` edits the stack file; here the same
            # edit is written back (keeping the secure values the CLI stored)
            current = yaml.safe_load(self.stack_file().read_text())
            change.edit(current["config"])
            self.stack_file().write_text(yaml.safe_dump(current, sort_keys=False))
            preview = self.pulumi("preview", "--json", step=f"preview change {i}")
            expected = expectations.changed_names(plans[i - 1], plans[i])
            previewed = json.loads(preview.stdout)
            actual = expectations.previewed_changes(previewed)
            replaced = expectations.replacements(previewed)
            if replaced:
                raise self.fail(f"preview change {i}", f"change {change.title!r}: the real preview replaces "
                                                        f"{sorted(replaced)} (a weekly change may not)")
            self.rec.setdefault("changes", []).append({"change": change.title, "expected": sorted(expected),
                                                       "actual": sorted(actual)})
            if set(actual) != expected:
                msg = (f"change {change.title!r}: the real preview changes {sorted(set(actual) - expected)} "
                       f"beyond the offline plan's diff and misses {sorted(expected - set(actual))}")
                raise self.fail(f"preview change {i}", msg)
            self.pulumi("up", "--yes", "--skip-preview", *policy, step=f"up change {i}")
            self.pulumi("preview", "--expect-no-changes", step=f"preview --expect-no-changes after change {i}")
        self.pulumi("destroy", "--yes", "--skip-preview", step="destroy")
        left = expectations.leftovers(self.cluster, chart_crd_names())
        self.rec["left_after_destroy"] = left
        if left["unexpected"]:
            raise self.fail("destroy", f"left in the cluster after destroy: {left['unexpected']}")
        self.pulumi("stack", "rm", "--yes", step="stack rm")
        self.fresh_cluster()
        self.rec["seconds"] = round(time.monotonic() - t0, 1)
        self.rec["ok"] = True
        self.report.save()

    def check_deployed(self) -> None:
        """Every built-in workload Ready (Complete), every custom resource of a kind nothing here reconciles."""
        export = json.loads(self.pulumi("stack", "export", step="stack export").stdout)
        self.rec["resources"] = len(export.get("deployment", {}).get("resources", []))
        objects = expectations.state_objects(export)
        self.rec["workloads"] = sorted(f"{k} {ns}/{n}" for k, n, ns in objects if k in expectations.WORKLOADS)
        self.rec["never_reconciled"] = sorted(expectations.unreconciled_kinds(objects))
        problems = expectations.workload_problems(self.cluster, objects)
        for p in problems:
            self.report.fail(self.spec.name, "after up", p)
        if problems:
            raise Failure(f"{self.spec.name}: after up:\n  " + "\n  ".join(problems))


def run_lane(names: list[str], lane: Path, a, mirror: str, report: Report, pids: Path, ok: list[bool],
             clusters: list[ControlPlane]) -> None:
    """One control plane, its stacks one after another (each stack starts on a cluster with nothing of the last)."""
    cluster = ControlPlane(a.bin, lane, a.cache / "kwok" / "upstream-stages.yaml", pids)
    clusters.append(cluster)
    t0 = time.monotonic()
    try:
        cluster.start()
    except Exception as err:  # noqa: BLE001 - a lane whose control plane does not start fails its stacks
        for name in names:
            report.fail(name, "control plane", f"did not start: {err}")
        ok[0] = False
        return
    with report.lock:
        report.data.setdefault("control_plane_start_s", round(time.monotonic() - t0, 1))
    for name in names:
        try:
            StackRun(STACKS[name], cluster, a.bin, lane, mirror, report).run()
        except Failure as err:
            ok[0] = False
            print(f"FAILED {err}", file=sys.stderr, flush=True)
        except Exception as err:  # noqa: BLE001 - a harness error fails this stack, the lane goes on
            ok[0] = False
            report.fail(name, "harness", f"{type(err).__name__}: {err}")
            print(f"FAILED {name}: harness {type(err).__name__}: {err}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", type=Path, required=True, help="where scripts/e2e put the built tools")
    ap.add_argument("--cache", type=Path, required=True)
    ap.add_argument("--work", type=Path, help="work directory (replaced); default: CACHE/run")
    ap.add_argument("--stacks", default=",".join(STACKS), help=f"comma-separated, of {', '.join(STACKS)}")
    ap.add_argument("--lanes", type=int, default=2,
                    help="control planes side by side, each deploying its share of the stacks one after another "
                         "(default 2: a stack mostly waits on the engine and the API server)")
    ap.add_argument("--keep", action="store_true", help="leave the control plane(s) running at the end (debugging)")
    a = ap.parse_args(argv)
    work = (a.work or a.cache / "run").resolve()
    names = [n for n in a.stacks.split(",") if n]
    unknown = [n for n in names if n not in STACKS]
    if unknown:
        ap.error(f"--stacks: unknown {', '.join(unknown)}; one of {', '.join(STACKS)}")
    seconds = {**TYPICAL_S, **last_seconds(a.cache / "stack-seconds.json")}
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    report = Report(work / "report.json")
    report.data["tools"] = {p.name: [line.split() for line in p.read_text().splitlines() if line.strip()]
                            for p in sorted((a.cache / "times").glob("*"))}
    charts = work / "charts"
    write_mirror(charts)
    mirror, server = serve_directory(charts)
    pids = a.cache / "pids"
    ControlPlane.reap(pids)  # a run killed before its clean-up left its processes (pid files)
    for lane_pids in sorted(pids.glob("lane-*")) if pids.exists() else []:
        ControlPlane.reap(lane_pids)
    lanes = split_lanes(names, max(1, a.lanes), seconds)
    report.data["lanes"] = lanes
    print("lanes: " + " | ".join(", ".join(lane) for lane in lanes), flush=True)

    def _terminate(signum, _frame):
        raise SystemExit(128 + signum)  # runs the finally below: the control planes stop with the run
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGHUP, _terminate)
    ok = [True]
    clusters: list[ControlPlane] = []
    threads = []
    try:
        for i, lane in enumerate(lanes):
            # one lane: the work directory itself (the paths docs/e2e.md names); more: work/lane-N each
            lane_dir = work if len(lanes) == 1 else work / f"lane-{i}"
            lane_pids = pids if len(lanes) == 1 else pids / f"lane-{i}"
            t = threading.Thread(target=run_lane, args=(lane, lane_dir, a, mirror, report, lane_pids, ok, clusters),
                                 name=f"lane-{i}", daemon=True)
            t.start()
            threads.append(t)
        for t in threads:
            while t.is_alive():
                t.join(timeout=1)  # a short join: the signal handler runs in this thread between joins
    finally:
        report.data["seconds"] = round(time.time() - report.data["started"], 1)
        report.save()
        keep_seconds(a.cache / "stack-seconds.json", report)
        server.shutdown()
        if not a.keep:
            for cluster in clusters:
                cluster.stop()
    print(f"report: {report.path}")
    if report.data["failures"]:
        print("failures:", file=sys.stderr)
        for f in report.data["failures"]:
            print(f"  [{f['stack']} / {f['step']}] {f['urn'] or '(no URN)'}: {f['message'][:800]}", file=sys.stderr)
    return 0 if ok[0] else 1

if __name__ == "__main__":
    sys.exit(main())
