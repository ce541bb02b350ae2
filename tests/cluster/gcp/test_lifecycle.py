"""GKE from an empty project to day 2 (issue 10): the deployer reaches the API on the first run, a GPU
stockout does not hold the operators back, the zone and the reservation are what GCE says they are,
node updates need no spare GPU capacity, cost labels, and the file layout shared with AWS."""
from __future__ import annotations

import functools
import importlib
from pathlib import Path

import pulumi
import pytest
import yaml

from components.cluster.gcp.control_plane import cost_labels, label_value
from components.config import ConfigError
from components.config.load import parse
from components.offline import gcp_stubs, runner
from tests.support.plans import by_type, one, plan_config, planned, prod_gateway
from tests.support.gcp import CASES, CLUSTER, FILESTORE, GCP, POOL, cluster_plan, gpu_pool, plan

ROOT = Path(__file__).resolve().parents[3]
MODEL = [{"name": "llama-8b", "model": "llama-3.1-8b", "maxModelLen": 8192}]
A3_MEGA = {"name": "llama-405b", "model": "llama-3.1-405b", "precision": "bf16", "accelerator": "h100",
           "instanceTypes": ["a3-megagpu-8g"], "maxModelLen": 16384, "replicas": {"min": 1, "max": 2}}
A4 = {**CASES["a3-ultra"][1], "instanceTypes": ["a4-highgpu-8g"], "accelerator": "b200"}


def settings_errors(gcp: dict) -> list[str]:
    with pytest.raises(ConfigError) as e:
        parse({"cloud": "gcp", "gcp": gcp, "models": MODEL}, {"hfToken"})
    return e.value.errors


def refused(values: dict) -> str:
    with pytest.raises(pulumi.RunError) as e:
        cluster_plan(values)
    assert isinstance(e.value.__cause__, ConfigError)  # printed without a traceback
    return str(e.value)


# --- day 0: the deployer reaches the control plane ---------------------------------------------------

BASE = {"project": "my-proj-123", "region": "us-central1", "zone": "us-central1-a"}


DNS = {**BASE, "kubeconfigEndpoint": "dns"}


@pytest.mark.parametrize("change,expected", [
    ({},
     "gcp.kubeconfigEndpoint: ip, but masterAuthorizedNetworks is empty and the stack creates its VPC (gcp.network "
     "unset): nothing outside it can reach the IP endpoint on the first `pulumi up`; set "
     "gcp.kubeconfigEndpoint: dns"),
    ({"dnsEndpoint": False},
     "gcp.kubeconfigEndpoint: ip, but masterAuthorizedNetworks is empty and the stack creates its VPC (gcp.network "
     "unset): nothing outside it can reach the IP endpoint on the first `pulumi up`; set "
     "gcp.kubeconfigEndpoint: dns with gcp.dnsEndpoint: true"),
    ({"privateEndpoint": True, "masterAuthorizedNetworks": ["10.8.0.0/16"]},
     "gcp.kubeconfigEndpoint: ip, but privateEndpoint: true and the stack creates its VPC"),
    ({"kubeconfigEndpoint": "dns", "dnsEndpoint": False, "masterAuthorizedNetworks": ["203.0.113.0/28"]},
     "gcp.kubeconfigEndpoint: dns, but gcp.dnsEndpoint is false"),
    ({"privateEndpoint": True, "masterAuthorizedNetworks": ["10.8.0.0/16", "34.120.0.0/28"]},
     "gcp.masterAuthorizedNetworks: 34.120.0.0/28 are public addresses, but with privateEndpoint: true only "
     "internal ranges can reach the IP endpoint"),
])
def test_control_plane_settings_no_deploy_can_get_through_are_refused_by_field(change, expected):
    errs = settings_errors({**BASE, **change})
    assert any(e.startswith(expected) for e in errs), errs


@pytest.mark.parametrize("change", [
    {"kubeconfigEndpoint": "dns"},  # the DNS endpoint, no public IP endpoint
    {"kubeconfigEndpoint": "dns", "privateEndpoint": True},
    {"dnsEndpoint": False, "masterAuthorizedNetworks": ["203.0.113.0/28"]},  # public IP for the deployer's CIDR
    {"dnsEndpoint": False, "privateEndpoint": True, "network": "corp", "subnetwork": "gke", "podsRange": "p",
     "servicesRange": "s"},  # an existing VPC the deployer is inside (VPN / Interconnect)
])
def test_reachable_control_plane_settings_are_accepted(change):
    parse({"cloud": "gcp", "gcp": {**BASE, **change}, "models": MODEL}, {"hfToken"})


