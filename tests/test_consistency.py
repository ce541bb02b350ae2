"""Whole-plan invariants across component boundaries, on every shipped stack (and each cloud stack with a
node-local NVMe cache, and the test-only stack of each fabric family, tests/support/stacks.py): what separate per-area tests miss and a real `pulumi up` would not report. The
cluster component, the add-ons, the model cache and serving each build their part from shared facts;
these tests read the finished plan as Kubernetes and the cloud will (tests/support/consistency.py) and
check that the parts fit: pods land on nodes that exist, selectors select, scrapes are admitted, names
resolve, custom resources wait for their CRDs, images are pinned."""
from __future__ import annotations

import functools
import json
import re

from components.kube.k8s import CACHE_VOLUME
from tests.support.consistency import (EFA, GPU, Plan, dig, label_selector_matches, pinned, selected_templates,
                                       untolerated, walk)


def _extended(requests: dict) -> dict:
    return {k: v for k, v in requests.items() if "/" in k}


# --- placement: node labels, taints, GPUs and fabric devices ------------------------------------------------

def test_every_pod_template_is_schedulable_on_a_pool_of_the_stack(p):
    """Required node affinity / nodeSelector, tolerations, GPUs, fabric devices, CPU and memory of every pod
    template (Deployments, Ray head and workers, Jobs, DaemonSets) against the pools the stack creates."""
    assert p.templates
    for t in p.templates:
        placed = p.placed_on(t)
        assert placed, (f"{p.name}: {t.kind} {t.name} matches no node pool by labels and taints: "
                        f"{[(x.name, x.labels, x.taints) for x in p.pools]}")
        req = t.requests()
        fits = [x for x in placed
                if all(v <= x.advertised.get(k, 0) for k, v in _extended(req).items())
                and (x.vcpu is None or req.get("cpu", 0) <= x.vcpu)
                and (x.ram_gib is None or req.get("memory", 0) <= x.ram_gib)]
        assert fits, (f"{p.name}: {t.kind} {t.name} requests {req}; the pools it may land on advertise "
                      f"{[(x.name, x.advertised, x.vcpu, x.ram_gib) for x in placed]}")


def test_gpu_pods_request_what_their_pool_advertises(p):
    """GPUs per pod <= GPUs per node; vpc.amazonaws.com/efa <= the EFA devices the launch template attaches
    and the EFA plugin reports; rdma/* is the resource the NicClusterPolicy's device plugin advertises."""
    gpu_templates = [t for t in p.templates if t.requests().get(GPU)]
    assert gpu_templates, f"{p.name}: no pod asks for a GPU"
    for t in gpu_templates:
        for pool in p.placed_on(t):
            assert pool.gpus, f"{p.name}: GPU pod {t.name} may land on {pool.name}, which has no GPUs"
            for resource, amount in _extended(t.requests()).items():
                assert amount <= pool.advertised.get(resource, 0), \
                    f"{p.name}: {t.name} asks for {amount} {resource}; {pool.name} advertises {pool.advertised}"
        if EFA in t.requests():
            assert all(x.efa_devices == t.requests()[EFA] for x in p.placed_on(t)), \
                f"{p.name}: {t.name} should use every EFA device of its nodes"


def kube_reserved_cpu(vcpu: float) -> float:
    """CPU the kubelet keeps back on GKE and on EKS AL2023 (nodeadm): 6 % of the first core, 1 % of the
    second, 0.5 % of the third and fourth, 0.25 % of every further core."""
    return 0.06 + 0.01 * (vcpu >= 2) + 0.005 * min(max(vcpu - 2, 0), 2) + 0.0025 * max(vcpu - 4, 0)


