"""Issue 24, "the plan tells the truth": stack keys as Pulumi reads them, --out, the dev stack's description."""
import json

import pytest
import yaml

from components.cli import main
from components.config import ConfigError
from components.offline.runner import ROOT, load_stack_yaml, plan_stack_offline


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def _dev_with(tmp_path, **unprefixed):
    """stacks/Pulumi.dev.yaml with some keys written without the project prefix."""
    doc = yaml.safe_load((ROOT / "stacks" / "Pulumi.dev.yaml").read_text())
    for key, value in unprefixed.items():
        doc["config"].pop(f"vllm-platform:{key}", None)
        doc["config"][key] = value
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


# --- 1. a key without a namespace is the project's, as the Pulumi CLI reads it ---------------------------

def test_a_key_without_a_namespace_is_the_projects(tmp_path):
    # pulumi/pulumi workspace/loaders.go stackConfigNamespacedWithProject: `namespace: other` -> project:namespace
    config = load_stack_yaml(_dev_with(tmp_path, namespace="other"))
    assert config["vllm-platform:namespace"] == "other" and "namespace" not in config


def test_an_unprefixed_key_changes_the_plan(tmp_path):
    result = plan_stack_offline(str(_dev_with(tmp_path, namespace="other")))
    namespaces = {r.inputs.get("metadata", {}).get("name") for r in result.resources
                  if r.type == "kubernetes:core/v1:Namespace"}
    assert "other" in namespaces and "vllm" not in namespaces


def test_other_namespaces_and_the_old_config_form_stay_as_pulumi_reads_them(tmp_path):
    path = tmp_path / "Pulumi.x.yaml"
    path.write_text("config:\n  aws:region: us-west-2\n  vllm-platform:config:environment: prod\n")
    assert load_stack_yaml(path) == {"aws:region": "us-west-2", "vllm-platform:environment": "prod"}


def test_two_spellings_of_one_key_are_refused(tmp_path):
    path = tmp_path / "Pulumi.x.yaml"
    path.write_text("config:\n  vllm-platform:environment: dev\n  environment: prod\n")
    with pytest.raises(ConfigError) as e:
        load_stack_yaml(path)
    assert e.value.errors == [f"{path}: config keys `vllm-platform:environment` and `environment` are both "
                              f"`vllm-platform:environment`; keep one"]


def test_a_key_pulumi_cannot_parse_is_refused(tmp_path, capsys):
    path = tmp_path / "Pulumi.x.yaml"
    path.write_text("config:\n  vllm-platform:gateway:tls: none\n")
    code, _, err = run(capsys, "plan", str(path))
    assert code == 2 and "Traceback" not in err
    assert (f"{path}: `vllm-platform:gateway:tls` is not a configuration key (the Pulumi CLI refuses it); "
            f"write `namespace:name`, e.g. `vllm-platform:tls`") in err


# --- 5. plan --out on a path it cannot write -------------------------------------------------------------

def test_out_naming_a_file_exits_2_before_planning(tmp_path, capsys):
    target = tmp_path / "plan.txt"
    target.write_text("mine")
    code, out, err = run(capsys, "plan", "--out", str(target))
    assert (code, out) == (2, "")
    assert err.strip() == f"--out: {target} is a file, not a directory; give a directory for the plan's files"
    assert target.read_text() == "mine"


def test_out_under_a_file_exits_2(tmp_path, capsys):
    (tmp_path / "plan.txt").write_text("mine")
    target = tmp_path / "plan.txt" / "sub" / "dir"
    code, out, err = run(capsys, "plan", "--out", str(target))
    assert (code, out) == (2, "")
    assert err.strip() == (f"--out: {tmp_path / 'plan.txt'} is a file, so {target} cannot be made; "
                           f"give a directory for the plan's files")


def test_out_unwritable_exits_2_without_a_traceback(capsys):
    # /proc takes no new directories, even from root (for whom every permission check passes)
    code, out, err = run(capsys, "plan", "--out", "/proc/vllm-platform-plan")
    assert code == 2 and "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith("--out: ")
    assert "/proc" in err and "give a directory you can write" in err


def test_out_with_missing_parents_makes_them(tmp_path, capsys):
    target = tmp_path / "new" / "plan"
    code, _, _ = run(capsys, "plan", "--out", str(target))
    assert code == 0 and json.loads((target / "topology.json").read_text())["llama-8b"]["replicas"] == 1


# --- 6. the dev stack says what it asks for ---------------------------------------------------------------

