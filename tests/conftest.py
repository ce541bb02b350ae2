"""Fixtures, the guard that keeps the suite inside the repository, and the offline Hub. Shared helpers live
in tests/support/ (test files import from there, never from each other)."""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.support import guard  # noqa: E402

# No test reaches the Hugging Face Hub, nor a developer's cache of it (components/catalog/hub.py).
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["VLLM_PLATFORM_CACHE"] = tempfile.mkdtemp()  # tmp*: not "beside" a clone in the temp dir
guard.install(str(ROOT))

from tests.support.plans import planned  # noqa: E402
from tests.support.stacks import PLANS, plan  # noqa: E402


@pytest.fixture
def dev_plan():
    return planned("dev")


@pytest.fixture(params=PLANS)
def p(request):
    """The whole plan (tests/support/consistency.Plan) of every shipped stack, NVMe variant and fabric test stack."""
    return plan(request.param)


# --- the vendored CRDs' schemas ------------------------------------------------------------------------------------
# Every plan with a gateway or an operator applies megabytes of upstream CRDs (components/upstream/crds.py); pushing
# their openAPIV3Schemas through Pulumi's serializer and the mocks was ~90 % of a plan's time (dev: 4.5 -> 0.3 CPU s
# without them). No test reads a CRD's schema through a plan: the schemas are read from schemas/crds directly
# (tests/support/crds.py). So plans in tests carry each CRD with its schema replaced by an open one, everything else
# (names, groups, versions, annotations, the dependencies on them) as vendored; a test marked `full_crds` gets the
# vendored CRDs whole, and tests/addons/test_crd_upgrades.py checks there that a plan applies them byte for byte.
import copy  # noqa: E402
import functools  # noqa: E402

from components.upstream import crds as _crds  # noqa: E402

OPEN_SCHEMA = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
_FULL_CRD_FILE = _crds._crd_file


@functools.lru_cache(maxsize=None)
def _open_crd_file(rel: str) -> tuple[dict, ...]:
    docs = copy.deepcopy(_FULL_CRD_FILE(rel))
    for doc in docs:
        for version in doc["spec"].get("versions", []):
            if "schema" in version:
                version["schema"] = copy.deepcopy(OPEN_SCHEMA)
    return tuple(docs)


def _clear_shared_plan_caches() -> None:
    from tests.support import gcp, plans, stacks
    for module in (plans, stacks, gcp):
        for value in vars(module).values():
            if callable(getattr(value, "cache_clear", None)) and value.__module__ == module.__name__:
                value.cache_clear()


def pytest_configure(config):
    config.addinivalue_line("markers", "full_crds: plans in this test apply the vendored CRDs whole (conftest.py)")


@pytest.fixture(autouse=True)
def _crd_schemas(request):
    want = _FULL_CRD_FILE if request.node.get_closest_marker("full_crds") else _open_crd_file
    if _crds._crd_file is not want:
        _crds._crd_file = want
        _clear_shared_plan_caches()  # a cached plan was made with the other CRDs
