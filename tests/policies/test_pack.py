"""The policy pack as `pulumi preview --policy-pack policies` runs it: the Python language host starts
`python -m pulumi.policy <engine> <pack dir>`, the pack prints its port and the engine calls it over
gRPC. This starts the real analyzer from policies/ and asks it."""
from __future__ import annotations

import subprocess
import sys

import grpc
import pytest
from google.protobuf import empty_pb2, struct_pb2
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc

from components.offline.runner import ROOT
from policies.rules import RULES, STACK_RULES
from tests.support.policies import DEPLOYMENT, with_container

MANDATORY_LEVEL = analyzer_pb2.EnforcementLevel.Value("MANDATORY")
ADVISORY_LEVEL = analyzer_pb2.EnforcementLevel.Value("ADVISORY")


@pytest.fixture(scope="module")
def analyzer():
    proc = subprocess.Popen([sys.executable, "-u", "-m", "pulumi.policy", "127.0.0.1:0", "."], cwd=ROOT / "policies",
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        port = proc.stdout.readline().strip()
        assert port.isdigit(), proc.stderr.read()
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        yield analyzer_pb2_grpc.AnalyzerStub(channel)
        channel.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def analyze(stub, resource_type: str, props: dict) -> list[tuple[str, int, str]]:
    properties = struct_pb2.Struct()
    properties.update(props)
    response = stub.Analyze(analyzer_pb2.AnalyzeRequest(type=resource_type, properties=properties,
                                                        urn=f"urn:pulumi:ci::vllm-platform::{resource_type}::r", name="r"))
    return [(d.policyName, d.enforcementLevel, d.message) for d in response.diagnostics]


def test_pack_serves_every_rule_with_its_enforcement_level(analyzer):
    info = analyzer.GetAnalyzerInfo(empty_pb2.Empty())
    assert info.name == "vllm-platform"
    levels = {p.name: p.enforcementLevel for p in info.policies}
    expected = {r.name: MANDATORY_LEVEL if r.level == "mandatory" else ADVISORY_LEVEL for r in [*RULES, *STACK_RULES]}
    assert levels == expected


def test_pack_reports_a_violation_over_grpc_and_passes_a_compliant_resource(analyzer):
    eks = "aws:eks/cluster:Cluster"
    [(name, level, message)] = analyze(analyzer, eks, {"vpcConfig": {"subnetIds": ["s"],
                                                                     "publicAccessCidrs": ["0.0.0.0/0"]}})
    assert (name, level) == ("cluster-endpoint-restricted", MANDATORY_LEVEL)
    assert "public endpoint open to 0.0.0.0/0; fix: EKS: vpcConfig.publicAccessCidrs" in message
    assert analyze(analyzer, eks, {"vpcConfig": {"subnetIds": ["s"], "endpointPublicAccess": False}}) == []
    [(name, _, message)] = analyze(analyzer, DEPLOYMENT, with_container(startupProbe=None))
    assert name == "vllm-startup-probe" and "container vllm: no startupProbe" in message
