"""Entry point of the policy pack: `pulumi preview --policy-pack policies` runs this file.

The rules read the instance-type facts of the project's catalog (components/), so the pack runs in
the project's virtualenv (PulumiPolicy.yaml) with the repository root on the import path.
"""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from pulumi_policy import PolicyPack  # noqa: E402

from policies.pack import PACK_NAME, policies  # noqa: E402

PolicyPack(name=PACK_NAME, policies=policies())
