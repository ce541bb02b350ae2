"""Build planner requests the way the CLI does (catalog ids, one cloud)."""
from components.catalog import MODELS, instance_types
from components.planner import PlanRequest, Sla


def request(model: str, gpu: str | None = None, cloud: str = "aws", precision: str | None = None,
            max_model_len: int | None = None, **kw) -> PlanRequest:
    m = MODELS[model]
    sla_keys = {"ttft_ms", "tpot_ms", "concurrency", "prompt_tokens", "output_tokens"}
    sla = Sla(**{k: v for k, v in kw.items() if k in sla_keys})
    rest = {k: v for k, v in kw.items() if k not in sla_keys}
    return PlanRequest(model=m, precision=precision or m.precisions[0],
                       candidates=tuple(instance_types(cloud, gpu)),
                       max_model_len=max_model_len or m.max_context, sla=sla, **rest)
