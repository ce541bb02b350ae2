"""`charts.mirror`: every Helm release of the stack (the add-ons, the gateway's, the EKS Cluster Autoscaler) pulls its
pinned chart from one mirror: a classic chart repository, an OCI registry path or a directory of chart archives
(components/charts.py chart_source, components/config/charts.py; docs/addons.md "Charts from a mirror")."""
from __future__ import annotations

import pytest
from pulumi.runtime import rpc

from components.cluster.charts import ChartMirror, chart_source
from components.config import ConfigError, parse
from components.offline.review import KEY_INPUTS
from components.offline.runner import OFFLINE_SECRET, pulumi_config
from components.upstream.versions import CHARTS
from tests.support.aws import G6
from tests.support.plans import by_type, plan_config, sanitize

RELEASE = "kubernetes:helm.sh/v3:Release"
HTTP_CHART, OCI_CHART = CHARTS["keda"], CHARTS["gateway-helm"]  # https://kedacore.github.io/charts, oci://docker.io/..
BASE = {"cloud": "existing", "existing": {"gpuNodes": {"accelerator": "l4", "gpusPerNode": 1, "vcpu": 16, "ramGib": 64},
                                          "blockStorageClass": "standard"},
        "modelCache": {"kind": "rwx", "storageClass": "nfs-client"},
        "models": [{"name": "chat", "model": "llama-3.1-8b", "maxModelLen": 8192, "sla": {"concurrency": 4},
                    "replicas": {"min": 1, "max": 2}}]}


# --- the one function every release calls ----------------------------------------------------------------------------

def test_unset_is_each_charts_own_repository():
    assert chart_source(HTTP_CHART) == {"chart": "keda", "version": "2.20.2",
                                        "repository_opts": {"repo": "https://kedacore.github.io/charts"}}
    assert chart_source(OCI_CHART) == {"chart": "oci://docker.io/envoyproxy/gateway-helm", "version": "v1.9.0"}


def test_a_chart_repository_mirror_serves_every_chart_by_name_and_version():
    mirror = ChartMirror("https://charts.example.com/vllm", "repo")
    assert chart_source(HTTP_CHART, mirror) == {"chart": "keda", "version": "2.20.2",
                                                "repository_opts": {"repo": "https://charts.example.com/vllm"}}
    # an OCI-published chart is looked up by its name (the reference's last segment) in the mirror's index
    assert chart_source(OCI_CHART, mirror) == {"chart": "gateway-helm", "version": "v1.9.0",
                                               "repository_opts": {"repo": "https://charts.example.com/vllm"}}
    login = ChartMirror("https://charts.example.com/vllm", "repo", "ci", "pw", "/etc/ssl/corp-ca.pem")
    assert chart_source(HTTP_CHART, login)["repository_opts"] == {
        "repo": "https://charts.example.com/vllm", "username": "ci", "password": "pw", "caFile": "/etc/ssl/corp-ca.pem"}


def test_an_oci_mirror_names_each_chart_under_its_path():
    mirror = ChartMirror("oci://harbor.example.com/vllm-charts", "oci")
    assert chart_source(HTTP_CHART, mirror) == {"chart": "oci://harbor.example.com/vllm-charts/keda",
                                                "version": "2.20.2"}
    assert chart_source(OCI_CHART, mirror) == {"chart": "oci://harbor.example.com/vllm-charts/gateway-helm",
                                               "version": "v1.9.0"}
    login = ChartMirror("oci://harbor.example.com/vllm-charts", "oci", "robot$ci", "pw")
    # no repo: the provider pulls an oci:// chart itself, with the login (pulumi-kubernetes >= 4.27)
    assert chart_source(OCI_CHART, login)["repository_opts"] == {"username": "robot$ci", "password": "pw"}


def test_a_directory_mirror_loads_the_archive_helm_pull_writes_without_a_version():
    mirror = ChartMirror("/srv/charts", "dir")
    # the provider loads a path as it is and never consults `version` for it: the file name carries it
    assert chart_source(HTTP_CHART, mirror) == {"chart": "/srv/charts/keda-2.20.2.tgz"}
    assert chart_source(OCI_CHART, mirror) == {"chart": "/srv/charts/gateway-helm-v1.9.0.tgz"}


# --- the stack setting -----------------------------------------------------------------------------------------------

