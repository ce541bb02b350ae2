"""The InferenceGateway component alone under Pulumi mocks, with each resource's dependencies recorded."""
from __future__ import annotations

import pulumi
from pulumi.runtime import config as rc
from pulumi.runtime import settings
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from components.offline.mocks import RecordingMocks
from tests.support.addons import DependencyMonitor


class OptionsMonitor(DependencyMonitor):
    """Also records the resources registered with retainOnDelete."""

    def __init__(self, mocks):
        super().__init__(mocks)
        self.retained: set[str] = set()

    def RegisterResource(self, request):
        if request.retainOnDelete:
            self.retained.add(request.name)
        return super().RegisterResource(request)


class GatewayRun:
    def __init__(self, monitor: OptionsMonitor):
        self.resources, self.deps, self.retained = monitor.recorded, monitor.deps, monitor.retained

    def named(self, name: str):
        (found,) = [r for r in self.resources if r.name == name]
        return found


def run_gateway(args) -> GatewayRun:
    """Build InferenceGateway("gw", args) under fresh mocks; resource names are `gw-<suffix>`."""
    from components.gateway import InferenceGateway
    settings.ROOT.set(None)
    rc.set_all_config({}, [])
    mocks = RecordingMocks()
    monitor = OptionsMonitor(mocks)
    pulumi.runtime.set_mocks(mocks, project="vllm-platform", stack="test", preview=False, monitor=monitor)
    settings.SETTINGS.rpc_manager.clear()
    settings.SETTINGS.outputs.clear()
    _sync_await(run_pulumi_func(lambda: InferenceGateway("gw", args)))
    return GatewayRun(monitor)
