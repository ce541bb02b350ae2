"""planning.profile (docs/measurements.md "Profiling on the cluster"): the config, the shapes the Job measures and
their bounds, the Job and its ConfigMap, the entrypoint (components/profiling/sweep.py) run against the fake `vllm`
of tests/test_capacity_bench.py, and the refusal of a model no single node serves.

The stack is tests/planner/test_measured.py's: Llama-3.1-8B on an existing cluster of 8 x H100 nodes at
$98.32/node-hour, 1024 + 256 tokens."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from components.catalog.measured import read
from components.config import ConfigError, parse
from components.offline.runner import load_stack_yaml, project_values, stack_file
from components.planning import plan_stack
from components.profiling import sweep
from components.wiring import profile_plans, validated_plan
from tests.planner.test_measured import values
from tests.support.plans import ROOT, by_type, one, plan_config
from tests.test_capacity_bench import _up, gpu_machine  # noqa: F401  (the fake `vllm` and `nvidia-smi`)


def profiled(profile: dict | None = None, **sla):
    cfg = parse(values({"profile": {"enabled": True, **(profile or {})}}, **sla), {"hfToken"})
    plans, problems = profile_plans(cfg, plan_stack(cfg))
    assert problems == []
    return plans["chat"]


def _errors(v: dict) -> str:
    with pytest.raises(ConfigError) as e:
        validated_plan(parse(v, {"hfToken"}))
    return str(e.value)


# --- config ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("profile, message", [
    ({"maxMinutesPerShape": 40, "maxMinutes": 30},
     "planning.profile.maxMinutesPerShape: 40 is more than maxMinutes 30 (the whole Job's bound); raise maxMinutes to "
     "at least 40 or lower maxMinutesPerShape"),
    ({"candidates": 0}, "planning.profile.candidates: 0 is outside 1-8"),
    ({"maxMinutes": 5}, "planning.profile.maxMinutes: 5 is outside 10-720"),
    ({"maxMinutesPerShape": 300}, "planning.profile.maxMinutesPerShape: 300 is outside 10-240"),
    ({"enable": True}, "planning.profile.enable"),
])
def test_bad_profile_settings_name_the_field_and_the_fix(profile, message):
    with pytest.raises(ConfigError) as e:
        parse(values({"profile": {"enabled": True, **profile}}), {"hfToken"})
    assert message in str(e.value)


def test_a_profile_of_an_unknown_model_is_an_error_naming_the_models():
    msg = _errors(values({"profile": {"enabled": True, "models": ["chat", "chatt"]}}))
    assert "planning.profile.models[1]: 'chatt' is none of the stack's models (chat); list models[].name values" in msg


def test_profile_off_makes_no_job_and_no_plan():
    cfg = parse(values(), {"hfToken"})
    assert profile_plans(cfg, plan_stack(cfg)) == ({}, [])
    resources, _ = plan_config(values())
    assert not [r for r in by_type(resources, "kubernetes:batch/v1:Job") if r.name.endswith("-profile")]


# --- the shapes and bounds ------------------------------------------------------------------------------------

def test_the_job_measures_the_cheapest_single_node_shapes_on_the_models_pool():
    p = profiled()
    # the planner's three cheapest TPs on the planned H100 node, one per TP (measurements key on GPU, TP, PP)
    assert [(s.id, s.tp, s.pp) for s in p.shapes] == [("h100-tp1", 1, 1), ("h100-tp2", 2, 1), ("h100-tp4", 4, 1)]
    assert p.gpus == 4 and p.instance_type == "existing-h100x8"
    for s in p.shapes:
        args = list(s.args)
        assert args[args.index("--tensor-parallel-size") + 1] == str(s.tp)
        # the sweep's top level is the engine's --max-num-seqs: a knee above the estimate can be measured
        assert args[args.index("--max-num-seqs") + 1] == str(s.levels[-1]) and s.levels[:4] == (1, 2, 4, 8)
        assert args[args.index("--port") + 1] == "8000"
    assert [s.id for s in profiled({"candidates": 1}).shapes] == ["h100-tp1"]


def test_the_plan_states_the_shapes_the_time_bound_and_the_cost_bound():
    lines = profiled({"maxMinutes": 90, "maxMinutesPerShape": 20}).lines()
    assert lines[0].startswith("planning.profile chat: `pulumi up` runs Job profile-chat on the existing-h100x8 pool "
                               "(4 of 8 h100 GPUs) measuring 3 shape(s) at 1024+256 tokens: h100 TP 1 on "
                               "existing-h100x8 (concurrency 1-")
    # 90 min of one $98.32/h node: $147.48; 4 GPUs x 1.5 h
    assert ("bounds: 20 min per shape, 90 min in all (activeDeadlineSeconds 5400); cost bound $147.48: one "
            "existing-h100x8 at $98.32/h for 1.5 h (6 GPU-h asked)") in lines[1]
    # an existing cluster: the stack does not size its nodes, so it promises no pool room
    assert lines[1].endswith("the stack does not size an existing cluster's nodes: the Job waits, within its "
                             "deadline, for 4 free GPUs on one of them")
    assert "/models/profiles/chat/rows.json" in lines[2]
    late = profiled({"maxMinutes": 40, "maxMinutesPerShape": 20}).lines()[1]
    assert "3 x 20 min is more than that: the last shapes may not start" in late


def test_the_plan_prints_the_profile_before_up(tmp_path):
    from components.offline.runner import plan_stack_offline
    import yaml
    stack = tmp_path / "Pulumi.profiled.yaml"
    stack.write_text(yaml.safe_dump({"config": {f"vllm-platform:{k}": v for k, v in values(
        {"profile": {"enabled": True, "candidates": 1, "maxMinutes": 60, "maxMinutesPerShape": 30}}).items()}}))
    warnings = plan_stack_offline(str(stack)).warnings
    assert ("planning.profile chat: bounds: 30 min per shape, 60 min in all (activeDeadlineSeconds 3600); cost bound "
            "$98.32: one existing-h100x8 at $98.32/h for 1 h (1 GPU-h asked)") in " ".join(warnings)


def test_a_model_no_single_node_serves_is_refused_with_the_reason():
    raw = project_values(load_stack_yaml(stack_file("prod-llama405b-aws")))
    raw["planning"] = {"profile": {"enabled": True}}
    cfg = parse(raw, {"hfToken", "gatewayApiKeys"}, base_dir=ROOT / "stacks")
    topologies = plan_stack(cfg)
    assert topologies["llama-405b"].pipeline_parallel_size == 2  # TP 8 x PP 2 on two p5.48xlarge
    plans, problems = profile_plans(cfg, topologies)
    assert plans == {}
    (problem,) = problems
    assert problem.startswith("planning.profile: models[0] (llama-405b) cannot be profiled: no candidate shape on "
                              "p5.48xlarge runs on one node (h100 TP 8 x PP 2 on p5.48xlarge: TP 8 x PP 2 spans 2 "
                              "nodes; the Job starts one node's engine (8 GPUs)")
    assert problem.endswith("list the models a single node serves under planning.profile.models, or measure the "
                            "deployed replica with bench/bench_serve.py --base-url (docs/measurements.md)")


# --- the Job -----------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def profiled_resources():
    resources, _ = plan_config(values({"profile": {"enabled": True}}))
    return resources


@pytest.fixture(scope="module")
def rendered(profiled_resources):
    resources = profiled_resources
    job = one(resources, "kubernetes:batch/v1:Job", "vllm-chat-profile")
    cm = one(resources, "kubernetes:core/v1:ConfigMap", "vllm-chat-profile-script")
    (deployment,) = [r for r in by_type(resources, "kubernetes:apps/v1:Deployment") if r.name == "vllm-chat-deployment"]
    return job.inputs, cm.inputs, deployment.inputs


def test_the_job_runs_once_within_its_bound_on_the_models_gpu_pool(rendered):
    job, _, deployment = rendered
    spec, pod = job["spec"], job["spec"]["template"]["spec"]
    assert spec["backoffLimit"] == 0 and spec["activeDeadlineSeconds"] == 7200  # maxMinutes 120 (the default)
    assert spec["ttlSecondsAfterFinished"] == 7 * 24 * 3600
    assert pod["restartPolicy"] == "Never"
    assert job["metadata"]["name"] == "profile-chat"
    assert job["metadata"]["annotations"]["pulumi.com/skipAwait"] == "true"
    served = deployment["spec"]["template"]["spec"]
    # where the serving pods land: the pool's tolerations and node affinity
    assert pod["tolerations"] == served["tolerations"] and pod.get("affinity") == served.get("affinity")
    (main,) = pod["containers"]
    assert main["resources"]["limits"]["nvidia.com/gpu"] == "4"  # the largest shape: TP 4
    assert main["command"] == ["python3", "/etc/vllm-platform/profile/sweep.py", "/etc/vllm-platform/profile/spec.json"]
    assert main["image"] == served["containers"][0]["image"]
    # the HF token by reference to the Secret the platform makes from the hfToken Pulumi secret, never a value
    (token,) = [e for e in main["env"] if e["name"] == "HF_TOKEN"]
    assert token == {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "HF_TOKEN"}}}


def test_the_job_mounts_the_model_cache_where_the_serving_pods_do(rendered):
    job, cm, deployment = rendered
    pod = job["spec"]["template"]["spec"]
    served = deployment["spec"]["template"]["spec"]

    def cache_path(p):
        return [m["mountPath"] for m in p["containers"][0]["volumeMounts"] if m["name"] == "model-cache"]

    assert cache_path(pod) == cache_path(served) == ["/models"]
    assert [v for v in pod["volumes"] if v["name"] == "model-cache"] == \
        [v for v in served["volumes"] if v["name"] == "model-cache"]
    # the pod's clock first (sweep.py counts the time from it), then the same cache gate before the engine starts (the
    # weights are there), then the results directory made writable
    assert pod["initContainers"][0]["name"] == "profile-clock"
    assert pod["initContainers"][1]["command"] == served["initContainers"][0]["command"]
    assert "mkdir -p /models/profiles/chat" in pod["initContainers"][2]["command"][-1]
    spec = json.loads(cm["data"]["spec.json"])
    assert spec["out_dir"] == "/models/profiles/chat"
    # the serving pods' engine arguments the cache adds (the loader), after each shape's own
    served_args = served["containers"][0]["args"]
    tail = served_args[served_args.index("--port") + 2:served_args.index("--shutdown-timeout")]
    assert tail and all(s["args"][-len(tail):] == tail for s in spec["shapes"])


def test_the_configmap_ships_the_entrypoint_as_it_is(rendered):
    job, cm, _ = rendered
    assert cm["data"]["sweep.py"] == Path(sweep.__file__).read_text()
    assert cm["metadata"]["name"] == "profile-chat"
    assert {"name": "profile", "configMap": {"name": "profile-chat"}} in job["spec"]["template"]["spec"]["volumes"]
    assert [s["id"] for s in json.loads(cm["data"]["spec.json"])["shapes"]] == ["h100-tp1", "h100-tp2", "h100-tp4"]


def test_the_entrypoint_imports_nothing_the_vllm_image_lacks():
    import ast
    tree = ast.parse(Path(sweep.__file__).read_text())
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 0}
    import sys
    assert imported - {"__future__"} <= set(sys.stdlib_module_names)
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level]  # no relative imports


# --- the entrypoint against the fake `vllm` -------------------------------------------------------------------------

def last_block(log: str) -> list[dict]:
    """The rows of the last BEGIN/END block of a log (the sweep prints one after every level)."""
    return json.loads(log.rsplit(f"{sweep.BEGIN} chat ---\n", 1)[1].split(f"\n{sweep.END}")[0])


def run_entrypoint(tmp: Path, port: int, plan, capsys) -> tuple[int, str, Path]:
    """The Job's entrypoint on the spec the ConfigMap would carry, its results under tmp (not /models), the engine on
    `port` (a free one: tests run side by side)."""
    spec = plan.spec(("--load-format", "auto"))
    spec["out_dir"] = str(tmp / "profiles" / "chat")
    for s in spec["shapes"]:
        s["args"] = sweep.with_port(s["args"], port)
        s["levels"] = s["levels"][:6]  # 1 ... 32: the fake answers at once; the full sweep only adds runs
    path = tmp / "spec.json"
    path.write_text(json.dumps(spec))
    rc = sweep.main([str(path)])
    return rc, capsys.readouterr().out, Path(spec["out_dir"])


def test_the_entrypoint_measures_each_shape_and_writes_rows_the_stack_reads(gpu_machine, monkeypatch, capsys):
    tmp, port = gpu_machine
    monkeypatch.setenv("FAKE_GPUS", "2")  # a pod with 2 GPUs: TP 4 cannot start
    plan = profiled()
    rc, out, results = run_entrypoint(tmp, port, plan, capsys)
    assert rc == 0
    served = [json.loads(line) for line in (tmp / "served.jsonl").read_text().splitlines()]
    # each shape's exact arguments, then the cache's, on the port given; one engine at a time, stopped after
    assert [a[a.index("--tensor-parallel-size") + 1] for a in served] == ["1", "2"]
    assert served[0] == ["serve", *sweep.with_port(list(plan.shapes[0].args), port), "--load-format", "auto",
                         "--host", "127.0.0.1"]
    assert not _up(port)
    shapes = read(results / "rows.json", "rows.json")
    assert [(s.accelerator, s.tp, s.pp, s.model, s.precision) for s in shapes] == \
        [("h100", 1, 1, "llama-3.1-8b", "bf16"), ("h100", 2, 1, "llama-3.1-8b", "bf16")]
    assert [p.concurrency for p in shapes[0].points] == [1, 2, 4, 8, 16, 32]
    p = shapes[0].points[2]  # the fake's figures at concurrency 4, at the SLA's lengths
    assert (p.prompt_tokens, p.output_tokens, p.tpot_ms, p.ttft_ms) == (1024, 256, 64.0, 304.0)
    assert read(results / "h100-tp2.json", "h100-tp2.json")[0].tp == 2  # one rows file per shape too
    summary = json.loads((results / "summary.json").read_text())
    assert [(s["id"], s["status"]) for s in summary["shapes"]] == \
        [("h100-tp1", "measured"), ("h100-tp2", "measured"), ("h100-tp4", "skipped")]
    assert summary["shapes"][2]["reason"] == "TP 4 x PP 1 needs 4 GPU(s); `nvidia-smi --list-gpus` shows 2 in the pod"
    # the log carries the same rows between markers (kubectl logs, docs/measurements.md): its last block
    assert last_block(out) == json.loads((results / "rows.json").read_text())


def test_a_shape_that_does_not_start_is_recorded_and_the_job_fails_without_rows(gpu_machine, monkeypatch, capsys):
    tmp, port = gpu_machine
    monkeypatch.setenv("FAKE_VLLM_CRASH", "1")
    rc, out, results = run_entrypoint(tmp, port, profiled({"candidates": 1}), capsys)
    assert rc == 1 and not (results / "rows.json").exists()
    (shape,) = json.loads((results / "summary.json").read_text())["shapes"]
    assert shape["status"] == "failed" and "`vllm serve` exited with 1" in shape["reason"]
    assert "CUDA out of memory" in shape["reason"]


def test_a_shape_past_its_bound_keeps_the_levels_it_measured(gpu_machine, monkeypatch, capsys):
    tmp, port = gpu_machine
    plan = profiled({"candidates": 1})
    ticks = iter(range(0, 100_000, 400))  # each read of the Job's clock moves it 400 s on: the 30-min bound ends
    monkeypatch.setattr(sweep, "now", lambda: next(ticks))  # the sweep at 2,600 s, after 3 levels
    rc, out, results = run_entrypoint(tmp, port, plan, capsys)
    (shape,) = json.loads((results / "summary.json").read_text())["shapes"]
    assert rc == 0 and shape["status"] == "bound" and shape["reason"].startswith("stopped at the shape's time bound")
    assert [r["concurrency"] for r in shape["rows"]] == [1, 2, 4] and not _up(port)
    assert shape["reason"] == "stopped at the shape's time bound before concurrency 8"
    assert [s.points[-1].concurrency for s in read(results / "rows.json", "rows.json")] == [4]


def _aws_stack(profile: dict | None):
    raw = project_values(load_stack_yaml(stack_file("prod-llama70b-aws")))
    if profile:
        raw["planning"] = {"profile": profile}
    return parse(raw, {"hfToken", "gatewayApiKeys"}, base_dir=ROOT / "stacks")


def test_the_pool_has_room_for_the_job_only_while_it_runs():
    from components.wiring import cluster_args

    def pools(cfg):
        return {p.name: (p.min_nodes, p.desired_nodes, p.max_nodes) for p in cluster_args(cfg, plan_stack(cfg)).pools}

    planned = pools(_aws_stack(None))
    profiling = pools(_aws_stack({"enabled": True}))
    # one node more at the maximum (the autoscaler adds it for the Job's pending pod and removes it once idle);
    # the minimum and the desired size stay the plan's
    assert {k: (lo, want, top + 1) for k, (lo, want, top) in planned.items()} == profiling
    # the Job measures shapes of one p5.48xlarge node; the multi-node ones the planner also ranks are not among them
    cfg = _aws_stack({"enabled": True})
    plans, _ = profile_plans(cfg, plan_stack(cfg))
    shapes = plans["llama-70b"].shapes
    assert shapes and all(s.pp == 1 and s.tp <= 8 for s in shapes) and plans["llama-70b"].gpus_per_node == 8
    assert "the pool's maximum has one node more while the profile is on" in plans["llama-70b"].lines()[1]


def test_a_shape_whose_measurement_misses_the_sla_counts_as_measured(tmp_path):
    """A measurement that refuses a shape (it misses the SLA at its lowest concurrency) is a result: the profile does
    not run that shape again (else it would, on every `pulumi up`)."""
    rows = tmp_path / "rows.json"
    rows.write_text(json.dumps([
        {"id": "chat-h100-tp1-c1", "gpu": "h100", "model": "llama-3.1-8b", "precision": "bf16", "vllm": "0.31.0",
         "tp": 1, "pp": 1, "prompt_tokens": 1024, "output_tokens": 256, "mode": "closed", "concurrency": 1,
         "tpot_ms": 50.0, "ttft_ms": 300.0, "output_tps": 20.0, "total_tps": 100.0, "max_model_len": 8192,
         "source": "test", "date": "2026-12-06",
         "notes": "p99 TPOT 60.0 ms, p99 TTFT 900.0 ms, 32 requests, 0 failed"}]))
    cfg = parse(values({"profile": {"enabled": True}, "measurements": [str(rows)]}), {"hfToken"})
    p = profile_plans(cfg, plan_stack(cfg))[0]["chat"]
    assert [s.id for s in p.shapes] == ["h100-tp2", "h100-tp4"] and p.measured == ("h100 TP 1 on existing-h100x8",)


def test_a_job_ended_at_its_deadline_keeps_the_shapes_it_finished(gpu_machine, monkeypatch, capsys):
    """Kubernetes ends the Job at activeDeadlineSeconds (SIGKILL, nothing runs after): the rows of every finished
    shape are already on the cache volume."""
    tmp, port = gpu_machine
    monkeypatch.setenv("FAKE_GPUS", "2")
    real = sweep.profile_shape
    shapes_done = []

    def killed_on_the_second(spec, shape, *a):
        if shapes_done:
            raise SystemExit(137)
        shapes_done.append(shape["id"])
        return real(spec, shape, *a)

    monkeypatch.setattr(sweep, "profile_shape", killed_on_the_second)
    with pytest.raises(SystemExit):
        run_entrypoint(tmp, port, profiled({"candidates": 2}), capsys)
    shapes = read(tmp / "profiles" / "chat" / "rows.json", "rows.json")
    assert [(s.tp, len(s.points)) for s in shapes] == [(1, 6)]


# --- the SRE review: the serving pods first, results kept, the engine private -------------------------------------

PRIORITY_CLASS = "kubernetes:scheduling.k8s.io/v1:PriorityClass"


def test_the_profile_pod_never_takes_gpus_a_serving_pod_needs(profiled_resources, rendered):
    """A pending profile pod must not take the GPUs a rolling update frees (maxSurge 0 / maxUnavailable 1 on a pool
    with no room), else `pulumi up` waits up to maxMinutes: the pod runs below the serving pods' priority (0), which
    preempt it, and preempts nothing."""
    job, _, deployment = rendered
    (pc,) = by_type(profiled_resources, PRIORITY_CLASS)  # one per stack
    pod = job["spec"]["template"]["spec"]
    assert pod["priorityClassName"] == pc.inputs["metadata"]["name"] == "vllm-platform-profile-vllm"
    assert pc.inputs["preemptionPolicy"] == "Never" and pc.inputs["globalDefault"] is False
    # below the serving pods (no class: 0), not below cluster-autoscaler's expendable cutoff (-10): an expendable pod
    # adds no node, and the pool's one extra node is there for this pod
    assert -10 <= pc.inputs["value"] < 0
    assert "priorityClassName" not in deployment["spec"]["template"]["spec"]
    assert "preempt" in pc.inputs["description"]


def test_no_profile_no_priority_class():
    resources, _ = plan_config(values())
    assert by_type(resources, PRIORITY_CLASS) == []


def test_the_autoscalers_leave_the_profile_node_alone(rendered):
    from components.serving.redis import NO_CONSOLIDATION
    job, _, _ = rendered
    annotations = job["spec"]["template"]["metadata"]["annotations"]
    assert annotations == NO_CONSOLIDATION
    assert annotations == {"cluster-autoscaler.kubernetes.io/safe-to-evict": "false",
                           "karpenter.sh/do-not-disrupt": "true"}


def test_the_plan_warns_where_the_pool_cannot_grow_for_the_job():
    # an existing cluster: the stack does not size its nodes
    line = profiled().lines()[-1]
    assert line.startswith("planning.profile chat: cloud existing: the stack does not size the cluster's GPU nodes: "
                           "the profile pod runs only on GPUs no serving pod uses (PriorityClass "
                           "vllm-platform-profile-vllm")
    assert "a serving pod that needs its GPUs (a rolling update with no spare node) preempts it" in line
    # EKS on demand: the pool grows for the Job, no such line
    cfg = _aws_stack({"enabled": True})
    topologies = plan_stack(cfg)
    plans, _ = profile_plans(cfg, topologies)
    assert not [x for x in plans["llama-70b"].lines() if "runs only on GPUs no serving pod uses" in x]
    # EKS on a reservation or a Capacity Block: no node more to be had
    for kind in ("reservation", "capacityBlock"):
        raw = project_values(load_stack_yaml(stack_file("prod-llama70b-aws")))
        raw["planning"] = {"profile": {"enabled": True}}
        raw["aws"] = {**raw["aws"], "capacityType": kind, "capacityReservations": {
            t.instance_type: "cr-0123456789abcdef0" for t in topologies.values()}}
        cfg = parse(raw, {"hfToken", "gatewayApiKeys"}, base_dir=ROOT / "stacks")
        plans, problems = profile_plans(cfg, plan_stack(cfg))
        assert problems == []
        assert plans["llama-70b"].lines()[-1].startswith(
            f"planning.profile llama-70b: aws.capacityType {kind}: the reserved capacity holds no node more for the "
            f"Job: the profile pod runs only on GPUs no serving pod uses")


def test_a_profile_on_a_node_local_cache_is_refused():
    """modelCache.kind nvme: the rows would sit on the local disk of the node the autoscaler removes once idle."""
    v = values({"profile": {"enabled": True}})
    v["modelCache"] = {"kind": "nvme"}
    cfg = parse(v, {"hfToken"})
    plans, problems = profile_plans(cfg, plan_stack(cfg))
    assert plans == {}
    (problem,) = problems
    assert problem.startswith("planning.profile.enabled: true with modelCache.kind nvme: the Job writes its rows to "
                              "the model cache, here each node's local NVMe, which goes with the node")
    assert "set modelCache.kind: rwx" in problem and "planning.profile.enabled: false" in problem
    with pytest.raises(ConfigError) as e:
        validated_plan(cfg)
    assert "planning.profile.enabled: true with modelCache.kind nvme" in str(e.value)


def test_the_engine_answers_only_inside_the_pod(gpu_machine, monkeypatch, capsys):
    """No API key on the profile's engine: it binds 127.0.0.1, and the bench asks it there."""
    tmp, port = gpu_machine
    rc, out, _ = run_entrypoint(tmp, port, profiled({"candidates": 1}), capsys)
    assert rc == 0
    (served,) = [json.loads(line) for line in (tmp / "served.jsonl").read_text().splitlines()]
    assert served[served.index("--host") + 1] == "127.0.0.1" and served.count("--host") == 1
    benches = [line for line in out.splitlines() if line.startswith("vllm bench serve")]
    assert benches and all(f"--base-url http://127.0.0.1:{port} " in b for b in benches)
    assert "localhost" not in "\n".join(benches)
    # a --host in the shape's arguments is replaced, not doubled
    assert sweep.with_host(["m", "--host", "0.0.0.0", "--port", "8000"]) == \
        ["m", "--host", "127.0.0.1", "--port", "8000"]


