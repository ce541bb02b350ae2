"""A whole offline plan seen as the cluster will see it: the node pools the stack creates (labels, taints,
GPUs and extended resources each node advertises, where local NVMe is mounted), every pod template, and
the Kubernetes semantics of selectors, tolerations and NetworkPolicy peers. Used by test_consistency.py.

Node facts are read from the cloud resources as `pulumi up` sends them (EKS NodeGroup / launch template,
GKE NodePool) or, on an existing cluster, from the stack's existing.gpuNodes block; never from ClusterFacts,
so that a mismatch between what the cluster component builds and what serving assumes shows up.
"""
from __future__ import annotations

import base64
import email
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import yaml
from pulumi.runtime import rpc

from components.catalog import INSTANCE_TYPES
from components.config.load import parse
from components.offline.mocks import CLOUD_OUTPUTS
from components.offline.render import manifest, is_manifest
from components.offline.runner import load_stack_yaml, stack_file

RELEASE = "kubernetes:helm.sh/v3:Release"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
NODE_POOL = "gcp:container/nodePool:NodePool"
GPU = "nvidia.com/gpu"
EFA = "vpc.amazonaws.com/efa"
# Taint effects as the cloud APIs spell them (EKS NodeGroup taints, GKE nodeConfig.taints).
CLOUD_EFFECTS = {"NO_SCHEDULE": "NoSchedule", "NO_EXECUTE": "NoExecute", "PREFER_NO_SCHEDULE": "PreferNoSchedule"}
# GKE puts this taint on every GPU node of a Standard cluster that also has CPU pools, and these labels on
# every node (cloud.google.com/kubernetes-engine/docs/how-to/gpus, "GPU node taints").
GKE_GPU_TAINT = {"key": GPU, "value": "present", "effect": "NoSchedule"}
# Where GKE mounts the local-SSD RAID0 behind ephemeral storage (ephemeralStorageLocalSsdConfig).
GKE_EPHEMERAL_SSD = "/mnt/stateful_partition/kube-ephemeral-ssd"
# GPU Feature Discovery's label, which existing.py uses when gpuNodes.nodeSelector is empty.
GFD_PRESENT = {"nvidia.com/gpu.present": "true"}
# Labels prometheus-operator puts on the Prometheus pods it runs (statefulset.go: app.kubernetes.io/name).
PROMETHEUS_POD_LABELS = {"app.kubernetes.io/name": "prometheus", "app.kubernetes.io/managed-by": "prometheus-operator"}
# The kuberay-operator chart's pod labels (templates/deployment.yaml).
KUBERAY_POD_LABELS = {"app.kubernetes.io/name": "kuberay-operator", "app.kubernetes.io/component": "kuberay-operator"}


def unsecret(value: Any) -> Any:
    while rpc.is_rpc_secret(value):
        value = value["value"]
    if isinstance(value, dict):
        return {k: unsecret(v) for k, v in value.items()}
    if isinstance(value, list):
        return [unsecret(v) for v in value]
    return value


def quantity(q: Any) -> float:
    """A Kubernetes quantity as a number (memory in GiB, CPU in cores)."""
    s = str(q)
    units = {"Ki": 2**-20, "Mi": 2**-10, "Gi": 1, "Ti": 2**10, "m": 1e-3, "k": 1e3 / 2**30, "M": 1e6 / 2**30,
             "G": 1e9 / 2**30}
    for unit, factor in units.items():
        if s.endswith(unit):
            return float(s[: -len(unit)]) * factor
    return float(s)


# --- Kubernetes semantics -------------------------------------------------------------------------------

def match_expression(expr: dict, labels: dict[str, str]) -> bool:
    key, op, values = expr["key"], expr["operator"], expr.get("values") or []
    if op == "In":
        return labels.get(key) in values
    if op == "NotIn":
        return labels.get(key) not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    raise AssertionError(f"unsupported operator {op}")


