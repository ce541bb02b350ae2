"""What the real-engine run expects, read off the project's own offline plans (build/<stack>/ as
`python -m components plan STACK_FILE --out DIR` writes them) and the cluster after destroy. Pure functions of
files and API answers, with fast tests in tests/e2e/test_expectations.py."""
from __future__ import annotations

import json
from pathlib import Path

import yaml

from components.upstream.crds import CHART_CRDS, crd_documents

SYSTEM_NAMESPACES = {"default", "kube-system", "kube-public", "kube-node-lease"}
# Custom resources whose controller is a stand-in operator's pause container: their CRs are created and accepted by
# the API server, never reconciled, so nothing awaits them (pulumi-kubernetes awaits no custom resource without
# PULUMI_K8S_AWAIT_ALL) and no pod they would make exists. Asserted against what each run created (run.py).
NEVER_RECONCILED = {
    "ray.io/v1:RayService": "KubeRay's operator makes the Ray head and worker pods; a stand-in",
    "keda.sh/v1alpha1:ScaledObject": "KEDA's operator makes the HorizontalPodAutoscaler; a stand-in",
    "monitoring.coreos.com/v1:ServiceMonitor": "Prometheus Operator configures Prometheus from it; a stand-in",
    "monitoring.coreos.com/v1:PrometheusRule": "as ServiceMonitor",
    "monitoring.coreos.com/v1:PodMonitor": "as ServiceMonitor",
    "nvidia.com/v1:ClusterPolicy": "the GPU Operator's; a stand-in",
    "mellanox.com/v1alpha1:NicClusterPolicy": "the Network Operator's; a stand-in",
    "gateway.networking.k8s.io/v1:GatewayClass": "Envoy Gateway accepts it; a stand-in",
    "gateway.networking.k8s.io/v1:Gateway": "Envoy Gateway programs Envoy and its LoadBalancer Service; a stand-in",
    "gateway.networking.k8s.io/v1:HTTPRoute": "as Gateway",
    "gateway.envoyproxy.io/v1alpha1:EnvoyProxy": "as Gateway",
    "gateway.envoyproxy.io/v1alpha1:SecurityPolicy": "as Gateway",
    "gateway.envoyproxy.io/v1alpha1:BackendTrafficPolicy": "as Gateway",
    "aigateway.envoyproxy.io/v1beta1:AIGatewayRoute": "Envoy AI Gateway's controller; a stand-in",
    "aigateway.envoyproxy.io/v1beta1:AIServiceBackend": "as AIGatewayRoute",
    "gateway.envoyproxy.io/v1alpha1:Backend": "as Gateway",
    "inference.networking.k8s.io/v1:InferencePool": "the endpoint picker (a stand-in) serves it",
    "llm-d.ai/v1alpha2:InferenceObjective": "the endpoint picker (a stand-in) reads it; its status is the picker's",
    "gateway.envoyproxy.io/v1alpha1:EnvoyExtensionPolicy": "as Gateway",
    "leaderworkerset.x-k8s.io/v1:LeaderWorkerSet": "the LWS controller makes the leader and worker pods; its "
                                                   "module (sigs.k8s.io/lws v0.10.0) is listed but its zip refused "
                                                   "(403) by the Go module proxy, so a stand-in",
}
# Built-in workloads: their controllers are the real kube-controller-manager's, their pods KWOK's; each must be
# Ready (Complete for a Job) after `up`, as pulumi-kubernetes' await said.
WORKLOADS = ("apps/v1:Deployment", "apps/v1:StatefulSet", "apps/v1:DaemonSet", "batch/v1:Job")


def topology(plan: Path) -> dict:
    return json.loads((plan / "topology.json").read_text())


def gpu_nodes_needed(plan: Path) -> int:
    """GPU nodes every model's maximum replicas occupy (prefill and decode pools both, for P/D)."""
    total = 0
    for t in topology(plan).values():
        d = t.get("disaggregation") or {}
        total += d["nodes"] if d.get("chosen") else t["max_nodes"]
    return total


def manifests(plan: Path) -> list[dict]:
    out = []
    for f in sorted((plan / "manifests").glob("*.yaml")):
        out += [d for d in yaml.safe_load_all(f.read_text()) if d]
    return out


def _pod_specs(obj: dict):
    spec = obj.get("spec") or {}
    if "template" in spec:
        yield spec["template"].get("spec") or {}
    lws = spec.get("leaderWorkerTemplate") or {}
    for key in ("leaderTemplate", "workerTemplate"):
        if lws.get(key):
            yield lws[key].get("spec") or {}
    if "jobTemplate" in spec:
        yield from _pod_specs(spec["jobTemplate"])