def test_gpu_pools_hold_the_planned_fleet(p):
    """Planner <-> cluster <-> serving: a node holds the replicas the plan packs on it (with the stack's own
    GPU-node DaemonSets and the kubelet's CPU reserve), and the pool can grow to the fleet's maximum."""
    topo = p.exports["topology"]
    for pool in (x for x in p.pools if x.gpus):
        models = [t for t in topo.values() if pool.instance_type in (None, t["instance_type"])]
        assert models, f"{p.name}: GPU pool {pool.name} serves no model"
        daemons = sum(d.requests().get("cpu", 0) for d in p.templates
                      if d.kind == "DaemonSet" and pool in p.placed_on(d))
        for t in models:
            per_node = t["replicas_per_node"] if t["nodes_per_replica"] == 1 else 1
            assert per_node * t["gpus_per_replica"] // t["nodes_per_replica"] <= pool.gpus
            if pool.vcpu:
                assert per_node * t["pod_cpu"] + daemons <= pool.vcpu - kube_reserved_cpu(pool.vcpu), \
                    f"{p.name}: {per_node} x {t['pod_cpu']} CPU + {daemons:g} for DaemonSets on {pool.name}"
                assert per_node * t["pod_memory_gib"] <= pool.ram_gib
        if pool.max_nodes is not None:
            assert sum(t["max_nodes"] for t in models) <= pool.max_nodes, f"{p.name}: {pool.name} caps the fleet"


def test_autoscalers_span_the_planned_replicas(p):
    topo = p.exports["topology"]
    for so in p.kind("ScaledObject"):
        t = topo[so["spec"]["scaleTargetRef"]["name"]]
        assert (so["spec"]["minReplicaCount"], so["spec"]["maxReplicaCount"]) == (t["min_replicas"], t["max_replicas"])
        kind = so["spec"]["scaleTargetRef"]["kind"]  # Deployment, or LeaderWorkerSet (replicas = groups)
        workload = next(d for d in p.kind(kind) if d["metadata"]["name"] == t["served_model_name"])
        assert workload["spec"]["replicas"] == t["replicas"]
        if kind == "LeaderWorkerSet":
            assert workload["spec"]["leaderWorkerTemplate"]["size"] == t["nodes_per_replica"]
    for ray in p.kind("RayService"):
        t, npr = topo[ray["metadata"]["name"]], topo[ray["metadata"]["name"]]["nodes_per_replica"]
        (group,) = ray["spec"]["rayClusterConfig"]["workerGroupSpecs"]
        assert (group["minReplicas"], group["replicas"], group["maxReplicas"]) == \
            (npr * t["min_replicas"], npr * t["replicas"], npr * t["max_replicas"])
        image = group["template"]["spec"]["containers"][0]["image"]
        if image.startswith("rayproject/"):  # Ray in the image = the KubeRay rayVersion
            assert image.split(":")[1].startswith(ray["spec"]["rayClusterConfig"]["rayVersion"] + "-"), image


def test_workload_selectors_select_their_own_pods(p):
    for o in p.objects:
        if o["kind"] in ("Deployment", "DaemonSet"):
            assert label_selector_matches(o["spec"]["selector"], o["spec"]["template"]["metadata"]["labels"])
    for t in p.templates:
        for c in t.spec.get("topologySpreadConstraints") or []:
            assert label_selector_matches(c["labelSelector"], t.labels), f"{p.name}: {t.name} spreads other pods"
    for pdb in p.kind("PodDisruptionBudget"):
        pods = selected_templates(p, pdb["metadata"]["namespace"], pdb["spec"]["selector"])
        model = pdb["metadata"]["labels"]["vllm-platform/model"]
        assert pods and {t.labels.get("vllm-platform/model") for t in pods} == {model}, \
            f"{p.name}: PDB {pdb['metadata']['name']} selects {[t.name for t in pods]}"
        if pdb["metadata"]["name"] == model:  # the serving pods' budget
            assert all(t.requests().get(GPU) for t in pods), "a PDB on non-serving pods"
        else:  # a production RayService's control plane (serving/redis.py): exactly one pod, on the system pool
            assert len(pods) == 1 and pdb["spec"]["minAvailable"] == 1 and not pods[0].requests().get(GPU), \
                f"{p.name}: PDB {pdb['metadata']['name']} selects {[t.name for t in pods]}"


