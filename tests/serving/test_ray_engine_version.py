"""A multi-node replica runs Ray Serve LLM's own vLLM (0.26.0 in ray-llm 2.58.0): engine options validated against
0.31 only are named in the plan's warnings."""
from components.cache.component import CacheFacts
from components.config.schema import Serving
from components.catalog import INSTANCE_TYPES, MODELS
from components.planner import PlanRequest, Sla, plan_topology
from components.planner.engine_args import EngineOptions
from components.serving.service import ServingArgs, serving_summary


def summary(options: EngineOptions | None):
    req = PlanRequest(model=MODELS["llama-3.1-405b"], precision="bf16", candidates=(INSTANCE_TYPES["p5.48xlarge"],),
                      max_model_len=8192, sla=Sla(concurrency=32), min_replicas=1, max_replicas=3,
                      served_model_name="llama-405b", **({"engine": options} if options else {}))
    t = plan_topology(req)
    assert t.multi_node
    return serving_summary(ServingArgs(namespace="llm", serving=Serving(multi_node="rayservice")), t,
                           CacheFacts("rwx", 1.0, claim="model-cache"))["warnings"]


def test_engine_options_on_a_multi_node_replica_name_the_ray_images_vllm():
    warn = [w for w in summary(EngineOptions(tool_call_parser="llama3_json")) if w.startswith("ENGINE VERSION")]
    assert warn == ["ENGINE VERSION: llama-405b runs multi-node on the Ray Serve LLM image (Ray 2.58.0), which "
                    "carries vLLM 0.26.0, not 0.31.0; its engine options (tool calling (llama3_json)) were checked "
                    "against vLLM 0.31.0's parsers and flags only: one that vLLM 0.26.0 lacks fails the Serve app at "
                    "start (DEPLOY_FAILED)"]
    assert not [w for w in summary(None) if w.startswith("ENGINE VERSION")]
