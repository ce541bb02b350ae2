"""Whole-plan invariants of Services and monitoring, on every shipped stack and test-only fabric stack
(tests/support/stacks.py): Services select their workloads on declared ports, exported endpoints resolve,
Prometheus picks up every monitor and is admitted by the NetworkPolicies, KEDA queries the Prometheus the
stack installs. The rest of the whole-plan checks: tests/test_consistency.py."""
from __future__ import annotations

import re

from tests.support.consistency import (KUBERAY_POD_LABELS, PROMETHEUS_POD_LABELS, Plan, admitted, dig,
                                       label_selector_matches, namespace_labels, selected_templates)

# --- Services and monitoring -----------------------------------------------------------------------------



def test_services_select_exactly_their_workload_on_a_declared_port(p):
    for svc in p.kind("Service"):
        ns, name, spec = svc["metadata"]["namespace"], svc["metadata"]["name"], svc["spec"]
        chosen = selected_templates(p, ns, {"matchLabels": spec["selector"]})
        # a LeaderWorkerSet's Service selects its leaders only (workers run headless, no API)
        assert [(t.kind, t.name) for t in chosen] in ([("Deployment", name)], [("StatefulSet", name)],
                                                      [("LeaderWorkerSet", f"{name}/leader")]), \
            f"{p.name}: Service {name} selects {[t.name for t in chosen]}"
        for port in spec["ports"]:
            declared = chosen[0].port(port.get("targetPort", port["port"]))
            assert declared and declared["protocol"] == port["protocol"], f"{p.name}: {name} port {port}"
    services = {(s["metadata"]["namespace"], s["metadata"]["name"]) for s in p.kind("Service")}
    for ray in p.kind("RayService"):
        ns, serve = ray["metadata"]["namespace"], ray["spec"]["serveService"]
        assert (ns, serve["metadata"]["name"]) not in services, "KubeRay's serve Service would collide"
        head = next(t for t in p.templates if t.name == f"{ray['metadata']['name']}/head")
        for port in serve["spec"]["ports"]:
            assert head.port(port["port"]), f"{p.name}: the Ray head does not serve {port}"


def test_exported_endpoints_resolve_to_a_service_port(p):
    services = {(s["metadata"]["namespace"], s["metadata"]["name"]): [x["port"] for x in s["spec"]["ports"]]
                for s in p.kind("Service")}
    for ray in p.kind("RayService"):
        serve = ray["spec"]["serveService"]
        key = (ray["metadata"]["namespace"], serve["metadata"]["name"])
        services[key] = [x["port"] for x in serve["spec"]["ports"]]
    assert p.exports["endpoints"]
    for model, url in p.exports["endpoints"].items():
        m = re.fullmatch(r"http://([a-z0-9-]+)\.([a-z0-9-]+)\.svc\.cluster\.local:(\d+)/v1", url)
        assert m and int(m.group(3)) in services.get((m.group(2), m.group(1)), []), f"{p.name}: {model} {url}"


def _prometheus(p: Plan) -> tuple[str | None, dict]:
    """(namespace, values.prometheus.prometheusSpec) of the stack's kube-prometheus-stack; for the cluster's
    own Prometheus the namespace of its configured in-cluster URL (<service>.<namespace>.svc)."""
    release = p.releases.get("kube-prometheus-stack")
    if not release:
        m = re.match(r"https?://[^./]+\.([^./]+)\.svc\b", p.cfg.addons.prometheus.url or "")
        return (m.group(1) if m else None), {}
    return release["namespace"], dig(release["values"], "prometheus.prometheusSpec") or {}


def _monitor_labels(p: Plan, which: str) -> dict:
    ns, spec = _prometheus(p)
    if "kube-prometheus-stack" not in p.releases:
        return dict(p.cfg.addons.prometheus.monitor_labels or {})
    assert spec.get(f"{which}Selector") is not None, f"nil {which}Selector: the chart then selects release=<name>"
    return (spec[f"{which}Selector"] or {}).get("matchLabels") or {}


