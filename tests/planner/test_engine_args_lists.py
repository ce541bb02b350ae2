"""A list in extraArgs reaches `vllm serve` as vLLM 0.31's parser takes it: nargs="+" items, one JSON argument for
the CORS lists, the flag repeated for --middleware; every container argument is a string."""
from components.config import parse
from components.planner import plan_topology
from components.planning import plan_request


def args(extra: dict) -> list:
    cfg = parse({"cloud": "aws", "aws": {"region": "us-east-1"},
                 "models": [{"name": "chat", "model": "qwen3-32b", "accelerator": "h100", "maxModelLen": 8192,
                             "extraArgs": extra}]}, {"hfToken"})
    return list(plan_topology(plan_request(cfg, cfg.models[0])).vllm_args)


def after(a: list, flag: str, n: int) -> list:
    i = a.index(flag)
    return a[i:i + n]


def test_list_flags_are_rendered_as_vllms_parser_reads_them():
    a = args({"--cudagraph-capture-sizes": [1, 2, 4], "--allowed-origins": ["https://app.example.com"],
              "--middleware": ["acme.mw.Auth", "acme.mw.Log"]})
    assert after(a, "--cudagraph-capture-sizes", 4) == ["--cudagraph-capture-sizes", "1", "2", "4"]
    assert after(a, "--allowed-origins", 2) == ["--allowed-origins", '["https://app.example.com"]']
    i = a.index("--middleware")
    assert a[i:i + 4] == ["--middleware", "acme.mw.Auth", "--middleware", "acme.mw.Log"]
    assert all(isinstance(x, str) for x in a)
