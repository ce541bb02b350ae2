"""Production-only rules: they need the stack's environment, which the policy pack cannot read from
stack config. Platform labels the namespace it creates with `vllm-platform/environment`
(components/platform.py), so a workload's environment is its namespace's label; a workload or
namespace the stack does not create can carry the label itself."""
from __future__ import annotations

from .core import ADVISORY, MANDATORY, StackResource, as_dict, as_list, as_number, get, stack_rule
from .facts import CALIBRATED_MARGIN_ANNOTATION, KNEE_ANNOTATION, LATENCY_MARGIN_FLOOR, MARGIN_ANNOTATION
from .podspec import LWS, RAY_TYPES, RAYSERVICE, PodTemplate, is_serving_workload, pod_templates, serve_config

NAMESPACE = "kubernetes:core/v1:Namespace"
PDB = "kubernetes:policy/v1:PodDisruptionBudget"
SCALEDOBJECT = "kubernetes:keda.sh/v1alpha1:ScaledObject"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
ENVIRONMENT_LABEL = "vllm-platform/environment"
PRODUCTION = "prod"  # components/config/schema.py: environment is dev | staging | prod


def metadata(r: StackResource) -> dict:
    return as_dict(r.props.get("metadata"))


def namespace_of(r: StackResource) -> str:
    return str(metadata(r).get("namespace") or "default")


def environments(resources: list[StackResource]) -> dict[str, str]:
    """namespace name -> environment label, from the Namespace objects of the stack."""
    out = {}
    for r in resources:
        if r.type == NAMESPACE:
            env = get(metadata(r), "labels", ENVIRONMENT_LABEL)
            if isinstance(env, str) and metadata(r).get("name"):
                out[metadata(r)["name"]] = env
    return out


def environment_of(r: StackResource, by_namespace: dict[str, str]) -> str | None:
    return by_namespace.get(namespace_of(r)) or get(metadata(r), "labels", ENVIRONMENT_LABEL)


def pod_labels(r: StackResource, tpl: PodTemplate) -> dict:
    """The labels the workload's pods will carry: the template's, plus what the operator adds."""
    labels = dict(tpl.labels)
    if r.type in RAY_TYPES:  # KubeRay's pod labels (ray-operator/controllers/ray/common/pod.go)
        labels["ray.io/node-type"] = "head" if tpl.where == "head" else "worker"
        labels["ray.io/is-ray-node"] = "yes"
    elif r.type == LWS:  # LeaderWorkerSet labels every pod with its set's name
        labels["leaderworkerset.sigs.k8s.io/name"] = str(metadata(r).get("name"))
    return labels


def selects(selector, labels: dict) -> bool:
    """metav1.LabelSelector semantics; an empty selector selects every pod, a missing one none."""
    if not isinstance(selector, dict):
        return False
    if any(labels.get(k) != v for k, v in as_dict(selector.get("matchLabels")).items()):
        return False
    for expr in as_list(selector.get("matchExpressions")):
        key, op, values = get(expr, "key"), get(expr, "operator"), as_list(get(expr, "values"))
        present = key in labels
        if ((op == "In" and labels.get(key) not in values) or (op == "NotIn" and present and labels[key] in values)
                or (op == "Exists" and not present) or (op == "DoesNotExist" and present)):
            return False
    return True


@stack_rule("pdb-in-production", MANDATORY,
            "In a production stack every serving workload has a PodDisruptionBudget, so that a node drain "
            "or upgrade never takes the last replica of a model down.",
            "add a policy/v1 PodDisruptionBudget in the workload's namespace whose selector matches its pods "
            "(maxUnavailable: 1)")
def pdb_in_production(resources: list[StackResource]):
    by_namespace = environments(resources)
    pdbs = [r for r in resources if r.type == PDB]
    for r in resources:
        if environment_of(r, by_namespace) != PRODUCTION or not is_serving_workload(r.type, r.props):
            continue
        ns = namespace_of(r)
        covered = any(namespace_of(p) == ns and selects(get(p.props, "spec", "selector"), pod_labels(r, tpl))
                      for p in pdbs for tpl in pod_templates(r.type, r.props))
        if not covered:
            kind = r.type.rsplit(":", 1)[-1]
            yield r, f"{kind} {metadata(r).get('name') or r.name} in namespace {ns} has no PodDisruptionBudget"


