"""GCP path, pure parts: machine-family table, GPU NIC network plan, Filestore sizing, kubeconfig,
GcpSettings validation, and the GKE multi-networking objects against the upstream CRDs."""
from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from components.catalog import INSTANCE_TYPES, instance_types
from components.cluster.gcp import storage as filestore
from components.cluster.gcp.gpudirect import (additional_node_networks, fabric_vpcs,
                                              machine_family, network_objects, pod_annotations)
from components.cluster.gcp.control_plane import kubeconfig_yaml
from components.cluster.gcp.node_pools import local_ssd_read_gbps
from components.config import ConfigError
from components.config.load import parse

CRDS = Path(__file__).resolve().parents[3] / "schemas" / "crds" / "gke-networking-api"
GCP = {"project": "my-proj-123", "region": "us-central1", "zone": "us-central1-a",
       "masterAuthorizedNetworks": ["203.0.113.7/32"]}
MODEL = [{"name": "llama-8b", "model": "llama-3.1-8b", "maxModelLen": 8192}]


def family(name: str):
    return machine_family(INSTANCE_TYPES[name])


# --- machine families ----------------------------------------------------------------------------

def test_every_gcp_machine_type_has_a_family_that_agrees_with_the_catalog():
    for inst in instance_types("gcp"):
        f = machine_family(inst)
        assert f.fabric == inst.fabric, inst.name
        assert inst.gke_accelerator, inst.name


@pytest.mark.parametrize("machine,nics,mode,extra", [
    ("a3-highgpu-8g", 4, "NetDevice", 0), ("a3-megagpu-8g", 8, "NetDevice", 0),
    ("a3-ultragpu-8g", 8, "RDMA", 1), ("a4-highgpu-8g", 8, "RDMA", 1), ("g2-standard-8", 0, None, 0)])
def test_gpu_nics_per_family(machine, nics, mode, extra):
    f = family(machine)
    assert (f.gpu_nics, f.device_mode, f.extra_gvnics) == (nics, mode, extra)


def test_compact_placement_only_where_gke_documents_it():
    offered = {inst.accelerator for inst in instance_types("gcp") if machine_family(inst).compact_placement}
    assert offered == {"l4", "a100-40gb", "a100-80gb", "h100"}


def test_unknown_family_names_the_table():
    from components.catalog import InstanceType
    odd = InstanceType("gcp", "n1-standard-8", "l4", 1, 8, 30, 0, 16, None, 1.0, "test")
    with pytest.raises(KeyError, match="no GKE machine family entry for 'n1-standard'"):
        machine_family(odd)


# --- the GPU NIC network plan --------------------------------------------------------------------

def test_tcpx_gets_four_vpcs_of_one_subnet_each():
    vpcs = fabric_vpcs("llm", "us-central1-a", [family("a3-highgpu-8g")])
    assert [(v.vpc, v.mtu, v.network_profile, v.firewall) for v in vpcs] == [
        (f"llm-gpunic-{i}", 8244, None, True) for i in range(1, 5)]
    assert [(s.subnet, s.cidr, s.k8s_network, s.device_mode) for v in vpcs for s in v.subnets] == [
        (f"llm-gpunic-{i}-sub", f"192.168.{i}.0/24", f"vpc{i}", "NetDevice") for i in range(1, 5)]


def test_tcpx_and_tcpxo_pools_share_the_gpu_nic_vpcs():
    vpcs = fabric_vpcs("llm", "us-central1-a", [family("a3-highgpu-8g"), family("a3-megagpu-8g")])
    assert len(vpcs) == 8
    high = additional_node_networks(family("a3-highgpu-8g"), vpcs)
    mega = additional_node_networks(family("a3-megagpu-8g"), vpcs)
    assert high == mega[:4] and len(mega) == 8
    assert mega[7] == {"network": "llm-gpunic-8", "subnetwork": "llm-gpunic-8-sub"}


def test_rdma_gets_a_roce_vpc_with_eight_subnets_and_a_second_gvnic():
    vpcs = fabric_vpcs("llm", "europe-west1-b", [family("a3-ultragpu-8g"), family("a4-highgpu-8g")])
    gvnic, roce = vpcs
    assert (gvnic.vpc, gvnic.mtu, gvnic.firewall, gvnic.network_profile) == ("llm-gvnic-1", 8896, True, None)
    assert (roce.vpc, roce.mtu, roce.firewall, roce.network_profile) == (
        "llm-rdma", 8896, False, "europe-west1-b-vpc-roce")
    assert [(s.subnet, s.k8s_network, s.device_mode) for s in roce.subnets] == [
        (f"llm-rdma-sub-{i}", f"rdma-{i}", "RDMA") for i in range(8)]
    cidrs = [s.cidr for v in vpcs for s in v.subnets]
    assert len(set(cidrs)) == 9 and not set(cidrs) & {f"192.168.{i}.0/24" for i in range(1, 9)}
    nets = additional_node_networks(family("a3-ultragpu-8g"), vpcs)
    assert nets[0] == {"network": "llm-gvnic-1", "subnetwork": "llm-gvnic-1-sub"}
    assert nets[1:] == [{"network": "llm-rdma", "subnetwork": f"llm-rdma-sub-{i}"} for i in range(8)]


