"""Every values key the project sets in a Helm release exists in that chart at the pinned version.

Helm ignores unknown values keys without a word, so a misspelt key (`nodeSelecter`) ships the chart's
default instead. The values come from the `kubernetes:helm.sh/v3:Release` resources of the offline plans
of every shipped stack (exactly what `pulumi up` sends) plus the variants no shipped stack reaches; the
charts' own values.yaml (and values.schema.json) are vendored under schemas/charts (see its README).
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

from components.offline.runner import stack_names
from components.upstream.versions import CHARTS
from tests.support.plans import ROOT, planned

RELEASE = "kubernetes:helm.sh/v3:Release"
CHARTS_DIR = ROOT / "schemas" / "charts"

# Pinned version -> the version vendored under schemas/charts/<chart>/ (schemas/charts/README.md says why
# each differs: the offline snapshot predates the pinned release). Exact pins map to themselves.
VENDORED = {
    ("network-operator", "26.10.0"): "26.7.0-rc.2",
    ("kube-prometheus-stack", "92.0.0"): "88.5.3",
}

# Keys whose value is a map or object the chart passes through unread (to a pod spec, a CRD, a label set):
# any key below them is the user's, not the chart's. Matched by the key's own name, wherever it sits.
FREE_FORM = {
    # Kubernetes label / annotation maps: keys are label names.
    "labels": "label map", "annotations": "annotation map", "podLabels": "label map",
    "podAnnotations": "annotation map", "additionalLabels": "label map put on the chart's objects",
    "commonLabels": "label map", "matchLabels": "LabelSelector's label map",
    # Pod scheduling: keys are node label names, or a core/v1 Affinity object passed to the pod spec.
    "nodeSelector": "node label map (core/v1 PodSpec.nodeSelector)", "affinity": "core/v1 Affinity",
    # LabelSelectors the chart copies into the Prometheus CR (monitoring.coreos.com/v1 Prometheus spec).
    "serviceMonitorSelector": "LabelSelector", "serviceMonitorNamespaceSelector": "LabelSelector",
    "podMonitorSelector": "LabelSelector", "podMonitorNamespaceSelector": "LabelSelector",
    "ruleSelector": "LabelSelector", "ruleNamespaceSelector": "LabelSelector",
    # Prometheus CR storage (monitoring.coreos.com/v1 StorageSpec), copied verbatim into the CR.
    "storageSpec": "prometheus-operator StorageSpec (its CRD validates it)",
    "volumeClaimTemplate": "core/v1 PersistentVolumeClaim template",
    # core/v1 ResourceRequirements / SecurityContext objects.
    "resources": "core/v1 ResourceRequirements", "securityContext": "core/v1 SecurityContext",
    "podSecurityContext": "core/v1 PodSecurityContext",
    # Command-line flags map rendered as --key=value.
    "extraArgs": "flag map rendered as --key=value",
    "extraEnv": "env map or list", "env": "env list or map",
    # gateway-helm: config.envoyGateway is the EnvoyGateway object written verbatim into the controller's
    # ConfigMap (its values.yaml: "Visit .../extension_types/#envoygateway to view all options").
    "envoyGateway": "Envoy Gateway's EnvoyGateway configuration object",
    # policy/v1 PodDisruptionBudget spec fields the chart copies verbatim (aws-load-balancer-controller
    # templates/pdb.yaml: toYaml .Values.podDisruptionBudget; its default is {}).
    "podDisruptionBudget": "PodDisruptionBudget spec fields",
    # llm-d-router routerlib: monitoring.prometheus.extraLabels (labels put on its ServiceMonitor) and
    # epp.pluginsCustomConfig (config file name -> its text, rendered into the EPP's ConfigMap).
    "extraLabels": "label map", "pluginsCustomConfig": "config file name -> EndpointPickerConfig text",
}
# Keys a chart requires but ships commented out in values.yaml (so absent from the parsed defaults).
REQUIRED_COMMENTED = {
    # llm-d-router routerlib values.yaml: `# matchLabels: # REQUIRED in parent charts if creating inference pool`
    "router.modelServers.matchLabels",
}


def _key(chart: str, version: str) -> Path:
    return CHARTS_DIR / chart / VENDORED.get((chart, version), version)


@lru_cache(maxsize=None)
def chart_values(chart_dir: Path) -> dict:
    return yaml.safe_load((chart_dir / "values.yaml").read_text()) or {}


@lru_cache(maxsize=None)
def chart_schema(chart_dir: Path) -> dict | None:
    path = chart_dir / "values.schema.json"
    return json.loads(path.read_text()) if path.exists() else None


def subchart_dir(chart_dir: Path, name: str) -> Path | None:
    """A subchart the parent pins in its Chart.yaml: vendored inside the parent, or beside it."""
    inside = chart_dir / "charts" / name
    if (inside / "values.yaml").exists():
        return inside
    chart_yaml = chart_dir / "Chart.yaml"
    if not chart_yaml.exists():
        return None
    for dep in yaml.safe_load(chart_yaml.read_text()).get("dependencies") or []:
        if dep["name"] == name:
            beside = CHARTS_DIR / name / str(dep["version"])
            assert (beside / "values.yaml").exists(), \
                f"{chart_dir.relative_to(ROOT)}/Chart.yaml pins {name} {dep['version']}: vendor its values.yaml"
            return beside
    return None


def _in_schema(schema: dict | None, path: tuple[str, ...]) -> bool:
    node = schema
    for part in path:
        if not isinstance(node, dict):
            return False
        props = node.get("properties") or {}
        if part in props:
            node = props[part]
        elif node.get("additionalProperties") not in (None, False):
            return True
        else:
            return False
    return True


def _at(tree: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        tree = tree.get(part) if isinstance(tree, dict) else None
    return tree


def unknown_keys(values: dict, chart_dir: Path, path: tuple[str, ...] = (),
                 parent: tuple[Path, str] | None = None) -> Iterator[str]:
    """Each key path in `values` that the chart at `chart_dir` does not declare. Under a subchart's key
    (`parent` = the parent chart and that key) the parent's own values there count too (`grafana.enabled`
    is the parent's condition, not a grafana value)."""
    defaults = [_at(chart_values(chart_dir), path)]
    if parent is not None:
        defaults.append(_at(chart_values(parent[0]), (parent[1],) + path))
    for key, value in values.items():
        here = path + (key,)
        if not path and parent is None:
            sub = subchart_dir(chart_dir, key)
            if sub is not None and isinstance(value, dict):
                yield from (f"{key}.{p}" for p in unknown_keys(value, sub, parent=(chart_dir, key)))
                continue
        known = any(isinstance(d, dict) and key in d for d in defaults) or ".".join(
            (parent[1],) + here if parent else here) in REQUIRED_COMMENTED
        if not known and not _in_schema(chart_schema(chart_dir), here):
            yield ".".join(here)
            continue
        if key in FREE_FORM or not isinstance(value, dict):
            continue  # lists (tolerations, env entries) and scalars replace the default whole
        yield from unknown_keys(value, chart_dir, here, parent)


