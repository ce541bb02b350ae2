"""Read the stack's configuration once, at the edge, and report every problem at once.

`parse` is pure (a dict in, a StackConfig or ConfigError out); `load_stack_config` is the only
place that touches pulumi.Config, and it keeps the secrets as Pulumi secrets.
"""
from __future__ import annotations

import copy
import json
import re
import typing
from dataclasses import dataclass
from dataclasses import field as dc_field
from datetime import date
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from .schema import DNS_LABEL, PROJECT, StackConfig

SECRET_KEYS = {"hfToken": "the Hugging Face token", "kubeconfig": "the kubeconfig of an existing cluster",
               # components/config/gateway.py: {"client": "key", ...}, one key per gateway.clients entry
               "gatewayApiKeys": "the gateway's API keys (a JSON object {client: key})",
               # components/config/charts.py: the password of charts.username at charts.mirror
               "chartMirrorPassword": "the chart mirror's password (of charts.username)",
               # components/config/gateway.py gateway.tls.mode certificate: PEM, checked in components/gateway
               "gatewayTlsCert": "the gateway's TLS certificate chain (PEM, for gateway.tls.mode certificate)",
               "gatewayTlsKey": "the gateway's TLS private key (PEM, unencrypted, for gateway.tls.mode certificate)",
               # components/addons/prometheus.py: Alertmanager sends the always-firing Watchdog alert here each
               # minute; the monitor (healthchecks.io, an Opsgenie / PagerDuty heartbeat, ...) pages when it stops
               "alertmanagerHeartbeatUrl": "the dead man's switch URL Alertmanager pings while Prometheus is up"}
TLS_SECRETS = ("gatewayTlsCert", "gatewayTlsKey")
REQUIRED_SECRETS = {"hfToken"}


class ConfigError(Exception):
    """Invalid stack configuration: one line per problem, `path.to.field: what is wrong`."""

    def __init__(self, errors: list[str]):
        self.errors = errors
        super().__init__("invalid stack configuration:\n" + "\n".join(f"  {e}" for e in errors))


def config_keys() -> list[str]:
    """The non-secret keys a stack file may set under `vllm-platform:`."""
    return [f.alias or n for n, f in StackConfig.model_fields.items()]


def _path(loc: tuple) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (("." if out else "") + str(part))
    return out


def _model_at(loc: tuple) -> type[BaseModel] | None:
    """The pydantic model a location points into (to list the keys it allows)."""
    model: Any = StackConfig
    for part in loc:
        if isinstance(part, int):
            continue
        field = next((f for n, f in model.model_fields.items() if part in (n, f.alias)), None)
        if field is None:
            return None
        ann = field.annotation
        candidates = [ann, *typing.get_args(ann)]
        nested = [c for c in candidates for c in [c, *typing.get_args(c)]
                  if isinstance(c, type) and issubclass(c, BaseModel)]
        if not nested:
            return None
        model = nested[0]
    return model


def _allowed_keys(loc: tuple) -> str:
    model = _model_at(loc)
    if model is None:
        return ""
    return "; allowed: " + ", ".join(f.alias or n for n, f in model.model_fields.items())


BOUND_ERRORS = ("greater_than", "greater_than_equal", "less_than", "less_than_equal")


def _error(e: dict) -> tuple[tuple, str]:
    """One pydantic error as (the field's location, `path.to.field: what is wrong`)."""
    loc, msg, typ = tuple(e["loc"]), e["msg"], e["type"]
    if typ == "extra_forbidden":
        return loc, f"{_path(loc)}: unknown key{_allowed_keys(loc[:-1])}"
    if typ == "missing":
        msg = "missing (required)"
    msg = msg.removeprefix("Value error, ")
    m = re.match(r"@([\w.]+)@ (.*)", msg, re.S)
    if m:
        # a list index in the field's path ("planning.measurements.0") prints as one: planning.measurements[0]
        loc, msg = loc + tuple(int(p) if p.isdigit() else p for p in m.group(1).split(".")), m.group(2)
    if typ == "string_pattern_mismatch" and e.get("ctx", {}).get("pattern") == DNS_LABEL:
        msg = ("must be a DNS label: lower-case letters, digits and '-', starting with a letter, "
               "not ending with '-', at most 40 characters")
    if typ.endswith("_type") or typ in ("literal_error", "string_pattern_mismatch", *BOUND_ERRORS):
        msg += f" (got {e['input']!r})" if not isinstance(e["input"], (dict, list)) else ""
    return loc, f"{_path(loc) or '(stack)'}: {msg}"