def test_without_cidrs_the_ip_endpoint_is_private_and_the_dns_endpoint_takes_external_traffic():
    extra, model = CASES["g2"]
    res, exports = cluster_plan({"cloud": "gcp", "gcp": DNS, "models": [model]})
    c = one(res, CLUSTER).inputs
    assert c["privateClusterConfig"]["enablePrivateEndpoint"] is True
    assert c["masterAuthorizedNetworksConfig"] == {"cidrBlocks": [], "gcpPublicCidrsAccessEnabled": False}
    assert c["controlPlaneEndpointsConfig"]["dnsEndpointConfig"]["allowExternalTraffic"] is True
    assert ".us-central1.gke.goog" in exports["kubeconfig"]


def _server(gcp: dict) -> str:
    _, model = CASES["g2"]
    _, exports = cluster_plan({"cloud": "gcp", "gcp": gcp, "models": [model]})
    return yaml.safe_load(exports["kubeconfig"])["clusters"][0]["cluster"]["server"]


SHARED = {"network": "corp", "subnetwork": "gke", "podsRange": "p", "servicesRange": "s"}


@pytest.mark.parametrize("first,later", [
    # dns: going private, or dropping the CIDRs, keeps the *.gke.goog name
    ({**DNS, "masterAuthorizedNetworks": ["203.0.113.0/28"]}, DNS),
    ({**DNS, "masterAuthorizedNetworks": ["203.0.113.0/28"]}, {**DNS, "privateEndpoint": True}),
    ({**DNS, "masterAuthorizedNetworks": ["203.0.113.0/28"]},
     {**DNS, "privateEndpoint": True, "masterAuthorizedNetworks": ["10.8.0.0/16"]}),
    # ip (the default, every released stack): turning the DNS endpoint on keeps the IP endpoint
    ({**BASE, "masterAuthorizedNetworks": ["203.0.113.0/28"], "dnsEndpoint": False},
     {**BASE, "masterAuthorizedNetworks": ["203.0.113.0/28", "198.51.100.0/28"]}),
    ({**BASE, **SHARED, "privateEndpoint": True}, {**BASE, **SHARED, "privateEndpoint": True, "dnsEndpoint": False,
                                                   "masterAuthorizedNetworks": ["10.8.0.0/16"]}),
])
def test_the_kubeconfig_server_follows_kubeconfig_endpoint_only(first, later):
    """A new server makes the Kubernetes provider replace every object it manages."""
    assert _server(first) == _server(later)


def test_the_kubeconfig_names_the_endpoint_kubeconfig_endpoint_chose():
    cidrs = {**BASE, "masterAuthorizedNetworks": ["203.0.113.0/28"]}
    assert _server(cidrs).startswith("https://34.")  # ip: the public IP endpoint, as before
    assert _server({**cidrs, "kubeconfigEndpoint": "dns"}).endswith(".us-central1.gke.goog")
    assert _server({**BASE, **SHARED, "privateEndpoint": True}).startswith("https://10.")  # internal address


def test_docs_say_how_the_first_pulumi_up_reaches_a_private_cluster():
    doc = (ROOT / "docs" / "clusters.md").read_text()
    gcp = " ".join(doc[doc.index("## GCP (GKE Standard)"):doc.index("## An existing cluster")].split())
    for needed in ("gcp.kubeconfigEndpoint", "gcp.dnsEndpoint", "container.clusters.connect",
                   "gcp.masterAuthorizedNetworks", "gcp.privateEndpoint", "replaces every Kubernetes object"):
        assert needed in gcp, needed


# --- one GPU stockout does not sink the first run ------------------------------------------------------

def _closure(resources):
    by_key = {f"{r.type}::{r.name}": r for r in resources}

    @functools.lru_cache(maxsize=None)
    def deps(key: str) -> frozenset:
        out: set[str] = set()
        for d in by_key[key].dependencies if key in by_key else ():
            out |= {d} | deps(d)
        return frozenset(out)
    return deps


@functools.lru_cache(maxsize=None)
def whole(case: str):
    if case == "prod-qwen72b-gcp":
        return planned(case).resources
    model = {"a3-high": CASES["a3-high"][1], "a3-mega": A3_MEGA}[case]
    return plan_config({"cloud": "gcp", "environment": "prod", "gcp": GCP, "models": [model],
                        "gateway": prod_gateway("gcp")})[0]