def releases(resources) -> list[tuple[str, str, str, dict]]:
    # an OCI chart is given as oci://registry/path/<chart>: the vendored directory is named after <chart>
    return [(r.name, r.inputs["chart"].rsplit("/", 1)[-1], r.inputs["version"], r.inputs.get("values") or {})
            for r in resources if r.type == RELEASE]


@lru_cache(maxsize=None)
def shipped_releases() -> tuple:
    return tuple((stack, *rel) for stack in stack_names() for rel in releases(planned(stack).resources))


def test_every_pinned_chart_is_vendored():
    for key, chart in CHARTS.items():
        d = _key(chart.chart, chart.version)
        assert (d / "values.yaml").exists(), f"vendor {chart.chart} {chart.version} values.yaml under {d}"


def test_the_shipped_stacks_install_every_pinned_chart():
    assert {chart for _, _, chart, _, _ in shipped_releases()} == {c.chart for c in CHARTS.values()}


@pytest.mark.parametrize("stack", stack_names())
def test_every_values_key_exists_in_the_chart(stack):
    problems = []
    for s, name, chart, version, values in shipped_releases():
        if s != stack:
            continue
        d = _key(chart, version)
        for bad in unknown_keys(values, d):
            problems.append(f"{name}: {chart} {version} (checked against {d.relative_to(ROOT)}) has no key {bad}")
    assert not problems, "\n".join(problems)


