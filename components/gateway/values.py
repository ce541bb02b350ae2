"""Helm values of the gateway's charts, each key checked against the chart's vendored values.yaml
(schemas/charts/<chart>/<version>/, tests/test_helm_values.py)."""
from __future__ import annotations

import hashlib
import json

import yaml

from ..planner.engine_args import KV_EVENTS_PORT
from ..upstream.versions import EPP_IMAGE_TAG
from .disagg import PD_CONFIG, pd_config
from .objects import AI_GATEWAY_NAMESPACE, CONTROLLER_NAME, ModelRoute
from .priority import FLOW_CONTROL_GATE, with_flow_control
from .wake import queue_ttl_s

# The AI Gateway controller is Envoy Gateway's extension server (envoyproxy/ai-gateway v1.1.0
# manifests/envoy-gateway-values.yaml: Service ai-gateway-controller, port 1063); with InferencePool listed as a
# backend resource (examples/inference-pool/envoy-gateway-values-addon.yaml) an HTTPRoute may point at a pool and
# the extension programs Envoy's ext-proc call to the pool's endpoint picker.
EXTENSION_SERVER = f"ai-gateway-controller.{AI_GATEWAY_NAMESPACE}.svc.cluster.local"
EXTENSION_PORT = 1063
# What the gateway does when the picker is down: Envoy AI Gateway v1.1.0 hard-codes fail-closed (its ext-proc
# filter's FailureModeAllow false, a 300 s message timeout) and never reads the pool's failureMode; the pool
# states that rather than the chart's default FailOpen, which would promise a fallback that does not exist.
EPP_FAILURE_MODE = "FailClose"


# On the controller's pod template while the global rate-limit service is configured (token quotas). Envoy Gateway
# v1.9.0 refuses a BackendTrafficPolicy with global rules unless its config enables the service
# (internal/gatewayapi/backendtrafficpolicy.go buildGlobalRateLimit), and a refused policy turns its routes into a
# 500 for every request (applyTrafficFeatureToRoute: `DirectResponse` 500 when the policy has errors). The
# controller reads a changed config only when the kubelet has synced the ConfigMap's volume (a minute or more;
# internal/envoygateway/config/loader watches the file), and the chart's Deployment carries no checksum of it
# (templates/envoy-gateway-deployment.yaml), so without this the policies `pulumi up` applies right after the
# release would answer 500 until then. A change of this annotation rolls the controller, and the release (awaited)
# finishes only once the new controller, which read the new config at start, is ready.
RATE_LIMIT_ANNOTATION = "vllm-platform/global-rate-limit"


def envoy_gateway_values(rate_limit: dict | None = None) -> dict:
    """gateway-helm: `config.envoyGateway` is the EnvoyGateway object the chart writes verbatim into the
    controller's ConfigMap (chart values.yaml: "Visit .../extension_types/#envoygateway to view all options").
    rate_limit: the global rate-limit service's part for the token quotas (gateway/quotas.rate_limit_config); the
    controller's pod then carries RATE_LIMIT_ANNOTATION, so turning it on or off restarts the controller."""
    every = {"includeAll": True}
    values = {"config": {"envoyGateway": {
        "gateway": {"controllerName": CONTROLLER_NAME},
        "provider": {"type": "Kubernetes"},
        "logging": {"level": {"default": "info"}},
        "extensionApis": {"enableEnvoyPatchPolicy": True, "enableBackend": True},
        "extensionManager": {
            "hooks": {"xdsTranslator": {"translation": {"listener": every, "route": every, "cluster": every,
                                                        "secret": every},
                                        "post": ["Translation", "Cluster", "Route"]}},
            "service": {"fqdn": {"hostname": EXTENSION_SERVER, "port": EXTENSION_PORT}},
            "backendResources": [{"group": "inference.networking.k8s.io", "kind": "InferencePool",
                                  "version": "v1"}],
        },
    }}}
    if rate_limit:
        eg = values["config"]["envoyGateway"]
        eg["rateLimit"] = rate_limit["rateLimit"]
        eg["provider"] = {**eg["provider"], **rate_limit["provider"]}
        # the chart's deployment.pod.annotations (values.yaml: the prometheus.io ones; Helm merges the maps)
        values["deployment"] = {"pod": {"annotations": {RATE_LIMIT_ANNOTATION: "redis"}}}
    return values


def ai_gateway_values() -> dict:
    """ai-gateway-helm: the defaults (it finds Envoy Gateway in envoy-gateway-system, its values.yaml
    envoyGateway.namespace)."""
    return {}


def node_affinity(node_selector: dict[str, str]) -> dict:
    """The system nodes (the routerlib chart takes an affinity, no nodeSelector)."""
    if not node_selector:
        return {}
    terms = [{"matchExpressions": [{"key": k, "operator": "In", "values": [v]} for k, v in node_selector.items()]}]
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}


