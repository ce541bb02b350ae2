"""vllm-platform: stack config -> topology plan -> Platform. Everything else lives in components/."""
import pulumi

from components.config import ConfigError, load_stack_config
from components.planner import NoFeasibleTopology
from components.planning import plan_stack
from components.platform import Platform
from components.providers import cloud_provider_opts

try:
    loaded = load_stack_config()
    topologies = plan_stack(loaded.config)
except (ConfigError, NoFeasibleTopology) as err:
    raise pulumi.RunError(str(err)) from err  # a clear message, no traceback

platform = Platform("vllm", loaded, topologies, opts=cloud_provider_opts(loaded.config))

pulumi.export("topology", {name: t.to_dict() for name, t in topologies.items()})
pulumi.export("costPerHour", round(sum(t.cost_per_hour for t in topologies.values()), 2))
pulumi.export("namespace", loaded.config.namespace)
pulumi.export("endpoints", platform.endpoints)
pulumi.export("serving", platform.serving)  # start-up budget terms, rollout, production warnings
if platform.kubeconfig is not None:
    pulumi.export("kubeconfig", pulumi.Output.secret(platform.kubeconfig))
