"""Pulumi mocks for the offline plan: the cloud's answers, never our own logic.

Every resource is recorded with its type, name, parent and inputs. Cloud resources get the
outputs the real provider would compute (ids, ARNs, endpoints), shaped like the real thing,
from CLOUD_OUTPUTS; everything else echoes its inputs.
"""
from __future__ import annotations

import base64
import hashlib
import threading
from dataclasses import dataclass
from typing import Callable

import pulumi
from pulumi.runtime import rpc
from pulumi.runtime.mocks import MockCallArgs, MockMonitor, MockResourceArgs
from pulumi.runtime.sync_await import _ensure_event_loop

_FAKE_CA = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIB offline plan\n-----END CERTIFICATE-----\n").decode()


def _hex(name: str, n: int = 17) -> str:
    return hashlib.sha256(name.encode()).hexdigest()[:n]


# type token -> (name, inputs) -> outputs the provider would add. Cloud components extend this.
CLOUD_OUTPUTS: dict[str, Callable[[str, dict], dict]] = {}
# invoke token -> args -> result
INVOKES: dict[str, Callable[[dict], dict]] = {}


def cloud_outputs(token: str):
    def register(fn):
        CLOUD_OUTPUTS[token] = fn
        return fn
    return register


def invoke(token: str):
    def register(fn):
        INVOKES[token] = fn
        return fn
    return register


@dataclass
class Recorded:
    type: str
    name: str
    parent: str | None
    custom: bool
    inputs: dict
    provider: str | None = None
    # Direct dependencies as "type::name" (depends_on, components expanded to their children, and the
    # resources whose outputs feed the inputs): what `pulumi up` waits for before creating this one.
    dependencies: tuple[str, ...] = ()
    # Resource options the engine acts on (what `pulumi up` / `destroy` refuse, keep or leave alone).
    protect: bool = False
    retain_on_delete: bool = False
    ignore_changes: tuple[str, ...] = ()


class RecordingMocks(pulumi.runtime.Mocks):
    def new_resource(self, args: MockResourceArgs) -> tuple[str | None, dict]:
        extra = CLOUD_OUTPUTS.get(args.typ)
        outputs = dict(args.inputs)
        if extra:
            outputs.update(extra(args.name, args.inputs))
        if args.typ.startswith("kubernetes:") and isinstance(outputs.get("metadata"), dict):
            outputs["metadata"] = {"uid": _hex(args.name, 32), **outputs["metadata"]}
        rid = outputs.get("id") or f"{args.name}-{_hex(args.typ + args.name, 8)}"
        return (rid if args.custom else None), outputs

    def call(self, args: MockCallArgs) -> tuple[dict, list | None]:
        fn = INVOKES.get(args.token)
        return (fn(args.args) if fn else {}), []  # MockMonitor.Invoke iterates the failures


class RecordingMonitor(MockMonitor):
    """MockMonitor that records every registration with its parent (MockResourceArgs has none)."""

    def __init__(self, mocks: RecordingMocks):
        super().__init__(mocks)
        self.recorded: list[Recorded] = []
        self._lock = threading.Lock()

    def RegisterResource(self, request):
        resp = super().RegisterResource(request)
        if request.type != "pulumi:pulumi:Stack":
            _ensure_event_loop()
            inputs = rpc.deserialize_properties(request.object)
            with self._lock:
                self.recorded.append(Recorded(request.type, request.name, _parent_key(request.parent),
                                              bool(request.custom), inputs, request.provider or None,
                                              tuple(sorted({_urn_key(u) for u in request.dependencies})),
                                              bool(request.protect), bool(request.retainOnDelete),
                                              tuple(request.ignoreChanges)))
        return resp


def _urn_key(urn: str) -> str:
    """urn:pulumi:stack::project::parentType$type::name -> type::name"""
    parts = urn.split("::")
    return f"{parts[-2].split('$')[-1]}::{parts[-1]}"


def _parent_key(urn: str) -> str | None:
    if not urn:
        return None
    parts = urn.split("::")
    if len(parts) < 4 or parts[-2].endswith("pulumi:pulumi:Stack"):
        return None
    return f"{parts[-2].split('$')[-1]}::{parts[-1]}"


__all__ = ["RecordingMocks", "RecordingMonitor", "Recorded", "CLOUD_OUTPUTS", "INVOKES", "cloud_outputs",
           "invoke", "_FAKE_CA"]


@cloud_outputs("pulumi-python:dynamic:GeneratedPassword")
def _generated_password(name: str, inputs: dict) -> dict:
    """What the dynamic provider's process answers (components/passwords.py, tested on its own): a password of the
    asked length, here a stand-in, never a generated one."""
    return {"result": "x" * int(inputs.get("length", 16))}
