"""The endpoint picker's P/D scheduling (a model served as prefill and decode instances, serving/disagg.py).

llm-d-router v0.10.0 (the pinned llm-d-router-gateway chart): deploy/config/pd-epp-config.yaml (the P/D sample:
approx-prefix-cache-producer, prefill-filter / decode-filter, max-score-picker, disagg-profile-handler with the
prefix-based-pd-decider at nonCachedTokens 16) plus the chart's metrics data source and extractor
(config/charts/routerlib/templates/_config.yaml default-plugins.yaml), which the queue and KV-cache scorers read.
`pd-profile-handler` and `prefill-header-handler` are deprecated there (pkg/epp/framework/plugins/scheduling/
profilehandler/disagg/README.md: "Use disagg-profile-handler instead", removal planned in v0.11): the unified
handler sets the x-prefiller-host-port header itself. Every request whose uncached prompt reaches 16 tokens is
disaggregated, what the planner sized the pools for; the decode profile always runs first.
"""
from __future__ import annotations

import yaml

PD_CONFIG = "vllm-platform-pd.yaml"
# prefix_based_pd_decider.go NonCachedTokens: disaggregate from this many uncached prompt tokens (the sample's)
PD_NON_CACHED_TOKENS = 16


def pd_config() -> str:
    profile_plugins = [{"pluginRef": "max-score-picker"},
                       {"pluginRef": "prefix-cache-scorer", "weight": 2}, {"pluginRef": "queue-scorer", "weight": 1}]
    config = {
        "apiVersion": "llm-d.ai/v1alpha1", "kind": "EndpointPickerConfig",
        "plugins": [
            {"type": "approx-prefix-cache-producer"},
            {"type": "prefix-cache-scorer"}, {"type": "queue-scorer"},
            {"type": "prefill-filter"}, {"type": "decode-filter"}, {"type": "max-score-picker"},
            {"type": "prefix-based-pd-decider", "parameters": {"nonCachedTokens": PD_NON_CACHED_TOKENS}},
            {"type": "disagg-profile-handler", "parameters": {"deciders": {"prefill": "prefix-based-pd-decider"}}},
            {"type": "metrics-data-source",
             "parameters": {"scheme": "http", "path": "/metrics", "insecureSkipVerify": True}},
            {"type": "core-metrics-extractor"}],
        "schedulingProfiles": [
            {"name": "prefill", "plugins": [{"pluginRef": "prefill-filter"}, *profile_plugins]},
            {"name": "decode", "plugins": [{"pluginRef": "decode-filter"}, *profile_plugins]}],
    }
    return yaml.safe_dump(config, sort_keys=False)
