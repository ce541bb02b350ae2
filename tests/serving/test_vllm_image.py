"""Issue 37: the vLLM image per fabric (components/serving/fabric.py VLLM_IMAGES, docs/disaggregation.md "The image")
and P/D with a host KV tier (components/serving/disagg.py kv_transfer_config), pinned literally: the EFA image on
AWS's P/D and LWS worked stacks, the upstream one everywhere else, the refusals' text, the plan's line, and the
MultiConnector that keeps NIXL alive beside engine.kvOffloadGiB."""
from __future__ import annotations

import copy
import dataclasses
import functools
import json
from types import SimpleNamespace

import pytest

from components.offline.runner import ROOT, load_stack_yaml
from components.planner import Topology
from components.serving.disagg import DECODE, PREFILL, kv_transfer_config, role_args, without_offload_flags
from components.serving.fabric import FabricError, check_image, vllm_image, vllm_image_text
from components.upstream.versions import VLLM_EFA_IMAGE, VLLM_IMAGE
from tests.support.plans import manifests, plan_config, planned
from tests.test_manifest_schemas import _plain

EFA_IMAGE = "public.ecr.aws/deep-learning-containers/vllm:0.31.0-gpu-py312-cu130-ubuntu24.04-ec2"
UPSTREAM = "vllm/vllm-openai:v0.31.0@sha256:c1c9f6fd5c109ba7f0546a59f5b2f15fb87f64c77782e90a27b648b42a8e67c3"
STACKS = ROOT / "tests" / "stacks"
PD_AWS, PD_ONPREM, LWS_AWS = (str(STACKS / f"Pulumi.{s}.yaml") for s in ("pd-aws-p5", "pd-onprem", "lws-aws-p5"))
NIXL_EFA = '{"kv_connector":"NixlConnector","kv_role":"kv_both","kv_connector_extra_config":{"backends":["LIBFABRIC"]}}'
MULTI_EFA_64 = ('{"kv_connector":"MultiConnector","kv_role":"kv_both","kv_connector_extra_config":{"connectors":['
                '{"kv_connector":"NixlConnector","kv_role":"kv_both","kv_connector_extra_config":{"backends":'
                '["LIBFABRIC"]}},{"kv_connector":"OffloadingConnector","kv_role":"kv_both","kv_connector_extra_config":'
                '{"cpu_bytes_to_use":68719476736}}]}}')


def _objects(plan) -> list[dict]:
    return list(manifests([dataclasses.replace(r, inputs=_plain(r.inputs)) for r in plan.resources]).values())


def _pods(objs: list[dict]) -> list[dict]:
    out = [o["spec"]["template"]["spec"] for o in objs if o["kind"] == "Deployment"
           and o["spec"]["template"]["spec"].get("containers", [{}])[0].get("name") == "vllm"]
    for o in objs:
        if o["kind"] == "LeaderWorkerSet":
            lwt = o["spec"]["leaderWorkerTemplate"]
            out += [lwt["leaderTemplate"]["spec"], lwt["workerTemplate"]["spec"]]
    return out


def _pd_values() -> dict:
    """The worked P/D stack's config with serving.disaggregation: on. Since the class margins (dense 10 %) and the
    p90 default its own `auto` keeps llama-70b aggregated (P/D 6 nodes vs 5, under the 10 % it must save); these
    tests are about what P/D over EFA runs, so they force it (the same 10 prefill + 2 decode TP 4 fleet)."""
    raw = load_stack_yaml(STACKS / "Pulumi.pd-aws-p5.yaml")
    values = copy.deepcopy({k.split(":", 1)[1]: v for k, v in raw.items()})
    values["serving"] = {**values["serving"], "disaggregation": "on"}
    return values


@functools.lru_cache(maxsize=None)
def _pd_aws():
    resources, exports = plan_config(_pd_values(), stack="pd-aws-p5")
    return SimpleNamespace(resources=resources, exports=exports)


def _env(c: dict) -> dict:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in c["env"]}


def _topology(plan, model: str) -> Topology:
    return Topology.from_dict(plan.exports["topology"][model])


def test_the_pinned_images():
    assert VLLM_EFA_IMAGE == EFA_IMAGE and VLLM_IMAGE == UPSTREAM


@pytest.mark.parametrize("plan", [_pd_aws, lambda: planned(LWS_AWS)], ids=["pd-aws-p5 (P/D on)", "lws-aws-p5"])
def test_efa_traffic_runs_the_efa_image(plan):
    pods = _pods(_objects(plan()))
    assert len(pods) == 2  # prefill + decode; leader + worker
    for pod in pods:
        vllm = pod["containers"][0]
        # the cache gate runs the same image: one pull per node
        assert {vllm["image"], pod["initContainers"][0]["image"]} == {EFA_IMAGE}
        env = _env(vllm)
        assert (env["OPT_OUT_TRACKING"], env["FI_PROVIDER"], env["FI_EFA_FORK_SAFE"], env["FI_EFA_USE_HUGE_PAGE"]) == (
            "true", "efa", "1", "0")


def test_ucx_pd_stays_on_the_upstream_image():
    pods = _pods(_objects(planned(PD_ONPREM)))
    assert len(pods) == 2
    for pod in pods:
        assert {pod["containers"][0]["image"], pod["initContainers"][0]["image"]} == {UPSTREAM}
        assert "OPT_OUT_TRACKING" not in _env(pod["containers"][0])


