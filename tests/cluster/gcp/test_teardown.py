"""Issue 36: a production GKE stack is torn down in one go. gcp.deletionProtection drives GKE's and Filestore's own
deletion flags and Pulumi's `protect` together, so that the engine (not GKE, after every Kubernetes object and node
pool is gone) refuses `pulumi destroy`, and switching it off with a `pulumi up` unprotects state and cloud at once."""
from __future__ import annotations

import pytest

from components.config import ConfigError
from components.config.load import parse
from components.offline import runner
from tests.support.gcp import CASES, CLUSTER, FILESTORE, POOL, cluster_plan
from tests.support.plans import by_type, one, prod_gateway


def protected_plan(monkeypatch, environment: str, flag: bool | None):
    """(resources, {resource name: protect}) of the G2 case with a Filestore cache, as the engine is asked."""
    protect: dict[str, bool] = {}

    class Monitor(runner.RecordingMonitor):
        def RegisterResource(self, request):
            protect[request.name] = bool(request.protect)
            return super().RegisterResource(request)

    monkeypatch.setattr(runner, "RecordingMonitor", Monitor)
    extra, model = CASES["g2"]
    gcp = {**extra["gcp"], **({} if flag is None else {"deletionProtection": flag})}
    values = {"cloud": "gcp", **extra, "gcp": gcp, "environment": environment, "models": [model]}
    if environment == "prod":
        values["gateway"] = prod_gateway("gcp")
    res, _ = cluster_plan(values)
    return res, protect


@pytest.mark.parametrize("environment, flag, on", [
    ("prod", None, True),    # the default in production
    ("prod", False, False),  # switched off before a teardown
    ("dev", None, False),
    ("dev", True, True),
])
def test_the_cluster_and_the_cache_are_protected_in_pulumi_and_in_the_cloud_together(monkeypatch, environment,
                                                                                      flag, on):
    res, protect = protected_plan(monkeypatch, environment, flag)
    cluster, cache = one(res, CLUSTER), one(res, FILESTORE)
    assert cluster.inputs["deletionProtection"] is on and protect[cluster.name] is on
    assert cache.inputs["deletionProtectionEnabled"] is on and protect[cache.name] is on
    # No cloud flag on a pool, and an ordinary `up` deletes or replaces GPU pools (a removed model, another
    # instance type): never protected, whatever the flag.
    pools = by_type(res, POOL)
    assert pools and not any(protect[p.name] for p in pools)


def test_nothing_else_is_protected_so_a_destroy_after_switching_it_off_goes_in_one_go(monkeypatch):
    _, protect = protected_plan(monkeypatch, "prod", False)
    assert not any(protect.values())
    _, protect = protected_plan(monkeypatch, "prod", None)
    assert sorted(n for n, p in protect.items() if p) == ["vllm-cluster-filestore", "vllm-cluster-gke"]


def test_deletion_protection_must_be_a_boolean():
    with pytest.raises(ConfigError) as e:
        parse({"cloud": "gcp", "gcp": {**CASES["g2"][0]["gcp"], "deletionProtection": "maybe"},
               "models": [CASES["g2"][1]]}, {"hfToken"})
    assert any(err.startswith("gcp.deletionProtection:") for err in e.value.errors)
