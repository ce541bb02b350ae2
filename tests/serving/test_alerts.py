"""The SLA alerts as Prometheus evaluates them: the PrometheusRule objects every shipped stack plans, run
through `promtool test rules` against synthetic series named and labelled as vLLM, Ray Serve and
kube-state-metrics publish them. For every alert a healthy fleet does not fire and a breached one does.

promtool comes from the Debian package `prometheus`, which scripts/test (the README's test command) installs.
Without it this module fails rather than skips; VLLM_PLATFORM_SKIP_PROMTOOL=1 skips it on a workstation that
cannot install it.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest
import yaml

from components import metrics
from components.offline.runner import stack_names
from tests.support.plans import ROOT, planned
from tests.support.serving import objs, topology

ALERTS = {"VllmTimeToFirstTokenAboveSla", "VllmTimePerOutputTokenAboveSla", "VllmQueueHighAtMaxReplicas",
          "VllmQueueHighScaleUpStalled", "VllmKvCacheNearFull", "VllmMetricsAbsent"}
STEP_S = 60
# vLLM 0.31's bucket bounds as its /metrics shows them (vllm/v1/metrics/loggers.py), written out here rather
# than read from components/metrics.py so that a wrong table there fails below.
_TOKEN_LE = ("0.01", "0.025", "0.05", "0.075", "0.1", "0.15", "0.2", "0.3", "0.4", "0.5", "0.75", "1.0", "2.5",
             "5.0", "7.5", "10.0", "20.0", "40.0", "80.0")
VLLM_BUCKETS = {
    "time_to_first_token_seconds": ("0.001", "0.005", "0.01", "0.02", "0.04", "0.06", "0.08", "0.1", "0.25",
                                    "0.5", "0.75", "1.0", "2.5", "5.0", "7.5", "10.0", "20.0", "40.0", "80.0",
                                    "160.0", "640.0", "2560.0"),
    "request_time_per_output_token_seconds": _TOKEN_LE,
    "inter_token_latency_seconds": _TOKEN_LE,
}


def promtool() -> str:
    found = shutil.which("promtool")
    if found:
        return found
    if os.environ.get("VLLM_PLATFORM_SKIP_PROMTOOL") == "1":
        pytest.skip("promtool not installed and VLLM_PLATFORM_SKIP_PROMTOOL=1")
    pytest.fail("promtool not found: install the Debian package `prometheus` "
                "(apt-get install -y --no-install-recommends prometheus), as scripts/test does")


def minutes(duration: str) -> int:
    m = re.fullmatch(r"(\d+)m", duration)
    assert m, f"for: {duration!r} is not in minutes"
    return int(m.group(1))


class Fleet:
    """Synthetic series for one model, spelt the way the exporters publish them."""

    def __init__(self, rule_obj: dict, t):
        self.ns, self.model, self.t = rule_obj["metadata"]["namespace"], t.served_model_name, t
        self.runtime = "ray" if t.multi_node else "vllm"
        self.sel = f'namespace="{self.ns}",model_name="{self.model}"'

    def name(self, metric: str, suffix: str = "") -> str:
        return metrics.name(metric, self.runtime, suffix)

    def histogram(self, metric: str, per_min: dict[float, int]) -> list[dict]:
        """Observations a minute by value (`{seconds: count}`), counted into vLLM's REAL bucket bounds, spelt as
        prometheus_client exposes them on /metrics."""
        out = [{"series": f'{self.name(metric, "_bucket")}{{{self.sel},le="{le}"}}',
                "values": f"0+{sum(n for v, n in per_min.items() if le == '+Inf' or v <= float(le))}x90"}
               for le in VLLM_BUCKETS[metric] + ("+Inf",)]
        total = sum(per_min.values())
        return out + [{"series": f'{self.name(metric, "_count")}{{{self.sel}}}', "values": f"0+{total}x90"}]

    def gauge(self, metric: str, value: float, pods: int = 1) -> list[dict]:
        return [{"series": f'{self.name(metric)}{{{self.sel},pod="{self.model}-{i}"}}', "values": f"{value:g}x90"}
                for i in range(pods)]

    def replicas(self, running: int) -> list[dict]:
        """How many replicas run: KEDA's HPA (kube-state-metrics) or Ray Serve's replica health gauges."""
        if self.runtime == "ray":
            return [{"series": f'ray_serve_deployment_replica_healthy{{namespace="{self.ns}",application="llm",'
                               f'deployment="LLMServer:{self.model}",replica="r{i}"}}', "values": "1x90"}
                    for i in range(running)]
        hpa = f'namespace="{self.ns}",horizontalpodautoscaler="keda-hpa-{self.model}",job="kube-state-metrics"'
        return [{"series": f"kube_horizontalpodautoscaler_status_current_replicas{{{hpa}}}", "values": f"{running}x90"},
                {"series": f"kube_horizontalpodautoscaler_spec_max_replicas{{{hpa}}}",
                 "values": f"{self.t.max_replicas}x90"}]

    def queue(self, per_replica: float, running: int) -> list[dict]:
        return self.gauge("num_requests_waiting", per_replica, running) + self.replicas(running)

    def scrape(self, up: int, job: str | None = None) -> list[dict]:
        """Prometheus' own `up` for one target of the model, labelled as prometheus-operator labels it: `job` is the
        Service's name for a ServiceMonitor target and "<namespace>/<PodMonitor name>" for a PodMonitor target
        (prometheus-operator pkg/prometheus/promcfg.go); both monitors and the Service are named after the model."""
        job = job or (f"{self.ns}/{self.model}" if self.runtime == "ray" else self.model)
        return [{"series": f'up{{job="{job}",namespace="{self.ns}",pod="{self.model}-0",endpoint="metrics"}}',
                 "values": f"{up}x90"}]

    def exporting(self) -> list[dict]:
        """What a serving fleet exports besides `up`: vLLM's gauges (Deployment) or Serve's healthy replica."""
        if self.runtime == "ray":
            return self.replicas(1)
        return self.gauge("num_requests_running", 2)

    def deployment_replicas(self, wanted: int) -> list[dict]:
        """kube-state-metrics' desired replicas of the model's Deployment (0 while KEDA holds it at zero)."""
        return [{"series": f'kube_deployment_spec_replicas{{namespace="{self.ns}",deployment="{self.model}",'
                           f'job="kube-state-metrics"}}', "values": f"{wanted}x90"}]


def absent_scenarios(fleet: Fleet, absent_for: int) -> list[tuple[str, str, list[dict], int, bool]]:
    """VllmMetricsAbsent: quiet while the targets are up and export, firing once they have not for `for:`."""
    a, late = "VllmMetricsAbsent", absent_for + 5
    out = [
        (a, "targets up and exporting", fleet.scrape(1) + fleet.exporting(), late, False),
        (a, "every target down", fleet.scrape(0), late, True),
        (a, "every target down, not yet for as long as a replica takes", fleet.scrape(0), absent_for - 5, False),
        (a, "no target at all (monitor not selected, no pod)", [], late, True),
        (a, "only another job's target up", fleet.scrape(1, job="other") + fleet.exporting(), late, True),
        (a, "targets up but none of the series the alerts read", fleet.scrape(1), late, True),
    ]
    if fleet.runtime == "ray":
        out.append((a, "the head up, no healthy Serve replica", fleet.scrape(1) + [
            {**r, "values": "0x90"} for r in fleet.replicas(1)], late, True))
    return out


def scenarios(fleet: Fleet, rules: dict[str, dict]) -> list[tuple[str, str, list[dict], int, bool]]:
    """(alert, what, series, eval minute, fires). Values sit far from every threshold: the thresholds
    themselves are pinned in tests/serving/test_rayservice.py and below."""
    t = fleet.t
    flood = 10 * t.concurrency_per_replica  # waiting per replica, far above any autoscaling threshold
    below_max = max(1, t.max_replicas - 1) if t.max_replicas > 1 else None
    stalled = minutes(rules["VllmQueueHighScaleUpStalled"]["for"])
    out = []
    for alert, metric, sla_ms, share in (
            ("VllmTimeToFirstTokenAboveSla", "time_to_first_token_seconds", t.sla_ttft_ms, 0.10),
            ("VllmTimePerOutputTokenAboveSla", "request_time_per_output_token_seconds", t.sla_tpot_ms, 0.05)):
        sla = sla_ms / 1000
        bounds = [float(le) for le in VLLM_BUCKETS[metric]]
        below = max(b for b in bounds if b < sla)  # the bound under the SLA
        alert_le = min(b for b in bounds if b >= sla)  # the bound the alert reads
        near = (below + sla) / 2  # under the SLA, in the bucket that holds it: where interpolation lies
        slow = alert_le * 1.2  # over the bound the alert reads
        h = lambda spread: fleet.histogram(metric, spread)  # noqa: E731
        fast_n = round(100 * (1 - share))
        out += [
            # e.g. 30 ms SLA: 70 % at 25 ms and 30 % at 27.5 ms, every request within the SLA; a p95 read by
            # histogram_quantile says 45.8 ms and would page
            (alert, f"healthy: 70% at {below:g} s, 30% at {near:g} s (all within the SLA)", h({below: 70, near: 30}),
             30, False),
            (alert, f"{100 - fast_n - 3}% slower than {alert_le:g} s: within the p{100 - share * 100:.0f}",
             h({below: fast_n + 3, slow: 100 - fast_n - 3}), 30, False),
            (alert, f"{100 - fast_n + 5}% slower than {alert_le:g} s", h({below: fast_n - 5, slow: 100 - fast_n + 5}),
             30, True),
            (alert, "all slow", h({slow * 4: 100}), 30, True),
            (alert, "all slow but a trickle of traffic", h({slow * 4: 1}), 30, False),
        ]
    # a single slow inter-token step per request is not what the TPOT alert reads
    tpot = t.sla_tpot_ms / 1000
    out.append(("VllmTimePerOutputTokenAboveSla", "slow inter-token steps, per-request TPOT fine",
                fleet.histogram("request_time_per_output_token_seconds", {tpot / 2: 100})
                + fleet.histogram("inter_token_latency_seconds", {tpot * 8: 100}), 30, False))
    out += [
        ("VllmQueueHighAtMaxReplicas", "at max, nothing waiting", fleet.queue(0, t.max_replicas), 30, False),
        ("VllmQueueHighAtMaxReplicas", "at max, a queue stuck flat", fleet.queue(flood, t.max_replicas), 30, True),
        ("VllmQueueHighScaleUpStalled", "at max: the other alert's case", fleet.queue(flood, t.max_replicas),
         stalled + 10, False),
        ("VllmKvCacheNearFull", "KV half used", fleet.gauge("kv_cache_usage_perc", 0.5), 30, False),
        ("VllmKvCacheNearFull", "KV full", fleet.gauge("kv_cache_usage_perc", 0.99), 30, True),
    ]
    if below_max:
        out += [
            ("VllmQueueHighAtMaxReplicas", "queue below max", fleet.queue(flood, below_max), 30, False),
            ("VllmQueueHighScaleUpStalled", "queue below max, a new replica still has time",
             fleet.queue(flood, below_max), stalled - 5, False),
            ("VllmQueueHighScaleUpStalled", "queue below max for longer than a replica takes",
             fleet.queue(flood, below_max), stalled + 5, True),
        ]
    return out + absent_scenarios(fleet, minutes(rules["VllmMetricsAbsent"]["for"]))


def unit_tests(fleet: Fleet, rules: dict[str, dict], cases: list | None = None) -> dict:
    tests = []
    for alert, what, series, at, fires in (scenarios(fleet, rules) if cases is None else cases):
        rule = rules[alert]
        expected = [{"exp_labels": dict(rule["labels"]), "exp_annotations": dict(rule["annotations"])}] if fires else []
        tests.append({"name": f"{alert}: {what}", "interval": f"{STEP_S}s", "input_series": series,
                      "alert_rule_test": [{"eval_time": f"{at}m", "alertname": alert, "exp_alerts": expected}]})
    return {"rule_files": ["rules.yaml"], "evaluation_interval": f"{STEP_S}s", "tests": tests}


def rule_objects(stack: str):
    result = planned(stack)
    for rule_obj in objs(result.resources, "PrometheusRule"):
        model = rule_obj["metadata"]["labels"]["vllm-platform/model"]
        yield rule_obj, topology(result, model)


@pytest.mark.parametrize("stack", stack_names())
def test_every_alert_fires_on_a_breach_and_stays_quiet_when_healthy(stack, tmp_path):
    tool = promtool()
    ran = 0
    for rule_obj, t in rule_objects(stack):
        rules = {r["alert"]: r for g in rule_obj["spec"]["groups"] for r in g["rules"]}
        assert set(rules) == ALERTS, f"{stack}: alerts {sorted(rules)}"
        for r in rules.values():  # every alert says how long, how bad and what to do
            assert minutes(r["for"]) >= 5 and r["labels"]["severity"] in ("critical", "warning")
            assert r["annotations"]["summary"] and len(r["annotations"]["description"]) > 60
        (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": rule_obj["spec"]["groups"]}))
        (tmp_path / "tests.yaml").write_text(yaml.safe_dump(unit_tests(Fleet(rule_obj, t), rules), sort_keys=False))
        check = subprocess.run([tool, "check", "rules", "rules.yaml"], cwd=tmp_path, capture_output=True, text=True)
        assert check.returncode == 0, check.stdout + check.stderr
        run = subprocess.run([tool, "test", "rules", "tests.yaml"], cwd=tmp_path, capture_output=True, text=True)
        assert run.returncode == 0, f"{stack}: {run.stdout}{run.stderr}"
        ran += 1
    assert ran, f"{stack}: no PrometheusRule planned"


def test_production_pages_and_development_warns():
    sev = lambda stack: {r["alert"]: r["labels"]["severity"]  # noqa: E731
                         for o, _ in rule_objects(stack) for g in o["spec"]["groups"] for r in g["rules"]}
    assert sev("prod-llama405b-onprem") == {
        "VllmTimeToFirstTokenAboveSla": "critical", "VllmTimePerOutputTokenAboveSla": "critical",
        "VllmQueueHighAtMaxReplicas": "critical", "VllmQueueHighScaleUpStalled": "critical",
        "VllmKvCacheNearFull": "warning", "VllmMetricsAbsent": "critical"}
    assert set(sev("dev").values()) == {"warning"}


def test_bucket_table_is_vllms():
    """components/metrics.py holds vLLM 0.31's real bounds, spelt as prometheus_client exposes them."""
    for metric, les in VLLM_BUCKETS.items():
        assert tuple(metrics.le_label(b) for b in metrics.buckets(metric)) == les, metric
    assert [metrics.le_label(b) for b in metrics.buckets("e2e_request_latency_seconds")][:4] == \
        ["0.3", "0.5", "0.8", "1.0"]
    assert metrics.buckets("e2e_request_latency_seconds")[-1] == 7680.0
    assert (metrics.le_label(1.0), metrics.le_label(0.05), metrics.le_label(float("inf"))) == ("1.0", "0.05", "+Inf")
    assert metrics.le_label(1e7) == "1e+07"  # prometheus_client floatToGoString