def extended_resources(plan: Path) -> set[str]:
    """Extended resources (a domain-qualified name: nvidia.com/gpu, rdma/..., vpc.amazonaws.com/efa) any planned
    pod asks for: the fake GPU nodes must offer them or the scheduler leaves the pod Pending."""
    out: set[str] = set()
    for obj in manifests(plan):
        for pod in _pod_specs(obj):
            for c in (pod.get("containers") or []) + (pod.get("initContainers") or []):
                res = c.get("resources") or {}
                for part in ("requests", "limits"):
                    out |= {k for k in (res.get(part) or {}) if "/" in k and not k.startswith("hugepages")}
    return out


def storage_classes(config: dict) -> set[str]:
    """StorageClasses a stack on an existing cluster names (the cluster must already have them)."""
    ns = "vllm-platform"
    out = set()
    existing = config.get(f"{ns}:existing") or {}
    for value in (existing.get("blockStorageClass"), (config.get(f"{ns}:modelCache") or {}).get("storageClass"),
                  ((config.get(f"{ns}:addons") or {}).get("prometheus") or {}).get("storageClass")):
        if value:
            out.add(value)
    return out


def resources(plan: Path) -> dict[str, dict]:
    return {r["name"]: r for r in json.loads((plan / "resources.json").read_text())}


def changed_names(before: Path, after: Path) -> set[str]:
    """Resources the offline plans differ in: added, removed, or with other inputs or parent."""
    a, b = resources(before), resources(after)
    return {n for n in a.keys() | b.keys() if a.get(n) != b.get(n)}


REPLACING = ("replace", "create-replacement", "delete-replaced", "discard-replaced")


def previewed_changes(preview: dict) -> set[str]:
    """Resource names a real `pulumi preview --json` would create, update, replace or delete."""
    return {name for name, _ in previewed_ops(preview)}


def previewed_ops(preview: dict) -> set[tuple[str, str]]:
    """(resource name, operation) of every step of a real `pulumi preview --json` that changes something."""
    out = set()
    for step in preview.get("steps", []):
        if step.get("op") in ("same", "read", "refresh"):
            continue
        urn = step.get("urn", "")
        if "pulumi:pulumi:Stack" in urn:
            continue
        out.add((urn.rsplit("::", 1)[-1], step.get("op")))
    return out


def replacements(preview: dict) -> set[str]:
    """Resources a preview would replace (a new object, the old one deleted: a claim's data, a release's history).
    No weekly change may replace anything."""
    return {name for name, op in previewed_ops(preview) if op in REPLACING}


# What the program itself keeps on `pulumi destroy` (retain_on_delete), as docs/gateway.md says: every CRD it applies
# server-side (components/upstream/crds.py: the InferencePool, the Envoy Gateway / Gateway API bundle, KubeRay's, LWS's,
# the LB controller's), which other stacks on the cluster may share (deleting a CRD deletes every custom resource of it).
RETAINED_BY_PROGRAM = {f"customresourcedefinition/{d['metadata']['name']}"
                       for key in CHART_CRDS for d in crd_documents(key)}


def leftovers(cluster, chart_crds: set[str] = frozenset()) -> dict:
    """What is left of a stack after `pulumi destroy`: namespaces beyond Kubernetes' own; objects of any kind, in
    any namespace or cluster-scoped, with the project's label; volumes. Retained by design and listed apart: the CRDs
    the charts installed from their crds/ folder (`chart_crds`: Helm never deletes them) and RETAINED_BY_PROGRAM."""
    unexpected = []
    for ns in cluster.get_json("namespaces")["items"]:
        name = ns["metadata"]["name"]
        if name not in SYSTEM_NAMESPACES:
            unexpected.append(f"namespace/{name} ({ns.get('status', {}).get('phase')}, finalizers "
                              f"{ns.get('spec', {}).get('finalizers')})")
    kinds = cluster.kubectl("api-resources", "--verbs=list", "-o", "name", check=False).stdout.split()
    labelled = cluster.kubectl("get", ",".join(k for k in kinds if k not in ("events", "events.events.k8s.io")),
                               "-A", "-l", "app.kubernetes.io/part-of=vllm-platform", "-o", "name",
                               check=False).stdout.split() if kinds else []
    # `kubectl get -o name` spells a CRD customresourcedefinition.apiextensions.k8s.io/NAME
    unexpected += [o for o in labelled if o.replace("customresourcedefinition.apiextensions.k8s.io/",
                                                    "customresourcedefinition/", 1) not in RETAINED_BY_PROGRAM]
    for pv in cluster.get_json("persistentvolumes")["items"]:
        unexpected.append(f"persistentvolume/{pv['metadata']['name']} ({pv.get('status', {}).get('phase')})")
    retained, program = [], []
    for crd in cluster.get_json("customresourcedefinitions")["items"]:
        name = f"customresourcedefinition/{crd['metadata']['name']}"
        if name in RETAINED_BY_PROGRAM:
            program.append(name)
        elif crd["metadata"]["name"] in chart_crds:
            retained.append(name)
        elif name not in unexpected:
            unexpected.append(f"{name} (neither a chart's nor one the program retains)")
    return {"unexpected": unexpected, "retained_crds": sorted(retained), "retained_by_program": sorted(program)}


