"""The stand-in chart repository of the real-engine test (tests/e2e/standin_charts.py): an archive per pinned chart
with the exact name and version, an index Helm resolves them through, and the CRDs the real charts install."""
from __future__ import annotations

import hashlib
import tarfile

import yaml

from components.upstream.versions import CHARTS
from tests.e2e.standin_charts import CRD_DIR, CRD_ONLY, CRDS, CRDS_AS_TEMPLATES, write_mirror


def _members(path) -> dict[str, bytes]:
    with tarfile.open(path, "r:gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def test_every_pinned_chart_has_an_archive_with_its_exact_name_and_version(tmp_path):
    names = write_mirror(tmp_path)
    assert names == [f"{c.chart}-{c.version}.tgz" for c in CHARTS.values()]
    for c in CHARTS.values():
        files = _members(tmp_path / f"{c.chart}-{c.version}.tgz")
        assert {p.split("/", 1)[0] for p in files} == {c.chart}  # one top directory, the chart's name
        meta = yaml.safe_load(files[f"{c.chart}/Chart.yaml"])
        assert (meta["apiVersion"], meta["name"], meta["version"]) == ("v2", c.chart, c.version)
        assert yaml.safe_load(files[f"{c.chart}/values.yaml"]) == {}


def test_the_index_lists_every_archive_with_its_digest(tmp_path):
    write_mirror(tmp_path)
    index = yaml.safe_load((tmp_path / "index.yaml").read_text())
    assert index["apiVersion"] == "v1" and set(index["entries"]) == {c.chart for c in CHARTS.values()}
    for c in CHARTS.values():
        [entry] = index["entries"][c.chart]
        archive = tmp_path / f"{c.chart}-{c.version}.tgz"
        assert (entry["apiVersion"], entry["name"], entry["version"]) == ("v2", c.chart, c.version)
        assert entry["urls"] == [archive.name]  # relative: resolved against the repository URL
        assert entry["digest"] == hashlib.sha256(archive.read_bytes()).hexdigest()
        assert entry["created"]


def test_each_chart_ships_the_crds_of_its_mapping_and_no_other(tmp_path):
    assert set(CRDS) <= {c.chart for c in CHARTS.values()}
    write_mirror(tmp_path)
    for c in CHARTS.values():
        files = _members(tmp_path / f"{c.chart}-{c.version}.tgz")
        vendored = {f.name: f.read_bytes()
                    for folder in CRDS.get(c.chart, ()) for f in (CRD_DIR / folder).glob("*.yaml")}
        place = "templates" if c.chart in CRDS_AS_TEMPLATES else "crds"
        if c.chart == "gateway-helm":  # a subchart, as the real chart (the release record holds no subchart)
            place = "charts/crds/crds"
            assert not any(p.startswith(f"{c.chart}/crds/") for p in files)
            assert yaml.safe_load(files[f"{c.chart}/charts/crds/Chart.yaml"])["name"] == "crds"
        crds = {p.rsplit("/", 1)[1]: data for p, data in files.items()
                if p.startswith(f"{c.chart}/{place}/") and p != f"{c.chart}/templates/standin.yaml"}
        assert crds == vendored, c.chart  # byte for byte the vendored upstream files
        if place == "templates":
            assert not any(p.startswith(f"{c.chart}/crds/") for p in files), c.chart
    # what the mapping says, spelled out: a chart whose CRDs were dropped would still pass the loop above
    shipped = {c: sorted(f.name for folder in CRDS[c] for f in (CRD_DIR / folder).glob("*.yaml")) for c in CRDS}
    assert {c: len(v) for c, v in shipped.items()} == {
        "gpu-operator": 2, "network-operator": 5, "kuberay-operator": 4, "keda": 3, "lws": 3,
        "kube-prometheus-stack": 3, "gateway-helm": 9, "ai-gateway-crds-helm": 2}
    # the InferencePool CRD is the program's own (components/gateway): neither gateway chart ships one
    assert not any("inferencepool" in name for names in shipped.values() for name in names)


def test_operators_are_pause_pods_named_after_the_release_on_any_node(tmp_path):
    write_mirror(tmp_path)
    for c in CHARTS.values():
        files = _members(tmp_path / f"{c.chart}-{c.version}.tgz")
        workload = files.get(f"{c.chart}/templates/standin.yaml")
        if c.chart in CRD_ONLY:
            assert workload is None
            continue
        docs = list(yaml.safe_load_all(workload.decode().replace("{{ .Release.Name }}", "rel")
                                       .replace("{{ .Release.Namespace }}", "ns")))
        assert [d["kind"] for d in docs] == ["ServiceAccount", "Deployment", "Service"]
        # the endpoint picker's release is named after the model, whose Deployment and Service carry that name
        name = "rel-epp" if c.chart == "llm-d-router-gateway" else "rel"
        assert {d["metadata"]["name"] for d in docs} == {name}
        sa, dep, svc = docs
        pod = dep["spec"]["template"]
        assert dep["spec"]["replicas"] == 1 and pod["metadata"]["labels"]["app.kubernetes.io/name"] == c.chart
        assert pod["spec"]["tolerations"] == [{"operator": "Exists"}] and "nodeSelector" not in pod["spec"]
        assert [x["image"] for x in pod["spec"]["containers"]] == ["registry.k8s.io/pause:3.10"]
        assert pod["spec"]["serviceAccountName"] == sa["metadata"]["name"]
        assert svc["spec"]["selector"] == dep["spec"]["selector"]["matchLabels"] == pod["metadata"]["labels"]
        assert [(p["port"], p["targetPort"]) for p in svc["spec"]["ports"]] == [(443, 8443)]


def test_the_repository_is_byte_identical_between_runs(tmp_path):
    write_mirror(tmp_path / "a")
    write_mirror(tmp_path / "b")
    for f in sorted((tmp_path / "a").iterdir()):
        assert f.read_bytes() == (tmp_path / "b" / f.name).read_bytes(), f.name


def test_every_release_record_fits_in_a_secret(tmp_path):
    """Helm stores a release as base64(gzip(JSON)) in a Secret of at most 1 MiB, the chart's own files inside as
    base64 and its subcharts left out; a stand-in over it fails `up` ("Too long: may not be more than 1048576")."""
    import base64
    import gzip
    import json
    write_mirror(tmp_path)
    for c in CHARTS.values():
        files = _members(tmp_path / f"{c.chart}-{c.version}.tgz")
        own = {p: base64.b64encode(d).decode() for p, d in files.items() if not p.startswith(f"{c.chart}/charts/")}
        record = base64.b64encode(gzip.compress(json.dumps(own).encode()))
        assert len(record) < 1_000_000, (c.chart, len(record))
