"""The CustomResourceDefinitions the stack applies itself, server-side, before the release that needs them.

Helm installs a chart's crds/ folder on the first install only and never upgrades or deletes it, so a chart bump
would run the new controller against last release's schema. Each chart below is installed with Helm's skip_crds
and its CRDs are applied by Pulumi from the vendored upstream files (schemas/crds, source and tag of every file in
schemas/sources.tsv and schemas/crds/README.md) as CustomResourceDefinitionPatch resources: server-side apply,
which creates a missing CRD (a fresh cluster) and takes over one that exists (made by Helm on an earlier `up`, by
another stack, by the vendor) without AlreadyExists (pulumi-kubernetes >= 4.29 refuses a plain create of an object
that exists: CHANGELOG 4.29.0, #2926). A Patch resource creates a missing object: its create is an apply patch
(provider/pkg/await/await.go Creation, `kinds.IsPatchResource` -> client.Patch(types.ApplyPatchType)).

Pure data and arguments; the resources are made by the components (addons/component.py, gateway/component.py).
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
from pathlib import Path

import yaml

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas" / "crds"
# Force the apply: a chart bump changes fields that Helm's (or an earlier stack's) field manager owns; without it
# the server answers a conflict (pulumi-kubernetes docs, "Server-Side Apply": pulumi.com/patchForce).
PATCH_FORCE = "pulumi.com/patchForce"

# chart key (components/upstream/versions.py CHARTS) -> the files under schemas/crds holding every CRD the chart's
# crds/ folder installs at the pinned version (Helm's skip_crds is set on these releases). Bump with the chart.
CHART_CRDS: dict[str, tuple[str, ...]] = {
    # ray-project/kuberay v1.7.0 helm-chart/kuberay-operator/crds/ (4 CRDs; rayclusters and rayservices are
    # byte-identical to ray-operator/config/crd/bases at the tag)
    "kuberay-operator": ("kuberay/ray.io_rayclusters.yaml", "kuberay/ray.io_raycronjobs.yaml",
                         "kuberay/ray.io_rayjobs.yaml", "kuberay/ray.io_rayservices.yaml"),
    # kubernetes-sigs/lws v0.10.0 charts/lws/crds/ (3 CRDs, byte for byte; the leaderworkersets one carries the
    # conversion webhook to lws-webhook-service in lws-system). The controller (cmd/main.go) starts the
    # DisaggregatedSet controller unconditionally: without those two CRDs its cache never syncs and the manager
    # crash-loops, and the atomic release rolls back.
    "lws": ("lws/leaderworkerset.x-k8s.io_leaderworkersets.yaml", "lws/disaggregatedset.x-k8s.io_disaggregatedsets.yaml",
            "lws/disaggregatedset.x-k8s.io_disaggregatedsetrolescalers.yaml"),
    # aws/eks-charts 5239609 (chart 3.5.0) stable/aws-load-balancer-controller/crds/ (crds.yaml, gateway-crds.yaml;
    # the folder's kustomization.yaml is no CRD)
    "aws-load-balancer-controller": ("aws-load-balancer-controller/crds.yaml",
                                     "aws-load-balancer-controller/gateway-crds.yaml"),
    # envoyproxy/gateway v1.9.0 charts/gateway-helm/charts/crds/crds/: the Gateway API bundle (experimental
    # channel) and generated/*.yaml
    "gateway-helm": ("envoy-gateway/gatewayapi-crds.yaml", "envoy-gateway/gateway.envoyproxy.io_backends.yaml",
                     "envoy-gateway/gateway.envoyproxy.io_backendtrafficpolicies.yaml",
                     "envoy-gateway/gateway.envoyproxy.io_clienttrafficpolicies.yaml",
                     "envoy-gateway/gateway.envoyproxy.io_envoyextensionpolicies.yaml",
                     "envoy-gateway/gateway.envoyproxy.io_envoypatchpolicies.yaml",
                     "envoy-gateway/gateway.envoyproxy.io_envoyproxies.yaml",
                     "envoy-gateway/gateway.envoyproxy.io_httproutefilters.yaml",
                     "envoy-gateway/gateway.envoyproxy.io_securitypolicies.yaml"),
    # kubernetes-sigs/gateway-api-inference-extension v1.6.0: no chart installs it (the EPP chart does not); the
    # gateway applies it where the cluster's platform does not own it (ClusterFacts.platform_crd_groups)
    "inferencepool": ("gateway-api-inference-extension/inference.networking.k8s.io_inferencepools.yaml",),
}


def _parsed_cache() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "vllm-platform" / "crds"


def _parse(text: str) -> list[dict]:
    """The CRDs of one file's text, through a JSON copy in the user's cache named by the text's digest: Envoy
    Gateway's, KubeRay's and LWS's files are megabytes of YAML, seconds to construct even with libyaml's parser, and
    every `pulumi preview` / `up` / offline plan is a new process. The digest is of the text itself, so an edited
    file is parsed afresh; an unwritable cache only costs the parse."""
    path = _parsed_cache() / f"{hashlib.sha256(text.encode()).hexdigest()}.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        pass
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    docs = [d for d in yaml.load_all(text, Loader=loader) if d and d.get("kind") == "CustomResourceDefinition"]
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(docs))
        tmp.replace(path)  # atomic: a concurrent reader sees the whole file or none
    except OSError:
        pass
    return docs


@functools.lru_cache(maxsize=None)
def _crd_file(rel: str) -> tuple[dict, ...]:
    """The CRDs of one vendored file, parsed once per process (and cached across processes, _parse). Shared: callers
    read them, never change them."""
    return tuple(_parse((SCHEMAS / rel).read_text()))


def crd_documents(key: str) -> list[dict]:
    """Every CRD of CHART_CRDS[key], in file order."""
    return [d for rel in CHART_CRDS[key] for d in _crd_file(rel)]


def applied_crds(key: str, platform_groups: frozenset[str] | set[str] = frozenset()) -> list[dict]:
    """The CRDs of `key` the stack applies: not those of an API group the cluster's platform installs and upgrades
    itself (GKE: Gateway API, Inference Extension), which the stack must neither create nor overwrite."""
    return [d for d in crd_documents(key) if d["spec"]["group"] not in platform_groups]


def patch_args(doc: dict, labels: dict[str, str]) -> dict:
    """metadata and spec of the CustomResourceDefinitionPatch for one vendored CRD: its upstream annotations plus
    the force flag, the stack's labels."""
    meta = doc["metadata"]
    return {"metadata": {"name": meta["name"], "labels": dict(labels),
                         "annotations": {**meta.get("annotations", {}), PATCH_FORCE: "true"}},
            "spec": doc["spec"]}
