"""Evaluate the real __main__.py in-process under Pulumi mocks (no CLI, no cloud).

Like `cdk synth` or `helm template`: what comes out is exactly the inputs `pulumi up` would send.
Runs in update mode (preview=False) by default so that every apply callback runs and no check is
skipped; preview mode is there to prove the program registers the same resources either way.
"""
from __future__ import annotations

import importlib
import importlib.util
import json
import logging
import runpy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
import yaml
from pulumi.runtime import config as rc
from pulumi.runtime import settings
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from ..cluster import pools
from ..config import load
from ..config.load import ConfigError
from ..config.placeholders import placeholder_warnings
from ..config.schema import PROJECT
from ..config.project import project_root
from .mocks import Recorded, RecordingMocks, RecordingMonitor

# Modules that register the cloud's answers (CLOUD_OUTPUTS / INVOKES) for their provider's types.
STUB_MODULES = ("components.offline.aws_stubs", "components.offline.gcp_stubs")
for _mod in STUB_MODULES:
    if importlib.util.find_spec(_mod) is not None:
        importlib.import_module(_mod)

ROOT = project_root()  # the Pulumi project (components/config/project.py), also for an installed package
STACKS = ROOT / "stacks"
DEFAULT_STACK = "dev"
# Stack files hold `secure:` ciphertext only the Pulumi CLI can decrypt; offline they become this,
# still marked secret, so that a leak would show up as this text in a plan.
OFFLINE_SECRET = "offline-placeholder-secret"
# gateway.tls.mode certificate (components/gateway/component.py tls_problems): placeholders of the PEM shape it checks
OFFLINE_PEM = {"gatewayTlsCert": "-----BEGIN CERTIFICATE-----\nb2ZmbGluZS1wbGFjZWhvbGRlcg==\n-----END CERTIFICATE-----\n",
               "gatewayTlsKey": "-----BEGIN PRIVATE KEY-----\nb2ZmbGluZS1wbGFjZWhvbGRlcg==\n-----END PRIVATE KEY-----\n"}


@dataclass
class PlanResult:
    stack: str
    resources: list[Recorded]
    exports: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    # Placeholders left in the stack file (config/placeholders.py), then what the program logged with
    # pulumi.log.warn (what `pulumi up` prints as warnings), in order.
    warnings: list[str] = field(default_factory=list)


# The mock engine's log (pulumi.log.* under mocks); plan_stack_offline collects its warnings.
ENGINE_LOG = logging.getLogger("components.offline.engine")


class _Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record):
        if record.getMessage() not in self.messages:
            self.messages.append(record.getMessage())


def stack_file(stack: str) -> Path:
    return STACKS / f"Pulumi.{stack}.yaml"


def stack_names() -> list[str]:
    return sorted(p.name[len("Pulumi."):-len(".yaml")] for p in STACKS.glob("Pulumi.*.yaml"))


def load_stack_yaml(path: Path) -> dict[str, Any]:
    """The `config:` block of a stack file. A file that is not YAML, or not a mapping with a `config:`
    mapping, is a configuration error naming the file, line and column (what `pulumi` would refuse)."""
    try:
        doc = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        problem = " ".join(str(x) for x in (getattr(e, "context", None), getattr(e, "problem", None)) if x) or str(e)
        where = (f"{path}:{mark.line + 1}:{mark.column + 1}: YAML syntax error at line {mark.line + 1}, "
                 f"column {mark.column + 1}" if mark else f"{path}: YAML syntax error")
        raise ConfigError([f"{where}: {problem}"]) from None
    if doc is None:
        return {}
    if not isinstance(doc, dict) or not isinstance(doc.get("config") or {}, dict):
        raise ConfigError([f"{path}: a stack file is a mapping with a `config:` mapping of `project:key: value`"])
    return namespaced(doc.get("config") or {}, path)


