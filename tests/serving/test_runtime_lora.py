"""engine.lora.runtimeUpdates (docs/lora.md), on the worked stack tests/stacks/Pulumi.lora-runtime-aws.yaml: the pod
turns vLLM's adapter endpoints on, the gateway answers them 403 and never forwards them, the endpoint picker scores
pods on the request's adapter, and the production rule refuses a route that would forward them."""
import dataclasses
import json

import pytest
import yaml

from components.cli import main
from components.offline.render import sanitize
from components.offline.runner import ROOT
from policies.rules import MANDATORY, RULES_BY_NAME, StackResource, evaluate_resources
from tests.support.plans import planned
from tests.test_manifest_schemas import problems

STACK = ROOT / "tests" / "stacks" / "Pulumi.lora-runtime-aws.yaml"
ROUTE = "kubernetes:gateway.networking.k8s.io/v1:HTTPRoute"
NS = "kubernetes:core/v1:Namespace"
RULE = "runtime-lora-endpoints-blocked"


@pytest.fixture(scope="module")
def plan(tmp_path_factory):
    out = tmp_path_factory.mktemp("lora-runtime")
    assert main(["plan", str(STACK), "--out", str(out)]) == 0
    return out


def _manifest(plan, name: str) -> dict:
    return yaml.safe_load((plan / "manifests" / name).read_text())


def test_the_pod_turns_runtime_updates_on_with_the_slots_planned(plan):
    dep = _manifest(plan, "deployment_llm_llama-lora.yaml")
    vllm = next(c for c in dep["spec"]["template"]["spec"]["containers"] if c["name"] == "vllm")
    assert {"name": "VLLM_ALLOW_RUNTIME_LORA_UPDATING", "value": "true"} in vllm["env"]
    args = vllm["args"]
    i = args.index("--enable-lora")
    assert args[i:i + 9] == ["--enable-lora", "--max-loras", "4", "--max-lora-rank", "16", "--max-cpu-loras", "8",
                             "--lora-modules", "support=/models/adapters/support"]


def test_the_plan_says_what_the_slots_cost_and_where_adapters_load(capsys):
    main(["plan", str(STACK)])
    out = capsys.readouterr().out
    assert ("  engine: LoRA 4 x rank 16, 1 adapter(s), runtime load/unload (inside the cluster; the gateway answers "
            "the endpoints 403); memory: LoRA slots 0.31 GiB/GPU, ~2,560 tokens less KV cache per replica") in out


def test_the_route_answers_the_adapter_endpoints_itself(plan):
    route = _manifest(plan, "httproute_llm_llama-lora.yaml")
    assert route["spec"]["rules"][0] == {
        "matches": [{"path": {"type": "PathPrefix", "value": "/llama-lora/v1/load_lora_adapter"}},
                    {"path": {"type": "PathPrefix", "value": "/llama-lora/v1/unload_lora_adapter"}}],
        "filters": [{"type": "ExtensionRef", "extensionRef": {
            "group": "gateway.envoyproxy.io", "kind": "HTTPRouteFilter", "name": "llama-lora-lora-admin"}}]}
    flt = _manifest(plan, "httproutefilter_llm_llama-lora-lora-admin.yaml")
    assert flt["spec"] == {"directResponse": {"statusCode": 403, "contentType": "application/json", "body": {
        "type": "Inline", "inline": '{"error": "adapters are loaded and unloaded inside the cluster, not through the '
                                    'gateway (docs/lora.md)"}'}}}
    assert problems(flt, "1.35") == [] and problems(route, "1.35") == []  # the vendored v1.9.0 / v1.6.1 CRDs


def test_the_picker_scores_pods_on_the_requests_adapter(plan):
    release = yaml.safe_load((plan / "helm" / "vllm-gateway-llama-lora-epp.yaml").read_text())
    epp = release["values"]["router"]["epp"]
    assert epp["pluginsConfigFile"] == "vllm-platform-lora.yaml"
    config = yaml.safe_load(epp["pluginsCustomConfig"]["vllm-platform-lora.yaml"])
    assert {"type": "lora-affinity-scorer"} in config["plugins"]
    assert config["schedulingProfiles"][0]["plugins"] == [
        {"pluginRef": "queue-scorer", "weight": 2}, {"pluginRef": "kv-cache-utilization-scorer", "weight": 2},
        {"pluginRef": "prefix-cache-scorer", "weight": 3}, {"pluginRef": "lora-affinity-scorer", "weight": 1}]
    assert "featureGates" not in config  # flow control stays a scale-to-zero model's


