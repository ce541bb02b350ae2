"""The component package (`pulumi package add <repo>/provider`): a Python plugin whose schema the Pulumi
SDK infers from Platform's and VllmService's annotations; generated here in-process, and both components
built the way the provider's construct builds them (schema names mapped to Python arguments)."""
from __future__ import annotations

import json
from pathlib import Path

import yaml
from pulumi.provider.experimental.analyzer import Analyzer
from pulumi.provider.experimental.schema import generate_schema

from components import __version__
from components.offline.runner import OFFLINE_SECRET, ROOT, run_program
from components.package import COMPONENTS, PACKAGE, VERSION, Platform, VllmService

PROVIDER = ROOT / "provider"


def schema() -> dict:
    result = Analyzer(PACKAGE).analyze(COMPONENTS)
    deps = sorted(result["dependencies"], key=lambda d: d.name)
    return generate_schema(PACKAGE, VERSION, None, result["component_definitions"], result["type_definitions"],
                           deps).to_json()


def test_the_plugin_is_a_python_component_provider_of_this_project():
    meta = yaml.safe_load((PROVIDER / "PulumiPlugin.yaml").read_text())
    assert meta["runtime"]["name"] == "python" and meta["runtime"]["options"]["virtualenv"] == "venv"
    main = (PROVIDER / "__main__.py").read_text()
    assert "component_provider_host(COMPONENTS, name=PACKAGE, version=VERSION)" in main
    assert [line for line in (PROVIDER / "requirements.txt").read_text().splitlines()
            if not line.startswith("#")] == [".."]  # the project and its pins, from pyproject.toml
    assert (PACKAGE, VERSION) == ("vllm-platform", __version__)
    assert COMPONENTS == [Platform, VllmService]


def test_the_schema_lists_both_components_with_their_inputs_and_outputs():
    s = schema()
    assert (s["name"], s["version"]) == ("vllm-platform", __version__)
    platform, service = s["resources"]["vllm-platform:index:Platform"], s["resources"]["vllm-platform:index:VllmService"]
    assert set(s["resources"]) == {"vllm-platform:index:Platform", "vllm-platform:index:VllmService"}
    assert platform["isComponent"] and service["isComponent"]
    assert set(platform["inputProperties"]) == {"config", "hfToken", "kubeconfig", "gatewayApiKeys",
                                                "chartMirrorPassword"}
    assert platform["requiredInputs"] == ["config", "hfToken"]
    assert platform["inputProperties"]["config"]["plain"] is True  # planned before any resource exists
    assert set(platform["properties"]) == {"endpoints", "topology", "costPerHour", "costPerHourMin",
                                           "costPerHourMax", "bill", "clusterName", "apiEndpoint", "oidcIssuer",
                                           "workloadIdentityPool", "kubeconfig", "grafana", "apiEndpoints"}
    assert set(service["inputProperties"]) == {"model", "gpuNodes", "namespace", "environment", "modelCache",
                                               "addons", "context", "blockStorageClass",
                                               "networkPolicyEnforced", "hfToken", "kubeconfig", "gateway",
                                               "gatewayApiKeys", "charts", "chartMirrorPassword"}
    assert sorted(service["requiredInputs"]) == ["gpuNodes", "hfToken", "model"]
    assert set(service["properties"]) == {"endpoint", "topology", "grafana"}
    assert "Hugging Face token" in platform["inputProperties"]["hfToken"]["description"]


# concurrency 4 (was 8, as the dev stack): under the 35 % margin one L4 holds 2 users at TPOT 100 ms, so 8 users
# would need 4 replicas, over replicas.max 2; 4 users still plan 2 replicas, more than replicas.min
DEV_MODEL = {"name": "llama-8b", "model": "llama-3.1-8b", "maxModelLen": 8192,
             "sla": {"ttftMs": 2000, "tpotMs": 100, "concurrency": 4}, "replicas": {"min": 1, "max": 2}}
DEV_NODES = {"accelerator": "l4", "gpusPerNode": 1, "vcpu": 16, "ramGib": 64,
             "nodeSelector": {"nvidia.com/gpu.present": "true"}}

# What the provider's construct does with a request from a TypeScript / YAML program: map the schema's
# camelCase inputs onto the Args keys, then call the component with them.
PROGRAM = f'''
import pulumi
from pulumi.provider.experimental.component import ComponentProvider
from components.package import COMPONENTS, PACKAGE, VllmService, Platform
provider = ComponentProvider(COMPONENTS, PACKAGE)
inputs = {{"model": {DEV_MODEL!r}, "gpuNodes": {DEV_NODES!r}, "namespace": "llm", "hfToken": "{OFFLINE_SECRET}",
          "modelCache": {{"kind": "rwx", "storageClass": "nfs-client"}}, "blockStorageClass": "standard",
          "gatewayApiKeys": {{"default": "sk-package-test"}}}}
args = provider.map_inputs(inputs, provider._component_defs["VllmService"])
svc = VllmService("team-a", args)
pulumi.export("endpoint", svc.endpoint)
pulumi.export("replicas", svc.topology["replicas"])
'''


def test_a_vllm_service_is_built_from_schema_inputs(tmp_path: Path):
    program = tmp_path / "program.py"
    program.write_text(PROGRAM)
    resources, exports = run_program({}, [], "package-test", program=program)
    # 4 users at 12 per replica (the knee on one L4 at 100 ms, p90, the dense class's 10 % margin): 1 replica
    assert exports == {"endpoint": "http://llama-8b.llm.svc.cluster.local:8000/v1", "replicas": 1}
    types = {r.type for r in resources}
    assert {"vllm-platform:index:VllmService", "vllm-platform:index:Platform", "vllm-platform:serving:VllmService",
            "kubernetes:apps/v1:Deployment"} <= types
    [svc] = [r for r in resources if r.type == "vllm-platform:index:VllmService"]
    [platform] = [r for r in resources if r.type == "vllm-platform:index:Platform"]
    assert platform.parent and "VllmService::team-a" in platform.parent and svc.parent is None
    holders = [r.name for r in resources if OFFLINE_SECRET in json.dumps(r.inputs, default=str)]
    assert holders == ["team-a-hf-token"]  # the token reaches the Secret only