def project_values(raw: dict[str, Any]) -> dict[str, Any]:
    """A stack file's values of this project, keyed without the `vllm-platform:` namespace (what config.parse
    takes)."""
    return {k.split(":", 1)[1]: v for k, v in raw.items() if k.startswith(f"{PROJECT}:")}


def namespaced(config: dict[str, Any], path: Path) -> dict[str, Any]:
    """The keys as the Pulumi CLI reads them: a key without a namespace (`environment: prod`) is the project's
    (`vllm-platform:environment`; pulumi/pulumi sdk/go/common/workspace/loaders.go stackConfigNamespacedWithProject),
    and `ns:config:name`, the old form, is `ns:name` (resource/config/key.go ParseKey). Two spellings of one key
    are refused: the CLI would keep either, depending on map order."""
    out: dict[str, Any] = {}
    spelt: dict[str, str] = {}
    errors = []
    for key, value in config.items():
        key = str(key)
        parts = key.split(":")
        full = (f"{PROJECT}:{key}" if len(parts) == 1 else
                f"{parts[0]}:{parts[2]}" if len(parts) == 3 and parts[1] == "config" else key)
        if full.count(":") != 1:
            errors.append(f"{path}: `{key}` is not a configuration key (the Pulumi CLI refuses it); "
                          f"write `namespace:name`, e.g. `{PROJECT}:{parts[-1]}`")
            continue
        if full in out:
            errors.append(f"{path}: config keys `{spelt[full]}` and `{key}` are both `{full}`; keep one")
        out[full], spelt[full] = value, key
    if errors:
        raise ConfigError(errors)
    return out


def pulumi_config(raw: dict[str, Any], notes: list[str]) -> tuple[dict[str, str], list[str]]:
    """Stack-file values as the Pulumi engine hands them to a program: strings, objects as JSON."""
    config, secret_keys = {}, []
    for key, value in raw.items():
        if isinstance(value, dict) and set(value) == {"secure"}:
            config[key], secret_keys = OFFLINE_PEM.get(key.split(":")[-1], OFFLINE_SECRET), secret_keys + [key]
        elif isinstance(value, str):
            config[key] = value
        else:
            config[key] = json.dumps(value)
    filled = []
    token = f"{PROJECT}:hfToken"
    if token not in config:
        config[token], secret_keys = OFFLINE_SECRET, secret_keys + [token]
        from ..config.engine import gated_downloads  # a real preview asks for the token only for gated repositories
        if gated_downloads(None, project_values(raw)):
            filled.append("hfToken (`pulumi config set --secret hfToken hf_...`)")
    keys = f"{PROJECT}:gatewayApiKeys"  # components/config/gateway.py: one placeholder key per client
    if keys not in config:
        from ..config.gateway import raw_client_names
        clients = raw_client_names((raw.get(f"{PROJECT}:gateway") or {}).get("clients"))
        config[keys], secret_keys = json.dumps({c: f"{OFFLINE_SECRET}-{c}" for c in clients}), secret_keys + [keys]
        example = json.dumps({c: "..." for c in clients})
        gw = raw.get(f"{PROJECT}:gateway") or {}
        if gw.get("enabled", True) is not False and gw.get("auth", "apiKeys") == "apiKeys":  # else unused
                filled.append(f"gatewayApiKeys (`pulumi config set --secret gatewayApiKeys '{example}'`, one key per "
                          f"gateway.clients entry)")
    password = f"{PROJECT}:chartMirrorPassword"  # components/config/charts.py: the login of charts.username
    charts = raw.get(f"{PROJECT}:charts")
    if password not in config and isinstance(charts, dict) and charts.get("username"):
        config[password], secret_keys = OFFLINE_SECRET, secret_keys + [password]
        filled.append("chartMirrorPassword (`pulumi config set --secret chartMirrorPassword ...`, the password of "
                      "charts.username)")
    tls = ((raw.get(f"{PROJECT}:gateway") or {}).get("tls") or {}).get("mode")
    for name, pem in OFFLINE_PEM.items():  # gateway.tls.mode certificate: the PEM pair
        if tls == "certificate" and f"{PROJECT}:{name}" not in config:
            config[f"{PROJECT}:{name}"], secret_keys = pem, secret_keys + [f"{PROJECT}:{name}"]
            filled.append(f"{name} (`pulumi config set --secret {name} < {'cert' if 'Cert' in name else 'key'}.pem`)")
    if filled:
        notes.append(f"secrets not in the stack file, placeholders in this offline plan: {'; '.join(filled)}; "
                     f"a real `pulumi preview` needs them set (docs/deploy.md)")
    return config, secret_keys


