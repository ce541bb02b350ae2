"""InferenceGateway: one authenticated OpenAI-compatible entry point per stack (docs/gateway.md).

Envoy Gateway (+ Envoy AI Gateway, its InferencePool extension) installed by Helm; one Gateway behind a cloud
load balancer (an NLB on AWS through the AWS Load Balancer Controller, a passthrough LB on GKE, the cluster's
LoadBalancer implementation elsewhere); per model an HTTPRoute `/<model>/v1` with API-key auth
(SecurityPolicy), per-key rate limits and a size limit (BackendTrafficPolicy); single-node models reach their
pods through an InferencePool and its endpoint picker, multi-node ones through Ray Serve's Service.
"""
from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from ..cluster.charts import ChartMirror, chart_source
from ..upstream import crds
from ..upstream.versions import CHARTS
from . import objects as o
from . import priority as pr
from . import quotas as q
from . import shared as sh
from . import wake
from .quota_store import QuotaStore
from .values import ai_gateway_values, envoy_gateway_values, epp_values

KEYS_SECRET = "gateway-api-keys"
ENVOY_PROXY = "vllm-platform"
RELEASE_TIMEOUT_S = 600
ZONED_CLOUDS = ("aws", "gcp")  # nodes carry topology.kubernetes.io/zone (an existing cluster's may not)
LABELS = {"app.kubernetes.io/part-of": "vllm-platform", "app.kubernetes.io/managed-by": "pulumi"}


@dataclass(frozen=True)
class GatewayArgs:
    """Everything the gateway needs, typed (components/platform.py fills it from StackConfig.gateway)."""
    cloud: str                                   # aws | gcp | existing
    namespace: str                               # the serving namespace (routes, policies, key Secret, EPPs)
    routes: list[o.ModelRoute]
    scheme: str = "internal"                     # internal | internet-facing
    auth: bool = True                            # API keys on
    clients: list[str] = field(default_factory=lambda: ["default"])
    requests_per_second: int = 20
    # the concurrent-request cap per model (circuit breaker); None: each model's plan ceiling
    # (ModelRoute.max_concurrency: max replicas x concurrency per replica)
    concurrent_requests: int | None = None
    max_request_mib: int = 4
    request_timeout_s: int = 600
    hostname: str | None = None
    source_ranges: list[str] = field(default_factory=list)
    tls_mode: str = "none"                       # none | certificate | secret | acm
    tls_secret: str | None = None
    # tls_mode certificate: the PEM chain and key (pulumi.Output[str] secrets gatewayTlsCert / gatewayTlsKey), made
    # into the kubernetes.io/tls Secret objects.TLS_SECRET in the gateway namespace before the Gateway
    tls_certificate: Any = None
    tls_key: Any = None
    certificate_arn: str | None = None
    system_node_selector: dict[str, str] = field(default_factory=dict)
    monitor_labels: dict[str, str] = field(default_factory=dict)  # AddonsFacts.monitor_labels (EPP ServiceMonitor)
    api_keys: Any = None                         # pulumi.Output[dict[str, str]] (secret) {client: key}
    # False: the cluster already runs the gateway (a cluster stack installed it: install_only=True there);
    # only the per-model objects (pools and pickers, routes, policies, the key Secret) are made
    install: bool = True
    # High availability (production, components/wiring.py): Envoy proxies (with a PodDisruptionBudget and a spread
    # across nodes and zones) and endpoint pickers per model (leader-elected, spread across nodes)
    proxy_replicas: int = 1
    epp_replicas: int = 1
    # gateway.tokenQuotas (gateway/quotas.py): per-key token budgets on the shared URL; the stack then makes no
    # per-model paths (AI Gateway counts no tokens on a plain HTTPRoute) and, installing the gateway, runs the
    # rate-limit service's Redis
    token_quotas: q.TokenQuotas | None = None
    # gateway.clients[].priority (gateway/priority.py): client -> InferenceObjective priority; None: no tenant
    # priority (no objectives, the pickers' flow control as without it)
    priorities: dict[str, int] | None = None
    charts: ChartMirror | None = None            # the stack's `charts` block: where the releases' charts come from
    # ClusterFacts.platform_crd_groups: API groups whose CRDs the cluster's platform owns (GKE: Gateway API and
    # InferencePool); the gateway applies none of them and takes the platform's
    platform_crd_groups: frozenset[str] = frozenset()
    # gateway.prefixRouting / models[].prefixRouting precise: the models whose picker scores prefix affinity from
    # their pods' KV-cache events (values.py epp_config; docs/prefix-routing.md); the others score it approximately
    precise_models: frozenset[str] = frozenset()

    @property
    def host(self) -> str:
        """What clients put in the URL: your DNS name, else the load balancer's address (printed by `plan`
        as GATEWAY_ADDRESS with the command that reads it)."""
        return self.hostname or "GATEWAY_ADDRESS"

    def endpoints(self) -> dict[str, str]:
        if not self.per_model_paths:  # every model on the shared URL, picked by the body's model
            return {r.model: sh.shared_url(self.host, self.tls_mode) for r in self.routes}
        return {r.model: o.url(self.host, self.tls_mode, r) for r in self.routes}

    @property
    def per_model_paths(self) -> bool:
        """`/<model>/v1` routes: not with token quotas, which only the shared URL counts."""
        return self.token_quotas is None

    def token_fleets(self) -> dict[str, int]:
        """model -> tokens/min its fleet serves within the SLA at max replicas, in the tokens the budgets count."""
        if self.token_quotas is None:
            return {}
        return {r.model: q.fleet_tokens_per_minute(self.token_quotas.counts, r.max_total_tokens_per_s,
                                                   r.max_output_tokens_per_s) for r in self.routes}

    @property
    def shared(self) -> bool:
        """Whether the stack gets the shared URL: it owns the Gateway, or (on a cluster stack's Gateway) its routes
        carry its own hostname. Envoy checks the key on the route matched before the body is read, the catch-all
        of whichever stack's shared route is oldest, so without a hostname of its own a stack's model would admit
        another stack's keys (docs/gateway.md)."""
        return bool(self.routes) and (self.install or bool(self.hostname))

    @property
    def url(self) -> str | None:
        """The stack's one OpenAI base URL, the model picked by the body's `model` (components/gateway/shared.py)."""
        return sh.shared_url(self.host, self.tls_mode) if self.shared else None

    def concurrency(self, r: o.ModelRoute) -> int | None:
        return self.concurrent_requests if self.concurrent_requests is not None else r.max_concurrency


