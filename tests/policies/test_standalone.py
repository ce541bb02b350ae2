"""The policy pack stands on its own for `pulumi policy publish policies`: its own requirements, and no
import from the program's tree at run time (the catalog facts it reads are a generated copy, checked
here against the program's source of truth)."""
from __future__ import annotations

import ast
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml

from components.catalog import INSTANCE_TYPES, MIN_FABRIC_GBPS
from components.cluster.pools import pool_name
from components.offline.runner import ROOT
from components.policy_facts import render

PACK = ROOT / "policies"
STDLIB = sys.stdlib_module_names


def test_the_packaged_facts_are_the_catalogs():
    """A catalog change without `python -m components.policy_facts --write` fails here."""
    assert (PACK / "rules" / "facts.py").read_text() == render()
    from policies.rules import facts
    assert set(facts.INSTANCE_TYPES) == set(INSTANCE_TYPES)
    p5 = facts.INSTANCE_TYPES["p5.48xlarge"]
    assert (p5.gpus, p5.network_gbps, p5.fabric, p5.fast_fabric) == (8, 3200.0, "efa", True)
    assert facts.INSTANCE_TYPES["g5.12xlarge"].fast_fabric is False  # 40 Gbps EFA: an add-on NIC
    assert facts.MIN_FABRIC_GBPS == MIN_FABRIC_GBPS == 200
    assert facts.pool_name("p5.48xlarge") == pool_name("p5.48xlarge") == "gpu-p5-48xlarge"
    assert (facts.GPU_RESOURCE, facts.POOL_LABEL) == ("nvidia.com/gpu", "vllm-platform/gpu-pool")


def _module_level_imports(path: Path) -> set[str]:
    """Top-level names a module imports when it is loaded (not those inside functions)."""
    tree = ast.parse(path.read_text())
    names = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_the_pack_imports_only_its_own_modules_and_its_requirements():
    # the pack's own modules; policies/venv is its virtualenv (`pulumi up --policy-pack policies` makes it)
    imported = set().union(*(_module_level_imports(p) for p in PACK.rglob("*.py")
                             if p.relative_to(PACK).parts[0] != "venv"))
    third_party = {n for n in imported if n not in STDLIB and n != "__future__"}
    assert third_party == {"pulumi_policy", "yaml"}
    assert "components" not in imported


def _pins(lines: list[str]) -> dict[str, str]:
    pins = {}
    for line in lines:
        line = line.split("#")[0].strip()
        if "==" in line:
            name, version = line.split("==")
            pins[name.lower()] = version
    return pins


def test_the_pack_has_its_own_pinned_requirements_equal_to_the_programs():
    pack = _pins((PACK / "requirements.txt").read_text().splitlines())
    assert pack == {"pulumi": "3.272.0", "pulumi-policy": "1.21.0", "pyyaml": "6.0.4"}
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    program = _pins(project["dependencies"] + project["optional-dependencies"]["dev"])
    assert {name: program[name] for name in pack} == pack
    meta = yaml.safe_load((PACK / "PulumiPolicy.yaml").read_text())
    # Its own virtualenv (not the program's ../.venv), kept out of git.
    assert meta["runtime"] == {"name": "python", "options": {"toolchain": "pip", "virtualenv": "venv"}}
    assert "venv/" in (PACK / ".gitignore").read_text().split()


# Run in a fresh interpreter whose path holds the pack's directory and site-packages only: the program's
# packages are refused even where an editable install would make them importable.
STANDALONE = r'''
import sys
class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("components", "policies"):
            raise ImportError("the policy pack imported " + name)
sys.meta_path.insert(0, Refuse())
import runpy
main = runpy.run_path("__main__.py", run_name="pack_entry")
pack = main["load_pack"]()
from pulumi_policy import ResourceValidationArgs
policies = {p.name: p for p in pack.policies()}
found = []
args = ResourceValidationArgs(resource_type="aws:eks/cluster:Cluster", props={"vpcConfig": {
    "subnetIds": ["s"], "publicAccessCidrs": ["0.0.0.0/0"]}}, urn="urn:x", name="c", opts=None, provider=None)
policies["cluster-endpoint-restricted"].validate(args, lambda message, urn=None: found.append(message))
print(len(policies), found[0])
print(sorted(m for m in sys.modules if m.split(".")[0] in ("components", "policies")))
print(str(pack.__file__).startswith(sys.argv[1]))
'''


def test_the_pack_runs_with_only_its_own_directory_on_the_path():
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(PACK)
    result = subprocess.run([sys.executable, "-c", STANDALONE, str(PACK)], cwd=PACK, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    count, rest = result.stdout.split(" ", 1)
    assert int(count) >= 20
    assert "public endpoint open to 0.0.0.0/0" in rest
    assert rest.splitlines()[1:] == ["[]", "True"]