def _bench_hook(monkeypatch, at: int, action):
    """`action()` when the sweep starts `vllm bench serve` at concurrency `at`."""
    real = sweep.subprocess.run

    def run(cmd, *a, **kw):
        if "--max-concurrency" in cmd and cmd[cmd.index("--max-concurrency") + 1] == str(at):
            action()
        return real(cmd, *a, **kw)

    monkeypatch.setattr(sweep.subprocess, "run", run)


def test_a_job_killed_mid_shape_keeps_every_level_it_finished(gpu_machine, monkeypatch, capsys):
    """SIGKILL (nothing runs after) during concurrency 8 of the first shape: levels 1, 2 and 4 are on the cache volume
    and in the log already."""
    tmp, port = gpu_machine

    def killed():
        raise SystemExit(137)

    _bench_hook(monkeypatch, 8, killed)
    with pytest.raises(SystemExit):
        run_entrypoint(tmp, port, profiled({"candidates": 2}), capsys)
    out = capsys.readouterr().out
    results = tmp / "profiles" / "chat"
    rows = json.loads((results / "rows.json").read_text())
    assert [r["concurrency"] for r in rows] == [1, 2, 4]
    assert [r["concurrency"] for r in json.loads((results / "h100-tp1.json").read_text())] == [1, 2, 4]
    (shape,) = json.loads((results / "summary.json").read_text())["shapes"]
    assert shape["status"] == "running" and len(shape["rows"]) == 3
    assert out.count(sweep.BEGIN) == 3 and last_block(out) == rows  # one block per level, the last is the result
    assert not _up(port)