ADDRESS_COMMAND = (f"kubectl -n {o.NAMESPACE} get gateway {o.GATEWAY_NAME} "
                   "-o jsonpath='{.status.addresses[0].value}'")


def release_args(chart_key: str, namespace: str, values: dict, name: str | None = None,
                 charts: ChartMirror | None = None) -> dict:
    chart = CHARTS[chart_key]
    args = {"name": name or chart.chart, **chart_source(chart, charts),
            "namespace": namespace, "create_namespace": False, "values": values, "timeout": RELEASE_TIMEOUT_S,
            "atomic": True}
    if chart_key in crds.CHART_CRDS:  # its CRDs are applied by Pulumi before it (components/upstream/crds.py)
        args["skip_crds"] = True
    return args


def apply_crds(name: str, key: str, platform_groups: frozenset[str], opts: pulumi.ResourceOptions) -> list:
    """The CRDs of CHART_CRDS[key] as server-side applies (create or take over, never AlreadyExists; upgraded on a
    chart bump), except those the cluster's platform owns. Cluster-wide: deleting one deletes every object of its
    kind in the cluster (other stacks', the platform's), so a destroy leaves them, as Helm leaves its crds/
    (retainOnDelete; docs/gateway.md, UPGRADING.md)."""
    keep = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(retain_on_delete=True))
    return [k8s.apiextensions.v1.CustomResourceDefinitionPatch(
        f"{name}-crd-{doc['metadata']['name']}", **crds.patch_args(doc, LABELS), opts=keep)
        for doc in crds.applied_crds(key, platform_groups)]


def check_keys(keys: Any, clients: list[str]) -> dict[str, str]:
    """The secret gatewayApiKeys must hold exactly one non-empty key per gateway.clients entry."""
    from ..config.load import ConfigError
    keys = keys if isinstance(keys, dict) else {}
    problems = []
    missing = [c for c in clients if not keys.get(c)]
    extra = sorted(set(keys) - set(clients))
    if missing:
        problems.append(f"gatewayApiKeys: no key for client(s) {', '.join(missing)}; `pulumi config set --secret "
                        f"gatewayApiKeys '{{\"{missing[0]}\": \"...\"}}'` (a JSON object, one key per client; "
                        f"from a program: the gateway_api_keys input)")
    if extra:
        problems.append(f"gatewayApiKeys: key(s) for {', '.join(extra)}, which gateway.clients does not list; add "
                        f"them there (their rate limit comes from it) or remove the keys")
    dup = {v for v in keys.values() if list(keys.values()).count(v) > 1}
    if dup:
        problems.append("gatewayApiKeys: two clients share one key; give every client its own")
    if problems:
        err = ConfigError(problems)
        raise pulumi.RunError(str(err)) from err
    return {c: str(keys[c]) for c in clients}


