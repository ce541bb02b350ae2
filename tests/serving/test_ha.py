"""Multi-node serving through drains, upgrades and first deploys (issue 11, the parts a live cluster decides):
the Ray head and its GCS Redis wait for an operator instead of leaving with a drain, the workers' budget keeps
one worker (one node) go at a time, the head sits in its Redis's zone, a stuck prefetch fails visibly, the RayService's first
deploy counts the GPU nodes, and the plan says what `upgradeStrategy: None` leaves to a maintenance window."""
from __future__ import annotations

import dataclasses

import pytest

from components.cache.component import prefetch_job_spec
from components.cli import main
from components.planner import Topology
from components.serving.network import pdb_spec
from tests.support.plans import manifests, plan_config, planned, prod_gateway

MODEL = "llama-405b"
RAY_STACKS = ["prod-llama405b-onprem", "prod-llama405b-aws"]
DIGEST = "sha256:" + "ab" * 32
# What KubeRay puts on every pod of a RayCluster besides the template's labels (ray-operator/controllers/ray/
# common/pod.go, labelPod: ray.io/node-type, ray.io/group and ray.io/cluster cannot be overridden).
KUBERAY_HEAD = {"ray.io/node-type": "head", "ray.io/group": "headgroup", "ray.io/cluster": "llama-405b-abcde",
                "ray.io/is-ray-node": "yes"}
KUBERAY_WORKER = {"ray.io/node-type": "worker", "ray.io/group": "gpu", "ray.io/cluster": "llama-405b-abcde",
                  "ray.io/is-ray-node": "yes"}


def _objs(resources, kind: str) -> dict[str, dict]:
    return {m["metadata"]["name"]: m for m in manifests(resources).values() if m["kind"] == kind}


def _matches(selector: dict, labels: dict) -> bool:
    return all(labels.get(k) == v for k, v in selector["matchLabels"].items()) and not selector.get("matchExpressions")


@pytest.fixture(scope="module", params=RAY_STACKS)
def plan(request):
    return planned(request.param)


# --- the head and its Redis: a drain waits -----------------------------------------------------------------

def test_the_head_budget_selects_the_pod_kuberay_makes_and_nothing_else(plan):
    pdbs = _objs(plan.resources, "PodDisruptionBudget")
    rc = _objs(plan.resources, "RayService")[MODEL]["spec"]["rayClusterConfig"]
    head_pod = {**rc["headGroupSpec"]["template"]["metadata"]["labels"], **KUBERAY_HEAD}
    worker_pod = {**rc["workerGroupSpecs"][0]["template"]["metadata"]["labels"], **KUBERAY_WORKER}
    spec = pdbs["llama-405b-ray-head"]["spec"]
    assert spec == {"minAvailable": 1, "unhealthyPodEvictionPolicy": "AlwaysAllow", "selector": {"matchLabels": {
        "vllm-platform/model": MODEL, "vllm-platform/role": "ray-head", "ray.io/node-type": "head"}}}
    assert _matches(spec["selector"], head_pod)
    assert not _matches(spec["selector"], worker_pod)
    # without KubeRay's node type label the selector would not need it: it does, so it is KubeRay's head only
    assert not _matches(spec["selector"], rc["headGroupSpec"]["template"]["metadata"]["labels"])


def test_the_redis_budget_selects_the_redis_pod(plan):
    spec = _objs(plan.resources, "PodDisruptionBudget")["llama-405b-gcs-redis"]["spec"]
    sts = _objs(plan.resources, "StatefulSet")["llama-405b-gcs-redis"]
    assert spec["minAvailable"] == 1 and sts["spec"]["replicas"] == 1  # so no eviction is ever allowed
    assert spec["unhealthyPodEvictionPolicy"] == "AlwaysAllow"  # a crash-looping Redis never holds a node
    assert _matches(spec["selector"], sts["spec"]["template"]["metadata"]["labels"])


def test_development_ray_clusters_have_no_head_budget():
    dev = {"cloud": "existing", "environment": "dev", "namespace": "llm",
           "existing": {"blockStorageClass": "standard",
                        "gpuNodes": {"accelerator": "h100", "gpusPerNode": 8, "vcpu": 192, "ramGib": 2048,
                                     "fabric": "infiniband"}},
           "modelCache": {"kind": "rwx", "storageClass": "nfs"},
           "models": [{"name": "big", "model": "llama-3.1-405b", "precision": "bf16", "maxModelLen": 8192}]}
    resources, _ = plan_config(dev)
    assert list(_objs(resources, "PodDisruptionBudget")) == ["big"]