def format_errors(err: ValidationError) -> list[str]:
    return [_error(e)[1] for e in err.errors(include_url=False)]


def validate_part(model: type[BaseModel], data: dict[str, Any]) -> tuple[BaseModel | None, list[tuple[str, str]]]:
    """One block of the schema (a ModelDeployment, say) validated on its own: the model, or every problem as
    (field path inside the block, message), in the words parse() uses for the same block in a stack file.
    The CLI (`topology`) builds its ModelDeployment this way."""
    try:
        return model.model_validate(data), []
    except ValidationError as err:
        out = []
        for e in err.errors(include_url=False):
            loc, line = _error(e)
            path = _path(loc)
            out.append((path, line[len(path) + 2:] if path else line.split(": ", 1)[1]))
        return None, out


MAX_ROUNDS = 5


def _under(loc: tuple, removed: tuple) -> bool:
    """Whether `loc` is the removed key or lies under it."""
    return loc[:len(removed)] == removed


def _drop(data: Any, loc: tuple) -> bool:
    """Remove the value at `loc` (never a list item: that would shift the indices of the others)."""
    if not loc or isinstance(loc[-1], int):
        return False
    for part in loc[:-1]:
        try:
            data = data[part]
        except (KeyError, IndexError, TypeError):
            return False
    if isinstance(data, dict) and loc[-1] in data:
        del data[loc[-1]]
        return True
    return False


# An error at a key that only exists because another key beside it was taken out (the removed configFile
# described the model: without it the model is "unknown") is one of the loader's own making.
DEPENDS_ON = {"model": ("configFile", "architecture")}


def _caused_by_removal(loc: tuple, dropped: list[tuple]) -> bool:
    if not loc or loc[-1] not in DEPENDS_ON:
        return False
    return any(loc[:-1] + (other,) in dropped for other in DEPENDS_ON[loc[-1]])


def _validate(values: dict[str, Any], base_dir: Path | None = None,
              today: date | None = None) -> tuple[StackConfig | None, list[str]]:
    """StackConfig, or every error in it. pydantic runs a block's cross-field rules (unknown model,
    prompt longer than maxModelLen, the cloud's settings block) only once every field under the block
    is valid, so one typo would hide them; after each failed round the invalid values are taken out
    and the rest validated again (an optional one falls back to its default; a required one, now
    missing, keeps its block's rules from running). Errors at or under a removed key are not reported:
    only the removal caused them."""
    data = copy.deepcopy(values)
    lines: list[str] = []
    dropped: list[tuple] = []
    for _ in range(MAX_ROUNDS):
        try:
            cfg = StackConfig.model_validate(data, context={"base_dir": base_dir, "today": today})
            return (cfg if not lines else None), lines
        except ValidationError as err:
            found = [_error(e) for e in err.errors(include_url=False)]
        progress = False
        for loc, line in found:
            if any(_under(loc, d) for d in dropped) or line in lines or _caused_by_removal(loc, dropped):
                continue
            lines.append(line)
            if _drop(data, loc):  # the field a rule names, not its whole block
                dropped.append(loc)
                progress = True
        if not progress:
            break
    return None, lines


# The project's keys that default from the cloud provider's own stack settings (`aws:region` in a stack
# file configures the AWS provider; the project reads it instead of asking for the region twice).
PROVIDER_DEFAULTS: dict[str, dict[str, str]] = {
    "aws": {"region": "aws:region"},
    "gcp": {"project": "gcp:project", "region": "gcp:region", "zone": "gcp:zone"},
}