def test_gke_pod_networks_name_networks_the_stack_creates(p):
    """Multi-networking: every interface a pod asks for is a Network of the stack (or GKE's default), each
    Network's parameters exist, and its GPU NICs land on nodes whose pool has those networks attached."""
    params = {n["metadata"]["name"]: n["spec"] for n in p.kind("GKENetworkParamSet")}
    networks = {n["metadata"]["name"]: params[n["spec"]["parametersRef"]["name"]] for n in p.kind("Network")}
    asked = [t for t in p.templates if "networking.gke.io/interfaces" in t.annotations]
    for t in asked:
        wanted = {i["network"] for i in json.loads(t.annotations["networking.gke.io/interfaces"])} - {"default"}
        assert wanted <= set(networks), f"{p.name}: {t.name} asks for {wanted - set(networks)}"
        for pool in p.placed_on(t):
            nics = {(networks[n]["vpc"], networks[n]["vpcSubnet"]) for n in wanted}
            assert nics <= pool.extra_networks, f"{p.name}: {pool.name} nodes lack {nics - pool.extra_networks}"
    if p.name.endswith("+multinode"):
        assert asked and networks


GPU_DAEMONSET_TOLERATIONS = {
    "gpu-operator": ["daemonsets.tolerations", "node-feature-discovery.worker.tolerations"],
    "kube-prometheus-stack": ["prometheus-node-exporter.tolerations"],
    "aws-efa-k8s-device-plugin": ["tolerations"],
}


def test_node_daemonsets_tolerate_every_gpu_pool(p):
    """Chart DaemonSets that must run on GPU nodes (device plugin, DCGM, NFD, node-exporter, EFA plugin)."""
    gpu_pools = [x for x in p.pools if x.gpus]
    for release, paths in GPU_DAEMONSET_TOLERATIONS.items():
        if release not in p.releases:
            continue
        for path in paths:
            tolerations = dig(p.values(release), path)
            assert tolerations is not None, f"{p.name}: {release} values have no {path}"
            for pool in gpu_pools:
                assert not untolerated(tolerations, pool.taints), f"{p.name}: {release} {path} vs {pool.name}"


def test_serving_images_are_prepulled_on_every_node_serving_may_use(p):
    for t in (t for t in p.templates if t.requests().get(GPU)):
        images = {c["image"] for c in t.containers}
        for pool in p.placed_on(t):
            pulled = set()
            for ds in (d for d in p.templates if d.kind == "DaemonSet" and pool in p.placed_on(d)):
                pulled |= {c["image"] for c in ds.containers + (ds.spec.get("initContainers") or [])}
            assert images <= pulled, f"{p.name}: {t.name} runs {images} on {pool.name}; pre-pulled there: {pulled}"


def test_operators_select_labels_the_system_pool_has(p):
    """Every nodeSelector in the Helm values (operators, Prometheus, Grafana, autoscaler) and every pod
    template on system nodes selects labels some untainted pool really carries."""
    plain = [x for x in p.pools if not untolerated([], x.taints)]
    assert plain, f"{p.name}: no untainted pool for operators"
    for release, r in p.releases.items():
        for path, value in walk(r.get("values") or {}):
            if path and path[-1] == "nodeSelector":
                assert any(all(x.labels.get(k) == v for k, v in value.items()) for x in plain), \
                    f"{p.name}: {release} {'.'.join(map(str, path))} = {value} matches no untainted pool"
    for t in (t for t in p.templates if t.spec.get("nodeSelector") and not t.requests().get(GPU)):
        assert any(x in plain for x in p.placed_on(t)), f"{p.name}: {t.name} is not placed on an untainted pool"


# --- storage ---------------------------------------------------------------------------------------------

# Claims and StorageClasses: tests/cluster/test_guarantees.py.


def test_nvme_cache_paths_are_on_the_disk_the_node_mounts(p):
    # the model cache's hostPath (fabric libraries such as GKE's gIB plugin come from the node image instead)
    host_paths = [(t, v["hostPath"]["path"]) for t in p.templates if t.requests().get(GPU)
                  for v in t.spec.get("volumes") or [] if "hostPath" in v and v["name"] == CACHE_VOLUME]
    if p.name.endswith("+nvme"):
        assert host_paths, f"{p.name}: an nvme cache but no hostPath volume"
    for t, path in host_paths:
        for pool in p.placed_on(t):
            assert pool.nvme_mount and path.startswith(pool.nvme_mount.rstrip("/") + "/"), \
                f"{p.name}: {t.name} reads {path} on {pool.name}, whose NVMe is mounted at {pool.nvme_mount}"


# --- ordering, references, pinning -----------------------------------------------------------------------

CRD_RELEASE = {"monitoring.coreos.com": "kube-prometheus-stack", "keda.sh": "keda", "ray.io": "kuberay-operator",
               "mellanox.com": "network-operator", "aigateway.envoyproxy.io": "ai-gateway-crds-helm",
               "gateway.envoyproxy.io": "gateway-helm"}