def test_the_head_prefers_the_zone_of_its_redis(plan):
    rc = _objs(plan.resources, "RayService")[MODEL]["spec"]["rayClusterConfig"]
    redis_labels = _objs(plan.resources, "StatefulSet")["llama-405b-gcs-redis"]["spec"]["template"]["metadata"]["labels"]
    (term,) = rc["headGroupSpec"]["template"]["spec"]["affinity"]["podAffinity"][
        "preferredDuringSchedulingIgnoredDuringExecution"]
    assert term["podAffinityTerm"]["topologyKey"] == "topology.kubernetes.io/zone"
    assert _matches(term["podAffinityTerm"]["labelSelector"], redis_labels)
    # preferred only: a head never waits for a Redis that is being moved
    assert "requiredDuringSchedulingIgnoredDuringExecution" not in rc["headGroupSpec"]["template"]["spec"]["affinity"][
        "podAffinity"]


# --- the workers' budget: one node at a time, never a drain blocked for ever ------------------------------

def _allowed(min_available: int, healthy: int) -> int:
    """disruptionsAllowed as the disruption controller computes it for an integer minAvailable."""
    return max(0, healthy - min_available)


def test_prod_405b_workers_let_one_node_drain_at_a_time_at_the_minimum_fleet(plan):
    pdb = _objs(plan.resources, "PodDisruptionBudget")[MODEL]["spec"]
    # TP 8 x PP 2 on two nodes, replicas 1..3: 2 workers at min, 4 planned, 6 at max; minAvailable = 2 x 1 - 1
    assert pdb["minAvailable"] == 1
    assert _allowed(pdb["minAvailable"], healthy=2) == 1  # the minimum fleet: one node's worker may go
    assert _allowed(pdb["minAvailable"], healthy=1) == 0  # and the next waits for its replacement to be Ready
    assert _allowed(pdb["minAvailable"], healthy=4) == 3


def _broken_by_one_drain_at_a_time(npr: int, replicas: int, min_available: int) -> int:
    """Replicas a sequence of single-node drains breaks at once when each waits for the budget: evictions are
    only admitted while disruptionsAllowed > 0 and the evicted worker is not yet replaced."""
    healthy, broken = npr * replicas, 0
    while _allowed(min_available, healthy) > 0 and broken < replicas:
        healthy, broken = healthy - 1, broken + 1  # the worst case: every eviction hits a replica still whole
    return broken


@pytest.mark.parametrize("npr,lo,hi", [(2, 1, 2), (2, 1, 4), (2, 2, 5), (3, 1, 3), (4, 2, 3), (2, 3, 3)])
def test_the_worker_budget_never_blocks_a_drain_and_takes_one_replica_at_the_minimum_fleet(npr, lo, hi):
    t = dataclasses.replace(_topology(), nodes_per_replica=npr, min_replicas=lo, max_replicas=hi)
    min_available = pdb_spec(MODEL, t)["minAvailable"]
    assert min_available == npr * lo - 1
    assert _allowed(min_available, npr * lo) == 1  # the minimum fleet: exactly one worker, never none
    assert _broken_by_one_drain_at_a_time(npr, lo, min_available) == 1  # lo - 1 replicas keep serving
    assert _allowed(min_available, npr * hi) >= 1


def test_the_worker_budget_of_a_single_replica_fleet_admits_one_worker():
    """replicas.min 1 across 2 nodes: one eviction (an outage until the replica is back, the documented price)
    rather than a budget that fails every EKS node-group update with PodEvictionFailure."""
    t = dataclasses.replace(_topology(), nodes_per_replica=2, min_replicas=1, max_replicas=1)
    assert pdb_spec(MODEL, t)["minAvailable"] == 1


def _topology() -> Topology:
    return Topology.from_dict(planned("prod-llama405b-onprem").exports["topology"][MODEL])


# --- prefetch: a stuck download fails visibly --------------------------------------------------------------

