"""KEDA (ScaledObjects on the single-node Deployments). Pure values.

KEDA itself needs no Prometheus address: each ScaledObject trigger carries it (AddonsFacts.prometheus_url).
Values keys: kedacore/charts keda/values.yaml.
"""
from __future__ import annotations

RELEASE = "keda"
NAMESPACE = "keda"


def keda_values(system_selector: dict[str, str]) -> dict:
    return {"nodeSelector": system_selector}