# The EPP pods' selector label (llm-d-router v0.10.0 routerlib templates/_helpers.tpl llm-d-router.selectorLabels,
# with the chart's InferencePool: `llm-d-router-gateway: <release>-epp`).
EPP_POD_LABEL = "llm-d-router-gateway"


def epp_spread(model: str, zones: bool) -> dict:
    """Two pickers of one model on different nodes (and zones), preferred: the chart takes no
    topologySpreadConstraints, only an affinity (values.yaml router.epp.affinity)."""
    selector = {"matchLabels": {EPP_POD_LABEL: f"{model}-epp"}}
    keys = ["kubernetes.io/hostname", *(["topology.kubernetes.io/zone"] if zones else [])]
    return {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 100 if key.endswith("hostname") else 50,
         "podAffinityTerm": {"labelSelector": selector, "topologyKey": key}} for key in keys]}}


# A model that scales to zero runs its EPP with this config file (router.epp.pluginsCustomConfig): the chart's
# default-plugins.yaml for vLLM over HTTP (llm-d-router v0.10.0 config/charts/routerlib/templates/_config.yaml:
# the three scorers, weights 2/2/3, the metrics data source and extractor) plus the flowControl feature gate,
# which cmd/epp/runner/runner.go registers off, and the queue's TTL (apix/config/v1alpha1
# endpointpickerconfig_types.go FlowControlConfig.defaultRequestTTL, 60 s when unset). With the gate on and
# no endpoint the queue is "a scale-from-zero waiting room" (pkg/epp/flowcontrol/README.md) and the request
# counts in metrics.EPP_PENDING_REQUESTS, the gauge the KEDA wake-up trigger reads.
FLOW_CONTROL_CONFIG = "vllm-platform-flow-control.yaml"


# A model with LoRA slots (engine.lora) scores the pods on its adapters too: llm-d-router v0.10.0's
# lora-affinity-scorer (pkg/epp/framework/plugins/scheduling/scorer/loraaffinity, registered StabilityBeta in
# cmd/epp/runner/runner.go, as the default kv-cache-utilization-scorer is; not in the chart's default-plugins.yaml)
# prefers a pod where the request's adapter (the body's `model`) is running, then one with a free slot, from
# vLLM's LoRA info gauge (components/metrics.py) labels max_lora / running_lora_adapters / waiting_lora_adapters (the
# core-metrics-extractor reads them, factories.go LoRASpec). Weight 1 as the plugin's README example ⚠.
LORA_CONFIG = "vllm-platform-lora.yaml"
LORA_SCORER, LORA_WEIGHT = "lora-affinity-scorer", 1


# A model routed with precise prefix-cache scoring (gateway.prefixRouting: precise; docs/prefix-routing.md): llm-d-router
# v0.10.0's split pipeline (deploy/config/epp-precise-prefix-cache-config.yaml): a token-producer tokenizes the
# request (dataproducer/tokenizer/README.md: the `vllm` backend calls /v1/completions/render and
# /v1/chat/completions/render of "any reachable HTTP endpoint serving the same model": here the model's own Service,
# whose pods serve them with --enable-scale-out, planner/engine_args.py KvEvents), the precise-prefix-cache-producer
# indexes the blocks each pod reports in its KV-cache events and publishes the match per pod, and the chart's
# prefix-cache-scorer reads that producer's match (prefixMatchInfoProducerName; without it the scorer falls back to
# the approximate producer, dataproducer/preciseprefixcache/README.md). The producer dials every pod of the pool at
# tcp://<pod IP>:<socketPort> as the endpoint-notification-source reports it (extractor.go ensureSubscriber,
# kvEventsConfig.discoverPods), so each picker replica, the leader and its standby, keeps its own index of every pod.
# Its block keys are recomputed from the token ids in the events (README "Engine compatibility": "blockSize/hashSeed
# need not match the engine"); the block size is vLLM's CUDA default all the same, one event block per key
# (pkg/kvcache/kvblock/token_processor.go defaultBlockSize 16, "the default value used by vLLM").
PRECISE_CONFIG = "vllm-platform-precise-prefix.yaml"
TOKEN_PRODUCER, PRECISE_PRODUCER = "token-producer", "precise-prefix-cache-producer"
PRECISE_BLOCK_SIZE = 16
# The render call sits in every request's path before scheduling, on the same vLLM API servers that serve: its
# default timeout is 5 s (dataproducer/tokenizer/vllm_http.go defaultHTTPRenderTimeout). On a timeout the producer's
# error is logged and the request is scheduled without the precise match (tokenizer.go Produce: "errors propagate
# to the Director, which logs and continues"), so a cap bounds what a slow render adds to TTFT; a text prompt
# renders in milliseconds when the servers are healthy.
RENDER_TIMEOUT = "1s"
ENDPOINT_SOURCE = "endpoint-notification-source"
# pkg/kvevents/pool.go DefaultConfig TopicFilter: the prefix every vLLM topic starts with (KvEvents.topic)
KV_TOPIC_FILTER = "kv@"
APPROXIMATE_PLUGINS = ["queue-scorer", "kv-cache-utilization-scorer", "prefix-cache-scorer"]
APPROXIMATE_WEIGHTS = [2, 2, 3]
METRICS_SOURCE = {"type": "metrics-data-source",
                  "parameters": {"scheme": "http", "path": "/metrics", "insecureSkipVerify": True}}


