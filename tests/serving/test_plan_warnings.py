"""Warnings the plan gives a production reviewer about sizing: a fleet with no room above its declared load, an
MoE model whose low-concurrency estimates are known to be optimistic, and alerts that watch the percentile the
SLA names (docs/capacity.md)."""
from __future__ import annotations

import yaml

from components.cli import main
from components.config import parse
from components.offline.runner import load_stack_yaml, stack_file
from components.planning import plan_stack
from components.serving.observability import rules_spec


def _copy(tmp_path, stack: str, model_edit: dict) -> str:
    """A stack file copying `stack` with its first model's keys updated (nested dicts merged)."""
    raw = load_stack_yaml(stack_file(stack))
    model = raw["vllm-platform:models"][0]
    for k, v in model_edit.items():
        model[k] = {**model[k], **v} if isinstance(v, dict) and isinstance(model.get(k), dict) else v
    path = tmp_path / f"Pulumi.{stack}-copy.yaml"
    path.write_text(yaml.safe_dump({"config": raw}))
    return str(path)


def _plan_out(capsys, path: str) -> str:
    assert main(["plan", path, "--out", path + ".plan"]) == 0
    return capsys.readouterr().out


def test_a_production_fleet_planned_at_its_max_is_told_it_has_no_headroom(tmp_path, capsys):
    # 64 users at a knee of 17 (TP 4, the dense class's 10 % margin, p90) need 4 replicas: with replicas.max 4 the
    # fleet is already at its ceiling (the shipped stack now allows 6)
    out = _plan_out(capsys, _copy(tmp_path, "prod-llama70b-aws", {"replicas": {"min": 2, "max": 4}}))
    assert ("WARNING: NO HEADROOM in production: llama-70b needs 4 replica(s) for the declared load, its "
            "replicas.max: a spike above it queues with nowhere to scale and the gateway refuses requests beyond "
            "4 x 17; raise replicas.max") in out


def test_shipped_production_stacks_keep_room_above_their_load(capsys):
    for stack in ("prod-llama70b-aws", "prod-qwen72b-gcp", "prod-llama405b-aws", "prod-llama405b-fp8-h200-aws",
                  "prod-llama405b-onprem"):
        assert main(["plan", stack]) == 0
        out = capsys.readouterr().out
        assert "NO HEADROOM" not in out, stack


def test_the_fp8_405b_stack_keeps_two_whole_node_replicas(capsys):
    # TP 8 fills a p5en node, so a rollout replaces a replica in place (maxSurge 0): with one replica that
    # would be an outage; the stack holds two
    assert main(["plan", "prod-llama405b-fp8-h200-aws"]) == 0
    out = capsys.readouterr().out
    assert "SINGLE REPLICA" not in out
    assert "2 replica(s) on 2 node(s)" in out


def test_an_moe_model_is_flagged_as_an_optimistic_estimate(tmp_path, capsys):
    out = _plan_out(capsys, _copy(tmp_path, "prod-llama70b-aws", {"model": "gpt-oss-120b", "precision": "mxfp4"}))
    assert ("WARNING: ESTIMATE: llama-70b is a mixture-of-experts model; published measurements ran up to 3.7x slower "
            "per token than the capacity model estimates (Mixtral on vLLM's V0 engine), so its planning margin is the "
            "MoE rows' 120 % (docs/capacity.md#known-gaps)") in out
    assert main(["plan", "prod-llama70b-aws"]) == 0
    assert "ESTIMATE:" not in capsys.readouterr().out  # a dense model is not flagged


def _topology(stack: str, model_edit: dict):
    raw = {k.split(":", 1)[1]: v for k, v in load_stack_yaml(stack_file(stack)).items()}
    raw["models"][0] = {**raw["models"][0], **model_edit}
    return next(iter(plan_stack(parse(raw, secrets={"hfToken"})).values()))


def _latency_rules(t) -> dict:
    spec = rules_spec(t, "llm", "vllm", 3, "critical")
    return {r["alert"]: r for g in spec["groups"] for r in g["rules"] if "AboveSla" in r["alert"]}


def test_a_p99_sla_is_watched_at_the_p99():
    sla = {"ttftMs": 2000, "tpotMs": 30, "concurrency": 64}
    mean = _latency_rules(_topology("prod-llama70b-aws", {"sla": {**sla, "latencyPercentile": "mean"}}))
    tpot = mean["VllmTimePerOutputTokenAboveSla"]
    assert ") > 0.05) and on()" in tpot["expr"] and tpot["annotations"]["summary"].startswith("llama-70b: p95 ")
    assert "> 0.10) and on()" in mean["VllmTimeToFirstTokenAboveSla"]["expr"]
    assert "The plan sized 27.1 ms (mean) per token at a batch of 21" in tpot["annotations"]["description"]
    # the default SLA is p90: both alerts fire when more than 10 % of requests are over, and quote the p90 planned
    p90 = _latency_rules(_topology("prod-llama70b-aws", {}))
    tpot, ttft = p90["VllmTimePerOutputTokenAboveSla"], p90["VllmTimeToFirstTokenAboveSla"]
    assert ") > 0.10) and on()" in tpot["expr"] and ") > 0.10) and on()" in ttft["expr"]
    assert tpot["annotations"]["summary"].startswith("llama-70b: p90 per-request time per output token")
    assert "The plan sized 26.9 ms (p90) per token at a batch of 17" in tpot["annotations"]["description"]
    t = _topology("prod-llama70b-aws", {"sla": {**sla, "latencyPercentile": "p99"}})
    p99 = _latency_rules(t)
    tpot, ttft = p99["VllmTimePerOutputTokenAboveSla"], p99["VllmTimeToFirstTokenAboveSla"]
    assert ") > 0.01) and on()" in tpot["expr"] and ") > 0.01) and on()" in ttft["expr"]
    assert tpot["annotations"]["summary"].startswith("llama-70b: p99 per-request time per output token")
    assert ttft["annotations"]["description"].startswith("More than 1% of requests waited")
    # a p99 SLA sizes on the tail: TP 8 at a knee of 47 (p99 27.06 ms x 1.1, the dense margin, = 29.8 <= 30); the
    # alert quotes that tail at that batch
    assert (t.tensor_parallel_size, t.concurrency_per_replica, t.knee_tpot_tail_ms) == (8, 47, 27.06)
    assert "The plan sized 27.1 ms (p99) per token at a batch of 47" in tpot["annotations"]["description"]
