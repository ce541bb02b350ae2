"""The InferenceGateway component alone under Pulumi mocks, with each resource's dependencies recorded."""
from __future__ import annotations

from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from components.offline.runner import fresh_mocks
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
    monitor = fresh_mocks({}, [], "test", monitor_cls=OptionsMonitor)
    _sync_await(run_pulumi_func(lambda: InferenceGateway("gw", args)))
    return GatewayRun(monitor)
