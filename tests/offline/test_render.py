"""A plan people can review: the resource tree, byte-stable files, the diff between two plans, and
Secrets rendered as valid objects with their values redacted."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import kubernetes_validate
import pytest
import yaml

from components.cli import main
from components.offline import review
from components.offline.render import SECRET, manifests, resource_rows
from components.offline.runner import ROOT
from tests.support.plans import planned


def plan(capsys, *argv) -> tuple[int, str, str]:
    code = main(["plan", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def files(d) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


# --- the tree --------------------------------------------------------------------------------------------

def test_plan_prints_the_resource_tree_with_key_inputs(tmp_path, capsys):
    code, out, _ = plan(capsys, "prod-llama405b-aws", "--out", str(tmp_path))
    assert code == 0
    tree = out.split("\nResources (", 1)[1]
    lines = tree.splitlines()
    assert "  vllm-platform:index:Platform  vllm" in lines
    assert "  ├─ vllm-platform:addons:ClusterAddons  vllm-addons" in lines
    assert ("  │  ├─ kubernetes:helm.sh/v3:Release  vllm-addons-gpu-operator  "
            "[chart gpu-operator v26.7.0; namespace gpu-operator]") in lines
    assert "  │  │  ├─ aws:eks/nodeGroup:NodeGroup  vllm-cluster-nodes-gpu-p5-48xlarge  " \
           "[instance (launch template); nodes 0 (0–8)]" in lines  # created empty, the autoscaler adds nodes
    assert "  │  │  ├─ aws:ec2/launchTemplate:LaunchTemplate  vllm-cluster-nodes-gpu-p5-48xlarge-lt  " \
           "[instance p5.48xlarge]" in lines
    assert any("│  │  ├─ aws:eks/cluster:Cluster  vllm-cluster-eks-cluster  [kubernetes 1.35]" in line for line in lines)
    assert "     ├─ kubernetes:ray.io/v1:RayService  vllm-llama-405b-rayservice  " \
           "[image public.ecr.aws/deep-learning-containers/ray:serve-llm-cuda-v1.0]" in lines
    assert "     └─ vllm-platform:serving:GcsRedis  vllm-llama-405b-gcs" in lines
    # the tree comes after the topology summary
    assert out.index("llama-405b: Llama-3.1-405B bf16 on p5.48xlarge") < out.index("\nResources (")


def test_tree_nests_children_under_their_component():
    rows = [{"type": "t:c:Comp", "name": "a", "parent": None, "inputs": {}},
            {"type": "k:x:Child", "name": "a-2", "parent": "t:c:Comp::a", "inputs": {}},
            {"type": "k:x:Child", "name": "a-1", "parent": "t:c:Comp::a", "inputs": {}},
            {"type": "kubernetes:helm.sh/v3:Release", "name": "a-r", "parent": "k:x:Child::a-1",
             "inputs": {"chart": "keda", "version": "2.20.2", "namespace": "keda"}}]
    assert review.tree_lines(rows) == [
        "t:c:Comp  a",
        "├─ k:x:Child  a-1",
        "│  └─ kubernetes:helm.sh/v3:Release  a-r  [chart keda 2.20.2; namespace keda]",
        "└─ k:x:Child  a-2",
    ]


def test_key_inputs_of_node_pools_and_workloads():
    assert review.key_inputs({"type": "gcp:container/nodePool:NodePool", "inputs": {
        "nodeConfig": {"machineType": "a3-highgpu-8g", "guestAccelerators": [{"count": 8, "type": "nvidia-h100-80gb"}]},
        "autoscaling": {"totalMinNodeCount": 1, "totalMaxNodeCount": 4}, "initialNodeCount": 2}}) == \
        "machine a3-highgpu-8g; gpus 8 x nvidia-h100-80gb; nodes 2 (1–4)"
    # a Capacity Block's start, as the plan shows it
    assert review.key_inputs({"type": "aws:autoscaling/schedule:Schedule", "inputs": {
        "startTime": "2027-03-01T11:30:00Z", "minSize": 0.0, "desiredCapacity": 4.0, "maxSize": 4.0}}) == \
        "at 2027-03-01T11:30:00Z; nodes 4 (0–4)"
    assert review.key_inputs({"type": "kubernetes:apps/v1:Deployment", "inputs": {"spec": {"replicas": 3, "template": {
        "spec": {"initContainers": [{"image": "busybox:1"}], "containers": [{"image": "vllm/vllm-openai:v0.31.0"}]}}}}}) \
        == "replicas 3; image busybox:1, vllm/vllm-openai:v0.31.0"


# --- byte-identical plans --------------------------------------------------------------------------------

def test_two_plans_of_one_stack_are_byte_identical(tmp_path, capsys):
    """One in this process, one in a fresh interpreter with another hash seed: same bytes, every file."""
    a, b = tmp_path / "a", tmp_path / "b"
    assert plan(capsys, "prod-qwen72b-gcp", "--out", str(a))[0] == 0
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    proc = subprocess.run([sys.executable, "-m", "components", "plan", "prod-qwen72b-gcp", "--out", str(b)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    fa, fb = files(a), files(b)
    assert fa.keys() == fb.keys()
    differ = [name for name in fa if fa[name] != fb[name]]
    assert not differ, f"differ between two plans: {differ}"
    assert {"resources.json", "topology.json", "diagram.mmd", "diagram.md"} <= set(fa)


def test_resources_json_is_sorted_and_holds_no_run_specific_values(tmp_path, capsys):
    assert plan(capsys, "dev", "--out", str(tmp_path))[0] == 0
    text = (tmp_path / "resources.json").read_text()
    rows = json.loads(text)
    assert [(r["type"], r["name"]) for r in rows] == sorted((r["type"], r["name"]) for r in rows)
    # one resource per line (a line diff of two plans names the resources that changed), keys sorted at every depth
    assert text.splitlines() == ["[", *(json.dumps(r, sort_keys=True) + "," for r in rows[:-1]),
                                 json.dumps(rows[-1], sort_keys=True), "]"]
    # the Gateway API CRDs' status defaults carry the epoch (lastTransitionTime 1970-01-01T00:00:00Z): fixed text
    stamps = set(re.findall(r"\d{4}-\d\d-\d\dT\d\d:\d\d[\d:.Z+-]*", text)) - {"1970-01-01T00:00:00Z"}
    assert not stamps, f"a timestamp in the plan: {sorted(stamps)[:3]}"
    assert str(tmp_path) not in text and "/tmp/" not in text


def test_resource_rows_do_not_depend_on_registration_order():
    rs = planned("dev").resources
    assert resource_rows(list(reversed(rs))) == resource_rows(rs)


# --- diff ------------------------------------------------------------------------------------------------

def _dev_variant(tmp_path, change) -> str:
    raw = yaml.safe_load((ROOT / "stacks" / "Pulumi.dev.yaml").read_text())
    change(raw["config"])
    path = tmp_path / "Pulumi.dev.yaml"  # same stack name, so the same resource names
    path.write_text(yaml.safe_dump(raw))
    return str(path)


def test_plan_diff_shows_added_removed_and_changed_resources(tmp_path, capsys):
    old = tmp_path / "old"
    assert plan(capsys, "dev", "--out", str(old))[0] == 0

    def bigger(config):
        config["vllm-platform:models"][0]["replicas"]["max"] = 3
        config["vllm-platform:models"].append({**config["vllm-platform:models"][0], "name": "llama-8b-b"})
    code, out, _ = plan(capsys, _dev_variant(tmp_path, bigger), "--out", str(tmp_path / "new"), "--diff", str(old))
    assert code == 0
    diff = out.split(f"\nChanges since {old}:\n", 1)[1].split("\n\n")[0].splitlines()
    assert "    + kubernetes:apps/v1:Deployment  vllm-llama-8b-b-deployment" in diff
    assert any(line.startswith("    ~ kubernetes:keda.sh/v1alpha1:ScaledObject  vllm-llama-8b-scaledobject: ")
               and "spec.maxReplicaCount" in line for line in diff), diff
    assert not any(line.startswith("    - ") for line in diff)
    assert re.fullmatch(r"  \d+ to add, \d+ to change, 0 to delete", diff[-1])

    code, out, _ = plan(capsys, "dev", "--out", str(tmp_path / "back"), "--diff", str(tmp_path / "new"))
    assert code == 0
    assert "    - kubernetes:apps/v1:Deployment  vllm-llama-8b-b-deployment" in out


def test_plan_diff_may_name_the_directory_the_plan_replaces(tmp_path, capsys):
    """`plan dev --diff build/dev`: the earlier plan is read before the new one overwrites it."""
    def two_models(config):
        config["vllm-platform:models"].append({**config["vllm-platform:models"][0], "name": "llama-8b-b"})
    assert plan(capsys, _dev_variant(tmp_path, two_models), "--out", str(tmp_path / "p"))[0] == 0
    code, out, _ = plan(capsys, "dev", "--out", str(tmp_path / "p"), "--diff", str(tmp_path / "p"))
    assert code == 0
    assert "    - kubernetes:apps/v1:Deployment  vllm-llama-8b-b-deployment" in out
    code, out, _ = plan(capsys, "dev", "--out", str(tmp_path / "p"), "--diff", str(tmp_path / "p"))
    assert code == 0 and "  0 to add, 0 to change, 0 to delete" in out


def test_diff_rows_names_the_changed_input_paths():
    old = [{"type": "T", "name": "a", "parent": None, "inputs": {"spec": {"n": 1, "l": [1, 2], "x": {"y": 1}}}},
           {"type": "T", "name": "gone", "parent": None, "inputs": {}}]
    new = [{"type": "T", "name": "a", "parent": "C::p", "inputs": {"spec": {"n": 2, "l": [1, 3], "z": 1, "x": {"y": 1}}}},
           {"type": "T", "name": "new", "parent": None, "inputs": {}}]
    added, removed, changed = review.diff_rows(old, new)
    assert [r["name"] for r in added] == ["new"] and [r["name"] for r in removed] == ["gone"]
    assert changed == [(new[0], ["(parent)", "spec.l[1]", "spec.n", "spec.z"])]


# --- secrets ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("stack", ["dev", "prod-llama405b-aws"])
def test_rendered_secrets_are_valid_secrets_with_redacted_values(stack):
    secrets = {n: m for n, m in manifests(planned(stack).resources).items() if m["kind"] == "Secret"}
    assert secrets
    for name, m in secrets.items():
        kubernetes_validate.validate(m, "1.34", strict=True)
        for field in ("stringData", "data"):
            assert all(v in (SECRET, "W3NlY3JldF0=") for v in (m.get(field) or {}).values()), name
    hf = next(m for m in secrets.values() if m["metadata"]["name"] == "hf-token")
    assert hf["stringData"] == {"HF_TOKEN": "[secret]"}


def test_a_secret_data_map_stays_base64():
    from pulumi.runtime import rpc

    from components.offline.mocks import Recorded
    secret = {rpc._special_sig_key: rpc._special_secret_sig, "value": {"token": "c2VjcmV0", "ca.crt": "Zm9v"}}
    r = Recorded("kubernetes:core/v1:Secret", "s", None, True,
                 {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "n"}, "data": secret})
    m = manifests([r])["secret_n_s.yaml"]
    assert m["data"] == {"token": "W3NlY3JldF0=", "ca.crt": "W3NlY3JldF0="}  # base64("[secret]")
    kubernetes_validate.validate(m, "1.34", strict=True)
    assert "c2VjcmV0" not in json.dumps(m)


def test_manifest_keys_are_sorted_below_the_head():
    """apiVersion, kind, metadata first (as kubectl writes them), then every map in key order, at every
    depth: the wire format does not promise an order, the files must not depend on one."""
    from components.offline.mocks import Recorded
    r = Recorded("kubernetes:core/v1:ConfigMap", "c", None, True,
                 {"data": {"b": "2", "a": "1"}, "metadata": {"namespace": "n", "name": "c", "labels": {"z": "1", "y": "2"}},
                  "kind": "ConfigMap", "apiVersion": "v1"})
    m = manifests([r])["configmap_n_c.yaml"]
    assert list(m) == ["apiVersion", "kind", "metadata", "data"]
    assert list(m["data"]) == ["a", "b"] and list(m["metadata"]) == ["labels", "name", "namespace"]
    assert list(m["metadata"]["labels"]) == ["y", "z"]
