"""What Google Cloud would answer for the GCP resources the stack creates (offline plan only).

Outputs shaped like the real provider's (ids, self links, endpoints, IPs); never our logic. The
project is the provider's default project, as the real provider would apply it.
"""
from __future__ import annotations

import hashlib

from .mocks import _FAKE_CA, cloud_outputs

_API = "https://www.googleapis.com/compute/v1"
_provider = {"project": "offline-project"}


def _n(name: str, mod: int) -> int:
    return int(hashlib.sha256(name.encode()).hexdigest()[:8], 16) % mod


def _project(inputs: dict) -> str:
    return inputs.get("project") or _provider["project"]


@cloud_outputs("pulumi:providers:gcp")
def _gcp_provider(name, inputs):
    if inputs.get("project"):
        _provider["project"] = inputs["project"]
    return {}


@cloud_outputs("gcp:projects/service:Service")
def _service(name, inputs):
    return {"id": f"{_project(inputs)}/{inputs['service']}", "project": _project(inputs)}


@cloud_outputs("gcp:serviceaccount/account:Account")
def _account(name, inputs):
    p = _project(inputs)
    email = f"{inputs['accountId']}@{p}.iam.gserviceaccount.com"
    return {"email": email, "member": f"serviceAccount:{email}", "project": p,
            "name": f"projects/{p}/serviceAccounts/{email}", "id": f"projects/{p}/serviceAccounts/{email}",
            "uniqueId": str(10**20 + _n(email, 10**19))}


@cloud_outputs("gcp:projects/iAMMember:IAMMember")
def _iam_member(name, inputs):
    return {"etag": f"BwY{_n(name, 10**6):06d}=", "id": f"{inputs['project']}/{inputs['role']}/{inputs['member']}"}


@cloud_outputs("gcp:compute/network:Network")
def _network(name, inputs):
    path = f"projects/{_project(inputs)}/global/networks/{inputs['name']}"
    return {"id": path, "selfLink": f"{_API}/{path}", "project": _project(inputs),
            "mtu": inputs.get("mtu", 1460), "numericId": str(10**18 + _n(path, 10**17))}


@cloud_outputs("gcp:compute/subnetwork:Subnetwork")
def _subnetwork(name, inputs):
    path = f"projects/{_project(inputs)}/regions/{inputs['region']}/subnetworks/{inputs['name']}"
    base = inputs["ipCidrRange"].split("/")[0].rsplit(".", 1)[0]
    return {"id": path, "selfLink": f"{_API}/{path}", "gatewayAddress": f"{base}.1", "project": _project(inputs)}


@cloud_outputs("gcp:compute/router:Router")
def _router(name, inputs):
    path = f"projects/{_project(inputs)}/regions/{inputs['region']}/routers/{inputs['name']}"
    return {"id": path, "selfLink": f"{_API}/{path}"}


@cloud_outputs("gcp:compute/routerNat:RouterNat")
def _router_nat(name, inputs):
    return {"id": f"{_project(inputs)}/{inputs['region']}/{inputs['router']}/{inputs['name']}"}


@cloud_outputs("gcp:compute/firewall:Firewall")
def _firewall(name, inputs):
    path = f"projects/{_project(inputs)}/global/firewalls/{inputs['name']}"
    return {"id": path, "selfLink": f"{_API}/{path}"}


@cloud_outputs("gcp:container/cluster:Cluster")
def _cluster(name, inputs):
    p, loc = _project(inputs), inputs["location"]
    path = f"projects/{p}/locations/{loc}/clusters/{inputs['name']}"
    version = f"{inputs.get('minMasterVersion', '1.33')}.5-gke.1080000"
    return {"id": path, "selfLink": f"https://container.googleapis.com/v1/{path}",
            "endpoint": f"34.{_n(path, 200) + 20}.{_n(path + 'b', 250)}.{_n(path + 'c', 250) + 2}",
            "masterAuth": {**(inputs.get("masterAuth") or {}), "clusterCaCertificate": _FAKE_CA,
                           "clientCertificateConfig": {"issueClientCertificate": False}},
            "masterVersion": version, "operation": None, "project": p,
            "labelFingerprint": f"{_n(path, 16**8):08x}"}


@cloud_outputs("gcp:container/nodePool:NodePool")
def _node_pool(name, inputs):
    cluster = inputs["cluster"]  # projects/P/locations/L/clusters/C
    zone = (inputs.get("nodeLocations") or [f"{inputs['location']}-a"])[0]
    group = f"gke-{cluster.rsplit('/', 1)[-1]}-{inputs['name']}-{_n(cluster + inputs['name'], 16**8):08x}-grp"
    mig = f"{_API}/projects/{cluster.split('/')[1]}/zones/{zone}/instanceGroupManagers/{group}"
    return {"id": f"{cluster}/nodePools/{inputs['name']}", "instanceGroupUrls": [mig],
            "managedInstanceGroupUrls": [mig.replace("instanceGroupManagers", "instanceGroups")],
            "version": "1.33.5-gke.1080000"}


@cloud_outputs("gcp:filestore/instance:Instance")
def _filestore(name, inputs):
    p = _project(inputs)
    path = f"projects/{p}/locations/{inputs['location']}/instances/{inputs['name']}"
    # DIRECT_PEERING instances get an address in a /29 Google reserves out of the VPC's free space.
    networks = [{**n, "ipAddresses": [f"10.{_n(path, 200) + 40}.{_n(path + 'x', 250)}.2"],
                 "reservedIpRange": f"10.{_n(path, 200) + 40}.{_n(path + 'x', 250)}.0/29"}
                for n in inputs.get("networks") or []]
    return {"id": path, "networks": networks, "createTime": "2026-01-01T00:00:00Z", "project": p}


__all__: list[str] = []