PEM_CERT = re.compile(r"-----BEGIN CERTIFICATE-----\s+([A-Za-z0-9+/=\s]+?)-----END CERTIFICATE-----")
PEM_KEY = re.compile(r"-----BEGIN (RSA |EC )?PRIVATE KEY-----\s+([A-Za-z0-9+/=\s]+?)-----END \1?PRIVATE KEY-----")


def _pem_body_ok(body: str) -> bool:
    try:
        return bool(base64.b64decode("".join(body.split()), validate=True))
    except (binascii.Error, ValueError):
        return False


def tls_problems(cert: Any, key: Any) -> list[str]:
    """What is wrong with the secrets gatewayTlsCert / gatewayTlsKey: a PEM certificate chain (leaf first) and an
    unencrypted PEM private key (PKCS#8, PKCS#1 RSA or SEC1 EC), as Envoy reads them from a kubernetes.io/tls
    Secret. Whether the key belongs to the certificate is not checked here (no X.509 parser in the program); Envoy
    Gateway then reports the listener's certificate as invalid."""
    problems = []
    fix = "`pulumi config set --secret {k} < {f}`"
    cert, key = (cert or "") if isinstance(cert, str) else "", (key or "") if isinstance(key, str) else ""
    if not cert.strip():
        problems.append(f"gatewayTlsCert: missing or empty; gateway.tls.mode certificate takes the PEM certificate "
                        f"chain (leaf first): {fix.format(k='gatewayTlsCert', f='cert.pem')}")
    elif "PRIVATE KEY-----" in cert:
        problems.append("gatewayTlsCert: holds a private key; the certificate chain goes here, the key in gatewayTlsKey")
    else:
        blocks = PEM_CERT.findall(cert)
        if not blocks:
            problems.append("gatewayTlsCert: no PEM certificate (-----BEGIN CERTIFICATE----- ... -----END "
                            "CERTIFICATE-----); convert a DER file with `openssl x509 -inform der -in cert.der`")
        elif not all(_pem_body_ok(b) for b in blocks):
            problems.append("gatewayTlsCert: a certificate block is not base64; set the file as it is, not edited")
    if not key.strip():
        problems.append(f"gatewayTlsKey: missing or empty; gateway.tls.mode certificate takes the unencrypted PEM "
                        f"private key: {fix.format(k='gatewayTlsKey', f='key.pem')}")
    elif "ENCRYPTED" in key:
        problems.append("gatewayTlsKey: an encrypted key; Envoy needs it unencrypted: `openssl pkey -in key.pem -out "
                        "plain.pem`, then set plain.pem (it stays a Pulumi secret)")
    elif "CERTIFICATE-----" in key and "PRIVATE KEY-----" not in key:
        problems.append("gatewayTlsKey: holds a certificate; the private key goes here, the chain in gatewayTlsCert")
    else:
        m = PEM_KEY.search(key)
        if not m:
            problems.append("gatewayTlsKey: no PEM private key (-----BEGIN PRIVATE KEY----- ... -----END PRIVATE "
                            "KEY-----, or the RSA / EC forms)")
        elif not _pem_body_ok(m.group(2)):
            problems.append("gatewayTlsKey: the key block is not base64; set the file as it is, not edited")
    return problems


def check_tls(cert: Any, key: Any) -> dict[str, str]:
    """The kubernetes.io/tls Secret's data, or a run error naming each problem of the two secrets."""
    problems = tls_problems(cert, key)
    if problems:
        from ..config.load import ConfigError
        err = ConfigError(problems)
        raise pulumi.RunError(str(err)) from err
    return {"tls.crt": cert, "tls.key": key}


def tls_secret(name: str, cert: Any, key: Any, opts: pulumi.ResourceOptions) -> k8s.core.v1.Secret:
    """tls.mode certificate: the kubernetes.io/tls Secret Envoy terminates with, from the two Pulumi secrets; its
    data stays a secret (in the state and the plan) end to end."""
    data = pulumi.Output.secret(pulumi.Output.all(cert, key).apply(lambda pair: check_tls(*pair)))
    return k8s.core.v1.Secret(name, metadata={"name": o.TLS_SECRET, "namespace": o.NAMESPACE, "labels": LABELS},
                              type="kubernetes.io/tls", string_data=data, opts=opts)