def _rules(stack: str) -> dict[str, dict]:
    return {r["alert"]: r for o, _ in rule_objects(stack) for g in o["spec"]["groups"] for r in g["rules"]}


# The worked fabric stack tests/stacks/Pulumi.fabric-aws-p5.yaml: SLA 5000 ms / 100 ms, both bucket bounds
# themselves, like dev's TPOT.
FABRIC_P5 = str(ROOT / "tests" / "stacks" / "Pulumi.fabric-aws-p5.yaml")


@pytest.mark.parametrize("stack, ttft_le, tpot_le, exact", [
    ("prod-llama70b-aws", "2.5", "0.05", False),     # SLA 2000 ms / 30 ms: the next bounds up
    ("prod-qwen72b-gcp", "2.5", "0.05", False),      # 1500 ms / 30 ms
    ("prod-llama405b-onprem", "5.0", "0.1", False),  # 3000 ms / 80 ms
    ("dev", "2.5", "0.1", True),                     # 2000 ms / 100 ms: the TPOT bound itself
    (FABRIC_P5, "5.0", "0.1", True),                 # 5000 ms / 100 ms: bounds themselves
], ids=["prod-llama70b-aws", "prod-qwen72b-gcp", "prod-llama405b-onprem", "dev", "fabric-aws-p5"])
def test_latency_alerts_read_the_bucket_bound_at_or_above_the_sla(stack, ttft_le, tpot_le, exact):
    rules = _rules(stack)
    ttft, tpot = rules["VllmTimeToFirstTokenAboveSla"], rules["VllmTimePerOutputTokenAboveSla"]
    assert "histogram_quantile" not in ttft["expr"] + tpot["expr"]
    assert f'le="{ttft_le}"' in ttft["expr"] and ") > 0.10)" in ttft["expr"]
    assert f'le="{tpot_le}"' in tpot["expr"] and ") > 0.05)" in tpot["expr"]
    assert f"{float(tpot_le) * 1000:g} ms" in tpot["annotations"]["description"]
    if exact:  # the TPOT SLA is a bound (dev's TTFT 2000 ms is not: 2.5 is the next up)
        assert "is one of vLLM's bucket bounds" in tpot["annotations"]["description"]
    else:
        assert "next bound up" in tpot["annotations"]["description"]