def render_url(r: ModelRoute) -> str:
    """The model's own Service (serving/network.py service_spec: named after the model, its API port)."""
    return f"http://{r.model}.{r.namespace}.svc.cluster.local:{r.port}"


def precise_plugins(r: ModelRoute) -> list[dict]:
    """The plugins precise scoring adds ahead of the scorers (the token ids, then the index that reads them)."""
    return [
        {"type": TOKEN_PRODUCER, "parameters": {"modelName": r.model,
                                                "vllm": {"url": render_url(r), "timeout": RENDER_TIMEOUT}}},
        {"type": PRECISE_PRODUCER, "parameters": {
            "tokenProcessorConfig": {"blockSize": PRECISE_BLOCK_SIZE},
            "kvEventsConfig": {"topicFilter": KV_TOPIC_FILTER, "discoverPods": True,
                               "podDiscoveryConfig": {"socketPort": KV_EVENTS_PORT}}}},
    ]


def routing_text(r: ModelRoute, precise: bool) -> str:
    """How the gateway scores prefix-cache affinity for one model (the plan's gateway block)."""
    if r.multi_node:
        return "Ray Serve LLM's PrefixCacheAffinityRouter (a RayService: no endpoint picker)"
    if precise:
        return (f"precise prefix-cache scorer (vLLM KV-cache events on port {KV_EVENTS_PORT}, token ids from the "
                f"model's render endpoint)")
    return "approximate prefix-cache scorer (hashes of the request text the picker routed)"


def epp_config(queue_ttl_s: int | None = None, lora: bool = False, precise: ModelRoute | None = None) -> str:
    """The EPP's config file: the chart's default plugins (queue-scorer 2, kv-cache-utilization-scorer 2,
    prefix-cache-scorer 3, the metrics data source and extractor), with flow control (queue_ttl_s: scale to zero),
    the LoRA affinity scorer (lora) and precise prefix-cache scoring for that route's model (precise), each
    independently."""
    scorers, weights = list(APPROXIMATE_PLUGINS), list(APPROXIMATE_WEIGHTS)
    if lora:
        scorers.append(LORA_SCORER)
        weights.append(LORA_WEIGHT)
    config: dict = {"apiVersion": "llm-d.ai/v1alpha1", "kind": "EndpointPickerConfig"}
    if queue_ttl_s:
        config["featureGates"] = [FLOW_CONTROL_GATE]
        config["flowControl"] = {"defaultRequestTTL": f"{queue_ttl_s}s"}
    plugins = [{"type": p} for p in scorers]
    if precise:
        at = scorers.index("prefix-cache-scorer")
        plugins[at] = {"type": "prefix-cache-scorer", "parameters": {"prefixMatchInfoProducerName": PRECISE_PRODUCER}}
        plugins = precise_plugins(precise) + plugins
    config["plugins"] = plugins + [dict(METRICS_SOURCE), {"type": "core-metrics-extractor"}]
    if precise:
        # the producer's endpoint events (apix/config/v1alpha1 DataLayerConfig.sources; the sample config's)
        config["plugins"].append({"type": ENDPOINT_SOURCE})
        config["dataLayer"] = {"sources": [
            {"pluginRef": "metrics-data-source", "extractors": [{"pluginRef": "core-metrics-extractor"}]},
            {"pluginRef": ENDPOINT_SOURCE, "extractors": [{"pluginRef": PRECISE_PRODUCER}]}]}
    config["schedulingProfiles"] = [{"name": "default", "plugins": [
        {"pluginRef": p, "weight": w} for p, w in zip(scorers, weights)]}]
    return yaml.safe_dump(config, sort_keys=False)


def epp_monitoring(model: str, monitor_labels: dict[str, str]) -> dict:
    """The chart's own ServiceMonitor for the EPP (routerlib templates/_servicemonitor.yaml: port http-metrics,
    9090, path /metrics, with the EPP service account's token, a Secret the chart makes): Prometheus scrapes
    the flow-control queue KEDA reads. The token Secret is named per model (the chart's default name is one
    per namespace and every model's release would claim it)."""
    return {"prometheus": {"enabled": True, "extraLabels": dict(monitor_labels),
                           "auth": {"secretName": f"{model}-epp-metrics-reader"}}}