def _variant(stack: str, **addons) -> dict:
    """A shipped stack's config with add-on settings changed: the branches no shipped stack reaches."""
    from components.offline.runner import load_stack_yaml, stack_file
    raw = {k.split(":", 1)[1]: v for k, v in load_stack_yaml(stack_file(stack)).items()
           if k.startswith("vllm-platform:")}
    merged = dict(raw.get("addons") or {})
    for name, settings in addons.items():
        merged[name] = {**(merged.get(name) or {}), **settings}
    return {**raw, "addons": merged}


VARIANTS = {
    # The GPU Operator installs the driver next to an InfiniBand fabric: driver.rdma.* (GPUDirect RDMA).
    "onprem-driver": ("prod-llama405b-onprem", {"gpuOperator": {"installDriver": True}}),
    # Prometheus on a named StorageClass: prometheusSpec.storageSpec.volumeClaimTemplate.spec.storageClassName.
    "aws-prometheus-class": ("prod-llama70b-aws", {"prometheus": {"storageClass": "gp3"}}),
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_values_key_exists_in_the_chart_in_configs_no_stack_ships(variant):
    from tests.support.plans import plan_config
    stack, addons = VARIANTS[variant]
    resources, _ = plan_config(_variant(stack, **addons))
    rels = releases(resources)
    if variant == "onprem-driver":  # the branch this variant is here for
        gpu = next(v for n, c, _, v in rels if c == "gpu-operator")
        assert gpu["driver"]["rdma"] == {"enabled": True, "useHostMofed": True}
    problems = [f"{name}: {chart} {version} has no key {bad}" for name, chart, version, values in rels
                for bad in unknown_keys(values, _key(chart, version))]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("values, chart, bad", [
    ({"nodeSelecter": {"a": "b"}}, ("keda", "2.20.2"), "nodeSelecter"),
    ({"grafana": {"sidecar": {"dashboards": {"labelValu": "1"}}}}, ("kube-prometheus-stack", "92.0.0"),
     "grafana.sidecar.dashboards.labelValu"),
    ({"node-feature-discovery": {"master": {"nodeSelectr": {}}}}, ("gpu-operator", "v26.7.0"),
     "node-feature-discovery.master.nodeSelectr"),
    ({"prometheus": {"prometheusSpec": {"retension": "30d"}}}, ("kube-prometheus-stack", "92.0.0"),
     "prometheus.prometheusSpec.retension"),
    ({"cdi": {"default": True}}, ("gpu-operator", "v26.7.0"), "cdi.default"),
    ({"tolerationz": []}, ("aws-efa-k8s-device-plugin", "v0.5.30"), "tolerationz"),
    ({"enableServiceMutatorWebhooks": False}, ("aws-load-balancer-controller", "3.5.0"), "enableServiceMutatorWebhooks"),
    ({"serviceAccount": {"nam": "x"}}, ("aws-load-balancer-controller", "3.5.0"), "serviceAccount.nam"),
])
def test_a_misspelt_key_is_caught(values, chart, bad):
    assert list(unknown_keys(values, _key(*chart))) == [bad]


def test_free_form_maps_and_subchart_conditions_are_accepted():
    ok = {"nodeSelector": {"any/label": "x"}, "podAnnotations": {"a": "b"}}
    assert not list(unknown_keys(ok, _key("keda", "2.20.2")))
    assert not list(unknown_keys({"grafana": {"enabled": True}, "kube-state-metrics": {"nodeSelector": {"a": "b"}}},
                                 _key("kube-prometheus-stack", "92.0.0")))


def test_every_vendored_chart_file_is_listed_with_its_source():
    rows = [line.split("\t") for line in (ROOT / "schemas" / "sources.tsv").read_text().splitlines()
            if line and not line.startswith("#")]
    listed = {r[0] for r in rows if r[0].startswith("charts/")}
    on_disk = {str(p.relative_to(ROOT / "schemas")) for p in CHARTS_DIR.rglob("*") if p.is_file()
               and p.name != "README.md"}
    assert on_disk == listed, f"on disk, not listed: {sorted(on_disk - listed)}; listed, missing: {sorted(listed - on_disk)}"
    readme = (CHARTS_DIR / "README.md").read_text()
    assert all(f"| {f.removeprefix('charts/')} |" in readme for f in on_disk)
