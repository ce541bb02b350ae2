"""A kubeconfig for the cluster that authenticates with gke-gcloud-auth-plugin (no static token:
the credential is the caller's gcloud identity, short-lived)."""
from __future__ import annotations

import yaml

AUTH_PLUGIN = "gke-gcloud-auth-plugin"
INSTALL_HINT = ("Install gke-gcloud-auth-plugin for use with kubectl by following "
                "https://cloud.google.com/kubernetes-engine/docs/how-to/cluster-access-for-kubectl#install_plugin")


def context_name(project: str, location: str, cluster: str) -> str:
    return f"gke_{project}_{location}_{cluster}"  # what `gcloud container clusters get-credentials` names it


def kubeconfig_yaml(context: str, endpoint: str, ca_certificate_b64: str) -> str:
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": context, "cluster": {"server": f"https://{endpoint}",
                                                    "certificate-authority-data": ca_certificate_b64}}],
        "contexts": [{"name": context, "context": {"cluster": context, "user": context}}],
        "current-context": context,
        "users": [{"name": context, "user": {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": AUTH_PLUGIN,
            "installHint": INSTALL_HINT,
            "provideClusterInfo": True,
            "interactiveMode": "Never",
        }}}],
    }
    return yaml.safe_dump(doc, sort_keys=False)
