"""GcpGpuCluster offline, under mocks: what `pulumi up` would send to GCP and to the new cluster, for
an A3 High multi-node stack, an A3 Ultra (RDMA) stack and a G2 stack.

The cases run a program that builds only the cluster (platform._cluster, the dispatch the Platform
uses) so that they test this component whatever serving accepts; the shipped stack runs whole."""
from __future__ import annotations


import pulumi
import pytest
import yaml

from components.config import ConfigError
from components.config.schema import ClusterSettings
from tests.support.plans import by_type, manifests, one, planned, sanitize
from tests.support.gcp import CASES, CLUSTER, FILESTORE, GCP, POOL, PROJECT, cluster_plan, gpu_pool, plan


NETWORK = "gcp:compute/network:Network"
SUBNET = "gcp:compute/subnetwork:Subnetwork"
FIREWALL = "gcp:compute/firewall:Firewall"


def fabric_rules(res):
    """Firewall rules of the GPU NIC networks (the primary VPC's control-plane rule is test_gcp_pool_ops.py's)."""
    return [r for r in by_type(res, FIREWALL) if r.inputs["network"] != "vllm-net"]


def topology(case: str) -> dict:
    (t,) = plan(case)[1]["topology"].values()
    return t


# --- A3 High, multi-node -------------------------------------------------------------------------

def test_a3_high_plan_is_two_nodes_per_replica():
    t = topology("a3-high")
    assert (t["instance_type"], t["tensor_parallel_size"], t["pipeline_parallel_size"], t["nodes_per_replica"]) == (
        "a3-highgpu-8g", 8, 2, 2)