@pytest.mark.parametrize("stack, stalled_for", [
    ("prod-llama405b-onprem", "35m"),  # 1460 s start-up budget (loader-capped) + 10 min for a GPU node
    ("prod-llama405b-aws", "35m"),
    ("prod-llama70b-aws", "19m"),      # 530 s budget (two TP 4 pods per node since the class margins) + 600 s
])
def test_scale_up_stalled_waits_for_the_replica_start_up_budget(stack, stalled_for):
    assert _rules(stack)["VllmQueueHighScaleUpStalled"]["for"] == stalled_for


@pytest.mark.parametrize("stack, absent_for", [
    ("prod-llama405b-aws", "45m"),     # cold start: 30 s + GPU node 900 s + image 300 s + budget 1460 s + 10 s
    ("prod-llama405b-onprem", "25m"),  # an existing cluster's nodes stay: 30 + 1460 + 10 s
    ("prod-llama70b-aws", "30m"),      # 30 + 900 + 300 + 530 + 10 s = 1770 s
    ("dev", "10m"),                    # 340 s, raised to the 10-minute floor
])
def test_metrics_absent_waits_for_a_cold_start(stack, absent_for):
    assert _rules(stack)["VllmMetricsAbsent"]["for"] == absent_for


def test_metrics_absent_watches_the_job_label_prometheus_operator_sets():
    """A ServiceMonitor target's job is the Service's name; a PodMonitor target's is "<namespace>/<name>"."""
    single, ray = _rules("prod-llama70b-aws")["VllmMetricsAbsent"], _rules("prod-llama405b-aws")["VllmMetricsAbsent"]
    assert single["expr"] == ('absent(up{job="llama-70b",namespace="llm"} == 1) or on() '
                              'absent(sum(vllm:num_requests_running{namespace="llm",model_name="llama-70b"}))')
    assert ray["expr"].startswith('absent(up{job="llm/llama-405b",namespace="llm"} == 1) or on() ')
    assert 'ray_serve_deployment_replica_healthy{namespace="llm",application="llm",' \
           'deployment="LLMServer:llama-405b"} == 1' in ray["expr"]
    # a model that never scales to zero pages whatever its Deployment's replica count says
    assert "kube_deployment_spec_replicas" not in single["expr"] + ray["expr"]