def _namespaceselected_templates(p: Plan, which: str, namespace: str) -> bool:
    prom_ns, spec = _prometheus(p)
    if "kube-prometheus-stack" not in p.releases:
        return True  # the cluster's own Prometheus: its selectors are not in this stack
    sel = spec.get(f"{which}NamespaceSelector")
    return namespace == prom_ns if sel is None else label_selector_matches(sel, namespace_labels(p, namespace))


def test_monitors_select_a_target_port_prometheus_picks_up(p):
    for which, kind in (("serviceMonitor", "ServiceMonitor"), ("podMonitor", "PodMonitor"), ("rule", "PrometheusRule")):
        for m in p.kind(kind):
            labels, ns = m["metadata"]["labels"], m["metadata"]["namespace"]
            want = _monitor_labels(p, which)
            assert want.items() <= labels.items(), f"{p.name}: {kind} {m['metadata']['name']} lacks {want}"
            assert _namespaceselected_templates(p, which, ns), f"{p.name}: Prometheus does not read {kind}s in {ns}"
    for sm in p.kind("ServiceMonitor"):
        ns = sm["metadata"]["namespace"]
        services = [s for s in p.kind("Service", ns)
                    if label_selector_matches(sm["spec"]["selector"], s["metadata"]["labels"])]
        assert services, f"{p.name}: ServiceMonitor {sm['metadata']['name']} selects no Service"
        for ep in sm["spec"]["endpoints"]:
            for s in services:  # a ServiceMonitor endpoint names a *Service* port
                assert ep["port"] in [x.get("name") for x in s["spec"]["ports"]], \
                    f"{p.name}: {ep} on {s['metadata']['name']}"
    for pm in p.kind("PodMonitor"):
        pods = selected_templates(p, pm["metadata"]["namespace"], pm["spec"]["selector"])
        assert {t.name.split("/")[-1] for t in pods} >= {"head", "gpu"}, f"{p.name}: PodMonitor selects {pods}"
        for ep in pm["spec"]["podMetricsEndpoints"]:
            assert all(t.port(ep["port"]) for t in pods), f"{p.name}: pods without port {ep['port']}"


def test_chart_monitors_and_dashboards_carry_the_labels_their_readers_select(p):
    want = _monitor_labels(p, "serviceMonitor")
    for release, path in (("gpu-operator", "dcgmExporter.serviceMonitor"),
                          ("kuberay-operator", "metrics.serviceMonitor")):
        sm = dig(p.values(release), path)
        if sm and sm.get("enabled"):
            assert want.items() <= (sm.get("additionalLabels") or {}).items(), f"{p.name}: {release} {path}"
    sidecar = dig(p.values("kube-prometheus-stack"), "grafana.sidecar.dashboards")
    for cm in (c for c in p.kind("ConfigMap") if c["metadata"]["name"].endswith("-dashboard")):
        if sidecar:
            assert cm["metadata"]["labels"].get(sidecar["label"]) == sidecar["labelValue"], \
                f"{p.name}: Grafana's sidecar does not load {cm['metadata']['name']}"
            assert sidecar.get("searchNamespace") in ("ALL", cm["metadata"]["namespace"])


def _scrape_ports(p: Plan, t) -> set[int]:
    ports = set()
    for sm in p.kind("ServiceMonitor", t.namespace):
        for s in p.kind("Service", t.namespace):
            if label_selector_matches(sm["spec"]["selector"], s["metadata"]["labels"]) and \
                    label_selector_matches({"matchLabels": s["spec"]["selector"]}, t.labels):
                for ep in sm["spec"]["endpoints"]:
                    sp = next(x for x in s["spec"]["ports"] if x.get("name") == ep["port"])
                    ports.add(t.port(sp.get("targetPort", sp["port"]))["containerPort"])
    for pm in p.kind("PodMonitor", t.namespace):
        if label_selector_matches(pm["spec"]["selector"], t.labels):
            ports |= {t.port(ep["port"])["containerPort"] for ep in pm["spec"]["podMetricsEndpoints"]}
    return ports