def test_sigterm_stops_the_engine_keeps_the_rows_and_fails_the_job(gpu_machine, monkeypatch, capsys):
    """The Job's deadline (or a preemption) sends the script, PID 1, SIGTERM: it stops the engine, writes what
    finished, says where it stopped and exits non-zero."""
    import os
    import signal
    tmp, port = gpu_machine
    monkeypatch.setenv("FAKE_GPUS", "2")

    class Unhandled(Exception):
        pass

    def unhandled(*_):  # the test's own: were the script to install none, this (not the worker's death) fails it
        raise Unhandled()

    before = signal.signal(signal.SIGTERM, unhandled)
    try:
        _bench_hook(monkeypatch, 8, lambda: os.kill(os.getpid(), signal.SIGTERM))
        rc, out, results = run_entrypoint(tmp, port, profiled({"candidates": 2}), capsys)
        assert signal.getsignal(signal.SIGTERM) is unhandled  # the handler is the script's only while it runs
    finally:
        signal.signal(signal.SIGTERM, before)
    assert rc == 143 and not _up(port)
    rows = json.loads((results / "rows.json").read_text())
    assert [r["concurrency"] for r in rows] == [1, 2, 4] and last_block(out) == rows
    summary = json.loads((results / "summary.json").read_text())
    assert [(s["id"], s["status"]) for s in summary["shapes"]] == [("h100-tp1", "terminated"), ("h100-tp2", "skipped")]
    assert summary["shapes"][0]["reason"].startswith("SIGTERM during concurrency 8")
    assert summary["shapes"][1]["reason"] == "not started: SIGTERM" and summary["stopped"].startswith("SIGTERM")
    served = [json.loads(line) for line in (tmp / "served.jsonl").read_text().splitlines()]
    assert len(served) == 1  # the second shape's engine never started


