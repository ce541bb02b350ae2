"""Stand-in Helm charts for the real-engine test: a classic chart repository (an index.yaml and one archive per chart)
that the harness serves on 127.0.0.1 and points the stack at with `charts.mirror` (components/config/charts.py), so
`pulumi up` installs every release of components/upstream/versions.py CHARTS, by its pinned name and version, with no internet.

Each stand-in `<name>-<version>.tgz` holds `<name>/`:
- Chart.yaml: apiVersion v2, the pinned name and version exactly (Helm checks the version the release asks for
  against the repository's index, then loads the archive);
- values.yaml: `{}` (the templates read no value: whatever the project passes is accepted);
- crds/: the CustomResourceDefinitions the real chart installs, as far as the project vendors them (schemas/crds/,
  sources in schemas/sources.tsv), so that the custom resources the program creates after a release find their CRD;
- templates/: the operator's ServiceAccount, a one-replica Deployment of registry.k8s.io/pause:3.10 (never pulled on
  fake nodes) tolerating every taint, with no nodeSelector, and a Service 443 -> 8443, named after the release (the
  endpoint picker's `<release>-epp`, as the real chart names it: its release is named after the model, whose own
  Deployment and Service carry that name).
ai-gateway-crds-helm, a CRD-only chart, ships its CRDs as templates/ as the real one does (so Helm upgrades them) and
no workload.

What the stand-ins do NOT prove:
- that the real charts' templates render with the project's values, or that the objects they render are what the
  project expects (Services, ServiceMonitors, webhooks, RBAC, the endpoint picker's InferencePool, the
  `<release>-grafana` Service, ...): the stand-ins ignore the values. tests/test_helm_values.py covers a part only:
  every values key path the project sets exists in the chart's vendored values.yaml;
- that the operators work: nothing reconciles a ClusterPolicy, a RayService, a Gateway or a ScaledObject, and no hook
  Job runs (the GPU Operator's CRD upgrade);
- the real charts' whole CRD sets: only the vendored kinds are shipped (gateway-helm v1.9.0 installs 8 Envoy Gateway
  CRDs and Gateway API v1.6.1's 13 experimental-channel CRDs from its `crds` subchart, the stand-in the 5 + 5 vendored
  standard ones; kube-prometheus-stack's operator CRDs are 3 of 10; the Network Operator's are v26.4.1's), and their
  versions are the vendored ones, not necessarily the pinned chart's;
- pulling from a real mirror: OCI registries, credentials and TLS (components/cluster/charts.py) are not exercised.

Stdlib and PyYAML only (no helm binary). The archives and the index are byte-identical between runs (fixed times,
sorted members), so an archive's digest is a fact of this file and the vendored CRDs.
"""
from __future__ import annotations

import gzip
import hashlib
import io
import sys
import tarfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # python tests/e2e/standin_charts.py OUT_DIR
    sys.path.insert(0, str(ROOT))

from components.upstream.versions import CHARTS  # noqa: E402

CRD_DIR = ROOT / "schemas" / "crds"
# chart name -> the vendored CRD folders (schemas/crds/<folder>/) of the CRDs the real chart installs
CRDS: dict[str, tuple[str, ...]] = {
    "gpu-operator": ("gpu-operator",),
    "network-operator": ("network-operator",),
    "kuberay-operator": ("kuberay",),
    "keda": ("keda",),
    "lws": ("lws",),
    "kube-prometheus-stack": ("prometheus-operator",),
    # envoyproxy/gateway v1.9.0 charts/gateway-helm/charts/crds/crds/: gatewayapi-crds.yaml and generated/*.yaml,
    # all vendored in envoy-gateway/ (issue 36). Not the InferencePool: components/gateway applies that CRD itself.
    "gateway-helm": ("envoy-gateway",),
    # envoyproxy/ai-gateway v1.1.0 manifests/charts/ai-gateway-crds-helm/templates/: aigateway.envoyproxy.io_* only
    # (no InferencePool either)
    "ai-gateway-crds-helm": ("ai-gateway",),
}
# charts whose real archive carries its CRDs in templates/ (rendered and upgraded with the release), not crds/
CRDS_AS_TEMPLATES = {"ai-gateway-crds-helm"}
# charts whose real archive carries its CRDs in a subchart (`charts/<name>/crds/`), as gateway-helm v1.9.0 does
# (charts/gateway-helm/charts/crds/): Helm keeps a release's chart in its record (a Secret, at most 1 MiB) without
# its subcharts (helm.sh/helm/v3 pkg/chart Chart.dependencies is unexported, so not serialized), which is why the real
# chart ships its ~3.9 MB of CRDs there; in the top-level crds/ the record is over 1 MiB and the install fails
CRDS_IN_SUBCHART = {"gateway-helm": "crds"}
# charts that install CRDs only: no operator Deployment
CRD_ONLY = {"ai-gateway-crds-helm"}
# the workload's name where the real chart does not name it after the release
WORKLOAD_NAME = {"llm-d-router-gateway": "{{ .Release.Name }}-epp"}