def errors(charts: dict, secrets=frozenset({"hfToken"}), plain=frozenset()) -> list[str]:
    with pytest.raises(ConfigError) as e:
        parse({**BASE, "charts": charts}, set(secrets), set(plain))
    return e.value.errors


@pytest.mark.parametrize("mirror, kind, location", [
    ("https://charts.example.com/vllm/", "repo", "https://charts.example.com/vllm/"),
    ("http://127.0.0.1:8879", "repo", "http://127.0.0.1:8879"),
    ("oci://harbor.example.com:5000/vllm-charts/", "oci", "oci://harbor.example.com:5000/vllm-charts"),
    ("/srv/charts/", "dir", "/srv/charts"),
    ("file:///srv/air%20gap/charts", "dir", "/srv/air gap/charts"),
])
def test_each_form_of_mirror_parses(mirror, kind, location):
    charts = parse({**BASE, "charts": {"mirror": mirror}}, {"hfToken"}).charts
    assert (charts.kind, charts.location) == (kind, location)


def test_unset_is_no_mirror():
    charts = parse(BASE, {"hfToken"}).charts
    assert (charts.mirror, charts.kind, charts.username, charts.ca_file) == (None, None, None, None)


@pytest.mark.parametrize("mirror, says", [
    ("s3://charts-bucket/vllm", "'s3://charts-bucket/vllm': scheme s3:// is not a chart mirror; give an http(s):// "
                                "chart repository URL, an oci://registry/path, or an absolute directory"),
    ("charts/", "'charts/' is a relative path; give an absolute directory (/srv/charts or file:///srv/charts)"),
    ("./charts", "'./charts' is a relative path"),
    ("file://fileserver/charts", "names a host (fileserver); a file:// mirror is a local directory"),
    ("https:///vllm", "names no host"),
    ("oci://", "names no registry"),
    ("https://ci:hunter2@charts.example.com", "carries credentials in the URL"),
    ("", "is empty"),
])
def test_a_bad_mirror_names_the_field_and_the_forms(mirror, says):
    (e,) = errors({"mirror": mirror})
    assert e.startswith("charts.mirror: ") and says in e


def test_the_password_is_a_secret_that_comes_with_a_username():
    (e,) = errors({"mirror": "https://charts.example.com"}, secrets={"hfToken", "chartMirrorPassword"})
    assert e.startswith("chartMirrorPassword: set without charts.username; add the mirror's user as charts.username")
    (e,) = errors({"mirror": "https://charts.example.com", "username": "ci"})
    assert e == ("charts.username: 'ci' has no password; set it with `pulumi config set --secret chartMirrorPassword "
                 "...` (the mirror's password, kept a Pulumi secret), or remove charts.username for a mirror that "
                 "needs no login")
    (e,) = errors({}, secrets={"hfToken", "chartMirrorPassword"})
    assert e.startswith("chartMirrorPassword: set, but there is no charts.mirror to log in to")
    errs = errors({"mirror": "https://charts.example.com", "username": "ci"}, plain={"chartMirrorPassword"})
    assert errs == ["chartMirrorPassword: set in plain text; it must be a secret: `pulumi config set --secret "
                    "chartMirrorPassword ...` (the chart mirror's password (of charts.username))"]
    ok = parse({**BASE, "charts": {"mirror": "https://charts.example.com", "username": "ci"}},
               {"hfToken", "chartMirrorPassword"})
    assert ok.charts.username == "ci"


@pytest.mark.parametrize("charts, says", [
    ({"username": "ci"}, "charts.username: given without charts.mirror"),
    ({"caFile": "/etc/ca.pem"}, "charts.caFile: given without charts.mirror"),
    ({"mirror": "https://charts.example.com", "caFile": "ca.pem"},
     "charts.caFile: 'ca.pem' is a relative path; give the CA bundle's absolute path where `pulumi` runs"),
    ({"mirror": "/srv/charts", "caFile": "/etc/ca.pem"},
     "charts.caFile: a directory mirror is read from disk, with no login or TLS; remove it"),
    ({"mirror": "oci://harbor.example.com/c", "caFile": "/etc/ca.pem"},
     "charts.caFile: with an oci:// mirror the CA file is used only together with a login"),
    ({"mirror": "https://charts.example.com", "token": "x"}, "charts.token: unknown key; allowed: mirror, username, "
                                                             "caFile"),
])
def test_settings_that_do_not_fit_the_mirror_are_refused(charts, says):
    (e,) = [e for e in errors(charts) if not e.startswith("charts.username: 'ci' has no password")]
    assert e.startswith(says)