def api_key_secret(name: str, namespace: str, api_keys: Any, clients: list[str],
                   opts: pulumi.ResourceOptions) -> k8s.core.v1.Secret:
    """The Opaque Secret {client: key} the gateway checks keys against (and, without a gateway, vLLM reads its
    VLLM_API_KEY from). Rotating a key changes only this Secret: Envoy Gateway re-reads it; no model restarts."""
    data = pulumi.Output.secret(pulumi.Output.from_input(api_keys).apply(lambda k: check_keys(k, clients)))
    return k8s.core.v1.Secret(name, metadata={"name": KEYS_SECRET, "namespace": namespace, "labels": LABELS},
                              type="Opaque", string_data=data, opts=opts)


class InferenceGateway(pulumi.ComponentResource):
    endpoints: dict[str, str]

    def __init__(self, name: str, args: GatewayArgs, provider: Any = None, depends_on: list | None = None,
                 opts: pulumi.ResourceOptions | None = None):
        """Per model, its picker and route wait for the objects they name to exist (the Gateway, the InferencePool's
        CRD, the model's own policies and picker), never for a model's serving workload to be Ready: a model whose
        GPUs never come (a stockout: quota is not capacity) fails its own Deployment's await alone, while every
        other model's route and the shared URL are up (issue 36; docs/gateway.md "A model without capacity")."""
        super().__init__("vllm-platform:gateway:InferenceGateway", name, None, opts)
        if args.token_quotas and q.lora_problems(args.routes):
            from ..config.load import ConfigError
            err = ConfigError(q.lora_problems(args.routes))
            raise pulumi.RunError(str(err)) from err
        self._name = name
        self.args = args
        base = pulumi.ResourceOptions(parent=self, provider=provider, depends_on=list(depends_on or []))

        def after(*deps) -> pulumi.ResourceOptions:
            return pulumi.ResourceOptions.merge(base, pulumi.ResourceOptions(depends_on=[d for d in deps if d]))

        self.gateway = self.pool_crd = self.envoy_gateway = self.ai_gateway = self.quota_store = None
        ready = base
        if args.install:
            self._install(name, base, after)
            ready = after(self.envoy_gateway, self.ai_gateway)

        def cr(suffix: str, api: str, kind: str, meta: dict, spec: dict, opts: pulumi.ResourceOptions):
            return k8s.apiextensions.CustomResource(f"{name}-{suffix}", api_version=api, kind=kind,
                                                    metadata={**meta, "labels": LABELS}, spec=spec, opts=opts)

        if args.install:
            # strictly in order: Envoy Gateway provisions a Gateway whose class's EnvoyProxy does not exist yet
            # with a bare LoadBalancer Service (no annotations: a public Classic ELB on EKS that the LB controller
            # never deletes, a public LB on GKE), so the EnvoyProxy exists before the class, the class before the
            # Gateway
            proxy = cr("envoyproxy", "gateway.envoyproxy.io/v1alpha1", "EnvoyProxy",
                       {"name": ENVOY_PROXY, "namespace": o.NAMESPACE},
                       o.envoy_proxy_spec(o.lb_annotations(args.cloud, args.scheme, args.tls_mode,
                                                           args.certificate_arn), args.source_ranges,
                                          args.proxy_replicas, args.system_node_selector,
                                          zones=args.cloud in ZONED_CLOUDS), ready)
            gateway_class = cr("gatewayclass", "gateway.networking.k8s.io/v1", "GatewayClass",
                               {"name": o.CLASS_NAME}, o.gateway_class(ENVOY_PROXY),
                               after(self.envoy_gateway, self.ai_gateway, proxy))
            # tls.mode certificate: the Secret first (its namespace is the one _install made), so the HTTPS listener
            # is programmed with it from the start; tls.mode secret names one you make once that namespace exists
            cert = tls_secret(f"{name}-tls", args.tls_certificate, args.tls_key, after(self.envoy_gateway)) \
                if args.tls_mode == "certificate" else None
            self.gateway = cr("gateway", "gateway.networking.k8s.io/v1", "Gateway",
                              {"name": o.GATEWAY_NAME, "namespace": o.NAMESPACE},
                              o.gateway_spec(args.tls_mode, args.tls_secret, args.hostname),
                              after(self.envoy_gateway, self.ai_gateway, proxy, gateway_class, cert))
        keys = api_key_secret(f"{name}-api-keys", args.namespace, args.api_keys, args.clients, base) \
            if args.auth and args.routes else None
        groups = sh.route_groups(args.routes) if args.shared else []
        shared_deps: list = []
        # tenant priority: the InferenceObjective CRD before any picker, which looks for it only at start
        # (gateway/priority.py); cluster-wide and kept on destroy like the pool's
        prioritized = bool(args.priorities) and any(not r.multi_node for r in args.routes)
        objective_crds = apply_crds(name, "inferenceobjective", args.platform_crd_groups, base) if prioritized else []
        for r in args.routes:
            deps = [d for d in (self.gateway,) if d is not None]
            if not r.multi_node:
                values = epp_values(r, args.system_node_selector, args.monitor_labels, args.epp_replicas,
                                    zones=args.cloud in ZONED_CLOUDS, priorities=args.priorities,
                                    precise=r.model in args.precise_models)
                deps.append(k8s.helm.v3.Release(f"{name}-{r.model}-epp", **release_args(
                    "llm-d-router-gateway", args.namespace, values, name=r.model, charts=args.charts),
                    opts=after(self.pool_crd, *objective_crds)))
                if args.priorities:
                    deps += [cr(f"{r.model}.objective.{client}",  # "." is in neither name (DNS labels): no two pairs collide
                                pr.OBJECTIVE_API, pr.OBJECTIVE_KIND,
                                {"name": pr.objective_name(r.model, client), "namespace": args.namespace},
                                pr.objective_spec(r.model, p), after(*objective_crds))
                             for client, p in args.priorities.items()]
            meta = {"name": r.model, "namespace": args.namespace}
            # the policies first: the route never serves a request without its key check and limits. One
            # BackendTrafficPolicy per model governs its own route and its rule on the shared route (a rule-level
            # policy replaces the shared route's own there, Envoy Gateway v1.9 backendtrafficpolicy.go)
            targets = [sh.route_ref(r.model)] if args.per_model_paths else []
            if args.shared:
                targets.append(sh.route_ref(sh.shared_route_of(args.routes, r.model), r.model))
            tokens = q.token_rules(args.token_quotas) if args.token_quotas else None
            policies = [cr(f"{r.model}-limits", sh.EG_API, "BackendTrafficPolicy", meta,
                           o.backend_traffic_policy_spec(r.model, args.clients, args.requests_per_second,
                                                         args.concurrency(r), args.max_request_mib, args.auth,
                                                         targets=targets, token_rules=tokens,
                                                         response_override=wake.response_override(
                                                             r.model, r.cold_start_s) if r.cold_start_s else None),
                           ready)]
            if args.priorities and not r.multi_node:  # the objective header from the key, never the caller's
                policies.append(cr(f"{r.model}-priority", sh.EG_API, "EnvoyExtensionPolicy",
                                   {"name": pr.extension_policy_name(r.model), "namespace": args.namespace},
                                   pr.extension_policy_spec(r.model, targets), ready))
            if args.auth and args.per_model_paths:
                policies.append(cr(f"{r.model}-auth", sh.EG_API, "SecurityPolicy", meta,
                                   o.security_policy_spec(r.model, KEYS_SECRET, args.namespace),
                                   after(keys, self.gateway)))
            if args.per_model_paths:  # with token quotas no per-model route, so no filter for it either
                if r.runtime_lora:  # the 403 the route answers the adapter endpoints with, before the route exists
                    policies.append(cr(f"{r.model}-lora-admin", o.EG_FILTER_API, "HTTPRouteFilter",
                                       {"name": o.lora_admin_filter_name(r.model), "namespace": args.namespace},
                                       o.lora_admin_filter_spec(), ready))
                cr(f"{r.model}-route", "gateway.networking.k8s.io/v1", "HTTPRoute", meta,
                   o.http_route_spec(r, args.request_timeout_s, args.hostname), after(*deps, *policies))
            shared_deps += [*deps, *policies]
            if r.multi_node and args.shared:  # Ray Serve via AI Gateway: a Backend naming the Serve Service
                backend = cr(f"{r.model}-serve-backend", sh.EG_API, "Backend", meta, sh.serve_backend_spec(r), ready)
                shared_deps.append(cr(f"{r.model}-ai-backend", sh.AIGW_API, "AIServiceBackend", meta,
                                      sh.ai_service_backend_spec(r), after(backend)))
        for route_name, group in groups:
            self._shared_route(name, route_name, group, keys, ready, after, cr, shared_deps)
        if args.token_quotas:  # what `pulumi up` (and `plan`) print: budgets the fleet cannot serve
            for warning in q.capacity_warnings(args.token_quotas, args.token_fleets()):
                pulumi.log.warn(warning, resource=self)
        self.endpoints = args.endpoints()
        self.url = args.url
        self.address_command = ADDRESS_COMMAND
        self.register_outputs({"endpoints": self.endpoints, "url": self.url})

    def _shared_route(self, name: str, route_name: str, group: list, keys, ready, after, cr, deps: list) -> None:
        """The shared URL's AIGatewayRoute, after its key check and limits on the HTTPRoute AI Gateway generates
        under the same name: the keys on the whole route (its route-not-found rule and /v1/models included), the
        per-key limits and the size limit route-wide (each model's rule gets its own policy above)."""
        args = self.args
        meta = {"name": route_name, "namespace": args.namespace}
        policies = [cr(f"{route_name}-limits", sh.EG_API, "BackendTrafficPolicy", meta,
                       o.backend_traffic_policy_spec(route_name, args.clients, args.requests_per_second, None,
                                                     args.max_request_mib, args.auth), ready)]
        if args.auth:
            policies.append(cr(f"{route_name}-auth", sh.EG_API, "SecurityPolicy", meta,
                               o.security_policy_spec(route_name, KEYS_SECRET, args.namespace),
                               after(keys, self.gateway)))
        costs = q.llm_request_costs(args.token_quotas) if args.token_quotas else None
        cr(f"{route_name}-route", sh.AIGW_API, "AIGatewayRoute", meta,
           sh.ai_gateway_route_spec(group, args.request_timeout_s, args.hostname, costs), after(*deps, *policies))

    def _install(self, name: str, base: pulumi.ResourceOptions, after) -> None:
        """What a cluster runs once: the controllers, their namespaces and the InferencePool CRD."""
        namespaces = [k8s.core.v1.Namespace(f"{name}-ns-{ns}", metadata={"name": ns, "labels": {
            **LABELS, **(o.readiness_gate_labels(self.args.cloud) if ns == o.NAMESPACE else {})}}, opts=base)
                      for ns in (o.NAMESPACE, o.AI_GATEWAY_NAMESPACE)]
        # the InferencePool CRD and Envoy Gateway's (its chart's crds/ skipped): applied server-side, none of the
        # groups the cluster's platform owns (GKE installs Gateway API and InferencePool itself)
        groups = self.args.platform_crd_groups
        pool_crds = apply_crds(name, "inferencepool", groups, base)
        self.pool_crd = pool_crds[0] if pool_crds else None
        eg_crds = apply_crds(name, "gateway-helm", groups, base)
        # token quotas: the rate-limit service's Redis first, so its Deployment starts against a reachable store
        self.quota_store = QuotaStore(f"{name}-quota-store", self.args.system_node_selector, LABELS,
                                      after(namespaces[0])) if self.args.token_quotas else None
        rate_limit = q.rate_limit_config(q.REDIS_NAME, self.args.system_node_selector, self.args.proxy_replicas,
                                         zones=self.args.cloud in ZONED_CLOUDS) if self.args.token_quotas else None
        self.envoy_gateway = k8s.helm.v3.Release(
            f"{name}-envoy-gateway", **release_args("gateway-helm", o.NAMESPACE, envoy_gateway_values(rate_limit),
                                                    charts=self.args.charts),
            opts=after(namespaces[0], self.pool_crd, *eg_crds, self.quota_store))
        # its CRDs are templates (Helm upgrades them with the release); an uninstall would delete them and every
        # AIGatewayRoute / AIServiceBackend in the cluster, so a destroy leaves the release (its record goes with
        # the namespace; a later install of the same release name and namespace adopts the CRDs again)
        ai_crds = k8s.helm.v3.Release(
            f"{name}-ai-gateway-crds", **release_args("ai-gateway-crds-helm", o.AI_GATEWAY_NAMESPACE, {},
                                                      charts=self.args.charts),
            opts=pulumi.ResourceOptions.merge(after(namespaces[1]), pulumi.ResourceOptions(retain_on_delete=True)))
        self.ai_gateway = k8s.helm.v3.Release(
            f"{name}-ai-gateway", **release_args("ai-gateway-helm", o.AI_GATEWAY_NAMESPACE, ai_gateway_values(),
                                                 charts=self.args.charts),
            opts=after(ai_crds, self.envoy_gateway))