def test_no_networks_for_plain_gvnic_families():
    assert fabric_vpcs("llm", "us-central1-a", [family("g2-standard-8"), family("a2-ultragpu-8g")]) == []
    assert pod_annotations(family("g2-standard-8")) == {}


def test_pod_annotations_name_every_gpu_nic_in_interface_order():
    ann = pod_annotations(family("a3-ultragpu-8g"))
    assert ann["networking.gke.io/default-interface"] == "eth0"
    interfaces = json.loads(ann["networking.gke.io/interfaces"])
    assert interfaces[:2] == [{"interfaceName": "eth0", "network": "default"},
                              {"interfaceName": "eth1", "network": "gvnic-1"}]
    assert interfaces[-1] == {"interfaceName": "eth9", "network": "rdma-7"}
    tcpx = json.loads(pod_annotations(family("a3-highgpu-8g"))["networking.gke.io/interfaces"])
    assert [i["network"] for i in tcpx] == ["default", "vpc1", "vpc2", "vpc3", "vpc4"]


def _schema(kind_file: str) -> dict:
    crd = yaml.safe_load((CRDS / kind_file).read_text())
    (v1,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    assert v1["served"] and v1["storage"]
    return v1["schema"]["openAPIV3Schema"]


def test_network_objects_validate_against_the_gke_networking_crds():
    schemas = {"Network": _schema("networking.gke.io_networks.yaml"),
               "GKENetworkParamSet": _schema("networking.gke.io_gkenetworkparamsets.yaml")}
    vpcs = fabric_vpcs("llm", "us-central1-a", [family("a3-megagpu-8g"), family("a3-ultragpu-8g")])
    objs = network_objects(vpcs)
    assert len(objs) == 2 * (8 + 1 + 8)
    for o in objs:
        jsonschema.validate(o, schemas[o["kind"]])
    params = {o["metadata"]["name"]: o["spec"] for o in objs if o["kind"] == "GKENetworkParamSet"}
    assert params["rdma-3"] == {"vpc": "llm-rdma", "vpcSubnet": "llm-rdma-sub-3", "deviceMode": "RDMA"}
    assert params["vpc2"] == {"vpc": "llm-gpunic-2", "vpcSubnet": "llm-gpunic-2-sub", "deviceMode": "NetDevice"}
    # a wrong device mode is what the CRD refuses
    bad = {**objs[0], "spec": {**objs[0]["spec"], "deviceMode": "SR-IOV"}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schemas["GKENetworkParamSet"])


# --- Filestore -----------------------------------------------------------------------------------

@pytest.mark.parametrize("tier,need,gib", [
    ("BASIC_HDD", 20, 1024), ("BASIC_SSD", 300, 2560), ("BASIC_SSD", 3000, 3000),
    ("ZONAL", 1100, 1280), ("ZONAL", 9985, 10240), ("ZONAL", 12000, 12800),
    ("REGIONAL", 1024, 1024), ("ENTERPRISE", 10000, 10240)])
def test_filestore_capacity_follows_the_tier_steps(tier, need, gib):
    assert filestore.capacity_gib(tier, need) == gib


def test_filestore_capacity_above_the_tier_names_the_field():
    with pytest.raises(ValueError, match=r"gcp.filestoreTier: ENTERPRISE holds at most 10240 GiB; "
                                         r"the cache needs 11000 GiB"):
        filestore.capacity_gib("ENTERPRISE", 11000)


@pytest.mark.parametrize("tier,gib,gbps", [
    ("BASIC_HDD", 1024, 0.1), ("BASIC_HDD", 10240, 0.19), ("BASIC_SSD", 2560, 1.26),
    ("ZONAL", 1024, 0.27), ("ZONAL", 10240, 0.47), ("REGIONAL", 1024, 0.13), ("ENTERPRISE", 10240, 0.47)])
def test_filestore_read_throughput_is_what_one_node_gets(tier, gib, gbps):
    """The instance's documented maximum, but never above the tier's single-client figure (450 MiB/s):
    a 10 TiB ZONAL instance serves 2.7 GB/s in all, yet one node loading weights sees ~0.47."""
    assert filestore.read_gbps(tier, gib) == gbps


def test_filestore_location_is_zonal_or_regional_by_tier():
    assert filestore.location("ZONAL", "us-central1", "us-central1-a") == "us-central1-a"
    assert filestore.location("ENTERPRISE", "us-central1", "us-central1-a") == "us-central1"


def test_local_ssd_read_throughput_grows_with_disks_then_stops():
    assert local_ssd_read_gbps(0) == 0
    assert local_ssd_read_gbps(16) == local_ssd_read_gbps(32) == 9.81


# --- kubeconfig ----------------------------------------------------------------------------------

def test_kubeconfig_authenticates_with_the_gke_auth_plugin_and_holds_no_token():
    doc = yaml.safe_load(kubeconfig_yaml("gke_p_us-central1_llm", "34.1.2.3", "Q0E="))
    assert doc["clusters"][0]["cluster"] == {"server": "https://34.1.2.3", "certificate-authority-data": "Q0E="}
    user = doc["users"][0]["user"]
    assert set(user) == {"exec"} and user["exec"]["command"] == "gke-gcloud-auth-plugin"
    assert user["exec"]["apiVersion"] == "client.authentication.k8s.io/v1beta1"
    assert doc["current-context"] == "gke_p_us-central1_llm"


# --- GcpSettings ---------------------------------------------------------------------------------

def errors(gcp: dict) -> list[str]:
    with pytest.raises(ConfigError) as e:
        parse({"cloud": "gcp", "gcp": gcp, "models": MODEL}, {"hfToken"})
    return e.value.errors


def test_gcp_settings_parse_with_defaults():
    g = parse({"cloud": "gcp", "gcp": GCP, "models": MODEL}, {"hfToken"}).gcp
    assert (g.filestore_tier, g.spot, g.reservation, g.private_endpoint, g.release_channel) == (
        "BASIC_SSD", False, None, False, None)


@pytest.mark.parametrize("change,expected", [
    ({"masterAuthorizedNetworks": ["203.0.113.7/24"]},
     "gcp.masterAuthorizedNetworks: not a CIDR block: 203.0.113.7/24; e.g. 203.0.113.7/32"),
    ({"spot": True, "reservation": "h100-res"},
     "gcp.spot: Spot VMs cannot consume a reservation; set `spot` or `reservation`"),
    ({"subnetwork": "gke"}, "gcp.network: missing: `subnetwork` is set, so name its VPC in `network`"),
    ({"network": "shared"}, "gcp.subnetwork: an existing `network` needs `subnetwork`, `podsRange` and "
                            "`servicesRange`"),
    ({"filestoreTier": "HIGH_SCALE_SSD"}, "gcp.filestoreTier: Input should be 'BASIC_HDD', 'BASIC_SSD', 'ZONAL'"),
    ({"reservation": "Bad_Name"}, "gcp.reservation: String should match pattern"),
    ({"zone": "europe-west4-a"}, "gcp.zone: europe-west4-a is not in region us-central1"),
])
def test_gcp_settings_errors_name_the_field(change, expected):
    errs = errors({**GCP, **change})
    assert any(e.startswith(expected) for e in errs), errs


@pytest.mark.parametrize("cidrs,private_flag,private", [
    (["203.0.113.7/32"], False, False), (["10.8.0.0/16"], True, True), ([], False, True)])
def test_control_plane_is_private_unless_cidrs_may_reach_it(cidrs, private_flag, private):
    from components.cluster.gcp.control_plane import cluster_args
    from components.cluster.gcp.network import PrimaryNetwork

    cfg = parse({"cloud": "gcp", "gcp": {**GCP, "masterAuthorizedNetworks": cidrs, "privateEndpoint": private_flag,
                                         "kubeconfigEndpoint": "dns"},
                 "models": MODEL}, {"hfToken"})
    args = cluster_args(cfg, PrimaryNetwork("net", "sub", "pods", "services"), {})
    assert args["private_cluster_config"]["enable_private_endpoint"] is private
    assert args["private_cluster_config"]["enable_private_nodes"] is True
    assert [b["cidr_block"] for b in args["master_authorized_networks_config"]["cidr_blocks"]] == cidrs


def test_filestore_holds_the_cache_size_even_just_above_a_tier_step():
    from types import SimpleNamespace as T  # the two Topology fields the cache size reads

    from components.cluster.pools import model_cache_gib

    tops = {"a": T(model_repo="org/a", weights_gib=1707.6), "b": T(model_repo="org/a", weights_gib=1707.6),
            "c": T(model_repo="org/c", weights_gib=0.4)}
    need = model_cache_gib(None, tops)
    assert need == 2570  # (1707.6 + 0.4) x 1.5 = 2562 -> 10 GiB steps; one checkpoint counted once
    assert filestore.capacity_gib("BASIC_SSD", need) >= need
    assert model_cache_gib(300, tops) == 300