def state_objects(export: dict) -> list[tuple[str, str, str | None]]:
    """(type without the kubernetes: prefix, name, namespace) of every Kubernetes object in a stack's state."""
    out = []
    for r in export.get("deployment", {}).get("resources", []):
        t = r.get("type", "")
        if not t.startswith("kubernetes:") or t.startswith("kubernetes:helm.sh/") or "providers" in t:
            continue
        meta = (r.get("outputs") or {}).get("metadata") or {}
        out.append((t.removeprefix("kubernetes:"), meta.get("name"), meta.get("namespace")))
    return out


def _builtin(kind: str) -> bool:
    group = kind.split(":")[0].rsplit("/", 1)[0]
    return "." not in group or group.endswith(".k8s.io") and group.split(".")[0] in (
        "apiextensions", "rbac", "networking", "storage", "policy", "scheduling", "admissionregistration",
        "coordination", "node", "discovery", "events", "certificates", "flowcontrol", "resource")


def reconciled(status: dict) -> bool:
    """Whether a controller wrote this status. The API server's defaults do not count: Gateway API CRDs default a
    new object's status to conditions of status Unknown, reason Pending ("Waiting for controller")."""
    conditions = status.get("conditions") or []
    others = {k: v for k, v in status.items() if k != "conditions" and v not in (None, {}, [], "")}
    return bool(others) or any(c.get("status") != "Unknown" for c in conditions)


def unreconciled_kinds(objects: list[tuple[str, str, str | None]]) -> set[str]:
    """The custom resource kinds a stack created (each must be in NEVER_RECONCILED)."""
    return {kind for kind, _, _ in objects if not _builtin(kind)}


def workload_problems(cluster, objects: list[tuple[str, str, str | None]]) -> list[str]:
    """Built-in workloads that are not Ready (Complete for Jobs) after `up`, and custom resources of a kind
    NEVER_RECONCILED does not list, or that something did reconcile (a status: the list would be wrong)."""
    problems = []
    for kind, name, ns in objects:
        if kind in WORKLOADS:
            obj = cluster.get_json(kind.split(":")[1].lower(), name, "-n", ns)
            st, spec = obj.get("status") or {}, obj.get("spec") or {}
            ready = {
                "apps/v1:Deployment": lambda: st.get("availableReplicas", 0) == spec.get("replicas", 1),
                "apps/v1:StatefulSet": lambda: st.get("readyReplicas", 0) == spec.get("replicas", 1),
                "apps/v1:DaemonSet": lambda: st.get("desiredNumberScheduled", 0) > 0
                and st.get("numberReady", 0) == st.get("desiredNumberScheduled"),
                "batch/v1:Job": lambda: st.get("succeeded", 0) >= 1,
            }[kind]()
            if not ready:
                problems.append(f"{kind} {ns}/{name} not ready after up: status {st}")
        elif not _builtin(kind):
            if kind not in NEVER_RECONCILED:
                problems.append(f"{kind} {ns}/{name}: a custom resource kind tests/e2e/expectations.py "
                                f"NEVER_RECONCILED does not list (add it, with why nothing reconciles it)")
                continue
            resource = kind.split(":")[1].lower() + "." + kind.split("/")[0]
            args = [resource, name] + (["-n", ns] if ns else [])
            if reconciled(cluster.get_json(*args).get("status") or {}):
                problems.append(f"{kind} {ns}/{name} has a status a controller wrote: something reconciled it, "
                                f"so NEVER_RECONCILED is wrong about it")
    return problems