def test_the_dev_stacks_description_matches_its_plan():
    from components.cli import stacks_rows
    row = next(r for r in stacks_rows() if r[0] == "`dev`")
    # 8 users at up to 36 per replica (FP8 weights' knee on one L4 at TPOT 100 ms): 1 replica on one single-L4 node; max 2
    assert row[4:9] == ["your 1×l4 nodes", "TP 1", "1", "1 (1–2)", "1 (1–2)"]
    head = (ROOT / "stacks" / "Pulumi.dev.yaml").read_text().splitlines()[0]
    assert head == ("# dev: Llama-3.1-8B FP8 on one GPU node with one L4 (1 replica holds the SLA's 8 users; up to 2 "
                    "at the"), "stacks/Pulumi.dev.yaml's first line still describes the 2-replica plan"
    assert ("(`stacks/Pulumi.dev.yaml`: Llama-3.1-8B FP8 on one GPU node with one L4, up to 2)"
            in " ".join((ROOT / "README.md").read_text().split()))


# --- 3. table / topology / capacity never quote a shape a stack on demand refuses --------------------------

def test_the_gcp_table_quotes_no_type_sold_only_by_reservation_or_spot(capsys):
    code, out, _ = run(capsys, "table", "--cloud", "gcp", "--markdown")
    assert code == 0
    assert "a3-ultragpu" not in out and "a4-highgpu" not in out and "$84.81" not in out
    rows = [line for line in out.splitlines() if line.startswith("| llama-3.1-70b | bf16 | h")]
    assert rows[1] == ("| llama-3.1-70b | bf16 | h200 | — | — | — | — | — | — | — | — | — | "
                       "not offered on demand (reservation or Spot only) |")


def test_the_table_uses_the_predicate_the_gke_stack_refuses_by():
    """Every GCP type the table would not quote is one a GKE stack on demand refuses, and the other way round."""
    from components.catalog import instance_types, offered
    from components.cli import table_rows
    unsold = {i.name for i in instance_types("gcp") if not offered(i)}
    assert unsold == {"a3-ultragpu-8g", "a4-highgpu-8g"}  # cloud.google.com/compute/docs/accelerator-optimized-machines
    quoted = {r[3] for r in table_rows("gcp")}
    assert not unsold & quoted and "a3-highgpu-8g" in quoted
    assert all(offered(i) for i in instance_types("aws"))  # no AWS type is known not to be sold on demand


def test_topology_refuses_a_gpu_only_sold_by_reservation(capsys):
    code, out, err = run(capsys, "topology", "--model", "llama-3.1-70b", "--gpu", "h200", "--cloud", "gcp")
    assert (code, out) == (2, "")
    assert err.strip() == ("--gpu: h200 on gcp comes as a3-ultragpu-8g, not offered on demand (a stack buys it with "
                           "gcp.reservation or gcp.spot: true); topology prices on demand: try another --gpu or --cloud")
    code, out, _ = run(capsys, "topology", "--model", "llama-3.1-405b", "--cloud", "gcp", "--json")
    assert code == 0 and json.loads(out)["instance_type"] not in ("a3-ultragpu-8g", "a4-highgpu-8g")


def test_capacity_refuses_it_too(capsys):
    code, _, err = run(capsys, "capacity", "--model", "llama-3.1-8b", "--gpu", "b200", "--cloud", "gcp")
    assert code == 2 and err.startswith("--gpu: b200 on gcp comes as a4-highgpu-8g, not offered on demand")


def test_capacity_takes_a_config_json_as_topology_does(capsys):
    path = ROOT / "tests" / "fixtures" / "hf" / "meta-llama--Meta-Llama-3.1-8B" / "config.json"
    code, out, _ = run(capsys, "capacity", "--model-config", str(path), "--gpu", "l4", "--max-model-len", "8192")
    assert code == 0
    assert out.splitlines()[0].startswith("Meta-Llama-3.1-8B bf16 on g6.xlarge (TP 1, KV auto, 31,696 tokens)")
    code, _, err = run(capsys, "capacity", "--gpu", "l4")
    assert code == 2 and err.strip() == "--model or --model-config: a catalog id / Hub repo id, or a config.json"
    code, _, err = run(capsys, "capacity", "--model-config", str(ROOT / "nope.json"), "--gpu", "l4")
    assert code == 2 and err.startswith(f"--model-config: {ROOT / 'nope.json'}: cannot read it")


# --- 2. secrets a preview needs, and placeholders left in a stack ------------------------------------------