def test_without_runtime_updates_nothing_changes_on_the_route():
    from components.offline.render import manifests
    objs = manifests(planned(str(ROOT / "tests" / "stacks" / "Pulumi.engine-aws.yaml")).resources)
    assert not [n for n, o in objs.items() if o["kind"] == "HTTPRouteFilter"]
    route = next(o for o in objs.values() if o["kind"] == "HTTPRoute" and o["metadata"]["name"] == "qwen-tools")
    assert len(route["spec"]["rules"]) == 1
    dep = next(o for o in objs.values() if o["kind"] == "Deployment" and o["metadata"]["name"] == "qwen-tools")
    env = [e["name"] for c in dep["spec"]["template"]["spec"]["containers"] for e in c.get("env", [])]
    assert "VLLM_ALLOW_RUNTIME_LORA_UPDATING" not in env


def _as_prod(resources) -> list[StackResource]:
    out = []
    for r in resources:
        if not r.custom:
            continue
        props = sanitize(r.inputs)
        if r.type == NS and props.get("metadata", {}).get("name") == "llm":
            props = json.loads(json.dumps(props))
            props["metadata"]["labels"]["vllm-platform/environment"] = "prod"
        out.append(StackResource(r.type, r.name, props))
    return out


def _violations(resources) -> list[str]:
    return [v.message for v in evaluate_resources(resources) if v.rule == RULE]


def test_the_rule_is_mandatory():
    assert RULES_BY_NAME[RULE].level == MANDATORY


def test_the_platforms_route_passes_in_production_and_a_forwarding_one_is_refused():
    resources = _as_prod(planned(str(STACK)).resources)
    assert not _violations(resources)
    stripped = []
    for r in resources:
        if r.type == ROUTE and r.props["metadata"]["name"] == "llama-lora":
            props = json.loads(json.dumps(r.props))
            props["spec"]["rules"] = props["spec"]["rules"][1:]
            r = dataclasses.replace(r, props=props)
        stripped.append(r)
    assert [m.split("; fix:")[0] for m in _violations(stripped)] == [
        "HTTPRoute llm/llama-lora forwards /llama-lora/v1/load_lora_adapter to a vLLM server that loads LoRA adapters "
        "at run time",
        "HTTPRoute llm/llama-lora forwards /llama-lora/v1/unload_lora_adapter to a vLLM server that loads LoRA "
        "adapters at run time"]


def _route(rules: list) -> StackResource:
    return StackResource(ROUTE, "r", {"metadata": {"name": "m", "namespace": "llm"}, "spec": {"rules": rules}})


def _server(env_value: str | None) -> StackResource:
    env = [] if env_value is None else [{"name": "VLLM_ALLOW_RUNTIME_LORA_UPDATING", "value": env_value}]
    c = {"name": "vllm", "image": "vllm/vllm-openai", "args": ["m", "--port", "8000"], "env": env,
         "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    return StackResource("kubernetes:apps/v1:Deployment", "d", {"metadata": {"name": "m", "namespace": "llm"},
                         "spec": {"template": {"metadata": {"labels": {}}, "spec": {"containers": [c]}}}})


NS_PROD = StackResource(NS, "ns", {"metadata": {"name": "llm", "labels": {"vllm-platform/environment": "prod"}}})
CATCH_ALL = {"matches": [{"path": {"type": "PathPrefix", "value": "/"}}], "backendRefs": [{"name": "m"}]}


def test_a_catch_all_route_without_a_rewrite_reaches_vllms_own_paths():
    [load, unload] = _violations([NS_PROD, _server("1"), _route([CATCH_ALL])])
    assert "forwards /v1/load_lora_adapter" in load and "forwards /v1/unload_lora_adapter" in unload
    blocked = {"matches": [{"path": {"type": "Exact", "value": "/v1/load_lora_adapter"}},
                           {"path": {"type": "PathPrefix", "value": "/v1/unload_lora_adapter"}}]}
    assert not _violations([NS_PROD, _server("TRUE"), _route([blocked, CATCH_ALL])])


def test_only_servers_that_turn_the_endpoints_on_and_only_outside_dev():
    assert not _violations([NS_PROD, _server(None), _route([CATCH_ALL])])
    assert not _violations([NS_PROD, _server("0"), _route([CATCH_ALL])])
    dev = StackResource(NS, "ns", {"metadata": {"name": "llm", "labels": {"vllm-platform/environment": "dev"}}})
    assert not _violations([dev, _server("true"), _route([CATCH_ALL])])


