"""The LeaderWorkerSet controller (multi-node replicas with serving.multiNode lws). Pure values.

Values keys: kubernetes-sigs/lws charts/lws/values.yaml at v0.10.0 (vendored in schemas/charts/lws/0.10.0) and
its templates/manager/deployment.yaml, which reads image.manager.{repository,tag,pullPolicy} and nodeSelector.
The values.yaml in the repository says `tag: main` / `pullPolicy: Always`; the release script
(hack/push-chart.sh) rewrites them to the release tag before packaging. They are set here so the controller
runs the release's image whatever the packaged file holds.

The controller's webhooks (failurePolicy Fail on LeaderWorkerSets and on their pods, webhook port 9443) are
called by the API server: GKE private clusters open 9443 to the nodes already (cluster/gcp/network.py
CONTROL_PLANE_PORTS). The CRDs ship in the chart's crds/ directory, which Helm installs on the first install
only: a chart bump applies the new CRDs first (docs/lws.md, "Upgrading the controller").
"""
from __future__ import annotations

from ..upstream.versions import CHARTS

RELEASE = "lws"
NAMESPACE = "lws-system"  # the namespace the upstream install guide uses
IMAGE_REPOSITORY = "registry.k8s.io/lws/lws"  # values.yaml image.manager.repository


def lws_values(system_selector: dict[str, str]) -> dict:
    # the release's image tag is the chart version with its v (v0.10.0; hack/push-chart.sh tags both alike)
    return {
        "image": {"manager": {"repository": IMAGE_REPOSITORY, "tag": f"v{CHARTS['lws'].version}",
                              "pullPolicy": "IfNotPresent"}},
        "nodeSelector": dict(system_selector),
    }