def provider_defaults(raw: dict[str, Any], provider: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """`raw` with the configured cloud's block filled from the provider's keys (aws:region, gcp:project,
    gcp:region, gcp:zone) where the project's own key is unset; an error per key set both ways apart."""
    cloud = raw.get("cloud")
    keys = PROVIDER_DEFAULTS.get(cloud) if isinstance(cloud, str) else None
    if not keys or not any(provider.get(k) for k in keys.values()):
        return raw, []
    block = raw.get(cloud)
    if block is not None and not isinstance(block, dict):
        return raw, []  # the schema reports the wrong type
    block, errors = dict(block or {}), []
    for field, key in keys.items():
        value = provider.get(key)
        if not value:
            continue
        if field not in block:
            block[field] = value
        elif block[field] != value:
            errors.append(f"{cloud}.{field}: {block[field]!r} disagrees with {key} {value!r} in the stack file; "
                          f"set it once (remove {PROJECT}:{cloud}.{field}: it defaults from {key})")
    return {**raw, cloud: block}, errors


def parse(raw: dict[str, Any], secrets: set[str] = frozenset(), plain: set[str] = frozenset(),
          provider: dict[str, Any] | None = None, required: set[str] = REQUIRED_SECRETS,
          base_dir: Path | None = None, today: date | None = None) -> StackConfig:
    """Validate the stack's `vllm-platform:` keys (without the prefix).

    `secrets` are the secret keys that are set as secrets, `plain` secret keys set in plain text;
    `provider` holds the cloud providers' own keys (`aws:region`, `gcp:project`, ...) the cloud block
    defaults from; `required` the secrets the stack must set (a cluster-only stack needs no hfToken);
    `base_dir` the stack file's directory, which `models[].configFile` paths are relative to (default: the
    project's stacks/); `today` the day Kubernetes support is judged by (default: kubernetes_support.today()).
    """
    raw, errors = provider_defaults(raw, provider or {})
    for key in sorted(plain):
        errors.append(f"{key}: set in plain text; it must be a secret: "
                      f"`pulumi config set --secret {key} ...` ({SECRET_KEYS[key]})")
    for key in sorted(set(required) - secrets - plain - {"hfToken"}):
        errors.append(f"{key}: missing; set {SECRET_KEYS[key]} with `pulumi config set --secret {key} ...`")
    values = {k: v for k, v in raw.items() if k not in SECRET_KEYS}
    cfg, problems = _validate(values, base_dir, today)
    errors += problems
    if cfg is not None:
        errors += _mirror_login_problems(cfg, "chartMirrorPassword" in secrets | plain)
        errors += _tls_secret_problems(cfg, secrets | plain)
    if "hfToken" in required and "hfToken" not in secrets | plain:
        # only gated or private Hub repositories need a token (config/engine.py GATED_REPO_PREFIXES, ModelSpec.gated)
        from .engine import gated_downloads
        gated = gated_downloads(cfg, values)
        if gated:
            errors.insert(0, f"hfToken: missing; set the Hugging Face token with `pulumi config set --secret hfToken "
                             f"hf_...` (an account that accepted the licence): {'; '.join(gated)} "
                             f"{'is a gated repository' if len(gated) == 1 else 'are gated repositories'}; any "
                             f"gated or private Hugging Face repository needs the token")
    if errors:
        raise ConfigError(errors)
    return cfg


def _tls_secret_problems(cfg: StackConfig, present: set[str]) -> list[str]:
    """Only gateway.tls.mode certificate reads the PEM secrets. That mode's missing or malformed secrets are reported
    when the run reads them (components/gateway/component.py tls_problems), as gatewayApiKeys are: an offline plan
    and the tests judge the stack file without them."""
    mode = cfg.gateway.tls.mode
    if mode == "certificate":
        return []
    return [f"{key}: set, but gateway.tls.mode is {mode}; set gateway.tls.mode certificate to use it, or remove it "
            f"(`pulumi config rm {key}`)" for key in TLS_SECRETS if key in present]


def _mirror_login_problems(cfg: StackConfig, password: bool) -> list[str]:
    """charts.username and the secret chartMirrorPassword come together (components/config/charts.py)."""
    user = cfg.charts.username
    if password and user is None:
        if cfg.charts.mirror is None:
            return ["chartMirrorPassword: set, but there is no charts.mirror to log in to; set charts.mirror and "
                    "charts.username, or remove it (`pulumi config rm chartMirrorPassword`)"]
        return ["chartMirrorPassword: set without charts.username; add the mirror's user as charts.username, or "
                "remove the password (`pulumi config rm chartMirrorPassword`)"]
    if user is not None and not password:
        return [f"charts.username: {user!r} has no password; set it with `pulumi config set --secret "
                f"chartMirrorPassword ...` (the mirror's password, kept a Pulumi secret), or remove charts.username "
                f"for a mirror that needs no login"]
    return []


def _decode(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in "[{":
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


@dataclass
class LoadedConfig:
    config: StackConfig
    hf_token: Any  # pulumi.Output[str], secret
    kubeconfig: Any | None  # pulumi.Output[str], secret
    # The stack's `aws:*` / `gcp:*` keys (`region`, `profile`, `assumeRoles`, ...; secrets as Pulumi secrets):
    # the explicit providers (components/providers.py) get them, as the default provider would.
    provider_config: dict[str, dict[str, Any]] = dc_field(default_factory=dict)
    gateway_api_keys: Any | None = None  # pulumi.Output[dict[str, str]], secret (gatewayApiKeys)
    chart_mirror_password: Any | None = None  # pulumi.Output[str], secret (chartMirrorPassword, of charts.username)
    gateway_tls_cert: Any | None = None  # pulumi.Output[str], secret (gatewayTlsCert, PEM)
    gateway_tls_key: Any | None = None  # pulumi.Output[str], secret (gatewayTlsKey, PEM)
    heartbeat_url: Any | None = None  # pulumi.Output[str], secret (alertmanagerHeartbeatUrl)


PROVIDER_PACKAGES = ("aws", "gcp")
# The directory of the stack file being run, when it is not the project's stacks/ (stackConfigDir): the
# offline runner sets it for `plan path/to/Pulumi.x.yaml`; None = project's stacks/.
STACK_DIR: Path | None = None


def provider_settings(all_keys: dict[str, str]) -> dict[str, dict[str, Any]]:
    """{"aws": {"region": ..., "profile": ...}, "gcp": {...}} from the stack's `aws:` / `gcp:` keys."""
    import pulumi
    from pulumi.runtime import config as rc

    out: dict[str, dict[str, Any]] = {}
    for key, value in sorted(all_keys.items()):
        package, _, name = key.partition(":")
        if package in PROVIDER_PACKAGES and name:
            value = _decode(value)
            out.setdefault(package, {})[name] = pulumi.Output.secret(value) if rc.is_config_secret(key) else value
    return out


def load_stack_config(required: set[str] = REQUIRED_SECRETS) -> LoadedConfig:
    """Read `vllm-platform:*` (and the providers' `aws:*` / `gcp:*`) from the running Pulumi program."""
    import pulumi
    from pulumi.runtime import config as rc

    prefix = PROJECT + ":"
    all_keys = {**rc.get_config_env(), **rc.CONFIG.get()}
    raw = {k[len(prefix):]: _decode(v) for k, v in all_keys.items() if k.startswith(prefix)}
    secret = {k for k in SECRET_KEYS if k in raw and rc.is_config_secret(prefix + k)}
    plain = {k for k in SECRET_KEYS if k in raw} - secret
    defaults = {key: all_keys[key] for keys in PROVIDER_DEFAULTS.values() for key in keys.values()
                if key in all_keys}
    cfg = parse(raw, secret, plain, provider=defaults, required=required, base_dir=STACK_DIR)
    conf = pulumi.Config(PROJECT)
    return LoadedConfig(cfg, conf.get_secret("hfToken"), conf.get_secret("kubeconfig"), provider_settings(all_keys),
                        conf.get_secret_object("gatewayApiKeys"), conf.get_secret("chartMirrorPassword"),
                        conf.get_secret("gatewayTlsCert"), conf.get_secret("gatewayTlsKey"),
                        conf.get_secret("alertmanagerHeartbeatUrl"))
