"""`python -m components topology`: one model (a catalog id, a Hub repo id or a config.json) sized on one
cloud's GPU types, validated by the stack file's own schema (ModelDeployment) so that the two cannot disagree."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from ..catalog import MODELS, PRECISIONS, closest_models, find_model, instance_types, offered
from .errors import EXIT_BAD_INPUT, EXIT_NO_FIT, _fail
from .summary import DEFAULT_KV_CACHE_DTYPE, KV_CACHE_DTYPE_CHOICES, kv_dtype_text, summary
from ..planner import NoFeasibleTopology, Sla, plan_topology
from ..planner.capacity import PERCENTILES


# The stack schema's fields (a `models` entry) the topology options set, so that an error names the option.
TOPOLOGY_FLAGS = {"model": "--model", "configFile": "--model-config", "revision": "--revision",
                  "accelerator": "--gpu", "precision": "--precision", "kvCacheDtype": "--kv-cache-dtype",
                  "maxModelLen": "--max-model-len", "sla.ttftMs": "--ttft-ms", "sla.tpotMs": "--tpot-ms",
                  "sla.concurrency": "--concurrency", "sla.promptTokens": "--prompt-tokens",
                  "sla.outputTokens": "--output-tokens", "sla.latencyPercentile": "--percentile",
                  "sla": "--max-model-len", "replicas.max": "--max-replicas",
                  "engine": "--engine", "extraArgs": "--extra-args"}
JSON_BLOCKS = (("engine", "--engine"), ("extraArgs", "--extra-args"))  # stack blocks given whole, as JSON
CLI_DEPLOYMENT = "cli"  # the deployment's name; the CLI serves the model under its catalog id


def model_spec(a):
    """--model-config's config.json, else the catalog, else the Hub (cached): (spec, None) or (None, error)."""
    from ..catalog.hub import HubUnavailable, spec_from_file, spec_from_hub
    if a.model_config:
        try:
            return spec_from_file(Path(a.model_config), repo=a.model if a.model and "/" in a.model else None), None
        except (OSError, ValueError) as e:  # unreadable, not JSON, or a config it cannot size (HfConfigError)
            return None, f"--model-config: {a.model_config}: " + (f"cannot read it ({e.strerror})"
                                                                   if isinstance(e, OSError) else str(e))
    model = find_model(a.model or "")
    if model is not None or not a.model:  # no --model: the one error left
        return model, None if a.model else "--model or --model-config: a catalog id / Hub repo id, or a config.json"
    try:
        return spec_from_hub(a.model, a.revision, where="--model-config PATH"), None
    except (HubUnavailable, ValueError) as e:
        near = ", ".join(closest_models(a.model))
        return None, (f"--model: unknown model {a.model!r}: not in the catalog{f' (closest: {near})' if near else ''}"
                      f", and {e}; allowed: {', '.join(MODELS)}")


def topology_deployment(a, spec):
    """The options as a stack file's `models` entry, validated by the same schema (ModelDeployment):
    the deployment, or one `--option: problem` line per problem, in the stack file's words. `spec` is
    model_spec's answer: without --model, a config.json's model is named by the repo it describes."""
    from ..config.load import validate_part
    from ..config.schema import ModelDeployment

    data = {"name": CLI_DEPLOYMENT, "model": a.model or spec.hf_repo, "accelerator": a.gpu.lower() if a.gpu else None,
            "precision": a.precision, "maxModelLen": a.max_model_len, "kvCacheDtype": a.kv_cache_dtype,
            "sla": {"ttftMs": a.ttft_ms, "tpotMs": a.tpot_ms, "concurrency": a.concurrency,
                    "promptTokens": a.prompt_tokens, "outputTokens": a.output_tokens,
                    "latencyPercentile": a.percentile},
            "replicas": {"min": 1, "max": a.max_replicas}}
    if a.model_config:  # relative to the working directory here (in a stack file: to the stack file's directory)
        data["configFile"] = str(Path(a.model_config).resolve())
    if a.revision:
        data["revision"] = a.revision
    lines = []
    for key, flag in JSON_BLOCKS:
        if getattr(a, key_attr(key)) is not None:
            try:
                data[key] = json.loads(getattr(a, key_attr(key)))
            except ValueError as e:
                lines.append(f"{flag}: not JSON ({e}); give the stack file's models[].{key} block as JSON")
    if lines:
        return None, lines
    dep, problems = validate_part(ModelDeployment, data)
    for path, message in problems:
        for key, flag in TOPOLOGY_FLAGS.items():  # camelCase keys in the text become the options that set them
            key = key.rsplit(".", 1)[-1]
            if key != key.lower():
                message = re.sub(rf"\b{key}\b", flag, message)
        lines.append(f"{option(path)}: {message}")
    return dep, lines


def key_attr(key: str) -> str:
    return {"extraArgs": "extra_args"}.get(key, key)


def option(path: str) -> str:
    """The option that sets a schema path: `--engine maxNumSeqs` for a key inside a JSON block."""
    for key, flag in JSON_BLOCKS:
        if path.startswith(key + "."):
            return f"{flag} {path[len(key) + 1:]}"
    return TOPOLOGY_FLAGS.get(path, path)


