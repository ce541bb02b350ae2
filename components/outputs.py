"""What a platform team reads off a stack: `pulumi stack output` after `pulumi up`.

Platform sets these attributes (and the component package returns them to other languages);
__main__.py exports them under the same names, camelCase. Facts about Grafana come from the
kube-prometheus-stack release this project installs (components/addons/prometheus.py).
"""
from __future__ import annotations

from typing import Any

import pulumi

from .addons import prometheus
from .config.schema import PrometheusAddon

# The Grafana sub-chart's Service: `<release>-grafana` (grafana chart templates/_helpers.tpl fullname, the
# release name containing no "grafana"), port 80 (grafana values.yaml service.port) onto the pod's 3000.
GRAFANA_SERVICE = f"{prometheus.RELEASE}-grafana"
GRAFANA_PORT = 80
GRAFANA_LOCAL_PORT = 3000


def grafana(prometheus_addon: PrometheusAddon) -> dict[str, str] | None:
    """Where Grafana answers and where its admin login is; None when this stack installs no Grafana
    (the stack's `addons.prometheus`)."""
    if not prometheus_addon.enabled:
        return None
    ns = prometheus.NAMESPACE
    return {
        "url": f"http://{GRAFANA_SERVICE}.{ns}.svc.cluster.local:{GRAFANA_PORT}",
        "portForward": f"kubectl -n {ns} port-forward svc/{GRAFANA_SERVICE} {GRAFANA_LOCAL_PORT}:{GRAFANA_PORT}"
                       f"  # then http://localhost:{GRAFANA_LOCAL_PORT}",
        "adminSecret": f"{ns}/{prometheus.GRAFANA_ADMIN_SECRET}",
        "adminLogin": f"kubectl -n {ns} get secret {prometheus.GRAFANA_ADMIN_SECRET} "
                      "-o jsonpath='{.data.admin-password}' | base64 -d",
    }


def _first_oidc_issuer(identities: Any) -> str | None:
    for identity in identities or []:
        oidcs = identity.get("oidcs") if isinstance(identity, dict) else getattr(identity, "oidcs", None)
        for oidc in oidcs or []:
            return oidc.get("issuer") if isinstance(oidc, dict) else getattr(oidc, "issuer", None)
    return None


def _workload_pool(config: Any) -> str | None:
    if config is None:
        return None
    return config.get("workload_pool") if isinstance(config, dict) else getattr(config, "workload_pool", None)


def cluster_outputs(cluster: pulumi.ComponentResource) -> dict[str, Any]:
    """Name, API endpoint and identity federation of the cluster component (AwsGpuCluster: the EKS OIDC
    issuer for IAM roles for service accounts; GcpGpuCluster: the GKE workload identity pool)."""
    facts = cluster.facts
    out: dict[str, Any] = {"cluster_name": facts.name, "api_endpoint": None, "oidc_issuer": None,
                           "workload_identity_pool": None}
    resource = getattr(cluster, "cluster", None)  # the eks.Cluster / container.Cluster it made
    if resource is None:
        return out
    out["cluster_name"] = resource.name
    if facts.cloud == "aws":
        out["api_endpoint"] = resource.endpoint
        out["oidc_issuer"] = resource.identities.apply(_first_oidc_issuer)
    elif facts.cloud == "gcp":
        out["api_endpoint"] = resource.endpoint.apply(lambda ip: f"https://{ip}" if ip else None)
        out["workload_identity_pool"] = resource.workload_identity_config.apply(_workload_pool)
    return out


def gateway_outputs(gateway: Any) -> dict[str, Any] | None:
    """The gateway's URL per model, how to read the load balancer's address and where the keys live
    (components/gateway/, docs/gateway.md); None when the stack runs no gateway.

    Without gateway.hostname the URLs carry the placeholder GATEWAY_ADDRESS, also after `pulumi up`: the load
    balancer's address appears in the Gateway's status only once the cloud has made it, after Pulumi registered
    the Gateway (Pulumi does not wait for it), so `address` is the kubectl command that reads it."""
    if gateway is None:
        return None
    from .gateway.component import KEYS_SECRET
    args = gateway.args
    out: dict[str, Any] = {"url": gateway.url, "endpoints": dict(gateway.endpoints), "scheme": args.scheme,
                           "auth": "apiKeys" if args.auth else "none", "tls": args.tls_mode}
    if not args.hostname:
        out["address"] = gateway.address_command
    if args.auth:
        out["keysSecret"] = f"{args.namespace}/{KEYS_SECRET}"
        out["clients"] = list(args.clients)
    if args.priorities:
        out["priorities"] = {"clients": dict(args.priorities),
                             "models": [r.model for r in args.routes if not r.multi_node]}
    from .gateway.values import routing_text
    out["prefixRouting"] = {r.model: routing_text(r, r.model in args.precise_models) for r in args.routes}
    if args.token_quotas:
        out["tokenQuotas"] = {"counts": args.token_quotas.counts, "budgets": dict(args.token_quotas.budgets),
                              "fleetsPerMinute": args.token_fleets(),
                              "rateLimitReplicas": args.proxy_replicas}
    return out


def gateway_lines(gw: dict[str, Any] | None) -> list[str]:
    """What `plan` prints about the gateway: the URL per model, then how to fill in the address and the key."""
    if not gw:
        return ["\nGateway: none (gateway.enabled: false); models answer in-cluster only (endpoints output)"]
    lines = [f"\nGateway ({gw['scheme']}, auth {gw['auth']}, TLS {gw['tls']}): OpenAI API"]
    if gw.get("url"):
        lines.append(f"  every model (by the request's `model`): {gw['url']}")
    elif gw.get("endpoints"):
        lines.append("  every model: no shared URL on a cluster stack's Gateway without gateway.hostname "
                     "(docs/gateway.md)")
    lines += [f"  {model}: {url}" for model, url in sorted(gw["endpoints"].items())]
    if gw.get("address"):
        lines.append(f"  GATEWAY_ADDRESS is a placeholder, also in the stack outputs (the load balancer's address "
                     f"exists only after `pulumi up`); read it with: {gw['address']}")
    if gw.get("prefixRouting"):
        lines += [f"  routing {model}: {how}" for model, how in sorted(gw["prefixRouting"].items())]
    if gw.get("keysSecret"):
        lines.append(f"  API keys: secret gatewayApiKeys -> Secret {gw['keysSecret']} "
                     f"(clients: {', '.join(gw.get('clients', []))})")
    if gw.get("priorities"):
        from .gateway.priority import priority_lines
        lines += priority_lines({c: int(p) for c, p in gw["priorities"]["clients"].items()},
                                list(gw["priorities"]["models"]))
    if gw.get("tokenQuotas"):
        from .gateway.quotas import TokenQuotas, quota_lines
        tq = gw["tokenQuotas"]
        lines += quota_lines(TokenQuotas(dict(tq["budgets"]), tq["counts"]),
                             {m: int(n) for m, n in tq["fleetsPerMinute"].items()},
                             int(tq.get("rateLimitReplicas", 1)))
    return lines