# On the picker's pod template (the chart's router.epp.podAnnotations) while it runs our config file: a digest of the
# file. The llm-d-router v0.10.0 picker reads its config once, at start (cmd/epp/runner), and looks for the
# InferenceObjective CRD only then; the chart's Deployment carries no checksum of its ConfigMap (routerlib
# templates/_deployment.yaml) and its args change only with the file's NAME. Without this, a change inside the file
# (tenant tiers turned on or edited, a scale-to-zero model's queue TTL, a P/D model given tiers) would update the
# ConfigMap and leave the running pickers on the old config until some unrelated restart.
EPP_CONFIG_ANNOTATION = "vllm-platform/epp-config"


def config_digest(name: str, files: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps([name, files], sort_keys=True).encode()).hexdigest()[:16]


def epp_values(r: ModelRoute, system_node_selector: dict[str, str],
               monitor_labels: dict[str, str] | None = None, replicas: int = 1, zones: bool = False,
               priorities: dict[str, int] | None = None, precise: bool = False) -> dict:
    """llm-d-router-gateway (the release is named after the model): it creates the model's InferencePool (named
    after the release, selecting the vLLM pods on their port) and its endpoint picker `<model>-epp`, whose default
    plugin set scores queue depth, KV-cache use (vLLM's gauges, metrics.EPP_READS_VLLM) and prefix-
    cache affinity (routerlib templates/_config.yaml default-plugins.yaml: queue-scorer 2, kv-cache-utilization-
    scorer 2, prefix-cache-scorer 3). provider none: the gateway is Envoy Gateway, no GKE / Istio objects.
    monitor_labels: the labels Prometheus selects ServiceMonitors by (AddonsFacts.monitor_labels).

    replicas 2 (production): the chart then runs the pickers leader-elected (`--ha-enable-leader-election`, only the
    leader reports ready; routerlib templates/_deployment.yaml), so a drained or failed leader is replaced by the
    standby. Envoy AI Gateway v1.1.0 calls the picker fail-closed whatever the pool says
    (internal/extensionserver/inferencepool.go: FailureModeAllow false): without a ready picker the model's
    requests fail, so the pool says FailClose, what actually happens (docs/gateway.md).

    priorities: the tenants' client -> priority (gateway/priority.py): the config file, whichever it is, gets flow
    control with their bands.
    precise: gateway.prefixRouting precise for this model (serving/prefix_routing.py checked it can work): the
    picker scores prefix affinity from the pods' KV-cache events (epp_config, docs/prefix-routing.md)."""
    epp: dict = {
        "replicas": replicas,
        # the chart's default tag is `main`, pulled Always: pin the release
        "image": {"tag": EPP_IMAGE_TAG, "pullPolicy": "IfNotPresent"},
        # the chart asks 8 CPUs / 8 GiB, sized for large pools; one model's handful of replicas needs less
        "resources": {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"memory": "4Gi"}},
        "affinity": {**node_affinity(system_node_selector), **(epp_spread(r.model, zones) if replicas > 1 else {})},
    }
    if r.disaggregated:  # prefill and decode instances (gateway/disagg.py); P/D never scales to zero
        epp["pluginsConfigFile"] = PD_CONFIG
        epp["pluginsCustomConfig"] = {PD_CONFIG: pd_config()}
    elif r.cold_start_s or r.lora or precise or priorities:
        name = (FLOW_CONTROL_CONFIG if r.cold_start_s or priorities else LORA_CONFIG if r.lora else PRECISE_CONFIG)
        epp["pluginsConfigFile"] = name
        ttl = queue_ttl_s(r.cold_start_s) if r.cold_start_s else None
        epp["pluginsCustomConfig"] = {name: epp_config(ttl, r.lora, r if precise else None)}
    if priorities:  # tenant priority: the bands on top of the file above (gateway/priority.py)
        file = epp["pluginsConfigFile"]
        epp["pluginsCustomConfig"][file] = with_flow_control(epp["pluginsCustomConfig"][file], priorities)
    if "pluginsCustomConfig" in epp:
        epp["podAnnotations"] = {EPP_CONFIG_ANNOTATION: config_digest(epp["pluginsConfigFile"],
                                                                      epp["pluginsCustomConfig"])}
    return {
        "provider": {"name": "none"},
        "router": {
            "modelServers": {"type": "vllm", "protocol": "http", "targetPorts": [{"number": r.port}],
                             "matchLabels": dict(r.pod_selector)},
            "inferencePool": {"create": True, "failureMode": EPP_FAILURE_MODE},
            "epp": epp,
            "monitoring": epp_monitoring(r.model, monitor_labels or {}),
        },
    }
