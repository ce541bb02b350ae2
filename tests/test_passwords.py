"""GeneratedPassword (components/passwords.py): the program's one generated secret, a Pulumi dynamic resource, so
that the engine needs no provider plugin beyond kubernetes/aws/gcp (pulumi-random is gone). The provider's CRUD
is tested here on its own (the offline plan's mocks answer for it with a stand-in), then through the process the
engine really runs it in (`python -m pulumi.dynamic`, the CLI's pulumi-resource-pulumi-python plugin)."""
from __future__ import annotations

import ast
import base64
import pickletools
import re
import string
import subprocess
import sys
import tomllib

import grpc
import pytest
from pulumi.dynamic.dynamic import serialize_provider
from pulumi.runtime import rpc
from pulumi.runtime.proto import provider_pb2, provider_pb2_grpc
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from components.offline import runner
from components.offline.mocks import RecordingMonitor
from components.offline.runner import ROOT
from components.passwords import TYPE, GeneratedPassword, GeneratedPasswordProvider

ALNUM = set(string.ascii_letters + string.digits)
PROVIDER = GeneratedPasswordProvider()


def created(length: int) -> tuple[str, dict]:
    result = PROVIDER.create({"length": length, "result": None})
    return result.id, result.outs


@pytest.mark.parametrize("length", [32, 40])
def test_create_makes_an_alphanumeric_password_of_the_length(length):
    id_, outs = created(length)
    assert outs["length"] == length and len(outs["result"]) == length
    assert set(outs["result"]) <= ALNUM  # no colon: envoyproxy/ratelimit splits REDIS_AUTH at one
    assert outs["result"] not in id_ and id_


def test_every_create_differs_and_draws_from_the_whole_alphabet():
    passwords = [created(40)[1]["result"] for _ in range(200)]
    assert len(set(passwords)) == 200
    assert set("".join(passwords)) == ALNUM  # 8000 draws of 62 characters: each is drawn ~129 times


def test_only_a_new_length_changes_it_by_replacement():
    _, outs = created(40)
    olds = {**outs, "__provider": "old pickle"}
    assert PROVIDER.diff("id", olds, {"length": 40, "result": None, "__provider": "new pickle"}).changes is False
    assert PROVIDER.diff("id", olds, {"length": 40.0}).changes is False  # numbers arrive as floats over gRPC
    new = PROVIDER.diff("id", olds, {"length": 48, "result": None})
    assert (new.changes, new.replaces, new.delete_before_replace) == (True, ["length"], False)
    # an update is never asked for; were it, the password would stay
    assert PROVIDER.update("id", olds, {"length": 40}).outs == outs
    # a refresh reads nothing outside the state: it keeps the password
    assert PROVIDER.read("id", olds).id == "id" and PROVIDER.read("id", olds).outs == outs
    assert PROVIDER.delete("id", olds) is None


@pytest.mark.parametrize("length, ok", [(32, True), (40.0, True), (16, True), (256, True), (8, False), (257, False),
                                        (40.5, False), (float("nan"), False), (float("inf"), False),
                                        ("40", False), (None, False)])
def test_check_refuses_a_length_that_is_no_whole_number_in_range(length, ok):
    result = PROVIDER.check({}, {"length": length})
    assert (result.failures == []) is ok
    assert all(f.property == "length" for f in result.failures)
    if ok:
        assert result.inputs == {"length": length}


def test_a_short_password_is_refused_before_anything_registers():
    with pytest.raises(ValueError, match="length 8"):
        GeneratedPassword("p", length=8)


# --- how the engine runs it ------------------------------------------------------------------------------

def test_the_pickle_names_the_provider_class_and_nothing_else():
    """The serialized provider (the `__provider` input) is a reference to this class: no code, no project module
    beside it. Its module path is in every deployed stack's state: moving the class breaks their delete."""
    raw = base64.b64decode(serialize_provider(PROVIDER))
    strings = [arg for op, arg, _ in pickletools.genops(raw) if isinstance(arg, str)]
    assert strings == ["components.passwords", "GeneratedPasswordProvider"]
    assert len(raw) < 100


