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
def rendered():
    resources, _ = plan_config(values({"profile": {"enabled": True}}))
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
    # the same cache gate before the engine starts (the weights are there), then the results directory made writable
    assert pod["initContainers"][0]["command"] == served["initContainers"][0]["command"]
    assert "mkdir -p /models/profiles/chat" in pod["initContainers"][1]["command"][-1]
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
    assert served[0] == ["serve", *sweep.with_port(list(plan.shapes[0].args), port), "--load-format", "auto"]
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
    # the log carries the same rows between markers (kubectl logs, docs/measurements.md)
    logged = out.split(f"{sweep.BEGIN} chat ---\n")[1].split(f"\n{sweep.END}")[0]
    assert json.loads(logged) == json.loads((results / "rows.json").read_text())


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
