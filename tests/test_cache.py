"""The model cache: one RWX volume filled once by an idempotent, resumable prefetch Job (or each node's
NVMe filled by the pod itself), serving pods gated on it, and images pulled ahead on the GPU pools."""
from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from components.cache import component as cache
from components.cache.component import CacheError, CacheFacts, cache_size_gib, prefetch_script, ready_marker
from components.cluster.facts import GpuPool, Taint
from components.config import ConfigError, parse
from components.upstream.versions import PAUSE_IMAGE, VLLM_IMAGE
from tests.support.plans import plan_config, planned
from tests.support.serving import EXISTING, container, obj, objs, topology

REPO = "RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8"  # dev serves FP8 weights on its L4


@pytest.fixture(scope="module")
def dev():
    return planned("dev")


def test_rwx_claim_on_the_configured_storage_class_sized_from_the_weights(dev):
    pvc = obj(dev.resources, "PersistentVolumeClaim", "model-cache")["spec"]
    t = topology(dev, "llama-8b")
    assert pvc["accessModes"] == ["ReadWriteMany"] and pvc["storageClassName"] == "nfs-client"
    # 8.5 GiB of FP8 weights x 1.5 = 12.75, rounded up to 10 GiB
    assert t.weights_gib == pytest.approx(8.5, abs=0.1)
    assert pvc["resources"]["requests"]["storage"] == "20Gi"


def test_size_from_config_wins_and_repos_count_once():
    cfg = parse({**EXISTING, "modelCache": {**EXISTING["modelCache"], "sizeGib": 500}}, {"hfToken"})
    assert cache_size_gib(cfg, {}) == 500


def test_prefetch_job_fills_the_cache_once_with_the_token_from_the_secret(dev):
    job = obj(dev.resources, "Job", "prefetch-llama-8b")
    assert job["metadata"]["annotations"] == {"pulumi.com/skipAwait": "true"}
    spec = job["spec"]
    assert spec["backoffLimit"] >= 3 and spec["template"]["spec"]["restartPolicy"] == "Never"
    c = spec["template"]["spec"]["containers"][0]
    assert c["image"] == VLLM_IMAGE
    assert {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "HF_TOKEN"}}} in c["env"]
    script = c["command"][-1]
    assert f"hf download {REPO} --exclude 'original/*'" in script
    assert ready_marker(REPO) in script
    assert "nvidia.com/gpu" not in str(c["resources"])  # no GPU held while downloading
    assert {"claimName": "model-cache"} == spec["template"]["spec"]["volumes"][0]["persistentVolumeClaim"]


def _mounts_resolve(pod: dict, c: dict) -> None:
    names = {v["name"] for v in pod["volumes"]}
    missing = [m["name"] for m in c["volumeMounts"] if m["name"] not in names]
    assert not missing, f"{c['name']} mounts {missing}, which the pod does not have"