def test_the_provider_loads_without_the_rest_of_the_project():
    """What `python -m pulumi.dynamic` does with the stored provider: dill.loads in a fresh interpreter. It imports
    no Kubernetes or cloud SDK and no project module but this one."""
    check = ("import base64, sys, dill\n"
             "p = dill.loads(base64.b64decode(sys.argv[1]))\n"
             "print(len(p.create({'length': 40}).outs['result']))\n"
             "print(sorted(m for m in sys.modules if m.startswith(('components', 'pulumi_', 'pydantic'))))")
    done = subprocess.run([sys.executable, "-c", check, serialize_provider(PROVIDER)], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["40", "['components', 'components.passwords']"]


def _struct(props: dict):
    return _sync_await(rpc.serialize_properties(props, {}))


def test_the_dynamic_provider_host_creates_and_diffs_it():
    """The real host process over gRPC, as the engine drives it: Check, Create, then Diff of the created state."""
    host = subprocess.Popen([sys.executable, "-u", "-m", "pulumi.dynamic"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        port = int(host.stdout.readline())
        stub = provider_pb2_grpc.ResourceProviderStub(grpc.insecure_channel(f"127.0.0.1:{port}"))
        urn = f"urn:pulumi:test::vllm-platform::{TYPE}::p"
        news = {"length": 40, "result": None, "__provider": serialize_provider(PROVIDER)}
        checked = stub.Check(provider_pb2.CheckRequest(urn=urn, olds=_struct({}), news=_struct(news)), timeout=60)
        assert list(checked.failures) == []
        made = stub.Create(provider_pb2.CreateRequest(urn=urn, properties=checked.inputs), timeout=60)
        outs = rpc.deserialize_properties(made.properties)
        assert len(outs["result"]) == 40 and set(outs["result"]) <= ALNUM and made.id
        same = stub.Diff(provider_pb2.DiffRequest(id=made.id, urn=urn, olds=made.properties, news=checked.inputs),
                         timeout=60)
        assert same.changes == provider_pb2.DiffResponse.DIFF_NONE
        longer = stub.Diff(provider_pb2.DiffRequest(id=made.id, urn=urn, olds=made.properties,
                                                    news=_struct({**news, "length": 48})), timeout=60)
        assert longer.changes == provider_pb2.DiffResponse.DIFF_SOME and list(longer.replaces) == ["length"]
    finally:
        host.terminate()
        host.wait(timeout=30)
        host.stdout.close()
        host.stderr.close()


class SecretOutputsMonitor(RecordingMonitor):
    def __init__(self, mocks):
        super().__init__(mocks)
        self.secret_outputs: dict[str, list[str]] = {}

    def RegisterResource(self, request):
        self.secret_outputs[request.name] = list(request.additionalSecretOutputs)
        return super().RegisterResource(request)


def test_the_result_is_a_secret_in_the_program_and_in_the_state():
    monitor = runner.fresh_mocks({}, [], "test", monitor_cls=SecretOutputsMonitor)
    made = {}
    _sync_await(run_pulumi_func(lambda: made.setdefault("p", GeneratedPassword("p", length=32))))
    (recorded,) = monitor.recorded
    assert (recorded.type, recorded.name, recorded.inputs["length"]) == (TYPE, "p", 32)
    assert monitor.secret_outputs["p"] == ["result"]  # the engine keeps it encrypted in the state
    assert _sync_await(made["p"].result.is_secret())
    assert _sync_await(made["p"].result.future()) == "x" * 32  # the mocks' stand-in


# --- pulumi-random stays out ------------------------------------------------------------------------------

def _imports(path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


def test_nothing_imports_or_pins_pulumi_random():
    """The engine the project runs against has the kubernetes, aws and gcp providers and the CLI's own python
    plugin, no pulumi-random (not buildable from Go modules): a generated secret is a GeneratedPassword."""
    sources = [ROOT / "__main__.py", *(p for top in ("components", "policies", "provider", "bench")
                                      for p in (ROOT / top).rglob("*.py")
                                      if not {"venv", ".venv"} & set(p.relative_to(ROOT).parts))]
    assert len(sources) > 50
    assert [str(p.relative_to(ROOT)) for p in sources if "pulumi_random" in _imports(p)] == []
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = project["dependencies"] + [d for ds in project["optional-dependencies"].values() for d in ds]
    pins += [line for name in ("requirements.txt", "requirements-dev.txt", "policies/requirements.txt",
                               "provider/requirements.txt") for line in (ROOT / name).read_text().splitlines()]
    assert [p for p in pins if re.match(r"\s*pulumi[-_]random\b", p)] == []


def test_no_shipped_stack_registers_a_random_resource():
    from tests.support.plans import planned
    for stack in ("dev", "prod-llama405b-aws"):
        types = {r.type for r in planned(stack).resources}
        assert TYPE in types and not [t for t in types if t.startswith("random:")]