@pytest.mark.parametrize("case", ["prod-qwen72b-gcp", "a3-high", "a3-mega"])
def test_no_kubernetes_object_waits_for_a_gpu_node_pool(case):
    resources = whole(case)
    deps = _closure(resources)
    gpu_pools = {f"{POOL}::{r.name}" for r in by_type(resources, POOL) if r.inputs["name"] != "system"}
    system = {f"{POOL}::{r.name}" for r in by_type(resources, POOL) if r.inputs["name"] == "system"}
    assert gpu_pools and len(system) == 1
    objects = [r for r in resources if r.custom and r.type.startswith("kubernetes:")
               and not r.type.startswith("pulumi:providers")]
    assert len(objects) > 10
    for r in objects:
        key = f"{r.type}::{r.name}"
        assert not deps(key) & gpu_pools, f"{key} waits for {deps(key) & gpu_pools}"
    # but the operators' namespaces and the serving namespace wait for the nodes they run on
    for ns in by_type(resources, "kubernetes:core/v1:Namespace"):
        assert system <= deps(f"{ns.type}::{ns.name}"), ns.name


def test_gpu_nic_network_objects_wait_for_the_vpcs_they_name():
    res = plan("a3-high")[0]
    deps = _closure(res)
    for r in by_type(res, "kubernetes:networking.gke.io/v1:GKENetworkParamSet"):
        vpc = r.inputs["spec"]["vpc"]
        assert any(d.startswith("gcp:compute/network:Network::") and d.endswith(vpc.removeprefix("vllm"))
                   for d in deps(f"{r.type}::{r.name}")), r.name


# --- day 2: updates, reservations, zones -------------------------------------------------------------

@pytest.mark.parametrize("case", ["a3-high", "a3-ultra", "g2"])
def test_gpu_pool_updates_replace_one_node_in_place(case):
    p = gpu_pool(case)
    assert p["upgradeSettings"] == {"strategy": "SURGE", "maxSurge": 0, "maxUnavailable": 1}
    # auto-repair stays on for nodes that go NotReady; it does not claim GPU faults (docs/clusters.md)
    assert p["management"] == {"autoRepair": True, "autoUpgrade": True}


def test_docs_do_not_claim_auto_repair_replaces_a_node_with_a_faulty_gpu():
    doc = (ROOT / "docs" / "clusters.md").read_text()
    gcp = " ".join(doc[doc.index("## GCP (GKE Standard)"):doc.index("## An existing cluster")].split())
    assert "does not replace a node for a GPU fault" in gcp and "Xid" in gcp


def a3_ultra(reservation: str, zone: str = "us-central1-a") -> dict:
    gcp = {**GCP, "zone": zone, "reservation": reservation}
    return {"cloud": "gcp", "gcp": gcp, "models": [CASES["a3-ultra"][1]]}


def test_a_reservation_of_another_zone_is_refused_naming_both_fields(monkeypatch):
    monkeypatch.setitem(gcp_stubs.RESERVATIONS, ("my-proj-123", "us-central1-b", "h200-b"), ("a3-ultragpu-8g", 4))
    assert ("gcp.reservation: cannot read reservation h200-b in gcp.zone us-central1-a of project my-proj-123 "
            "(googleapi: Error 404") in refused(a3_ultra("h200-b"))
    assert "set gcp.zone to the reservation's zone" in refused(a3_ultra("h200-b"))


def test_a_reservation_of_another_machine_type_is_refused(monkeypatch):
    monkeypatch.setitem(gcp_stubs.RESERVATIONS, ("my-proj-123", "us-central1-a", "mega"), ("a3-megagpu-8g", 8))
    assert ("gcp.reservation: mega holds a3-megagpu-8g, but the plan puts dense-700b on a3-ultragpu-8g; pin the "
            "models' instanceTypes to a3-megagpu-8g") in refused(a3_ultra("mega"))


def test_a_reservation_smaller_than_the_pools_max_is_refused(monkeypatch):
    """The pool starts empty; the autoscaler may grow it to its max, and scale-ups past the reservation fail."""
    monkeypatch.setitem(gcp_stubs.RESERVATIONS, ("my-proj-123", "us-central1-a", "three"), ("a3-ultragpu-8g", 3))
    assert ("gcp.reservation: three holds 3 VMs, but the gpu-a3-ultragpu-8g pool may grow to 4 nodes (the models' "
            "replicas.max); lower replicas.max or grow the reservation") in refused(a3_ultra("three"))


def test_a_shared_reservation_is_looked_up_in_its_owner_project(monkeypatch):
    monkeypatch.setitem(gcp_stubs.RESERVATIONS, ("owner-proj-1", "us-central1-a", "pool"), ("a3-megagpu-8g", 8))
    assert "gcp.reservation: pool holds a3-megagpu-8g" in refused(a3_ultra("projects/owner-proj-1/reservations/pool"))