def test_the_405b_prefetch_gives_up_after_three_times_its_download_term_plus_half_an_hour():
    job = next(iter(_objs(planned("prod-llama405b-onprem").resources, "Job").values()))
    # 754.4 GiB at the 0.2 GB/s Hub figure: 4051 s; x 3 + 1800 s
    assert job["spec"]["activeDeadlineSeconds"] == 13953
    assert job["spec"]["backoffLimit"] == 4


def test_the_prefetch_deadline_grows_with_the_weights():
    small = prefetch_job_spec("Qwen/Qwen2.5-7B-Instruct", {}, {}, expected_gib=14.2)
    assert small["activeDeadlineSeconds"] == 77 * 3 + 1800  # 14.2 GiB / 0.2 GB/s = 77 s


# --- first deploy and what None leaves to a window ---------------------------------------------------------

def test_the_rayservice_first_deploy_counts_new_gpu_nodes():
    from components.cache.component import CacheFacts
    from components.serving.rayservice import first_deploy_s
    t = _topology()
    nvme = CacheFacts("nvme", 4.0, nvme_paths={t.instance_type: "/mnt/nvme/model-cache"})
    budget = nvme.budget(t).total_s
    # node-local cache: the node first (900 s), then its fill (4051 s), the pull (300 s), the budget
    assert first_deploy_s(t, nvme, 900) == 900 + 4051 + 300 + budget
    assert first_deploy_s(t, nvme, 0) == 4051 + 300 + budget
    rwx = CacheFacts("rwx", 1.0, claim="model-cache")
    # shared cache: the prefetch fills it while the nodes come up
    assert first_deploy_s(t, rwx, 900) == 4051 + 300 + 1460


def test_the_plan_says_what_upgrade_strategy_none_leaves_to_a_maintenance_window(capsys):
    assert main(["plan", "prod-llama405b-onprem"]) == 0
    out = capsys.readouterr().out
    assert "first deploy within 5811 s (GPU nodes, cache fill, image pull, start-up budget)" in out
    assert "WARNING: RAYSERVICE UPGRADES: llama-405b uses upgradeStrategy None" in out
    assert "the Ray image (serving.rayImage" in out and 'docs/serving.md, "Cluster changes"' in out
    assert ("WARNING: IMAGE BY TAG in production: llama-405b runs rayproject/ray-llm:2.58.0-py312-cu130, "
            "which can be re-pushed") in out


def test_single_node_models_get_no_ray_warnings():
    w = planned("prod-llama70b-aws").exports["serving"]["llama-70b"]["warnings"]
    assert not any(x.startswith(("RAYSERVICE UPGRADES", "IMAGE BY TAG")) for x in w)


def test_a_ray_image_pinned_by_digest_silences_the_image_warning():
    cfg = {"cloud": "existing", "environment": "prod", "namespace": "llm", "gateway": prod_gateway("existing"),
           "existing": {"blockStorageClass": "standard", "networkPolicyEnforced": True,
                        "gpuNodes": {"accelerator": "h100", "gpusPerNode": 8, "vcpu": 192, "ramGib": 2048,
                                     "fabric": "infiniband"}},
           "modelCache": {"kind": "rwx", "storageClass": "nfs"},
           "serving": {"multiNode": "rayservice", "rayImage": f"rayproject/ray-llm:2.58.0-py312-cu130@{DIGEST}"},
           "models": [{"name": "big", "model": "llama-3.1-405b", "precision": "bf16", "maxModelLen": 8192}]}
    _, exports = plan_config(cfg)
    w = exports["serving"]["big"]["warnings"]
    assert not any(x.startswith("IMAGE BY TAG") for x in w)
    assert any(x.startswith("RAYSERVICE UPGRADES: big") for x in w)
    cfg["serving"] = {"multiNode": "rayservice"}
    _, exports = plan_config(cfg)
    assert any(x.startswith("IMAGE BY TAG in production: big") for x in exports["serving"]["big"]["warnings"])


# --- the model revision: the catalog's commit by default, the stack's own pin first ------------------------

REV_A, REV_B = "a" * 40, "b" * 40
LLAMA_70B = "meta-llama/Llama-3.1-70B-Instruct"
EXISTING_70B = {
    "cloud": "existing", "environment": "prod", "namespace": "llm", "gateway": prod_gateway("existing"),
    "existing": {"blockStorageClass": "standard", "networkPolicyEnforced": True,
                 "gpuNodes": {"accelerator": "h100", "gpusPerNode": 8, "vcpu": 192, "ramGib": 2048}},
    "modelCache": {"kind": "rwx", "storageClass": "nfs", "readGbps": 1},
    "models": [{"name": "chat", "model": "llama-3.1-70b", "maxModelLen": 8192, "replicas": {"min": 2, "max": 4}}],
}