IMAGE = "registry.k8s.io/pause:3.10"
# Fixed times: the same bytes on every run (tar member mtime, gzip header, the index's `created` / `generated`).
EPOCH = 946684800  # 2000-01-01T00:00:00Z
CREATED = "2000-01-01T00:00:00Z"


def crd_files(chart: str) -> list[Path]:
    """The vendored CRD files a chart's stand-in ships, sorted by folder then file name."""
    return [f for folder in CRDS.get(chart, ()) for f in sorted((CRD_DIR / folder).glob("*.yaml"))]


def _labels(chart: str, indent: int) -> str:
    pad = " " * indent
    return (f"{pad}app.kubernetes.io/name: {chart}\n"
            f"{pad}app.kubernetes.io/instance: {{{{ .Release.Name }}}}\n")


def _workload(chart: str) -> str:
    """ServiceAccount, Deployment and Service of a stand-in operator (Helm template syntax: the release's name and
    namespace only)."""
    name = WORKLOAD_NAME.get(chart, "{{ .Release.Name }}")
    meta = f"""metadata:
  name: {name}
  namespace: {{{{ .Release.Namespace }}}}
  labels:
{_labels(chart, 4)}"""
    return f"""apiVersion: v1
kind: ServiceAccount
{meta}---
apiVersion: apps/v1
kind: Deployment
{meta}spec:
  replicas: 1
  selector:
    matchLabels:
{_labels(chart, 6)}  template:
    metadata:
      labels:
{_labels(chart, 8)}    spec:
      serviceAccountName: {name}
      tolerations:
        - operator: Exists
      containers:
        - name: operator
          image: {IMAGE}
          ports:
            - name: https
              containerPort: 8443
---
apiVersion: v1
kind: Service
{meta}spec:
  selector:
{_labels(chart, 4)}  ports:
    - name: https
      port: 443
      targetPort: 8443
"""


def chart_files(chart: str, version: str) -> dict[str, bytes]:
    """path inside the archive -> content, for one stand-in chart."""
    meta = {"apiVersion": "v2", "name": chart, "version": version, "type": "application",
            "description": f"stand-in for {chart} {version} (tests/e2e/standin_charts.py): its CRDs and a pause "
                           f"Deployment, no operator"}
    files = {f"{chart}/Chart.yaml": yaml.safe_dump(meta, sort_keys=False).encode(),
             f"{chart}/values.yaml": b"{}\n"}
    place = "templates" if chart in CRDS_AS_TEMPLATES else "crds"
    if chart in CRDS_IN_SUBCHART:
        sub = CRDS_IN_SUBCHART[chart]
        place = f"charts/{sub}/crds"
        files[f"{chart}/charts/{sub}/Chart.yaml"] = yaml.safe_dump(
            {"apiVersion": "v2", "name": sub, "version": version, "type": "application",
             "description": f"the CRDs of the {chart} stand-in, a subchart as in the real chart"},
            sort_keys=False).encode()
    for f in crd_files(chart):
        files[f"{chart}/{place}/{f.name}"] = f.read_bytes()
    if chart not in CRD_ONLY:
        files[f"{chart}/templates/standin.yaml"] = _workload(chart).encode()
    return files


def archive(files: dict[str, bytes]) -> bytes:
    """A gzip'd tar of `files` with fixed times and owners (reproducible bytes)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(files):
            info = tarfile.TarInfo(path)
            info.size, info.mtime, info.mode = len(files[path]), EPOCH, 0o644
            tar.addfile(info, io.BytesIO(files[path]))
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", mtime=0) as gz:
        gz.write(raw.getvalue())
    return out.getvalue()


def write_mirror(out_dir: Path) -> list[str]:
    """Write a stand-in archive for every CHARTS entry and the repository's index.yaml into `out_dir` (created when
    missing); return the archives' file names, in CHARTS order. Serve `out_dir` over HTTP and set
    `vllm-platform:charts: {mirror: http://127.0.0.1:PORT}`."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    entries: dict[str, list[dict]] = {}
    names = []
    for chart in CHARTS.values():
        name = f"{chart.chart}-{chart.version}.tgz"
        data = archive(chart_files(chart.chart, chart.version))
        (out_dir / name).write_bytes(data)
        names.append(name)
        entries.setdefault(chart.chart, []).append({
            "apiVersion": "v2", "name": chart.chart, "version": chart.version, "type": "application",
            "urls": [name], "digest": hashlib.sha256(data).hexdigest(), "created": CREATED})
    index = {"apiVersion": "v1", "entries": dict(sorted(entries.items())), "generated": CREATED}
    (out_dir / "index.yaml").write_text(yaml.safe_dump(index, sort_keys=False))
    return names


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python tests/e2e/standin_charts.py OUT_DIR")
    print("\n".join(write_mirror(Path(sys.argv[1]))))