def test_a_zone_without_the_machine_type_is_refused(monkeypatch):
    monkeypatch.setattr(gcp_stubs, "NOT_OFFERED", {("us-central1-a", "a3-highgpu-8g"),
                                                   ("us-central1-a", "e2-standard-8")})
    extra, model = CASES["a3-high"]
    text = refused({"cloud": "gcp", **extra, "models": [model]})
    assert ("gcp.zone: us-central1-a does not offer a3-highgpu-8g (8 x h100, for llama-405b); set gcp.zone to a "
            "zone that does") in text
    assert "gcp.systemMachineType: e2-standard-8 is not offered in gcp.zone us-central1-a" in text


def test_gpu_pools_are_placed_in_the_zone_gce_confirmed():
    assert gpu_pool("a3-ultra")["nodeLocations"] == ["us-central1-a"]


# --- hygiene -----------------------------------------------------------------------------------------

def test_cost_labels_on_the_cluster_every_node_pool_and_the_filestore():
    res = plan("a3-high")[0]
    labels = {"stack": "test", "environment": "prod", "model": "llama-405b"}
    assert one(res, CLUSTER).inputs["resourceLabels"] == labels
    assert {p.inputs["name"]: p.inputs["nodeConfig"]["resourceLabels"] for p in by_type(res, POOL)} == {
        "system": labels, "gpu-a3-highgpu-8g": labels}
    assert one(res, FILESTORE).inputs["labels"] == labels
    assert one(res, CLUSTER).inputs["costManagementConfig"] == {"enabled": True}


def test_label_values_follow_gcp_rules():
    assert label_value("Prod_Qwen.72B") == "prod_qwen-72b"
    assert len(label_value("x" * 80)) == 63
    assert cost_labels("s", "dev", ["b-model", "a-model"])["model"] == "a-model_b-model"


def test_maintenance_window_and_operator_exclusions_survive_pulumi_up(monkeypatch):
    ignored: dict[str, list[str]] = {}

    class Monitor(runner.RecordingMonitor):
        def RegisterResource(self, request):
            ignored[request.name] = list(request.ignoreChanges)
            return super().RegisterResource(request)

    monkeypatch.setattr(runner, "RecordingMonitor", Monitor)
    extra, model = CASES["g2"]
    res, _ = cluster_plan({"cloud": "gcp", **extra, "models": [model]})
    assert ignored["vllm-cluster-gke"] == ["maintenancePolicy.maintenanceExclusions", "nodeConfig"]
    assert ignored["vllm-cluster-gpu-g2-standard-8"] == ["initialNodeCount"]
    window = one(res, CLUSTER).inputs["maintenancePolicy"]["recurringWindow"]
    assert window["recurrence"] == "FREQ=WEEKLY;BYDAY=SA,SU"


# --- one shape for both clouds -------------------------------------------------------------------------

def test_gcp_files_mirror_aws():
    files = {p.name for p in (ROOT / "components" / "cluster" / "gcp").glob("*.py")}
    assert {"component.py", "control_plane.py", "network.py", "node_pools.py", "storage.py"} <= files
    assert importlib.import_module("components.cluster.gcp").GcpGpuCluster.__module__ == \
        "components.cluster.gcp.component"


def test_resource_names_and_parents_are_those_state_already_holds():
    """The split into files kept every URN: same names, same parent, no alias needed."""
    res = plan("g2")[0]
    parents = {r.parent for r in res if r.type.startswith(("gcp:", "kubernetes:"))}
    assert parents == {"vllm-platform:cluster:GcpGpuCluster::vllm-cluster"}
    names = {r.name for r in res if r.type.startswith(("gcp:", "kubernetes:"))}
    assert {"vllm-cluster-gke", "vllm-cluster-system", "vllm-cluster-gpu-g2-standard-8", "vllm-cluster-net",
            "vllm-cluster-nodes", "vllm-cluster-router", "vllm-cluster-nat", "vllm-cluster-filestore",
            "vllm-cluster-filestore-sc", "vllm-cluster-filestore-pv", "vllm-cluster-api-compute"} <= names


@pytest.mark.parametrize("models,gcp", [([A3_MEGA], GCP), ([A4], {**GCP, "reservation": "b200-pool"})])
def test_a3_mega_and_a4_multi_node_clusters_plan(models, gcp):
    res, exports = cluster_plan({"cloud": "gcp", "gcp": gcp, "models": models})
    (pool,) = [p.inputs for p in by_type(res, POOL) if p.inputs["name"] != "system"]
    assert len(pool["networkConfig"]["additionalNodeNetworkConfigs"]) == {"a3-megagpu-8g": 8, "a4-highgpu-8g": 9}[
        pool["nodeConfig"]["machineType"]]