def min_replicas(r: StackResource, scaled: dict[tuple[str, str], StackResource]) -> list[tuple[str, float]]:
    """(what, the fewest replicas it may run) of a serving workload: a KEDA ScaledObject's minReplicaCount
    (KEDA's default 0) where one targets the Deployment, else its spec.replicas; each Serve LLM
    application's autoscaling min_replicas (default 1) for a RayService."""
    name = str(metadata(r).get("name") or r.name)
    if r.type == RAYSERVICE:
        out = []
        for app in as_list(serve_config(r.props).get("applications")):
            for llm in as_list(get(app, "args", "llm_configs")):
                auto = as_dict(get(llm, "deployment_config", "autoscaling_config"))
                model = get(llm, "model_loading_config", "model_id") or get(app, "name")
                out.append((f"RayService {name} model {model}", as_number(auto.get("min_replicas", 1))))
        return out
    kind = "LeaderWorkerSet" if r.type == LWS else "Deployment"  # a set's replicas are its groups
    so = scaled.get((namespace_of(r), kind, name))
    if so is not None:
        return [(f"{kind} {name}", as_number(get(so.props, "spec", "minReplicaCount") or 0))]
    return [(f"{kind} {name}", as_number(get(r.props, "spec", "replicas") or 1))]


def production_minimums(resources: list[StackResource]):
    """(serving workload, what, the fewest replicas it may run) of every production Deployment / RayService /
    LeaderWorkerSet."""
    by_namespace = environments(resources)
    scaled = {}
    for so in resources:
        kind = get(so.props, "spec", "scaleTargetRef", "kind") or "Deployment"  # KEDA's default kind
        if so.type == SCALEDOBJECT and kind in ("Deployment", "LeaderWorkerSet"):
            scaled[(namespace_of(so), kind, str(get(so.props, "spec", "scaleTargetRef", "name")))] = so
    for r in resources:
        if r.type not in (DEPLOYMENT, RAYSERVICE, LWS) or environment_of(r, by_namespace) != PRODUCTION:
            continue
        if r.type == DEPLOYMENT and not is_serving_workload(r.type, r.props):
            continue
        for what, fewest in min_replicas(r, scaled):
            yield r, what, fewest


@stack_rule("single-replica-in-production", ADVISORY,
            "A production model whose fleet may shrink to one replica goes down for every drain of that "
            "replica's nodes, every node upgrade and every engine crash: the PodDisruptionBudget lets one "
            "replica go rather than block node maintenance forever.",
            "set models[].replicas.min to 2 (the plan prints the price of a second replica), or accept the "
            "downtime and say so in the stack file")
def single_replica_in_production(resources: list[StackResource]):
    for r, what, fewest in production_minimums(resources):
        if fewest is not None and fewest <= 1:
            yield r, f"{what} in production may run a single replica (minimum {int(fewest)})"


@stack_rule("no-scale-to-zero-in-production", MANDATORY,
            "A production model never scales to zero: its first request after an idle spell would wait a whole "
            "cold start (GPU node, weights, engine start: many minutes) or time out. Scale to zero is for dev "
            "and staging (docs/scale-to-zero.md).",
            "set models[].replicas.min to 1 or more (the ScaledObject's minReplicaCount, KEDA's default being 0; "
            "Serve LLM's autoscaling_config.min_replicas)")
def no_scale_to_zero_in_production(resources: list[StackResource]):
    for r, what, fewest in production_minimums(resources):
        if fewest is not None and fewest < 1:
            yield r, f"{what} in production may scale to zero (minimum {int(fewest)})"


# P/D (components/serving/disagg.py): vLLM's NixlConnector moves each prompt's KV cache between pods. Without an
# RDMA device in the pod (an EFA interface, an RDMA shared device, a GKE RDMA network) NIXL's UCX falls back to
# TCP on the pod network.
RDMA_RESOURCES = ("vpc.amazonaws.com/efa", "rdma/")
GKE_INTERFACES = "networking.gke.io/interfaces"


def _nixl(container: dict) -> bool:
    args = [str(a) for a in as_list(container.get("args"))]
    return any(a == "--kv-transfer-config" and i + 1 < len(args) and "NixlConnector" in args[i + 1]
               for i, a in enumerate(args))


def _rdma(tpl: PodTemplate, container: dict) -> bool:
    amounts = {**as_dict(get(container, "resources", "requests")), **as_dict(get(container, "resources", "limits"))}
    if any(k.startswith(RDMA_RESOURCES) for k in amounts):
        return True
    return "rdma-" in str(tpl.annotations.get(GKE_INTERFACES) or "")


@stack_rule("pd-rdma-in-production", MANDATORY,
            "A production model served prefill/decode disaggregated moves every prompt's KV cache between pods "
            "with vLLM's NixlConnector; without an RDMA NIC in the pod, NIXL's UCX falls back to TCP on the pod "
            "network, so every first token waits on a transfer sharing the node's links with everything else "
            "(docs/disaggregation.md).",
            "serve the model on an instance type with EFA, GPUDirect RDMA or InfiniBand/RoCE (models[]."
            "instanceTypes), or set serving.disaggregation: auto or off")