def test_every_secret_is_in_the_deploy_runbook_with_its_command():
    from components.config.load import SECRET_KEYS
    # a new secret belongs in the runbook
    assert set(SECRET_KEYS) == {"hfToken", "kubeconfig", "gatewayApiKeys", "chartMirrorPassword", "gatewayTlsCert",
                                "gatewayTlsKey", "alertmanagerHeartbeatUrl"}
    runbook = (ROOT / "docs" / "deploy.md").read_text()
    for key in SECRET_KEYS:
        assert f"pulumi config set --secret {key} " in runbook, key


def test_plan_says_which_secrets_it_filled(capsys, tmp_path):
    code, out, _ = run(capsys, "plan", "--out", str(tmp_path / "dev"))
    assert code == 0
    # dev serves RedHatAI's FP8 checkpoint, an open repository: a real preview does not ask for hfToken
    assert ("note: secrets not in the stack file, placeholders in this offline plan: gatewayApiKeys (`pulumi config "
            "set --secret gatewayApiKeys '{\"default\": \"...\"}'`, one key per gateway.clients entry); a real "
            "`pulumi preview` needs them set (docs/deploy.md)\n") in out
    assert "replace it with your own before `pulumi up`" not in out  # the dev stack carries no stand-in values
    # a gated repository (meta-llama/...) does need it, and the note says so
    code, out, _ = run(capsys, "plan", "prod-llama70b-aws", "--out", str(tmp_path / "70b"))
    assert code == 0 and ("placeholders in this offline plan: hfToken (`pulumi config set --secret hfToken "
                          "hf_...`); gatewayApiKeys") in out


def test_a_stack_with_its_secrets_and_no_gateway_keys_gets_no_secret_note(tmp_path):
    path = _dev_with(tmp_path, gateway={"auth": "none"})
    raw = yaml.safe_load(path.read_text())
    raw["config"]["vllm-platform:hfToken"] = {"secure": "AAABAK..."}
    path.write_text(yaml.safe_dump(raw))
    assert plan_stack_offline(str(path)).notes == []


def test_plan_names_every_placeholder_field_of_a_shipped_stack():
    from components.config.placeholders import placeholder_warnings
    from components.offline.runner import stack_file
    tail = "; replace it with your own before `pulumi up`"
    assert placeholder_warnings(load_stack_yaml(stack_file("prod-llama70b-aws"))) == [
        "aws.endpointPublicAccessCidrs[0]: 203.0.113.10/32 is a documentation address range (203.0.113.0/24, never "
        "routed)" + tail,
        "aws.adminRoleArns[0]: arn:aws:iam::123456789012:role/platform-admin is an example ARN (account "
        "123456789012)" + tail,
        "gateway.tls.certificateArn: arn:aws:acm:us-east-1:123456789012:certificate/00000000-0000-0000-0000-"
        "000000000000 is an all-zero example certificate ARN" + tail]
    assert placeholder_warnings(load_stack_yaml(stack_file("prod-qwen72b-gcp"))) == [
        "gcp.masterAuthorizedNetworks[0]: 203.0.113.0/28 is a documentation address range (203.0.113.0/24, never "
        "routed)" + tail]
    assert placeholder_warnings(load_stack_yaml(stack_file("dev"))) == []


@pytest.mark.parametrize("value, what", [
    ("192.0.2.7", "a documentation address range (192.0.2.0/24, never routed)"),
    ("198.51.100.0/24", "a documentation address range (198.51.100.0/24, never routed)"),
    ("2001:db8:1::/48", "a documentation address range (2001:db8::/32, never routed)"),
    ("arn:aws:iam::000000000000:role/x", "an example ARN (account 000000000000)"),
    ("arn:aws:acm:eu-west-1:210987654321:certificate/00000000-0000-0000-0000-000000000000",
     "an all-zero example certificate ARN"),
    ("llm.example.com", "an example.com/.net/.org documentation host name"),
    ("https://grafana.example.org/d/x", "an example.com/.net/.org documentation host name"),
    ("203.0.114.0/24", None), ("10.0.0.0/8", None), ("arn:aws:iam::210987654321:role/admin", None),
    ("notexample.com", None), ("1.33", None), ("llm.mycorp.com", None),
])
def test_what_counts_as_a_placeholder(value, what):
    from components.config.placeholders import placeholder_problem
    assert placeholder_problem(value) == what


def test_plan_prints_the_placeholder_warnings(capsys, tmp_path):
    code, out, _ = run(capsys, "plan", "prod-qwen72b-gcp", "--out", str(tmp_path / "q"))
    assert code == 0
    assert ("\nWARNING: gcp.masterAuthorizedNetworks[0]: 203.0.113.0/28 is a documentation address range "
            "(203.0.113.0/24, never routed); replace it with your own before `pulumi up`\n") in out