def test_a_multi_node_replica_refuses_runtime_updates():
    from components.planning import ray_engine_problem
    from components.config.engine import Engine

    class Dep:
        engine = Engine.model_validate({"lora": {"runtimeUpdates": True}})
        extra_args: dict = {}

    class T:
        multi_node = True
    assert ray_engine_problem(Dep, T) == ("a multi-node replica (Ray Serve LLM) cannot take engine.lora.runtimeUpdates "
                                          "(Serve LLM has no /v1/load_lora_adapter; docs/lora.md)")


# --- the adapters hold across replicas: vLLM 0.31's filesystem resolver on the shared cache (docs/lora.md) ---------

RESOLVER_DIR = "/models/lora/llama-lora"


def _pod(plan) -> dict:
    return _manifest(plan, "deployment_llm_llama-lora.yaml")["spec"]["template"]["spec"]


def _container(spec: dict, name: str, init: bool = False) -> dict:
    return next(c for c in spec["initContainers" if init else "containers"] if c["name"] == name)


def test_every_replica_resolves_adapters_from_one_directory_of_the_shared_cache(plan):
    spec = _pod(plan)
    vllm = _container(spec, "vllm")
    env = {e["name"]: e.get("value") for e in vllm["env"]}
    # vllm/envs.py names; the resolver resolves only with runtime updating on (serving.py _check_model)
    assert env["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] == "true"
    assert env["VLLM_LORA_RESOLVER_CACHE_DIR"] == RESOLVER_DIR
    # the resolver is a vllm.general_plugins entry point: loaded while VLLM_PLUGINS is unset, dropped if it names others
    assert "VLLM_PLUGINS" not in env or "lora_filesystem_resolver" in env["VLLM_PLUGINS"].split(",")
    # the directory lies on the model cache volume, mounted at the same path in every pod, and that volume is the one
    # ReadWriteMany claim every replica mounts (not a node's own disk, not an emptyDir)
    mount = next(m for m in vllm["volumeMounts"] if RESOLVER_DIR.startswith(m["mountPath"].rstrip("/") + "/"))
    volume = next(v for v in spec["volumes"] if v["name"] == mount["name"])
    claim = _manifest(plan, f"persistentvolumeclaim_llm_{volume['persistentVolumeClaim']['claimName']}.yaml")
    assert mount["mountPath"] == "/models" and claim["spec"]["accessModes"] == ["ReadWriteMany"]


def test_the_directory_exists_before_vllm_starts(plan):
    """register_filesystem_resolver raises when VLLM_LORA_RESOLVER_CACHE_DIR is no directory: vLLM would not start."""
    spec = _pod(plan)
    assert [c["name"] for c in spec["initContainers"]] == ["wait-for-cache", "lora-adapters"]
    init = _container(spec, "lora-adapters", init=True)
    script = init["command"][2]
    assert f"mkdir -p {RESOLVER_DIR} && chmod a+rwx {RESOLVER_DIR}" in script.splitlines()
    vllm_mount = next(m for m in _container(spec, "vllm")["volumeMounts"] if m["mountPath"] == "/models")
    assert init["volumeMounts"] == [{"name": vllm_mount["name"], "mountPath": "/models"}]  # the same volume, writable
    assert init["securityContext"]["runAsUser"] == 0 and init["securityContext"]["capabilities"] == {"drop": ["ALL"]}


def test_a_path_adapter_is_waited_for_instead_of_crash_looping_vllm(plan):
    script = _container(_pod(plan), "lora-adapters", init=True)["command"][2]
    p = "/models/adapters/support"
    assert (f"until [ -f {p}/adapter_config.json ] && {{ [ -f {p}/adapter_model.safetensors ] || "
            f"[ -f {p}/adapter_model.bin ] || [ -f {p}/adapter_model.pt ]; }}; do echo 'waiting for LoRA adapter "
            f"support (engine.lora.adapters[0].path {p}): vLLM does not start without its adapter_config.json and "
            f"adapter_model.safetensors (or .bin / .pt) there; copy the adapter on the shared model cache "
            f"(modelCache.kind rwx: any pod mounting it) (docs/lora.md#adapters-given-by-path)'; sleep 15; done"
            ) in script.splitlines()


def test_the_wait_ends_once_the_adapter_can_be_loaded(tmp_path):
    import subprocess
    from components.serving.runtime_lora import adapter_ready_test
    d = tmp_path / "my adapter"
    d.mkdir()

    def ready() -> bool:
        return subprocess.run(["/bin/sh", "-c", adapter_ready_test(str(d))]).returncode == 0
    assert not ready()
    (d / "adapter_config.json").write_text("{}")
    assert not ready()  # the weights are still missing: vLLM would exit
    (d / "adapter_model.safetensors").write_bytes(b"")
    assert ready()


def test_the_plan_says_where_to_publish_and_what_an_unknown_adapter_gets(capsys):
    assert main(["plan", str(STACK)]) == 0
    out = capsys.readouterr().out
    base = "/models/hf/hub/models--meta-llama--Llama-3.1-8B-Instruct"
    assert (f'  LoRA resolver: an adapter published as {RESOLVER_DIR}/NAME/ (adapter_config.json with "peft_type": '
            f'"LORA" and the base below, adapter_model.safetensors) is served as "model": "NAME" by every replica, '
            f'loaded on its first request there (docs/lora.md#publishing-an-adapter); base_model_name_or_path '
            f'"{base}/snapshots/$(cat {base}/refs/main)" (no models[].revision: the commit the cache filled, read it '
            f'there); an adapter neither loaded nor published: every replica answers 404 "The model `<name>` does not '
            f'exist." and the gateway passes it on (one found that fails to load: 400 "LoRA adapter \'<name>\' was '
            f'found but could not be loaded.")\n') in out
    assert "WARNING: UNPINNED LoRA BASE: llama-lora resolves adapters" in out


def test_a_pinned_revision_gives_the_exact_base_vllm_compares():
    """HF_HUB_OFFLINE: vLLM's model_config.model is the snapshot path (arg_utils.py / repo_utils.get_model_path)."""
    from types import SimpleNamespace
    from components.serving.runtime_lora import resolver_base_model
    sha = "0e9e39f249a16976918f6564b8830bc894c89659"
    t = SimpleNamespace(model_repo="meta-llama/Llama-3.1-8B-Instruct")
    assert resolver_base_model(t, sha) == (
        f"/models/hf/hub/models--meta-llama--Llama-3.1-8B-Instruct/snapshots/{sha}", True)
    assert resolver_base_model(SimpleNamespace(model_repo="/models/sources/s3-b-llama"), None) == (
        "/models/sources/s3-b-llama", True)


def test_a_node_local_cache_cannot_hold_the_resolver(tmp_path, capsys):
    raw = yaml.safe_load(STACK.read_text())
    raw["config"]["vllm-platform:modelCache"] = {"kind": "nvme"}
    raw["config"]["vllm-platform:models"][0]["engine"]["lora"]["adapters"] = []
    stack = tmp_path / "Pulumi.lora-nvme.yaml"
    stack.write_text(yaml.safe_dump(raw))
    assert main(["plan", str(stack)]) != 0
    assert ("models[0].engine.lora.runtimeUpdates: modelCache.kind nvme is each GPU node's own disk, so the LoRA "
            "resolver directory (/models/lora/llama-lora) would differ from node to node and a replica on another node "
            "(a scale-up, a restart, a drain) answers 404 for an adapter published on the first; use modelCache.kind "
            "rwx, whose one volume every replica mounts at /models (docs/lora.md)") in capsys.readouterr().err


def test_a_path_adapter_without_runtime_updates_is_gated_read_only_and_unprivileged():
    from types import SimpleNamespace
    from components.planner.engine_args import LoraSlots
    from components.serving.runtime_lora import lora_init_container
    lora = LoraSlots(2, 16, None, (("sql", "org/sql-lora"), ("support", "/opt/adapters/support")))
    t = SimpleNamespace(engine=SimpleNamespace(options=SimpleNamespace(lora=lora)), served_model_name="m")
    init = lora_init_container(t, "img", "nvme", {"name": "model-cache", "mountPath": "/models"}, {})
    assert init["volumeMounts"] == [{"name": "model-cache", "mountPath": "/models", "readOnly": True}]
    assert init["securityContext"]["runAsNonRoot"] is True and "mkdir" not in init["command"][2]
    assert "engine.lora.adapters[1].path /opt/adapters/support" in init["command"][2]  # the repo one is the cache's
    assert "copy the adapter in the vLLM image" in init["command"][2]
    no_path = SimpleNamespace(engine=SimpleNamespace(options=SimpleNamespace(lora=LoraSlots(2, 16))), served_model_name="m")
    assert lora_init_container(no_path, "img", "rwx", {}, {}) is None