def test_a_scale_to_zero_model_at_zero_replicas_does_not_page(tmp_path):
    """replicas.min 0 (docs/scale-to-zero.md): at 0 replicas KEDA holds the Deployment at 0 and nothing exports, by
    design; once KEDA wants a replica, the alert runs as for any model."""
    import dataclasses
    from components.serving.observability import rules_spec
    tool = promtool()
    rule_obj, t = next(rule_objects("dev"))
    t0 = dataclasses.replace(t, min_replicas=0)
    spec = rules_spec(t0, rule_obj["metadata"]["namespace"], "vllm", 3, "warning", startup_s=300, cold_start_s=1540)
    rules = {r["alert"]: r for g in spec["groups"] for r in g["rules"]}
    absent = rules["VllmMetricsAbsent"]
    assert absent["for"] == "26m"  # the cold start docs/scale-to-zero.md prints for a model at zero: 1540 s
    assert "scale-to-zero model at 0 replicas exports nothing by design" in absent["annotations"]["description"]
    fleet = Fleet({"metadata": rule_obj["metadata"]}, t0)
    at = minutes(absent["for"]) + 5
    cases = [("VllmMetricsAbsent", "at zero replicas: nothing exported, nothing wanted",
              fleet.deployment_replicas(0), at, False),
             ("VllmMetricsAbsent", "woken: KEDA wants a replica that never exports",
              fleet.deployment_replicas(1), at, True),
             ("VllmMetricsAbsent", "woken and serving", fleet.deployment_replicas(1) + fleet.scrape(1)
              + fleet.exporting(), at, False)]
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": spec["groups"]}))
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump(unit_tests(fleet, rules, cases), sort_keys=False))
    run = subprocess.run([tool, "test", "rules", "tests.yaml"], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