def test_the_prefetch_job_has_a_writable_home_and_tmp_beside_its_read_only_root(dev):
    """The root file system is read-only: Python's tempfile, `hf` and the cloud CLIs of the s3 / gcs sources need
    a writable /tmp and HOME, which are emptyDir volumes; the Hub cache itself stays under HF_HOME on the cache."""
    pod = obj(dev.resources, "Job", "prefetch-llama-8b")["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    assert c["securityContext"]["readOnlyRootFilesystem"] is True
    assert {"name": "scratch", "emptyDir": {"sizeLimit": "20Gi"}} in pod["volumes"]
    assert {"name": "tmp", "emptyDir": {"sizeLimit": "10Gi"}} in pod["volumes"]
    assert {"name": "scratch", "mountPath": "/scratch"} in c["volumeMounts"]
    assert {"name": "tmp", "mountPath": "/tmp"} in c["volumeMounts"]
    env = {e["name"]: e.get("value") for e in c["env"]}
    assert env["HOME"] == "/scratch/home" and env["XDG_CACHE_HOME"] == "/scratch/home/.cache"
    assert env["XDG_CONFIG_HOME"] == "/scratch/home/.config"
    # the token comes from the Secret (HF_TOKEN) and nothing is written under HOME/.cache/huggingface
    assert env["HF_HOME"] == "/models/hf"
    assert any(m["mountPath"] == "/models" and m["name"] == "model-cache" for m in c["volumeMounts"])
    _mounts_resolve(pod, c)


@pytest.mark.parametrize("stack", ["prod-llama70b-aws+nvme", "prod-llama405b-aws+nvme"])
def test_a_node_local_prefetch_writes_home_and_tmp_to_its_pods_scratch(stack):
    """The same container as the serving pods' init container: its HOME and /tmp are the serving pod's scratch
    volumes, which exist in both shapes (Deployment, Ray worker)."""
    from tests.support.stacks import plan
    checked = 0
    for m in plan(stack).objects:
        pod = (m.get("spec", {}).get("template", {}).get("spec") if m["kind"] == "Deployment" else
               m["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]["template"]["spec"] if m["kind"] == "RayService"
               else None)
        if not pod:
            continue
        for init in pod.get("initContainers", []):
            if init["name"] == "prefetch":
                assert {"name": "HOME", "value": "/scratch/home"} in init["env"]
                assert {"name": "tmp", "mountPath": "/tmp"} in init["volumeMounts"]
                _mounts_resolve(pod, init)
                checked += 1
    assert checked, f"{stack}: no node-local prefetch init container"


def test_serving_pods_wait_for_the_cache_and_then_stay_offline(dev):
    d = obj(dev.resources, "Deployment", "llama-8b")["spec"]["template"]["spec"]
    (init,) = d["initContainers"]
    assert init["name"] == "wait-for-cache" and ready_marker(REPO) in init["command"][-1]
    env = container({"spec": {"template": {"spec": d}}})["env"]
    assert {"name": "HF_HOME", "value": cache.HF_HOME} in env and {"name": "HF_HUB_OFFLINE", "value": "1"} in env
    assert {"name": "model-cache", "persistentVolumeClaim": {"claimName": "model-cache"}} in d["volumes"]


def _run(script: str, root: Path, hf_exit: int = 0) -> list[str]:
    """Run the prefetch script against `root` instead of /models, with a fake `hf` that logs its calls."""
    bin_dir = root / "bin"
    bin_dir.mkdir(exist_ok=True)
    log = root / "hf.log"
    fake = bin_dir / "hf"
    fake.write_text(f'#!/bin/sh\necho "$@" >> {log}\nmkdir -p {root}/hf/hub\nexit {hf_exit}\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    proc = subprocess.run(["/bin/sh", "-c", script.replace(cache.MOUNT, str(root))], env=env,
                          capture_output=True, text=True)
    calls = log.read_text().splitlines() if log.exists() else []
    return [proc.returncode, calls]


def test_prefetch_is_idempotent_and_marks_ready_only_after_a_complete_download(tmp_path):
    script = prefetch_script(REPO)
    marker = Path(ready_marker(REPO).replace(cache.MOUNT, str(tmp_path)))
    rc, calls = _run(script, tmp_path, hf_exit=1)  # the download fails half-way
    assert rc != 0 and len(calls) == 1 and not marker.exists()
    rc, calls = _run(script, tmp_path)  # the retry resumes (hf skips finished files)
    assert rc == 0 and len(calls) == 2 and marker.exists()
    assert calls[-1].startswith(f"download {REPO} --exclude original/*")
    rc, calls = _run(script, tmp_path)  # filled: nothing to do
    assert rc == 0 and len(calls) == 2


POOL = GpuPool(name="gpu-p5", instance_type="p5.48xlarge", accelerator="h100", gpus_per_node=8,
               node_selector={"vllm-platform/gpu-pool": "gpu-p5"}, taints=(Taint("nvidia.com/gpu", "present", "NoSchedule"),),
               nvme_path="/mnt/nvme")


def test_nvme_cache_is_filled_on_each_node_by_the_pod_itself():
    facts = CacheFacts("nvme", 4.0, nvme_paths={"p5.48xlarge": "/mnt/nvme/model-cache"})
    assert facts.volume("p5.48xlarge") == {"name": "model-cache", "hostPath": {"path": "/mnt/nvme/model-cache",
                                                                             "type": "DirectoryOrCreate"}}
    init = facts.init_container(REPO, "some/ray-image:1")
    assert init["name"] == "prefetch" and init["image"] == "some/ray-image:1"
    assert "hf download" in init["command"][-1]
    assert init["securityContext"]["runAsUser"] == 0 and init["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "HF_TOKEN"}}} in init["env"]


def test_nvme_without_local_disks_is_a_clear_error_not_a_traceback():
    import pulumi
    with pytest.raises(pulumi.RunError) as e:
        plan_config({**EXISTING, "modelCache": {"kind": "nvme"}})
    assert "modelCache.kind: nvme needs local NVMe on the GPU nodes, and existing-h100x8 (model chat)" in str(e.value)
    assert isinstance(e.value.__cause__, ConfigError)  # the CLI prints it as a config error, exit 2


def test_rwx_without_a_storage_class_is_a_clear_error():
    from components.cluster.facts import ClusterFacts
    from components.wiring import cache_args
    cfg = parse({**EXISTING}, {"hfToken"})
    facts = ClusterFacts(cloud="aws", name="c", provider=None, gpu_pools={}, system_node_selector={},
                         rwx_storage_class=None, cache_read_gbps=1.0, driver_preinstalled=True)
    with pytest.raises(CacheError, match="modelCache.kind: rwx needs a ReadWriteMany StorageClass"):
        cache.cache_facts(cache_args(cfg, {}), {}, facts)


def test_image_prepull_daemonset_runs_on_the_gpu_pool(dev):
    ds = [d for d in objs(dev.resources, "DaemonSet") if d["metadata"]["name"].startswith("image-prepull-")]
    (ds,) = ds
    spec = ds["spec"]["template"]["spec"]
    assert [c["image"] for c in spec["initContainers"]] == [VLLM_IMAGE]
    assert all(c["command"] == ["/bin/sh", "-c", "exit 0"] for c in spec["initContainers"])
    assert [c["image"] for c in spec["containers"]] == [PAUSE_IMAGE]
    deployment = obj(dev.resources, "Deployment", "llama-8b")["spec"]["template"]["spec"]
    assert spec["tolerations"] == deployment["tolerations"] and spec["affinity"] == deployment["affinity"]


def test_prepull_spec_takes_the_pools_placement():
    spec = cache.prepull_spec(POOL, ["a:1", "b:2"], {"app": "x"})["template"]["spec"]
    assert [c["image"] for c in spec["initContainers"]] == ["a:1", "b:2"]
    assert spec["tolerations"] == POOL.tolerations()
    terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms[0]["matchExpressions"] == [{"key": "vllm-platform/gpu-pool", "operator": "In", "values": ["gpu-p5"]}]


def test_prepull_daemonset_replaces_every_node_at_once_and_pulumi_waits_one_pull_not_one_per_node():
    ds = [d for d in objs(planned("prod-llama70b-aws").resources, "DaemonSet")
          if d["metadata"]["name"].startswith("image-prepull-")]
    assert ds and all(d["spec"]["updateStrategy"] == {"type": "RollingUpdate",
                                                      "rollingUpdate": {"maxUnavailable": "100%"}} for d in ds)
    # one 300 s pull x2 (the whole pool pulls from one registry at once) + 300 s margin, whatever the pool's size;
    # a create on a new cloud pool also waits the 900 s of its nodes coming up
    assert cache.prepull_timeouts(1, 900) == (1800, 900)
    assert cache.prepull_timeouts(1, 0) == (900, 900)
    assert cache.prepull_timeouts(2, 0) == (1500, 1500)  # init containers pull one image after the other
