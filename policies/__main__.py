"""Entry point of the policy pack: `pulumi preview --policy-pack policies` runs this file, and so does
the pack once published (`pulumi policy publish policies`).

The pack stands on its own: its requirements are policies/requirements.txt, and the rules import
nothing from the program's tree (the catalog facts they read are copied into rules/facts.py by
`python -m components.policy_facts --write`). Pulumi runs this file with the pack's directory on
sys.path, under whatever name that directory has once published, so the directory is loaded as a
package of a fixed name and its modules keep their relative imports.
"""
import importlib.util
import sys
from pathlib import Path

PACKAGE = "vllm_platform_policies"
HERE = Path(__file__).resolve().parent


def load_pack():
    """The pack directory as the package PACKAGE; returns its `pack` module."""
    if PACKAGE not in sys.modules:
        spec = importlib.util.spec_from_file_location(PACKAGE, HERE / "__init__.py",
                                                      submodule_search_locations=[str(HERE)])
        module = importlib.util.module_from_spec(spec)
        sys.modules[PACKAGE] = module
        spec.loader.exec_module(module)
    return importlib.import_module(PACKAGE + ".pack")


if __name__ == "__main__":
    from pulumi_policy import PolicyPack

    pack = load_pack()
    PolicyPack(name=pack.PACK_NAME, policies=pack.policies())