def in_flags(message: str) -> str:
    """A no-fit message's headline in the options' words: the planner names a models[] entry's fields
    (`raise sla.tpotMs`, `bound by replicas.max`); here the options set them (`raise --tpot-ms`)."""
    head, _, rest = message.partition("\n")
    for key, flag in sorted(TOPOLOGY_FLAGS.items(), key=lambda kv: -len(kv[0])):
        if key.islower() and "." not in key and key not in ("accelerator", "precision"):
            continue  # plain words (model, sla, engine) that the text uses as words
        head = re.sub(rf"(?<![\w.-]){re.escape(key)}(?![\w])", flag, head)
    return head + (f"\n{rest}" if rest else "")


def cmd_topology(a) -> int:
    import dataclasses

    from ..planning import deployment_request

    spec, problem = model_spec(a)
    if spec is None:
        return _fail(EXIT_BAD_INPUT, problem)
    dep, problems = topology_deployment(a, spec)
    if problems:
        return _fail(EXIT_BAD_INPUT, "\n".join(problems))
    pool = tuple(i for i in instance_types(a.cloud) if offered(i))  # priced on demand: only what is sold so
    req = deployment_request(dep, pool)
    unsold = [i.name for i in deployment_request(dep, tuple(instance_types(a.cloud))).candidates]
    if not req.candidates and unsold:
        return _fail(EXIT_BAD_INPUT, f"--gpu: {dep.accelerator} on {a.cloud} comes as {', '.join(unsold)}, not "
                                     f"offered on demand (a stack buys it with gcp.reservation or gcp.spot: true); "
                                     f"topology prices on demand: try another --gpu or --cloud")
    if not req.candidates:
        where = sorted({i.cloud for c in ("aws", "gcp") for i in instance_types(c, dep.accelerator)})
        return _fail(EXIT_BAD_INPUT, f"--gpu: no {a.cloud} instance type carries {dep.accelerator}; "
                                     f"try --cloud {'/'.join(where)}")
    try:
        t = plan_topology(dataclasses.replace(req, served_model_name=None))
    except NoFeasibleTopology as e:
        return _fail(EXIT_NO_FIT, f"no topology fits: {in_flags(e.message)}")
    sys.stderr.write("".join(f"note: {n}\n" for n in dep.spec.notes))  # what a config.json left out or estimated
    if not a.json:  # which KV cache dtypes the planner was asked to choose among, and its choice
        print(f"# {kv_dtype_text(a.kv_cache_dtype, t.kv_cache_dtype)}")
    print(json.dumps(t.to_dict(), indent=2) if a.json else summary(t))
    return 0


def add_topology_parser(sub, f) -> None:
    t = sub.add_parser("topology", help="plan one model on one GPU type", formatter_class=f,
                       description="Size one model: TP, PP, instance type, KV cache, replicas and the vllm flags.")
    t.add_argument("--model", help="catalog id (see `table`) or any Hub repo id (its config.json, cached)")
    t.add_argument("--model-config", metavar="PATH", help="size the model from this config.json (docs/models.md)")
    t.add_argument("--revision", help="Hub commit (40 hex digits) the model's config.json is read at, as "
                                        "models[].revision; default: main")
    t.add_argument("--gpu", help="GPU type (e.g. h100, l4); default: the cheapest that fits")
    t.add_argument("--precision", choices=list(PRECISIONS),
                   help="weight precision; default: the model's native one (fp8 for an FP8 repo id)")
    t.add_argument("--max-model-len", type=int, help="longest prompt + output in tokens; default: the model's limit")
    t.add_argument("--tpot-ms", type=float, default=Sla.tpot_ms, help="SLA: time per output token, ms")
    t.add_argument("--ttft-ms", type=float, default=Sla.ttft_ms, help="SLA: time to first token, ms")
    t.add_argument("--concurrency", type=int, default=Sla.concurrency,
                   help="SLA: concurrent requests the fleet must hold")
    t.add_argument("--prompt-tokens", type=int, default=Sla.prompt_tokens, help="SLA: average prompt length, tokens")
    t.add_argument("--output-tokens", type=int, default=Sla.output_tokens,
                   help="SLA: average completion length, tokens")
    t.add_argument("--percentile", choices=list(PERCENTILES), default=Sla.latency_percentile,
                   help="SLA: what --tpot-ms and --ttft-ms bound: the p90 latencies (default), the p99 ones or the means")
    t.add_argument("--max-replicas", type=int, default=64, help="most replicas the fleet may scale to")
    t.add_argument("--cloud", choices=["aws", "gcp"], default="aws", help="whose instance types to consider")
    t.add_argument("--kv-cache-dtype", choices=list(KV_CACHE_DTYPE_CHOICES), default=DEFAULT_KV_CACHE_DTYPE,
                   help="KV cache: the model's dtype, FP8 (lower quality), or let the planner choose FP8 when cheaper")
    t.add_argument("--engine", metavar="JSON", help="models[].engine as JSON (docs/engine.md): its options change "
                                                    "the memory and the flags as in a stack file")
    t.add_argument("--extra-args", metavar="JSON", help="models[].extraArgs as JSON: other `vllm serve` flags")
    t.add_argument("--json", action="store_true", help="print the topology as JSON instead of a summary")
    t.set_defaults(fn=cmd_topology)