def test_the_scripts_bound_counts_the_time_the_pod_spent_before_it(tmp_path, capsys):
    spec = {"max_minutes": 60}
    start = tmp_path / "started"
    start.write_text("1000000\n")
    env = {sweep.DEADLINE_ENV: "3600", sweep.START_ENV: str(start)}
    # 50 min after the pod's first init container: 10 min of the deadline left, 2 of them to stop the engine
    assert sweep.job_budget_s(spec, env, 1_000_000 + 3000) == 3600 - 3000 - 120
    assert sweep.job_budget_s(spec, {}, 5.0) == 3600 - 120  # outside a pod: the spec's bound from now
    assert sweep.job_budget_s(spec, {sweep.START_ENV: str(tmp_path / "none")}, 5.0) == 3600 - 120
    assert "no pod start time" in capsys.readouterr().out


def test_a_pod_that_waited_out_its_deadline_starts_no_shape(gpu_machine, monkeypatch, capsys):
    import time
    tmp, port = gpu_machine
    start = tmp / "started"
    start.write_text(f"{int(time.time()) - 59 * 60}\n")  # the cache gate waited 59 of the 60 minutes
    monkeypatch.setenv(sweep.DEADLINE_ENV, "3600")
    monkeypatch.setenv(sweep.START_ENV, str(start))
    rc, _, results = run_entrypoint(tmp, port, profiled({"candidates": 1, "maxMinutes": 60}), capsys)
    (shape,) = json.loads((results / "summary.json").read_text())["shapes"]
    assert rc == 1 and shape["status"] == "skipped" and "bound is spent" in shape["reason"]
    assert not (tmp / "served.jsonl").exists()