def test_the_plan_says_which_image_and_why():
    assert _pd_aws().exports["serving"]["llama-70b"]["image"] == (
        f"image: {EFA_IMAGE} (P/D's KV cache over NIXL LIBFABRIC on efa: it carries the EFA installer's libfabric "
        f"(efa provider) and aws-ofi-nccl, NIXL's LIBFABRIC plugin; ⚠ by tag, no digest verified)")
    assert planned(LWS_AWS).exports["serving"]["llama-405b"]["image"] == (
        f"image: {EFA_IMAGE} (NCCL across the replica's nodes on efa: it carries the EFA installer's libfabric "
        f"(efa provider) and aws-ofi-nccl, NIXL's LIBFABRIC plugin; ⚠ by tag, no digest verified)")
    assert planned(PD_ONPREM).exports["serving"]["llama-70b"]["image"] == (
        f"image: {UPSTREAM} (its traffic crosses the fabric with vLLM's own NCCL and NIXL (UCX))")


def test_a_single_node_replica_on_an_efa_pool_keeps_the_upstream_image():
    agg = dataclasses.replace(_topology(_pd_aws(), "llama-70b"), disaggregation=None)
    assert not agg.multi_node and agg.fabric == "efa"
    assert vllm_image(agg) == UPSTREAM
    assert vllm_image_text(agg) == (f"image: {UPSTREAM} (one node per replica: no NCCL or NIXL traffic on the "
                                    f"fabric)")


def test_efa_traffic_on_an_image_without_efa_is_refused():
    pd = _topology(_pd_aws(), "llama-70b")
    with pytest.raises(FabricError) as err:
        check_image(pd, UPSTREAM)
    assert err.value.errors == [
        f"serving.disaggregation: llama-70b runs P/D over NIXL's LIBFABRIC backend on EFA (p5.48xlarge), but {UPSTREAM} "
        f"carries no EFA userspace (libfabric's efa provider, aws-ofi-nccl, NIXL's LIBFABRIC plugin): its traffic "
        f"would fall back to TCP sockets with the EFA devices idle; run {EFA_IMAGE} (components/serving/fabric.py "
        f"VLLM_IMAGES), or serve it on one node aggregated"]
    lws = _topology(planned(LWS_AWS), "llama-405b")
    with pytest.raises(FabricError) as err:
        check_image(lws, UPSTREAM)
    assert err.value.errors[0].startswith("serving.multiNode: llama-405b runs NCCL across its nodes on EFA "
                                          "(p5.48xlarge), but vllm/vllm-openai:v0.31.0@sha256:")
    check_image(pd, EFA_IMAGE)
    check_image(lws, EFA_IMAGE)


def test_libfabric_pd_without_efa_is_refused():
    pd = _topology(_pd_aws(), "llama-70b")
    with pytest.raises(FabricError) as err:
        check_image(dataclasses.replace(pd, fabric=None), EFA_IMAGE)
    assert err.value.errors == [
        "serving.disaggregation: llama-70b is planned P/D over NIXL's LIBFABRIC backend on p5.48xlarge, whose pool has "
        "no EFA (fabric None): LIBFABRIC is EFA's; pin models[].instanceTypes to an EFA type, or serve it aggregated "
        "(serving.disaggregation: off)"]


# --- P/D + engine.kvOffloadGiB (vLLM 0.31 replaces kv_connector with the OffloadingConnector on --kv-offloading-size)

def test_kv_transfer_config_with_a_host_tier_literal():
    assert json.dumps(kv_transfer_config("LIBFABRIC"), separators=(",", ":")) == NIXL_EFA
    assert json.dumps(kv_transfer_config("LIBFABRIC", 64), separators=(",", ":")) == MULTI_EFA_64
    assert json.dumps(kv_transfer_config("UCX", 1.5), separators=(",", ":")) == (
        '{"kv_connector":"MultiConnector","kv_role":"kv_both","kv_connector_extra_config":{"connectors":['
        '{"kv_connector":"NixlConnector","kv_role":"kv_both"},{"kv_connector":"OffloadingConnector","kv_role":'
        '"kv_both","kv_connector_extra_config":{"cpu_bytes_to_use":1610612736}}]}}')


def test_offload_flags_are_taken_out():
    assert without_offload_flags(["m", "--kv-offloading-size", "64", "--port", "8000", "--kv-offloading-backend",
                                  "native", "--kv-offloading-size=3"]) == ["m", "--port", "8000"]


@pytest.fixture(scope="module")
def pd_offload():
    """The worked P/D stack (P/D on, _pd_values) with a 64 GiB host KV tier per instance."""
    values = _pd_values()
    values["models"] = [{**values["models"][0], "engine": {"kvOffloadGiB": 64}}]
    resources, exports = plan_config(values, stack="pd-offload")
    return resources, exports


def test_pd_with_a_host_tier_keeps_nixl(pd_offload):
    resources, exports = pd_offload
    t = Topology.from_dict(exports["topology"]["llama-70b"])
    assert t.disaggregated and t.kv_offload_gib == 64
    assert "--kv-offloading-size" in t.vllm_args  # the plan's aggregated form, which P/D must not pass on
    objs = list(manifests([dataclasses.replace(r, inputs=_plain(r.inputs)) for r in resources]).values())
    pods = _pods(objs)
    assert len(pods) == 2
    for pod in pods:
        args = pod["containers"][0]["args"]
        # either offloading flag would make vLLM replace the NixlConnector (vllm/config/vllm.py)
        assert not {"--kv-offloading-size", "--kv-offloading-backend"} & set(args)
        assert args[args.index("--kv-transfer-config") + 1] == MULTI_EFA_64
    for role in (PREFILL, DECODE):
        args = role_args(t, role)
        assert args.count("--kv-transfer-config") == 1 and "--kv-offloading-size" not in args