def fresh_mocks(config: dict[str, str], secret_keys: list[str], stack: str, preview: bool = False,
                monitor_cls: type[RecordingMonitor] | None = None) -> RecordingMonitor:
    """Reset the Pulumi runtime to fresh recording mocks with exactly this config; the monitor records what a
    program then registers."""
    settings.ROOT.set(None)
    rc.set_all_config(config, secret_keys)
    mocks = RecordingMocks()
    monitor = (monitor_cls or RecordingMonitor)(mocks)  # looked up at call time: tests may swap the recorder
    pulumi.runtime.set_mocks(mocks, project=PROJECT, stack=stack, preview=preview, monitor=monitor,
                             logger=ENGINE_LOG)
    settings.SETTINGS.rpc_manager.clear()
    settings.SETTINGS.outputs.clear()
    return monitor


def run_program(config: dict[str, str], secret_keys: list[str], stack: str, preview: bool = False,
                program: Path = ROOT / "__main__.py") -> tuple[list[Recorded], dict[str, Any]]:
    """Run `program` under fresh mocks with exactly this config; return what it registered and exported."""
    monitor = fresh_mocks(config, secret_keys, stack, preview)
    root = settings.get_root_resource()

    def body():
        runpy.run_path(str(program), run_name="__main__")

    _sync_await(run_pulumi_func(body))
    exports = {}
    for name, value in (getattr(root, "outputs", None) or {}).items():
        exports[name] = _sync_await(pulumi.Output.from_input(value).future())
    return list(monitor.recorded), exports


def resolve_stack(stack: str) -> tuple[str, Path]:
    """A stack name (stacks/Pulumi.<name>.yaml) or a path to a stack file."""
    if stack.endswith((".yaml", ".yml")):
        path = Path(stack).resolve()
        return path.name.removeprefix("Pulumi.").rsplit(".", 1)[0], path
    return stack, stack_file(stack)


def plan_stack_offline(stack: str = DEFAULT_STACK, preview: bool = False) -> PlanResult:
    stack, path = resolve_stack(stack)
    if not path.exists():
        raise FileNotFoundError(f"no stack file {path}; stacks: {', '.join(stack_names())}")
    notes: list[str] = []
    raw = load_stack_yaml(path)
    config, secret_keys = pulumi_config(raw, notes)
    load.STACK_DIR = path.parent  # models[].configFile is relative to the stack file
    collected = _Collect()
    ENGINE_LOG.addHandler(collected)
    pools.OFFLINE_NOT_CHECKED.clear()
    try:
        resources, exports = run_program(config, secret_keys, stack, preview)
    finally:
        load.STACK_DIR = None
        ENGINE_LOG.removeHandler(collected)
    notes += quota_notes()
    return PlanResult(stack, resources, exports, notes, placeholder_warnings(raw) + collected.messages)


def quota_notes() -> list[str]:
    """The quotas only a placeholder answered in this offline plan (cluster/pools.py checked_needs): one note per
    cloud saying they were not checked, and what the pools need of each, instead of the placeholder as a figure."""
    by_cloud: dict[str, list[str]] = {}
    for cloud, line in pools.OFFLINE_NOT_CHECKED:
        by_cloud.setdefault(cloud, []).append(line)
    return [f"{pools.NOT_CHECKED_OFFLINE[cloud]}: {'; '.join(lines)}" for cloud, lines in by_cloud.items()]
