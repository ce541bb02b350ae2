"""components/ keeps its layers (issue 35): the import-linter contracts in pyproject.toml ([tool.importlinter]) hold:
each layer imports only the ones below it, no import circles between siblings, the pure modules load no Pulumi
provider SDK, and passwords.py (pickled into deployed stacks' state) imports nothing of the project."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_import_contracts_hold():
    lint = Path(sys.executable).parent / "lint-imports"
    # --no-cache: grimp would otherwise write .import_linter_cache/ into the checkout
    r = subprocess.run([str(lint), "--no-cache", "--no-logo", "--config", str(ROOT / "pyproject.toml")], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr
    assert "0 broken" in r.stdout