def test_a3_high_pool_has_eight_h100s_the_driver_and_compact_placement():
    p = gpu_pool("a3-high")
    node = p["nodeConfig"]
    assert node["machineType"] == "a3-highgpu-8g"
    assert node["guestAccelerators"] == [{"type": "nvidia-h100-80gb", "count": 8,
                                          "gpuDriverInstallationConfig": {"gpuDriverVersion": "LATEST"}}]
    assert p["placementPolicy"] == {"type": "COMPACT"}
    assert p["nodeLocations"] == ["us-central1-a"]
    # 1..2 replicas of 2 nodes each
    # created empty (a stockout must not fail the run); the autoscaler grows it to the plan's max of 4
    assert (p["autoscaling"]["minNodeCount"], p["autoscaling"]["maxNodeCount"], p["initialNodeCount"]) == (0, 4, 0)
    assert node["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}]
    assert node["labels"] == {"vllm-platform/gpu-pool": "gpu-a3-highgpu-8g", "vllm-platform/accelerator": "h100"}
    assert node["gvnic"] == {"enabled": True}
    assert node["ephemeralStorageLocalSsdConfig"] == {"localSsdCount": 16}
    assert "spot" not in node and "reservationAffinity" not in node


def test_a3_high_pool_gets_four_gpu_nic_networks():
    p = gpu_pool("a3-high")
    assert p["networkConfig"]["additionalNodeNetworkConfigs"] == [
        {"network": f"vllm-gpunic-{i}", "subnetwork": f"vllm-gpunic-{i}-sub"} for i in range(1, 5)]
    res = plan("a3-high")[0]
    extra = {r.inputs["name"]: r.inputs for r in by_type(res, NETWORK) if r.inputs["name"] != "vllm-net"}
    assert sorted(extra) == [f"vllm-gpunic-{i}" for i in range(1, 5)]
    assert {n["mtu"] for n in extra.values()} == {8244}
    subnets = {r.inputs["name"]: r.inputs["ipCidrRange"] for r in by_type(res, SUBNET)}
    assert subnets == {"vllm-nodes": "10.0.0.0/20",
                       **{f"vllm-gpunic-{i}-sub": f"192.168.{i}.0/24" for i in range(1, 5)}}
    rules = {r.inputs["network"]: r.inputs for r in fabric_rules(res)}
    assert rules["vllm-gpunic-2"]["sourceRanges"] == ["192.168.2.0/24"]
    assert len(rules) == 4


def test_a3_high_multi_networking_objects():
    objs = manifests(plan("a3-high")[0])
    for i in range(1, 5):
        params = objs[f"gkenetworkparamset_cluster_vpc{i}.yaml"]
        assert params["spec"] == {"vpc": f"vllm-gpunic-{i}", "vpcSubnet": f"vllm-gpunic-{i}-sub",
                                  "deviceMode": "NetDevice"}
        net = objs[f"network_cluster_vpc{i}.yaml"]
        assert net["spec"]["type"] == "Device" and net["spec"]["parametersRef"]["name"] == f"vpc{i}"
    assert not any(name.startswith("network_cluster_rdma") for name in objs)


# --- A3 Ultra, RDMA ------------------------------------------------------------------------------

def test_a3_ultra_pool_gets_the_gvnic_and_eight_rdma_networks():
    p = gpu_pool("a3-ultra")
    assert p["nodeConfig"]["guestAccelerators"][0]["type"] == "nvidia-h200-141gb"
    assert p["nodeConfig"]["guestAccelerators"][0]["count"] == 8
    assert p["networkConfig"]["additionalNodeNetworkConfigs"] == [
        {"network": "vllm-gvnic-1", "subnetwork": "vllm-gvnic-1-sub"}] + [
        {"network": "vllm-rdma", "subnetwork": f"vllm-rdma-sub-{i}"} for i in range(8)]
    res = plan("a3-ultra")[0]
    roce = one(res, NETWORK, "vllm-cluster-rdma").inputs
    assert roce["networkProfile"] == f"projects/{PROJECT}/global/networkProfiles/us-central1-a-vpc-roce"
    assert roce["mtu"] == 8896
    assert sorted(r.inputs["name"] for r in by_type(res, SUBNET) if r.inputs["network"] == "vllm-rdma") == [
        f"vllm-rdma-sub-{i}" for i in range(8)]
    # RoCE VPCs take no firewall rules; the second gVNIC's VPC does
    assert [r.inputs["network"] for r in fabric_rules(res)] == ["vllm-gvnic-1"]
    objs = manifests(res)
    assert objs["gkenetworkparamset_cluster_rdma-7.yaml"]["spec"] == {
        "vpc": "vllm-rdma", "vpcSubnet": "vllm-rdma-sub-7", "deviceMode": "RDMA"}
    assert objs["gkenetworkparamset_cluster_gvnic-1.yaml"]["spec"]["deviceMode"] == "NetDevice"


def test_a3_ultra_consumes_the_reservation_instead_of_compact_placement():
    p = gpu_pool("a3-ultra")
    assert p["nodeConfig"]["reservationAffinity"] == {
        "consumeReservationType": "SPECIFIC_RESERVATION", "key": "compute.googleapis.com/reservation-name",
        "values": ["h200-dense"]}
    assert "placementPolicy" not in p
    assert p["nodeConfig"]["diskType"] == "hyperdisk-balanced"
    assert p["nodeConfig"]["ephemeralStorageLocalSsdConfig"] == {"localSsdCount": 32}


def test_a3_ultra_without_reservation_or_spot_is_refused_by_field():
    extra, model = CASES["a3-ultra"]
    with pytest.raises(pulumi.RunError) as e:
        cluster_plan({"cloud": "gcp", "gcp": GCP, "models": [model]})
    assert isinstance(e.value.__cause__, ConfigError)  # the CLI and `pulumi up` print it without a traceback
    assert "gcp.reservation: a3-ultragpu-8g (for dense-700b) is not offered on demand; set gcp.reservation " \
           "to a reservation of it, or gcp.spot: true" in str(e.value)


def test_one_reservation_for_two_machine_types_is_refused_by_field():
    """A GCE reservation holds one machine type; the G2 pool could never consume an A3 Ultra one."""
    a3_ultra = CASES["a3-ultra"][1]
    g2 = CASES["g2"][1]
    with pytest.raises(pulumi.RunError) as e:
        cluster_plan({"cloud": "gcp", "gcp": {**GCP, "reservation": "h200-dense"}, "models": [a3_ultra, g2]})
    assert isinstance(e.value.__cause__, ConfigError)
    assert "gcp.reservation: h200-dense holds one machine type, but the plan uses a3-ultragpu-8g, " \
           "g2-standard-8; pin every model's instanceTypes" in str(e.value)


# --- G2, one GPU ---------------------------------------------------------------------------------

def test_g2_pool_is_one_l4_without_fabric_placement_or_local_ssd():
    p = gpu_pool("g2")
    node = p["nodeConfig"]
    assert node["machineType"] == "g2-standard-8"
    assert node["guestAccelerators"] == [{"type": "nvidia-l4", "count": 1,
                                          "gpuDriverInstallationConfig": {"gpuDriverVersion": "LATEST"}}]
    assert p["networkConfig"] == {"enablePrivateNodes": True}
    assert "placementPolicy" not in p and "ephemeralStorageLocalSsdConfig" not in node
    res = plan("g2")[0]
    assert [r.inputs["name"] for r in by_type(res, NETWORK)] == ["vllm-net"]
    assert fabric_rules(res) == []
    assert not [m for m in manifests(res) if m.startswith(("network_", "gkenetworkparamset_"))]


def test_nvme_cache_on_a_machine_without_local_ssd_is_refused_by_field():
    extra, model = CASES["g2"]
    with pytest.raises(pulumi.RunError) as e:
        cluster_plan({"cloud": "gcp", "gcp": GCP, "modelCache": {"kind": "nvme"}, "models": [model]})
    assert "modelCache.kind: nvme needs local SSDs and g2-standard-8 comes with none" in str(e.value)


def test_single_node_h100_replicas_get_no_gpu_nic_networks():
    """Qwen2.5-72B at TP 4 stays inside one a3-highgpu-8g: NVLink only, no extra VPCs, no compact placement."""
    res = planned("prod-qwen72b-gcp").resources
    (p,) = [r.inputs for r in by_type(res, POOL) if r.inputs["name"] != "system"]
    assert p["nodeConfig"]["machineType"] == "a3-highgpu-8g"
    assert p["networkConfig"] == {"enablePrivateNodes": True} and "placementPolicy" not in p
    assert [r.inputs["name"] for r in by_type(res, NETWORK)] == ["llm-prod-net"]
    # so the pool hands over no fabric, and the add-ons install no GPUDirect-TCPX NCCL plugin
    assert not [m for m in manifests(res) if "tcpx" in m]


# --- the cluster ---------------------------------------------------------------------------------

def test_cluster_is_private_with_workload_identity_dataplane_v2_and_shielded_nodes():
    c = one(plan("a3-high")[0], CLUSTER).inputs
    assert c["privateClusterConfig"]["enablePrivateNodes"] is True
    assert c["privateClusterConfig"]["enablePrivateEndpoint"] is False
    assert c["masterAuthorizedNetworksConfig"]["cidrBlocks"] == [
        {"cidrBlock": "203.0.113.0/28", "displayName": "authorized-0"}]
    assert c["workloadIdentityConfig"] == {"workloadPool": f"{PROJECT}.svc.id.goog"}
    assert c["datapathProvider"] == "ADVANCED_DATAPATH"
    assert c["enableShieldedNodes"] is True and c["enableMultiNetworking"] is True
    assert c["releaseChannel"] == {"channel": "REGULAR"} and c["minMasterVersion"] == ClusterSettings().kubernetes_version == "1.35"
    assert c["addonsConfig"]["gcpFilestoreCsiDriverConfig"] == {"enabled": True}
    assert c["addonsConfig"]["gcsFuseCsiDriverConfig"] == {"enabled": True}
    assert c["removeDefaultNodePool"] is True
    assert c["ipAllocationPolicy"] == {"clusterSecondaryRangeName": "pods", "servicesSecondaryRangeName": "services"}
    assert (c["location"], c["nodeLocations"]) == ("us-central1", ["us-central1-a"])
    assert c["deletionProtection"] is True  # prod
    assert one(plan("g2")[0], CLUSTER).inputs["deletionProtection"] is False


def test_every_node_pool_is_private_shielded_and_uses_the_metadata_server_and_its_own_account():
    res = plan("a3-high")[0]
    account = one(res, "gcp:serviceaccount/account:Account").inputs["accountId"]
    for p in by_type(res, POOL):
        node = p.inputs["nodeConfig"]
        assert p.inputs["networkConfig"]["enablePrivateNodes"] is True
        assert node["workloadMetadataConfig"] == {"mode": "GKE_METADATA"}
        assert node["shieldedInstanceConfig"] == {"enableSecureBoot": True, "enableIntegrityMonitoring": True}
        assert node["serviceAccount"] == f"{account}@{PROJECT}.iam.gserviceaccount.com"
    roles = {r.inputs["role"] for r in by_type(res, "gcp:projects/iAMMember:IAMMember")}
    assert roles == {"roles/container.defaultNodeServiceAccount", "roles/artifactregistry.reader"}


def test_new_vpc_has_cloud_nat_and_an_existing_one_is_used_as_is():
    res = plan("g2")[0]
    assert one(res, "gcp:compute/routerNat:RouterNat").inputs["sourceSubnetworkIpRangesToNat"] == \
        "ALL_SUBNETWORKS_ALL_IP_RANGES"
    extra, model = CASES["g2"]
    shared = {**GCP, "network": "shared-vpc", "subnetwork": "gke-uc1", "podsRange": "gke-pods",
              "servicesRange": "gke-svc"}
    res2, _ = cluster_plan({"cloud": "gcp", "gcp": shared, "models": [model]})
    assert by_type(res2, NETWORK) == [] and by_type(res2, "gcp:compute/router:Router") == []
    c = one(res2, CLUSTER).inputs
    assert (c["network"], c["subnetwork"]) == ("shared-vpc", "gke-uc1")
    assert c["ipAllocationPolicy"] == {"clusterSecondaryRangeName": "gke-pods", "servicesSecondaryRangeName": "gke-svc"}
    assert one(res2, FILESTORE).inputs["networks"][0]["network"] == "shared-vpc"


def test_kubeconfig_is_a_secret_that_reaches_the_dns_endpoint_with_the_exec_plugin():
    """No CIDR may reach the IP endpoint (the default), so Pulumi goes through the DNS endpoint."""
    extra, model = CASES["g2"]
    private = {**{k: v for k, v in GCP.items() if k != "masterAuthorizedNetworks"}, "kubeconfigEndpoint": "dns"}
    res, exports = cluster_plan({"cloud": "gcp", "gcp": private, "models": [model]})
    provider = one(res, "pulumi:providers:kubernetes").inputs
    assert sanitize(provider["kubeconfig"]) == "[secret]"
    doc = yaml.safe_load(exports["kubeconfig"])
    cluster = doc["clusters"][0]["cluster"]
    # the DNS endpoint's certificate is publicly trusted: no cluster CA, which would fail TLS against it
    assert cluster["server"].startswith("https://gke-") and cluster["server"].endswith(".us-central1.gke.goog")
    assert "certificate-authority-data" not in cluster
    assert doc["users"][0]["user"]["exec"]["command"] == "gke-gcloud-auth-plugin"
    assert "token" not in exports["kubeconfig"]
    c = one(res, CLUSTER).inputs
    assert c["controlPlaneEndpointsConfig"] == {"dnsEndpointConfig": {"allowExternalTraffic": True}}


@pytest.mark.parametrize("dns", [True, False])
def test_where_the_deployers_cidrs_reach_the_ip_endpoint_the_kubeconfig_names_it_with_the_cluster_ca(dns):
    """A stack deployed through the public IP endpoint keeps it: the Kubernetes provider would take another
    `server` for another cluster and replace every object."""
    extra, model = CASES["g2"]
    res, exports = cluster_plan({"cloud": "gcp", "gcp": {**GCP, "dnsEndpoint": dns}, "models": [model]})
    cluster = yaml.safe_load(exports["kubeconfig"])["clusters"][0]["cluster"]
    assert cluster["server"].startswith("https://34.") and cluster["certificate-authority-data"]
    assert one(res, CLUSTER).inputs["controlPlaneEndpointsConfig"] == {
        "dnsEndpointConfig": {"allowExternalTraffic": dns}}


# --- Filestore model cache -----------------------------------------------------------------------

def test_filestore_holds_the_weights_and_its_pv_binds_by_class():
    res, exports = plan("a3-high")
    (t,) = exports["topology"].values()
    inst = one(res, FILESTORE).inputs
    assert inst["tier"] == "BASIC_SSD" and inst["location"] == "us-central1-a"
    # 754 GiB of 405B BF16 weights x 1.5 is below BASIC_SSD's 2.5 TiB minimum
    assert t["weights_gib"] * 1.5 < 2560 and inst["fileShares"] == {"name": "models", "capacityGb": 2560}
    assert inst["deletionProtectionEnabled"] is True
    objs = manifests(res)
    pv = objs["persistentvolume_cluster_filestore-model-cache.yaml"]["spec"]
    sc = objs["storageclass_cluster_filestore-model-cache.yaml"]
    assert pv["storageClassName"] == sc["metadata"]["name"] == "filestore-model-cache"
    assert sc["provisioner"] == "kubernetes.io/no-provisioner"
    assert pv["csi"]["driver"] == "filestore.csi.storage.gke.io"
    assert pv["csi"]["volumeHandle"] == "modeInstance/us-central1-a/vllm-models/models"
    assert pv["csi"]["volumeAttributes"]["volume"] == "models"
    assert pv["csi"]["volumeAttributes"]["ip"].count(".") == 3  # the instance's address, resolved
    assert pv["accessModes"] == ["ReadWriteMany"] and pv["capacity"] == {"storage": "2560Gi"}


def test_filestore_size_from_config_rounds_to_the_tier_minimum():
    assert one(plan("g2")[0], FILESTORE).inputs["fileShares"]["capacityGb"] == 2560


def test_nvme_cache_skips_filestore():
    extra, model = CASES["a3-high"]
    res, _ = cluster_plan({"cloud": "gcp", **extra, "modelCache": {"kind": "nvme"}, "models": [model]})
    assert by_type(res, FILESTORE) == []
    assert not [m for m in manifests(res) if m.startswith(("persistentvolume_", "storageclass_"))]


def test_the_cache_claim_binds_to_the_filestore_volume():
    """The shipped stack whole: the model cache's claim asks for no more than the PV offers, by its class."""
    objs = manifests(planned("prod-qwen72b-gcp").resources)
    pv = objs["persistentvolume_cluster_filestore-model-cache.yaml"]["spec"]
    (claim,) = [m["spec"] for name, m in objs.items() if name.startswith("persistentvolumeclaim_")]
    assert claim["storageClassName"] == pv["storageClassName"]
    assert claim["accessModes"] == pv["accessModes"] == ["ReadWriteMany"]
    asked, offered = (int(s.removesuffix("Gi")) for s in (claim["resources"]["requests"]["storage"],
                                                         pv["capacity"]["storage"]))
    assert 0 < asked <= offered == 2560


def test_the_default_pool_runs_as_the_node_account_not_the_compute_engine_default():
    """Hardened organisations disable the Compute Engine default service account (or strip its roles): the pool
    GKE creates with the cluster, and deletes at once, would fail the cluster's creation. It waits for the node
    account's roles, and its config never diffs (ForceNew: a diff would replace the cluster)."""
    res = plan("g2")[0]
    account = one(res, "gcp:serviceaccount/account:Account").inputs["accountId"]
    cluster = one(res, CLUSTER)
    assert cluster.inputs["nodeConfig"] == {
        "serviceAccount": f"{account}@{PROJECT}.iam.gserviceaccount.com",
        "oauthScopes": ["https://www.googleapis.com/auth/cloud-platform"]}
    assert cluster.inputs["removeDefaultNodePool"] is True and cluster.inputs["initialNodeCount"] == 1
    grants = {f"gcp:projects/iAMMember:IAMMember::{r.name}" for r in by_type(res, "gcp:projects/iAMMember:IAMMember")}
    assert len(grants) == 2 and grants <= set(cluster.dependencies)


def test_the_resource_manager_api_is_on_before_the_iam_bindings():
    """gcp.projects.IAMMember goes through the Cloud Resource Manager API; a fresh project may not have it."""
    res = plan("g2")[0]
    apis = {r.inputs["service"]: r.name for r in by_type(res, "gcp:projects/service:Service")}
    assert apis["cloudresourcemanager.googleapis.com"] == "vllm-cluster-api-cloudresourcemanager"
    assert set(apis) == {"compute.googleapis.com", "container.googleapis.com", "file.googleapis.com",
                         "iam.googleapis.com", "cloudresourcemanager.googleapis.com", "cloudquotas.googleapis.com"}
    crm = "gcp:projects/service:Service::vllm-cluster-api-cloudresourcemanager"
    for member in by_type(res, "gcp:projects/iAMMember:IAMMember"):
        assert crm in member.dependencies, member.name
    assert one(res, "gcp:projects/service:Service", "vllm-cluster-api-cloudresourcemanager").inputs[
        "disableOnDestroy"] is False