def label_selector_matches(selector: dict | None, labels: dict[str, str]) -> bool:
    """metav1.LabelSelector ({} selects everything)."""
    selector = selector or {}
    return all(labels.get(k) == v for k, v in (selector.get("matchLabels") or {}).items()) and \
        all(match_expression(e, labels) for e in selector.get("matchExpressions") or [])


def node_selected(pod: dict, labels: dict[str, str]) -> bool:
    """nodeSelector AND the required node affinity (its terms ORed)."""
    if any(labels.get(k) != v for k, v in (pod.get("nodeSelector") or {}).items()):
        return False
    required = (((pod.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution"))
    if not required:
        return True
    return any(all(match_expression(e, labels) for e in term.get("matchExpressions") or [])
               for term in required["nodeSelectorTerms"])


def tolerates(tolerations: list[dict], taint: dict) -> bool:
    for t in tolerations or []:
        key_ok = t.get("key") == taint["key"] or (not t.get("key") and t.get("operator") == "Exists")
        effect_ok = not t.get("effect") or t["effect"] == taint["effect"]
        value_ok = t.get("operator") == "Exists" or t.get("value", "") == taint.get("value", "")
        if key_ok and effect_ok and value_ok:
            return True
    return False


def untolerated(tolerations: list[dict], taints: list[dict]) -> list[dict]:
    return [t for t in taints if t["effect"] in ("NoSchedule", "NoExecute") and not tolerates(tolerations, t)]


def pinned(image: str) -> bool:
    if "@sha256:" in image:
        return True
    last = image.rsplit("/", 1)[-1]
    return ":" in last and last.rsplit(":", 1)[1] not in ("", "latest")


# --- node pools -----------------------------------------------------------------------------------------

@dataclass
class NodePool:
    name: str
    labels: dict[str, str]
    taints: list[dict]
    gpus: int = 0
    vcpu: float | None = None
    ram_gib: float | None = None
    efa_devices: int = 0  # EFA interfaces the launch template attaches
    nvme_mount: str | None = None  # where the node mounts its local NVMe
    generic: bool = False  # an existing cluster's other nodes: labels unknown, untainted
    instance_type: str | None = None
    max_nodes: int | None = None  # the autoscaling ceiling (None: not ours to scale)
    extra_networks: set = field(default_factory=set)  # GKE: (network, subnetwork) of the nodes' extra NICs
    advertised: dict[str, int] = field(default_factory=dict)  # extended resources (filled by Plan)


def _nodeadm_local_storage(user_data_b64: str) -> str | None:
    """The NVMe mount of a nodeadm NodeConfig in MIME user data: RAID0 is mounted at <mountPath>/0
    (awslabs/amazon-eks-ami templates/shared/runtime/bin/setup-local-disks: array_mount_point=${MNT_DIR}/0)."""
    msg = email.message_from_string(base64.b64decode(user_data_b64).decode())
    for part in msg.walk():
        if part.get_content_type() == "application/node.eks.aws":
            config = yaml.safe_load(part.get_payload())
            storage = (config.get("spec") or {}).get("instance", {}).get("localStorage")
            if storage:
                assert storage["strategy"] == "RAID0", storage
                return f"{storage.get('mountPath', '/mnt/k8s-disks').rstrip('/')}/0"
    return None


def aws_pools(resources) -> list[NodePool]:
    templates = {CLOUD_OUTPUTS[LAUNCH_TEMPLATE](r.name, r.inputs)["id"]: r.inputs
                 for r in resources if r.type == LAUNCH_TEMPLATE}
    pools = []
    for r in (r for r in resources if r.type == NODE_GROUP):
        i = unsecret(r.inputs)
        lt = templates[i["launchTemplate"]["id"]]
        itype = (i.get("instanceTypes") or [lt.get("instanceType")])[0]
        inst = INSTANCE_TYPES.get(itype)
        nics = lt.get("networkInterfaces") or []
        pools.append(NodePool(
            r.name, {**i.get("labels", {}), "node.kubernetes.io/instance-type": itype},
            [{"key": t["key"], "value": t.get("value", ""), "effect": CLOUD_EFFECTS[t["effect"]]}
             for t in i.get("taints") or []],
            gpus=inst.gpus if inst else 0, vcpu=inst.vcpu if inst else None, ram_gib=inst.ram_gib if inst else None,
            efa_devices=sum(n.get("interfaceType") in ("efa", "efa-only") for n in nics),
            instance_type=itype, max_nodes=i["scalingConfig"]["maxSize"],
            nvme_mount=_nodeadm_local_storage(lt["userData"]) if lt.get("userData") else None))
    return pools


def gcp_pools(resources) -> list[NodePool]:
    pools = []
    for r in (r for r in resources if r.type == NODE_POOL):
        i = unsecret(r.inputs)
        nc = i["nodeConfig"]
        accel = (nc.get("guestAccelerators") or [{}])[0]
        labels = {**nc.get("labels", {}), "cloud.google.com/gke-nodepool": i["name"],
                  "node.kubernetes.io/instance-type": nc["machineType"]}
        taints = [{"key": t["key"], "value": t.get("value", ""), "effect": CLOUD_EFFECTS[t["effect"]]}
                  for t in nc.get("taints") or []]
        if accel:
            labels["cloud.google.com/gke-accelerator"] = accel["type"]
            taints += [GKE_GPU_TAINT] if GKE_GPU_TAINT not in taints else []
        inst = INSTANCE_TYPES.get(nc["machineType"])
        ssd = (nc.get("ephemeralStorageLocalSsdConfig") or {}).get("localSsdCount", 0)
        pools.append(NodePool(i["name"], labels, taints, gpus=int(accel.get("count", 0)),
                              vcpu=inst.vcpu if inst else None, ram_gib=inst.ram_gib if inst else None,
                              nvme_mount=GKE_EPHEMERAL_SSD if ssd else None, instance_type=nc["machineType"],
                              # per zone of nodeLocations
                              max_nodes=i["autoscaling"]["maxNodeCount"] * len(i.get("nodeLocations") or [1]),
                              extra_networks={(n["network"], n["subnetwork"]) for n in (i.get("networkConfig") or {})
                                              .get("additionalNodeNetworkConfigs") or []}))
    return pools


def existing_pools(cfg) -> list[NodePool]:
    nodes = cfg.existing.gpu_nodes
    gpu = NodePool("existing-gpu-nodes", dict(nodes.node_selector) or dict(GFD_PRESENT),
                   [{"key": t.key, "value": t.value, "effect": t.effect} for t in nodes.taints],
                   gpus=nodes.gpus_per_node, vcpu=nodes.vcpu, ram_gib=nodes.ram_gib)
    return [gpu, NodePool("existing-other-nodes", {}, [], generic=True)]


# --- pod templates --------------------------------------------------------------------------------------

@dataclass
class Template:
    kind: str
    namespace: str
    name: str  # the owning object's name (RayService: name/group)
    labels: dict[str, str]
    spec: dict
    annotations: dict[str, str] = field(default_factory=dict)

    @property
    def containers(self) -> list[dict]:
        return self.spec.get("containers") or []

    def requests(self) -> dict[str, float]:
        """Effective pod request per resource: max(sum of containers, each init container)."""
        total: dict[str, float] = {}
        for c in self.containers:
            for k, v in ((c.get("resources") or {}).get("requests") or {}).items():
                total[k] = total.get(k, 0) + quantity(v)
        for c in self.spec.get("initContainers") or []:
            for k, v in ((c.get("resources") or {}).get("requests") or {}).items():
                total[k] = max(total.get(k, 0), quantity(v))
        return total

    def port(self, name_or_number) -> dict | None:
        for c in self.containers:
            for p in c.get("ports") or []:
                if name_or_number in (p.get("name"), p["containerPort"]):
                    return p
        return None


def pod_templates(objs: list[dict]) -> list[Template]:
    out = []
    for m in objs:
        kind, meta, spec = m["kind"], m["metadata"], m.get("spec") or {}
        ns = meta.get("namespace")
        if kind in ("Deployment", "DaemonSet", "StatefulSet", "Job"):
            t = spec["template"]
            out.append(Template(kind, ns, meta["name"], t["metadata"].get("labels") or {}, t["spec"],
                                t["metadata"].get("annotations") or {}))
        elif kind == "RayService":
            rc = spec["rayClusterConfig"]
            groups = [("head", rc["headGroupSpec"])] + [(g["groupName"], g) for g in rc.get("workerGroupSpecs", [])]
            for group, g in groups:
                t = g["template"]
                # KubeRay adds its own labels to the pods it makes (ray-operator/controllers/ray/common/pod.go labelPod)
                kuberay = {"ray.io/node-type": "head" if group == "head" else "worker"}
                out.append(Template(kind, ns, f"{meta['name']}/{group}", {**(t["metadata"].get("labels") or {}), **kuberay},
                                    t["spec"], t["metadata"].get("annotations") or {}))
        elif kind == "LeaderWorkerSet":
            lwt = spec["leaderWorkerTemplate"]
            for role, key, index in (("leader", "leaderTemplate", "0"), ("worker", "workerTemplate", "1")):
                t = lwt[key]
                # the LWS controller's pod labels (kubernetes-sigs/lws v0.10.0 api/leaderworkerset/v1/leaderworkerset_types.go)
                lws = {"leaderworkerset.sigs.k8s.io/name": meta["name"], "leaderworkerset.sigs.k8s.io/worker-index": index}
                out.append(Template(kind, ns, f"{meta['name']}/{role}", {**(t["metadata"].get("labels") or {}), **lws},
                                    t["spec"], t["metadata"].get("annotations") or {}))
    return out


def walk(value: Any, path: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    yield path, value
    if isinstance(value, dict):
        for k, v in value.items():
            yield from walk(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from walk(v, path + (i,))


def dig(value: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


# --- the plan -------------------------------------------------------------------------------------------

class Plan:
    def __init__(self, name: str, raw: dict, resources, exports: dict):
        self.name = name
        self.exports = exports
        self.cfg = parse(raw, {"hfToken"})
        self.resources = resources
        self.objects = [manifest(r) | {"_inputs": unsecret(r.inputs)} for r in resources if is_manifest(r)]
        self.templates = pod_templates(self.objects)
        self.releases = {r.inputs["name"]: unsecret(r.inputs) for r in resources if r.type == RELEASE}
        self.pools = {"aws": aws_pools, "gcp": gcp_pools}.get(self.cfg.cloud, lambda _: [])(resources) \
            if self.cfg.cloud != "existing" else existing_pools(self.cfg)
        for pool in self.pools:
            pool.advertised = self.advertised(pool)

    def kind(self, kind: str, namespace: str | None = None) -> list[dict]:
        return [o for o in self.objects if o["kind"] == kind
                and (namespace is None or o["metadata"].get("namespace") == namespace)]

    def values(self, release: str) -> dict:
        return (self.releases.get(release) or {}).get("values") or {}

    def placed_on(self, t: Template) -> list[NodePool]:
        """The pools whose nodes a template's pods may be scheduled to (labels and taints; not size)."""
        return [p for p in self.pools if node_selected(t.spec, p.labels)
                and not untolerated(t.spec.get("tolerations"), p.taints)]

    def advertised(self, pool: NodePool) -> dict[str, int]:
        """Extended resources a node of the pool reports, given the device plugins this stack runs there."""
        out: dict[str, int] = {}
        gpu_op = self.values("gpu-operator")
        ds_tolerations = dig(gpu_op, "daemonsets.tolerations") or []
        if pool.gpus and self.cfg.cloud == "gcp":
            out[GPU] = pool.gpus  # GKE's own device plugin (gpuDriverInstallationConfig)
        elif pool.gpus and dig(gpu_op, "devicePlugin.enabled") and not untolerated(ds_tolerations, pool.taints):
            out[GPU] = pool.gpus
        efa = self.values("aws-efa-k8s-device-plugin")
        if pool.efa_devices and "aws-efa-k8s-device-plugin" in self.releases \
                and not untolerated(efa.get("tolerations"), pool.taints):
            out[EFA] = pool.efa_devices
        for policy in self.kind("NicClusterPolicy"):
            spec = policy["spec"]  # NicClusterPolicySpec.nodeAffinity: where the device plugin runs
            where = {"affinity": {"nodeAffinity": spec.get("nodeAffinity")}}
            if node_selected(where, pool.labels) and not untolerated(spec.get("tolerations"), pool.taints):
                plugin = spec["rdmaSharedDevicePlugin"]
                for entry in json.loads(plugin["config"])["configList"]:
                    out[f"rdma/{entry['resourceName']}"] = entry["rdmaHcaMax"]
        return out


# Test-only stacks: one multi-node replica per fabric family (AWS EFA p4d / p5 / p5en / p6-b200, GKE A3 High /
# Mega / Ultra / A4, existing InfiniBand / RoCE). `python -m components plan tests/stacks/Pulumi.<name>.yaml`.
FABRIC_STACK_DIR = Path(__file__).resolve().parents[1] / "stacks"


def fabric_stacks() -> list[str]:
    return sorted(p.name[len("Pulumi."):-len(".yaml")] for p in FABRIC_STACK_DIR.glob("Pulumi.fabric-*.yaml"))


def stack_path(stack: str) -> Path:
    """A shipped stack (stacks/) or a test-only fabric stack (tests/stacks/)."""
    test_only = FABRIC_STACK_DIR / f"Pulumi.{stack}.yaml"
    return test_only if test_only.exists() else stack_file(stack)


def stack_raw(stack: str) -> dict:
    prefix = "vllm-platform:"
    return {k[len(prefix):]: v for k, v in load_stack_yaml(stack_path(stack)).items()
            if k.startswith(prefix) and not (isinstance(v, dict) and set(v) == {"secure"})}


def namespace_labels(plan: Plan, namespace: str) -> dict[str, str]:
    """The labels a namespace has: its manifest's plus the one the API server always sets."""
    for ns in plan.kind("Namespace"):
        if ns["metadata"]["name"] == namespace:
            return {**(ns["metadata"].get("labels") or {}), "kubernetes.io/metadata.name": namespace}
    return {"kubernetes.io/metadata.name": namespace}


def admitted(policy: dict, pod_labels: dict[str, str], pod_namespace: str, ns_labels: dict[str, str],
             port: int) -> bool:
    """Whether a NetworkPolicy's ingress rules let a pod (its labels and namespace) reach `port`."""
    own_ns = policy["metadata"]["namespace"]
    for rule in policy["spec"].get("ingress") or []:
        ports = rule.get("ports")
        if ports and not any(p.get("port") == port for p in ports):
            continue
        peers = rule.get("from")
        if not peers:
            return True
        for peer in peers:
            if "ipBlock" in peer:
                continue
            ns_sel, pod_sel = peer.get("namespaceSelector"), peer.get("podSelector")
            ns_ok = label_selector_matches(ns_sel, ns_labels) if ns_sel is not None else pod_namespace == own_ns
            if ns_ok and label_selector_matches(pod_sel, pod_labels):
                return True
    return False


def service_url_host(url: str) -> str:
    return re.sub(r"^https?://", "", url).split("/", 1)[0]


def selected_templates(p: Plan, namespace: str, selector: dict) -> list:
    """The plan's pod templates in `namespace` whose labels `selector` matches."""
    return [t for t in p.templates if t.namespace == namespace and label_selector_matches(selector, t.labels)]