def _closure(p: Plan):
    by_key = {f"{r.type}::{r.name}": r for r in p.resources}

    @functools.lru_cache(maxsize=None)
    def deps(key: str) -> frozenset:
        out = set()
        for d in by_key[key].dependencies if key in by_key else ():
            out |= {d} | deps(d)
        return frozenset(out)
    return deps


def test_custom_resources_and_namespaced_objects_wait_for_what_installs_them(p):
    deps = _closure(p)
    releases = {r.inputs["name"]: f"{r.type}::{r.name}" for r in p.resources
                if r.type == "kubernetes:helm.sh/v3:Release"}
    namespaces = {r.inputs["metadata"]["name"]: f"{r.type}::{r.name}" for r in p.resources
                  if r.type == "kubernetes:core/v1:Namespace"}
    checked = 0
    for r in (r for r in p.resources if r.custom and r.type.startswith("kubernetes:")
              and not r.type.startswith("pulumi:providers")):
        key = f"{r.type}::{r.name}"
        group = r.type.split(":")[1].rsplit("/", 1)[0]
        if group in CRD_RELEASE and CRD_RELEASE[group] in releases:
            checked += 1
            assert releases[CRD_RELEASE[group]] in deps(key), f"{p.name}: {key} does not wait for {CRD_RELEASE[group]}"
        ns = (r.inputs.get("metadata") or {}).get("namespace") or r.inputs.get("namespace")
        if ns in namespaces:
            assert namespaces[ns] in deps(key), f"{p.name}: {key} does not wait for namespace {ns}"
    assert checked, f"{p.name}: no custom resource checked"
    prom = releases.get("kube-prometheus-stack")
    for name, values_path in (("gpu-operator", "dcgmExporter.serviceMonitor.enabled"),
                              ("kuberay-operator", "metrics.serviceMonitor.enabled")):
        if prom and name in releases and dig(p.values(name), values_path):
            assert prom in deps(releases[name]), f"{p.name}: {name} ships a ServiceMonitor before its CRD exists"


def test_secret_references_resolve_in_the_same_namespace(p):
    secrets = {(s["metadata"]["namespace"], s["metadata"]["name"]): set((s["_inputs"].get("stringData") or {})) |
               set(s["_inputs"].get("data") or {}) for s in p.kind("Secret")}
    refs = 0
    for t in p.templates:
        for c in t.containers + (t.spec.get("initContainers") or []):
            for env in c.get("env") or []:
                ref = (env.get("valueFrom") or {}).get("secretKeyRef")
                if ref:
                    refs += 1
                    assert ref["key"] in secrets.get((t.namespace, ref["name"]), set()), f"{p.name}: {t.name} {ref}"
    assert refs, f"{p.name}: no pod reads the HF token"
    admin = dig(p.values("kube-prometheus-stack"), "grafana.admin")
    if admin:
        ns = p.releases["kube-prometheus-stack"]["namespace"]
        assert {admin["userKey"], admin["passwordKey"]} <= secrets.get((ns, admin["existingSecret"]), set())


def test_every_image_and_chart_is_pinned(p):
    images = 0
    for o in p.objects:
        for _, value in walk({k: v for k, v in o.items() if k != "_inputs"}):
            if isinstance(value, dict) and "image" in value and isinstance(value["image"], str):
                images += 1
                if "repository" in value and "version" in value:  # NicClusterPolicy components
                    assert value["version"] and value["version"] != "latest", f"{p.name}: {value}"
                else:
                    assert pinned(value["image"]), f"{p.name}: {o['kind']} {o['metadata']['name']}: {value['image']}"
    assert images
    for name, r in p.releases.items():
        assert re.fullmatch(r"v?\d+\.\d+\.\d+", r["version"]), f"{p.name}: chart {name} {r['version']!r}"
        for path, value in walk(r.get("values") or {}):
            if isinstance(value, dict) and "repository" in value and "tag" in value:
                assert value["tag"] and value["tag"] != "latest", f"{p.name}: {name} {path}"
            if isinstance(value, dict) and isinstance(value.get("image"), str):
                assert pinned(value["image"]), f"{p.name}: {name} {path}"