def test_a_login_over_plain_http_is_refused():
    (e, *_) = errors({"mirror": "http://charts.example.com/vllm", "username": "ci"},
                     secrets={"hfToken", "chartMirrorPassword"})
    assert e.startswith("charts.username: 'http://charts.example.com/vllm' is plain http: the login (charts.username "
                        "and the secret chartMirrorPassword) would cross the network in clear text; use the mirror's "
                        "https:// URL")
    parse({**BASE, "charts": {"mirror": "https://charts.example.com/vllm", "username": "ci"}},
          {"hfToken", "chartMirrorPassword"}, set())  # https: fine


def test_a_directory_mirror_takes_no_login():
    (e, *_) = errors({"mirror": "/srv/charts", "username": "ci"}, secrets={"hfToken", "chartMirrorPassword"})
    assert e == "charts.username: a directory mirror is read from disk, with no login or TLS; remove it"


# --- what the program registers --------------------------------------------------------------------------------------

def releases(values: dict, secrets: dict | None = None) -> list:
    resources, _ = plan_config(values, secrets={"hfToken": OFFLINE_SECRET, **(secrets or {})})
    return by_type(resources, RELEASE)


def test_every_release_follows_a_repository_mirror_and_the_password_stays_secret():
    found = releases({**BASE, "charts": {"mirror": "https://charts.example.com/vllm", "username": "ci"}},
                     {"chartMirrorPassword": "hunter2"})
    charts = {c.chart: c for c in CHARTS.values()}
    assert {r.inputs["chart"] for r in found} == {"gpu-operator", "kuberay-operator", "lws", "keda",
                                                  "kube-prometheus-stack", "gateway-helm", "ai-gateway-crds-helm",
                                                  "ai-gateway-helm", "llm-d-router-gateway"}
    for r in found:
        opts = r.inputs["repositoryOpts"]
        assert r.inputs["version"] == charts[r.inputs["chart"]].version, r.name
        # the whole login travels as a Pulumi secret; the plan's files show it redacted
        assert rpc.is_rpc_secret(opts), r.name
        assert opts["value"] == {"repo": "https://charts.example.com/vllm", "username": "ci", "password": "hunter2"}
        assert sanitize(opts) == {"repo": "[secret]", "username": "[secret]", "password": "[secret]"}


def test_every_release_follows_an_oci_mirror_with_its_login():
    found = releases({**BASE, "charts": {"mirror": "oci://harbor.example.com/vllm-charts", "username": "robot"}},
                     {"chartMirrorPassword": "hunter2"})
    assert len(found) == 9
    for r in found:
        chart = next(c for c in CHARTS.values() if r.inputs["chart"].endswith("/" + c.chart))
        assert r.inputs["chart"] == f"oci://harbor.example.com/vllm-charts/{chart.chart}"
        assert r.inputs["version"] == chart.version
        assert sanitize(r.inputs["repositoryOpts"]) == {"username": "[secret]", "password": "[secret]"}


def test_eks_releases_the_autoscaler_and_the_load_balancer_controller_follow_a_directory_mirror():
    found = {r.name: r.inputs for r in releases({**G6, "charts": {"mirror": "file:///srv/charts"}})}
    autoscaler, lbc = CHARTS["cluster-autoscaler"], CHARTS["aws-load-balancer-controller"]
    [scaler] = [i for i in found.values() if i["name"] == "cluster-autoscaler"]
    assert scaler["chart"] == f"/srv/charts/cluster-autoscaler-{autoscaler.version}.tgz"
    [controller] = [i for i in found.values() if i["name"] == "aws-load-balancer-controller"]
    assert controller["chart"] == f"/srv/charts/aws-load-balancer-controller-{lbc.version}.tgz"
    for inputs in found.values():
        assert inputs["chart"].startswith("/srv/charts/") and inputs["chart"].endswith(".tgz")
        assert "version" not in inputs and "repositoryOpts" not in inputs
    assert {"gpu-operator", "gateway-helm", "llm-d-router-gateway"} <= {
        i["chart"].rsplit("/", 1)[1].rsplit("-", 1)[0] for i in found.values()}