def test_the_job_gives_the_script_its_deadline_and_the_pods_start(rendered):
    job, _, _ = rendered
    pod = job["spec"]["template"]["spec"]
    (main,) = pod["containers"]
    env = {e["name"]: e.get("value") for e in main["env"]}
    assert env[sweep.DEADLINE_ENV] == str(int(job["spec"]["activeDeadlineSeconds"])) == "7200"
    clock = pod["initContainers"][0]  # before the cache gate: its wait counts
    assert clock["command"][-1] == f"date +%s > {env[sweep.START_ENV]}"
    (mount,) = clock["volumeMounts"]
    assert env[sweep.START_ENV].startswith(mount["mountPath"] + "/")
    assert mount in main["volumeMounts"]
    assert {"name": mount["name"], "emptyDir": {"sizeLimit": "20Gi"}} in pod["volumes"]
    # room to stop the engine on SIGTERM before the kubelet's SIGKILL
    assert pod["terminationGracePeriodSeconds"] > sweep.STOP_GRACE_S


def test_the_docs_take_the_last_rows_block_and_say_the_log_goes_with_the_node(gpu_machine, monkeypatch, capsys):
    import subprocess
    docs = (ROOT / "docs" / "measurements.md").read_text()
    section = docs.split("## Profiling on the cluster")[1].split("\n## ")[0]
    assert "keeps its log for" not in section and "the Job and its log go" not in section
    assert "the pod and its log go with it" in section and "The rows on the cache volume are what lasts" in section
    assert "pulumi up --replace" in section
    (awk,) = [line.strip() for line in section.splitlines() if line.strip().startswith("| awk ")]
    tmp, port = gpu_machine
    rc, out, results = run_entrypoint(tmp, port, profiled({"candidates": 1}), capsys)
    assert rc == 0 and out.count(sweep.BEGIN) == 6
    command = awk[1:].split(" > stacks/")[0].strip()  # the docs' command, writing to stdout
    taken = subprocess.run(["sh", "-c", command], input=out, capture_output=True, text=True, check=True)
    assert json.loads(taken.stdout) == json.loads((results / "rows.json").read_text())
