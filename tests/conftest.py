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