def pd_rdma_in_production(resources: list[StackResource]):
    by_namespace = environments(resources)
    for r in resources:
        if r.type != DEPLOYMENT or environment_of(r, by_namespace) != PRODUCTION:
            continue
        for tpl in pod_templates(r.type, r.props):
            for _, c in tpl.containers(init=False):
                if _nixl(c) and not _rdma(tpl, c):
                    yield r, (f"Deployment {metadata(r).get('name') or r.name} runs vLLM's NixlConnector in "
                              f"production without an RDMA device (container {c.get('name')})")


# issue 39: a P/D pool's pods carry llm-d.ai/role (llm-d-router v0.10.0 filter/bylabel/roles.go RoleLabel).
LLMD_ROLE_LABEL = "llm-d.ai/role"


def scaled_targets(resources: list[StackResource]) -> dict[tuple[str, str, str], StackResource]:
    """(namespace, kind, name) -> the ScaledObject that scales it."""
    out = {}
    for so in resources:
        kind = get(so.props, "spec", "scaleTargetRef", "kind") or "Deployment"  # KEDA's default kind
        if so.type == SCALEDOBJECT:
            out[(namespace_of(so), kind, str(get(so.props, "spec", "scaleTargetRef", "name")))] = so
    return out


@stack_rule("pd-pools-autoscaled-in-production", MANDATORY,
            "A production model served prefill/decode disaggregated scales each pool with its own KEDA "
            "ScaledObject (prefill on its queue and TTFT, decode on its batch, KV cache and TPOT): a pool without one "
            "stays at its planned size, and a load above the declared one queues at the pool that runs out first "
            "(docs/autoscaling.md).",
            "deploy the stack's own rendering (components/serving/autoscaling.py pool_scaled_object_spec), which "
            "gives every P/D Deployment a ScaledObject; a Deployment labelled llm-d.ai/role needs one")
def pd_pools_autoscaled_in_production(resources: list[StackResource]):
    by_namespace = environments(resources)
    scaled = scaled_targets(resources)
    for r in resources:
        if r.type != DEPLOYMENT or environment_of(r, by_namespace) != PRODUCTION:
            continue
        roles = {str(tpl.labels[LLMD_ROLE_LABEL]) for tpl in pod_templates(r.type, r.props)
                 if LLMD_ROLE_LABEL in tpl.labels}
        name = str(metadata(r).get("name") or r.name)
        if roles and (namespace_of(r), "Deployment", name) not in scaled:
            yield r, (f"P/D Deployment {name} ({LLMD_ROLE_LABEL} {', '.join(sorted(roles))}) in production has no "
                      f"KEDA ScaledObject: its pool cannot grow past its planned instances")


@stack_rule("latency-margin-in-production", MANDATORY,
            "A production model's fleet sized from the capacity model's estimate keeps at least the calibration's "
            "planning margin for its model class and load (within which 9 in 10 of that cell's held-out measurements "
            f"ran; {LATENCY_MARGIN_FLOOR:g} where the workload names no cell); a smaller margin is for a shape the stack "
            "measured (planning.measurements), whose knee is no estimate (docs/measurements.md). Reads the workload's "
            f"{KNEE_ANNOTATION}, {MARGIN_ANNOTATION} and {CALIBRATED_MARGIN_ANNOTATION} annotations.",
            "measure the shape (planning.profile or bench/bench_serve.py) and list the file under "
            "planning.measurements, or set planning.latencyMargin to the calibrated margin or more")
def latency_margin_in_production(resources: list[StackResource]):
    by_namespace = environments(resources)
    for r in resources:
        if r.type not in (DEPLOYMENT, RAYSERVICE, LWS) or environment_of(r, by_namespace) != PRODUCTION:
            continue
        notes = as_dict(metadata(r).get("annotations"))
        if notes.get(KNEE_ANNOTATION) != "estimated":
            continue
        try:
            margin = float(notes.get(MARGIN_ANNOTATION))
        except (TypeError, ValueError):
            continue
        try:
            floor = float(notes.get(CALIBRATED_MARGIN_ANNOTATION))
        except (TypeError, ValueError):
            floor = LATENCY_MARGIN_FLOOR
        if not floor > 0:  # no calibrated cell is 0: an edited or broken annotation falls back to every row's margin
            floor = LATENCY_MARGIN_FLOOR
        if margin < floor - 1e-9:
            kind = r.type.rsplit(":", 1)[-1]
            yield r, (f"{kind} {metadata(r).get('name') or r.name} is sized from an estimated knee with a latency "
                      f"margin of {margin:g}, below the calibration's {floor:g} for its model class and load, in "
                      f"production")