def _vllm_args(resources) -> str:
    (d,) = _objs(resources, "Deployment").values()
    return " ".join(d["spec"]["template"]["spec"]["containers"][0]["args"])


def test_every_catalog_revision_is_a_commit_with_its_source():
    from components.catalog.revisions import COMMIT, REVISIONS
    for repo, row in REVISIONS.items():
        assert COMMIT.fullmatch(row.commit) and row.source.strip(), repo


def test_the_catalog_revision_is_the_default_and_models_revision_overrides_it(monkeypatch):
    from components.catalog import revisions
    monkeypatch.setitem(revisions.REVISIONS, LLAMA_70B, revisions.Revision(REV_A, "test row"))
    resources, exports = plan_config(EXISTING_70B)
    assert f"--revision {REV_A} --tokenizer-revision {REV_A}" in _vllm_args(resources)
    assert not any("UNPINNED" in w for w in exports["serving"]["chat"]["warnings"])
    pinned = {**EXISTING_70B, "models": [{**EXISTING_70B["models"][0], "revision": REV_B}]}
    resources, _ = plan_config(pinned)
    assert f"--revision {REV_B} --tokenizer-revision {REV_B}" in _vllm_args(resources)
    assert REV_A not in _vllm_args(resources)


def test_without_a_known_commit_production_stays_loudly_unpinned(monkeypatch):
    from components.catalog import revisions
    monkeypatch.delitem(revisions.REVISIONS, LLAMA_70B, raising=False)
    resources, exports = plan_config(EXISTING_70B)
    assert "--revision" not in _vllm_args(resources)
    assert any(w.startswith(f"UNPINNED MODEL in production: {LLAMA_70B}") for w in exports["serving"]["chat"]["warnings"])


def test_the_serving_doc_numbers_are_the_onprem_405b_plan():
    from components.offline.runner import ROOT
    doc = (ROOT / "docs" / "serving.md").read_text()
    section = " ".join(doc[doc.index("## In numbers"):doc.index("## Shapes")].split())
    p = planned("prod-llama405b-onprem")
    s = p.exports["serving"][MODEL]
    job = next(iter(_objs(p.resources, "Job").values()))
    pdb = _objs(p.resources, "PodDisruptionBudget")[MODEL]["spec"]
    assert f"Start-up budget: {s['startup']['budgetS']} s** = load {s['startup']['loadS']} s" in section
    assert f"First deploy within {s['firstDeployS']} s" in section
    assert f"gives up after {job['spec']['activeDeadlineSeconds']} s" in section
    assert f"(`minAvailable: {pdb['minAvailable']}`)" in section
    assert "(#moving-the-ray-head)" in section and "(#cluster-changes)" in section


def test_the_aws_redis_volume_binds_where_redis_is_first_scheduled():
    """The zonal EBS volume is made in the zone of the node Redis first lands on (WaitForFirstConsumer), not
    in a zone picked before scheduling, which could hold no system node (docs/serving.md, "Zones")."""
    p = planned("prod-llama405b-aws")
    (claim,) = _objs(p.resources, "StatefulSet")["llama-405b-gcs-redis"]["spec"]["volumeClaimTemplates"]
    assert claim["spec"]["storageClassName"] == "ebs-gp3" and claim["spec"]["accessModes"] == ["ReadWriteOnce"]
    (cls,) = [r for r in p.resources if r.type == "kubernetes:storage.k8s.io/v1:StorageClass"
              and r.inputs["metadata"]["name"] == "ebs-gp3"]
    assert cls.inputs["volumeBindingMode"] == "WaitForFirstConsumer"


def test_serving_budgets_let_a_drain_evict_pods_that_are_not_ready():
    """A crash-looping or stuck server/worker serves nothing; under the default policy (IfHealthyBudget) it
    could still pin its node through a drain. Both serving shapes evict such pods."""
    t = _topology()
    single = dataclasses.replace(t, nodes_per_replica=1)
    for topo in (t, single):
        assert pdb_spec(MODEL, topo)["unhealthyPodEvictionPolicy"] == "AlwaysAllow"