def test_network_policies_admit_prometheus_and_the_operator_from_their_namespaces_only(p):
    prom_ns, _ = _prometheus(p)
    kuberay_ns = (p.releases.get("kuberay-operator") or {}).get("namespace")  # else the cluster's own, unknown
    stranger = {"kubernetes.io/metadata.name": "tenant"}  # any other namespace of the cluster
    guarded = 0
    for t in p.templates:
        policies = [n for n in p.kind("NetworkPolicy", t.namespace)
                    if label_selector_matches(n["spec"]["podSelector"], t.labels)]
        if not policies:
            continue
        guarded += 1
        declared = {port["containerPort"] for c in t.containers for port in c.get("ports") or []}

        def allows(labels, ns, ns_labels, port):
            return any(admitted(n, labels, ns, ns_labels, port) for n in policies)

        for port in _scrape_ports(p, t) if prom_ns else ():
            assert allows(PROMETHEUS_POD_LABELS, prom_ns, namespace_labels(p, prom_ns), port), \
                f"{p.name}: Prometheus in {prom_ns} cannot scrape {t.name}:{port}"
        if t.kind == "RayService" and t.name.endswith("/head") and kuberay_ns:
            assert allows(KUBERAY_POD_LABELS, kuberay_ns, namespace_labels(p, kuberay_ns), 8265), \
                f"{p.name}: the KubeRay operator cannot reach the Ray dashboard"
        if t.labels.get("vllm-platform/role") == "ray-gcs-store":  # the Ray GCS's Redis: its own head only
            model = t.labels["vllm-platform/model"]
            head = {"vllm-platform/model": model, "vllm-platform/role": "ray-head"}
            own = namespace_labels(p, t.namespace)
            assert allows(head, t.namespace, own, 6379), f"{p.name}: the Ray head cannot reach {t.name}"
            for labels in ({}, {**head, "vllm-platform/model": "other"}, {**head, "vllm-platform/role": "ray-worker"}):
                assert not allows(labels, t.namespace, own, 6379), f"{p.name}: {labels} reaches {t.name}"
            continue
        for svc in p.kind("Service", t.namespace):
            if label_selector_matches({"matchLabels": svc["spec"]["selector"]}, t.labels):
                for port in svc["spec"]["ports"]:
                    target = t.port(port.get("targetPort", port["port"]))["containerPort"]
                    for ns in [t.namespace, *p.cfg.serving.allowed_namespaces]:
                        assert allows({}, ns, namespace_labels(p, ns), target), f"{p.name}: {ns} cannot call {t.name}"
        if t.kind == "RayService":  # Serve's proxies answer on every Ray pod behind KubeRay's serve Service
            for ns in [t.namespace, *p.cfg.serving.allowed_namespaces]:
                assert allows({}, ns, namespace_labels(p, ns), 8000), f"{p.name}: {ns} cannot call {t.name}"
        # (where the namespace is unknown, the policy can only go by pod labels)
        known = [PROMETHEUS_POD_LABELS] * bool(prom_ns) + [KUBERAY_POD_LABELS] * bool(kuberay_ns)
        for labels in (*known, {}):
            for port in declared:
                assert not allows(labels, "tenant", stranger, port), \
                    f"{p.name}: a pod labelled {labels} in any namespace reaches {t.name}:{port}"
    assert guarded, f"{p.name}: no NetworkPolicy selects a serving pod"


def test_keda_queries_the_prometheus_the_stack_installs_for_a_deployment_that_exists(p):
    release = p.releases.get("kube-prometheus-stack")
    if release:
        values = release["values"]
        fullname = values.get("fullnameOverride") or release["name"]
        port = dig(values, "prometheus.service.port") or 9090
        url = f"http://{fullname[:26].rstrip('-')}-prometheus.{release['namespace']}.svc:{port}"
    else:
        url = p.cfg.addons.prometheus.url
    for so in p.kind("ScaledObject"):
        ns, ref = so["metadata"]["namespace"], so["spec"]["scaleTargetRef"]
        addresses = {t["metadata"]["serverAddress"] for t in so["spec"]["triggers"]}
        assert addresses == {url}, f"{p.name}: KEDA queries {addresses}; Prometheus is at {url}"
        assert (ref.get("apiVersion"), ref.get("kind")) in (("apps/v1", "Deployment"),
                                                             ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"))
        assert ref["name"] in [d["metadata"]["name"] for d in p.kind(ref["kind"], ns)], f"{p.name}: {ref}"
        for trig in so["spec"]["triggers"]:
            assert f'namespace="{ns}"' in trig["metadata"]["query"]
