"""The Mermaid picture `plan` writes (build/STACK/diagram.mmd and .md), and the one in the README."""
from __future__ import annotations

import re

import pytest

from components.cli import main
from components.offline.diagram import markdown, mermaid
from components.offline.render import resource_rows
from components.offline.runner import ROOT, stack_names
from tests.support.plans import planned

NODE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(\(\[|\[\(|\{\{|\[|\()")
EDGE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s+(-->|-\.->)(\|[^|]*\|)?\s*([A-Za-z_][A-Za-z0-9_]*)\s*$")
SUBGRAPH = re.compile(r"^\s*subgraph\s+([A-Za-z_][A-Za-z0-9_]*)\[\"[^\"]*\"\]\s*$")


def diagram(stack: str) -> str:
    result = planned(stack)
    return mermaid(result.stack, resource_rows(result.resources), result.exports["topology"])


def mermaid_problems(text: str) -> list[str]:
    """A small Mermaid flowchart check: the header, balanced subgraph/end, each node defined once with a
    closed quoted label, and every edge between defined nodes."""
    lines = text.rstrip("\n").splitlines()
    problems = [] if lines[0] == "flowchart LR" else [f"header: {lines[0]!r}"]
    depth, defined, edges = 0, [], []
    for n, line in enumerate(lines[1:], 2):
        s = line.strip()
        if m := SUBGRAPH.match(line):
            depth += 1
            defined.append(m.group(1))
        elif s == "end":
            depth -= 1
            if depth < 0:
                problems.append(f"line {n}: `end` without a subgraph")
        elif s.startswith("direction "):
            continue
        elif m := EDGE.match(line):
            edges.append((n, m.group(1), m.group(4)))
        elif m := NODE.match(line):
            defined.append(m.group(1))
            opening = m.group(2)
            closing = {"[": "]", "(": ")", "([": "])", "[(": ")]", "{{": "}}"}[opening]
            if not (s.endswith('"' + closing) and s.count('"') == 2):
                problems.append(f"line {n}: label not closed with {closing!r}: {s}")
        else:
            problems.append(f"line {n}: not a node, edge or subgraph: {s}")
    if depth:
        problems.append(f"{depth} subgraph(s) without `end`")
    dup = sorted({d for d in defined if defined.count(d) > 1})
    if dup:
        problems.append(f"ids defined twice: {dup}")
    problems += [f"line {n}: edge to an undefined node {a if a not in defined else b}"
                 for n, a, b in edges if a not in defined or b not in defined]
    return problems


@pytest.mark.parametrize("stack", stack_names())
def test_every_stacks_diagram_is_valid_mermaid(stack):
    assert mermaid_problems(diagram(stack)) == []


@pytest.mark.parametrize("stack, pool, model, kind", [
    ("prod-llama405b-aws", "p5.48xlarge x4 (8 GPU/node, TP8xPP2, efa; 2–8 nodes)",
     "llama-405b: Llama-3.1-405B bf16<br/>RayService", "EKS llama405b-prod, Kubernetes 1.35"),
    ("prod-qwen72b-gcp", "a3-highgpu-8g x2 (8 GPU/node, TP8, gpudirect-tcpx; 2–3 nodes)",
     "qwen-72b: Qwen2.5-72B-Instruct bf16<br/>Deployment, 2 replica(s) (2–3)", "GKE llm-prod (us-central1), Kubernetes 1.35"),
    # packing (several replicas per node): prod-qwen72b-gcp showed it at TP 4 until the step-model refit moved it
    # to TP 8 (one replica per node); the fp8 405B stack still packs two TP 4 replicas per p5en node
    ("prod-llama405b-fp8-h200-aws", "p5en.48xlarge x2 (8 GPU/node, TP4, up to 2 replicas/node, efa; fixed at 2 nodes)",
     "llama-405b-fp8: Llama-3.1-405B fp8<br/>Deployment, 2 replica(s) (2–3)",
     "EKS llama405b-fp8-prod, Kubernetes 1.35"),
    ("dev", "l4 nodes x1 (1 GPU/node, TP1; 1–2 nodes)", "llama-8b: Llama-3.1-8B fp8<br/>Deployment, 1 replica(s) (1–2)",
     "existing cluster · stack dev"),
])
def test_diagram_shows_cluster_pools_packing_addons_cache_and_models(stack, pool, model, kind):
    text = diagram(stack)
    assert pool in text and model in text and kind in text
    for chart in ("gpu-operator v26.7.0", "keda 2.20.2", "kuberay-operator 1.7.0", "kube-prometheus-stack"):
        assert chart in text
    assert 'cache[("model cache: ReadWriteMany' in text
    topology = planned(stack).exports["topology"]
    for name in topology:  # every model is served, runs on its pool and reads the cache
        svc = "svc_" + re.sub(r"[^A-Za-z0-9]+", "_", name)
        assert f"{svc} -->|runs on| pool_" in text and f"cache -.->|weights| {svc}" in text


def test_the_check_catches_broken_mermaid():
    good = diagram("dev")
    assert mermaid_problems(good.replace("flowchart LR", "graph")) == ["header: 'graph'"]
    assert "1 subgraph(s) without `end`" in mermaid_problems(good.replace("    end\n", "", 1))
    assert any("undefined node" in p for p in mermaid_problems(good + "  clients --> nowhere\n"))
    assert any("label not closed" in p for p in mermaid_problems(good.replace('TP1; 1–2 nodes)"]', 'TP1"')))


def test_plan_writes_the_diagram_files(tmp_path, capsys):
    assert main(["plan", "dev", "--out", str(tmp_path)]) == 0
    capsys.readouterr()
    mmd = (tmp_path / "diagram.mmd").read_text()
    assert mmd == diagram("dev")
    assert (tmp_path / "diagram.md").read_text() == markdown("dev", mmd)
    assert (tmp_path / "diagram.md").read_text().startswith("# Stack `dev`\n\n```mermaid\nflowchart LR\n")


def test_readme_diagram_is_the_generated_one_for_the_default_stack():
    readme = (ROOT / "README.md").read_text()
    m = re.search(r"<!-- diagram:dev:start -->\n```mermaid\n(.*?)```\n<!-- diagram:dev:end -->", readme, re.S)
    assert m, "README has no diagram markers"
    assert m.group(1) == diagram("dev"), \
        "README diagram is stale: paste build/dev/diagram.mmd from `python -m components plan` between the markers"


def test_a_quote_in_a_label_does_not_end_it():
    from components.offline.diagram import label, node_id
    assert label('say "hi"') == '"say #quot;hi#quot;"'
    assert node_id("svc", "llama-3.1.8b") == "svc_llama_3_1_8b"
