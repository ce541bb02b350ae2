"""When Prometheus itself is down (issue 36): a Prometheus cannot alert on its own death, so the chart's always-firing
Watchdog alert goes to a dead man's switch outside the cluster (the secret alertmanagerHeartbeatUrl), which pages when
the pings stop; without one, `pulumi up` and `plan` say that nothing would tell you."""
from __future__ import annotations

from pulumi.runtime import rpc

from components.addons.prometheus import NO_HEARTBEAT, heartbeat_config, prometheus_values, with_heartbeat
from tests.support.plans import plan_config
from tests.support.stacks import stack_raw

URL = "https://hc-ping.com/0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0"


def _release_values(resources):
    (kps,) = [r for r in resources if r.type == "kubernetes:helm.sh/v3:Release" and r.inputs.get("name") ==
              "kube-prometheus-stack"]
    return kps.inputs["values"]


def test_the_watchdog_pings_the_heartbeat_every_minute_and_the_url_stays_secret():
    raw = stack_raw("prod-llama70b-aws")
    resources, _ = plan_config(raw, secrets={"hfToken": "x", "alertmanagerHeartbeatUrl": URL})
    values = _release_values(resources)
    # the release's values carry the URL (a token): the engine keeps them a secret, in state and in the preview
    assert rpc.is_rpc_secret(values), "the heartbeat URL (a token) must stay a Pulumi secret"
    config = values["value"]["alertmanager"]["config"]
    (route,) = config["route"]["routes"]
    assert route["matchers"] == ['alertname = "Watchdog"'] and route["receiver"] == "heartbeat"
    assert route["repeat_interval"] == "1m" and route["group_interval"] == "1m"
    assert config["route"]["receiver"] == "null"  # every other alert as the chart routes it
    (hook,) = [r for r in config["receivers"] if r["name"] == "heartbeat"][0]["webhook_configs"]
    assert hook == {"url": URL, "send_resolved": False}


def test_without_a_heartbeat_the_plan_says_nothing_would_page(monkeypatch):
    from components.offline.runner import plan_stack_offline
    result = plan_stack_offline("prod-llama70b-aws")
    assert any("no alertmanagerHeartbeatUrl" in w and "pulumi config set --secret alertmanagerHeartbeatUrl" in w
               for w in result.warnings)
    assert "config" not in _release_values(result.resources)["alertmanager"]


def test_the_chart_values_keep_their_alertmanager_settings_beside_the_route():
    values = {"alertmanager": {"enabled": True, "alertmanagerSpec": {"nodeSelector": {"a": "b"}}}, "x": 1}
    out = with_heartbeat(values, URL)
    assert out["alertmanager"]["alertmanagerSpec"] == {"nodeSelector": {"a": "b"}} and out["x"] == 1
    assert out["alertmanager"]["config"] == heartbeat_config(URL)
    assert with_heartbeat(values, None) is values
    assert NO_HEARTBEAT.startswith("addons.prometheus: no alertmanagerHeartbeatUrl")
    assert prometheus_values  # the values the release gets are prometheus_values' (component.py)