def test_unset_the_autoscaler_pulls_from_its_own_repository():
    [scaler] = [r.inputs for r in releases(G6) if r.inputs["name"] == "cluster-autoscaler"]
    chart = CHARTS["cluster-autoscaler"]
    assert (scaler["chart"], scaler["version"], scaler["repositoryOpts"]) == (chart.chart, chart.version,
                                                                              {"repo": chart.repo})


# --- the plan shows it -----------------------------------------------------------------------------------------------

def test_the_plan_tree_says_where_a_chart_comes_from_only_when_it_is_a_mirror():
    line = KEY_INPUTS[RELEASE]
    own = {"chart": "keda", "version": "2.20.2", "namespace": "keda",
           "repositoryOpts": {"repo": "https://kedacore.github.io/charts"}}
    assert line(own) == ["chart keda 2.20.2", "namespace keda"]  # today's line, unchanged
    mirrored = {**own, "repositoryOpts": {"repo": "http://127.0.0.1:8879"}}
    assert line(mirrored) == ["chart keda 2.20.2 from http://127.0.0.1:8879", "namespace keda"]
    assert line({"chart": "/srv/charts/keda-2.20.2.tgz", "namespace": "keda"}) == [
        "chart /srv/charts/keda-2.20.2.tgz", "namespace keda"]


def test_the_offline_plan_fills_a_placeholder_password_for_a_mirror_login():
    notes: list[str] = []
    config, secret_keys = pulumi_config({"vllm-platform:charts": {"mirror": "https://c.example.com", "username": "ci"}},
                                        notes)
    assert config["vllm-platform:chartMirrorPassword"] == OFFLINE_SECRET
    assert "vllm-platform:chartMirrorPassword" in secret_keys
    assert "chartMirrorPassword (`pulumi config set --secret chartMirrorPassword ...`" in notes[0]
    notes.clear()
    config, _ = pulumi_config({"vllm-platform:charts": {"mirror": "https://c.example.com"}}, notes)
    assert "vllm-platform:chartMirrorPassword" not in config


# --- the policy pack still knows the gateway's release by its chart --------------------------------------------------

@pytest.mark.parametrize("chart", ["oci://docker.io/envoyproxy/gateway-helm", "gateway-helm",
                                   "oci://harbor.example.com/vllm-charts/gateway-helm",
                                   "/srv/charts/gateway-helm-v1.9.0.tgz"])
def test_the_token_quota_advisory_finds_envoy_gateway_from_any_mirror(chart):
    from policies.rules import StackResource, evaluate_resources
    rule = {"limit": {"requests": 5, "unit": "Minute"}, "cost": {"response": {"from": "Metadata"}}}
    resources = [
        StackResource("kubernetes:core/v1:Namespace", "ns", {"metadata": {
            "name": "llm", "labels": {"vllm-platform/environment": "prod"}}}),
        StackResource(RELEASE, "eg", {"chart": chart, "values": {"config": {"envoyGateway": {"rateLimit": {}}}}}),
        StackResource("kubernetes:gateway.envoyproxy.io/v1alpha1:BackendTrafficPolicy", "btp", {
            "metadata": {"name": "m", "namespace": "llm"}, "spec": {"rateLimit": {"global": {"rules": [rule]}}}})]
    assert [v.rule for v in evaluate_resources(resources)].count("token-quotas-fail-open") == 1
    other = [r if r.type != RELEASE else StackResource(RELEASE, "eg", {**r.props, "chart": chart.replace(
        "gateway-helm", "ai-gateway-helm")}) for r in resources]
    assert "token-quotas-fail-open" not in [v.rule for v in evaluate_resources(other)]  # not another chart


def test_a_program_using_the_library_passes_the_password_as_an_argument():
    import pulumi

    from components.library import resolve
    config = {**BASE, "charts": {"mirror": "https://charts.example.com", "username": "ci"}}
    with pytest.raises(pulumi.RunError, match="charts.username: 'ci' has no password"):
        resolve({"config": config, "hf_token": OFFLINE_SECRET})
    loaded, _ = resolve({"config": config, "hf_token": OFFLINE_SECRET, "chart_mirror_password": "hunter2"})
    assert isinstance(loaded.chart_mirror_password, pulumi.Output)
