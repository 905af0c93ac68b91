"""Profiles: `--profile protocol` judges only the rules the protocols make (`source: protocol`), `--profile contract`
those and the contract's; the rules a profile leaves out are NOT SELECTED with that reason; a channel-only target
defaults to `protocol`, one with the GNS3 chat API to `contract`. A scenario whose tool the target does not declare
is N/A with the reason. The README's channel-only example runs against a small OpenAI-compatible server."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest
import yaml
from click.testing import CliRunner

import gns3_copilot_spec as spec
from conformance.checks import PROFILES, CheckSpec, SelectionError, profile_note, select
from conformance.cli import cli
from conformance.errors import NotTestable, TargetMisdeclared
from conformance.harness.engine import profiled
from conformance.harness.environment import Environment
from conformance.harness.execution import run_check
from conformance.harness.findings import Finding, Outcome, Verdict
from conformance.harness.preflight import _no_generation, _offers_tools, _refused
from conformance.harness.provisioning import _start_advice, target_scripts, undeclared_scenarios
from conformance.harness.target import load_target, parse_target
from conformance.harness.verdicts import failed_run, judged_run
from conformance.rules.scenarios import write_scripts
from tests.readme import readme_command, readme_example

ROOT = Path(__file__).resolve().parents[2]
RECORDS = spec.load_requirements()["requirements"]
PROTOCOL_IDS = {r["id"] for r in RECORDS if r["source"] == "protocol"}


# The OpenAI channel's rules: the channel's own, and its Responses' and model list's (served by default).
OPENAI_CAPABILITIES = {"channel_openai", "openai_responses", "openai_models"}


def channel_only(**extra) -> dict:
    return {"name": "my-server", "base_url": "http://127.0.0.1:9", "channels": {"openai": {"path": "/v1"}}, **extra}


# --- selection ------------------------------------------------------------------------------------------------------


def test_the_protocol_profile_selects_exactly_the_checks_of_the_protocol_rules():
    chosen = select(None, "protocol")
    judged = {r for check in chosen for r in check.requirements}
    assert PROTOCOL_IDS and PROTOCOL_IDS <= judged  # every protocol rule has its checks run
    assert all(set(check.requirements) & PROTOCOL_IDS for check in chosen)  # and no check of contract rules alone
    wanted = {c for r in RECORDS if r["id"] in PROTOCOL_IDS for c in r.get("checks", [])}
    assert {check.id for check in chosen} == wanted


def test_the_contract_profile_selects_every_check():
    assert [c.id for c in select(None, "contract")] == [c.id for c in select(None)]
    assert PROFILES == ("protocol", "contract")


def test_the_profile_note_leaves_out_exactly_the_contract_rules():
    left_out = {r["id"] for r in RECORDS if profile_note(r, "protocol") is not None}
    assert left_out == {r["id"] for r in RECORDS} - PROTOCOL_IDS
    assert all(profile_note(r, "contract") is None for r in RECORDS)
    note = profile_note(next(r for r in RECORDS if r["id"] == "CHANNEL-008"), "protocol")
    assert note.startswith("not selected by the profile protocol: a rule of the contract (source: contract)")


def test_selecting_a_contract_rule_under_the_protocol_profile_is_refused():
    with pytest.raises(SelectionError, match="--only CHANNEL-008: it names only rules of the contract, which "):
        select(["CHANNEL-008"], "protocol")
    with pytest.raises(SelectionError, match="--only stats: it names only rules of the contract"):
        select(["stats"], "protocol")
    with pytest.raises(SelectionError, match="--profile strict: no such profile"):
        select(None, "strict")
    assert [c.id for c in select(["OPENAI-PROTO-010"], "protocol")] == ["channel_openai.models"]


def test_the_cli_refuses_a_contract_rule_under_the_protocol_profile_before_any_run(tmp_path):
    runner = CliRunner()
    args = ["run", "--profile", "protocol", "--only", "TITLE-003", "--report-dir", str(tmp_path / "r")]
    result = runner.invoke(cli, args, prog_name="copilot-conformance")
    assert result.exit_code == 2 and "--only TITLE-003: it names only rules of the contract" in result.output
    result = runner.invoke(cli, ["run", "--profile", "strict"], prog_name="copilot-conformance")
    assert result.exit_code == 2 and "'strict' is not one of 'protocol', 'contract'" in result.output
    assert not (tmp_path / "r").exists()


def test_the_default_profile_follows_the_target_kind():
    assert load_target("reference").default_profile == "contract"
    assert parse_target(channel_only()).default_profile == "protocol"
    with_gns3 = channel_only(channels={"gns3": {}, "openai": {"path": "/v1"}})
    assert "required when the target serves the GNS3 chat API" in _problem(with_gns3)


def _problem(data) -> str:
    from conformance.errors import TargetError

    with pytest.raises(TargetError) as raised:
        parse_target(data)
    return str(raised.value)


# --- the result under a profile -------------------------------------------------------------------------------------


def _failing_everywhere(target, profile: str):
    """Every check judged every requirement FAILED: the profile alone decides what is judged."""
    runs = []
    for check in select(None, "contract"):
        findings = [Finding(r, Outcome.FAILED, "broken", check.id) for r in check.requirements]
        runs.append(SimpleNamespace(id=check.id, requirements=check.requirements, all_findings=findings, rerun=None))
    result = judged_run(target, "", runs, {}, False, 0.0, "now")
    result.checks = [SimpleNamespace(id=run_.id, undeclared=None) for run_ in runs]
    return profiled(result, profile)


def test_the_protocol_profile_reports_the_contract_rules_not_selected_with_the_reason():
    result = _failing_everywhere(load_target("reference"), "protocol")
    verdicts = {v.id: v for v in result.verdicts}
    assert result.profile == "protocol" and len(verdicts) == len(RECORDS)
    for record in RECORDS:
        verdict = verdicts[record["id"]]
        if "excluded" in record:
            assert verdict.verdict == Verdict.EXCLUDED
        elif record["id"] in PROTOCOL_IDS:
            assert verdict.verdict in (Verdict.FAIL, Verdict.WARN), record["id"]  # judged: a MUST or a SHOULD
        else:
            assert verdict.verdict in (Verdict.NOT_SELECTED, Verdict.NOT_APPLICABLE), record["id"]
            assert verdict.findings == [] or verdict.verdict == Verdict.NOT_APPLICABLE
    assert verdicts["CHANNEL-008"].verdict == Verdict.NOT_SELECTED
    assert verdicts["CHANNEL-008"].note == profile_note(verdicts["CHANNEL-008"].requirement, "protocol")
    assert verdicts["DB-001"].verdict == Verdict.NOT_SELECTED  # applies to the reference server: left out, not N/A
    assert result.passed is False


def test_the_contract_profile_judges_both():
    result = _failing_everywhere(load_target("reference"), "contract")
    verdicts = {v.id: v.verdict for v in result.verdicts}
    assert result.profile == "contract"
    assert verdicts["CHANNEL-008"] == Verdict.FAIL and verdicts["OPENAI-PROTO-002"] == Verdict.FAIL
    assert Verdict.NOT_SELECTED not in verdicts.values()


def test_what_does_not_apply_stays_not_applicable_under_the_protocol_profile():
    result = _failing_everywhere(parse_target(channel_only()), "protocol")
    verdicts = {v.id: v for v in result.verdicts}
    assert verdicts["FRAME-001"].verdict == Verdict.NOT_APPLICABLE  # the GNS3 API it does not serve
    assert verdicts["AGUI-001"].verdict == Verdict.NOT_APPLICABLE  # a channel it does not declare
    assert verdicts["OPENAI-002"].verdict == Verdict.NOT_SELECTED  # a contract rule of its channel


def test_a_run_the_suite_could_not_do_keeps_the_profile():
    target = parse_target(channel_only())
    result = failed_run(target, "the target did not start", "details", 0.0, "now")
    result.checks = []
    result = profiled(result, "protocol")
    verdicts = {v.id: v.verdict for v in result.verdicts}
    assert verdicts["OPENAI-002"] == Verdict.NOT_SELECTED and result.passed is False and result.profile == "protocol"


# --- scenarios whose tool is not declared ---------------------------------------------------------------------------


def test_a_channel_only_target_without_tools_plays_only_the_scenarios_without_them(tmp_path):
    target = parse_target(channel_only())
    scripts = target_scripts(target, tmp_path / "scripts")
    assert undeclared_scenarios(target) == {
        "cs-tool": "single",
        "cs-parallel": "parallel",
        "cs-failing-tool": "failing",
        "cs-raising-tool": "raising",
        "cs-slow-tool": "slow",
        # the stream shapes that call a tool
        **dict.fromkeys(["cs-tool-whole", "cs-text-then-tool", "cs-no-usage", "cs-usage-in-finish"], "single"),
        **dict.fromkeys(["cs-parallel-one-chunk", "cs-parallel-interleaved"], "parallel"),
        "cs-long-history": "single",  # a turn of a hundred calls (UI-004 past the history's default limit)
        # the channels' aborts and disconnects: a call whose arguments stream slowly, text then a call
        **dict.fromkeys(["cs-slow-args", "cs-dribble-tool"], "single"),
    }
    assert not set(undeclared_scenarios(target)) & set(scripts)
    assert {"cs-plain", "cs-llm-error", "cs-mid-stream-error", "cs-unknown-tool", "cs-empty-deltas"} <= set(scripts)
    assert sorted(p.stem for p in (tmp_path / "scripts").glob("*.yaml")) == sorted(scripts)


def test_a_target_that_declares_every_tool_plays_every_scenario(tmp_path):
    target = load_target("reference")
    assert undeclared_scenarios(target) == {}
    expected = write_scripts(tmp_path / "a", target.tools, target.heartbeat_interval)
    assert target_scripts(target, tmp_path / "b") == expected


def _env(target, scripts) -> Environment:
    return Environment(target, "http://127.0.0.1:9", "http://127.0.0.1:9/v1", scripts, {}, None, None, None, None, None)


def test_a_check_stopped_by_an_undeclared_tool_makes_its_rule_not_applicable_with_the_reason(tmp_path):
    target = parse_target(channel_only())
    env = _env(target, target_scripts(target, tmp_path))

    async def needs_a_tool(ctx) -> None:
        ctx.message("cs-parallel")

    async def cannot(ctx) -> None:
        raise NotTestable("the target has no second user")

    checks = [CheckSpec("channels.x", needs_a_tool, ("CHANNEL-008",)), CheckSpec("channels.y", cannot, ("OPENAI-002",))]
    runs = [asyncio.run(run_check(check, env)) for check in checks]
    assert (
        runs[0].undeclared
        == "the scenario cs-parallel needs declarations.tools.parallel, which the target does not declare"
    )
    assert runs[1].undeclared is None
    result = profiled(judged_run(target, "", runs, {}, True, 0.0, "now"), "contract")
    verdicts = {v.id: v for v in result.verdicts}
    assert (verdicts["CHANNEL-008"].verdict, verdicts["CHANNEL-008"].note) == (
        Verdict.NOT_APPLICABLE,
        runs[0].undeclared,
    )
    assert verdicts["OPENAI-002"].verdict == Verdict.NOT_TESTABLE  # any other reason stays NOT TESTABLE


# --- preflight's advice to a channel-only target --------------------------------------------------------------------


def _misdeclared(target) -> TargetMisdeclared:
    return _no_generation(SimpleNamespace(target=target, fake_llm_url="http://127.0.0.1:9/v1"), "answered 200")


def test_a_start_command_without_the_fake_llm_url_is_named():
    data = channel_only(start={"command": ["my-server", "--port", "{port}"]})
    del data["base_url"]
    advice = _misdeclared(parse_target(data))
    assert advice.key == "start.command" and "lack the {fake_llm_url} placeholder" in advice.message
    assert "LLM configuration" not in advice.message


def test_a_running_server_is_told_to_use_the_fake_llm_port_not_an_llm_configuration():
    advice = _misdeclared(parse_target(channel_only()))
    assert advice.key == "fake_llm.port" and "LLM configuration" not in advice.message
    data = channel_only(start={"command": ["my-server", "--port", "{port}", "--llm", "{fake_llm_url}"]})
    del data["base_url"]
    advice = _misdeclared(parse_target(data))
    assert advice.key == "start.command" and "was given {fake_llm_url} but did not send" in advice.message


def test_a_gns3_target_is_still_told_about_its_users_llm_configuration():
    advice = _misdeclared(load_target("reference"))
    assert advice.key == "llm" and "users' LLM configuration" in advice.message


def test_a_server_whose_model_gets_no_tool_is_told_why_the_fake_llm_cannot_play_its_scenarios():
    ctx = SimpleNamespace(env=SimpleNamespace(target=parse_target(channel_only())))
    with pytest.raises(TargetMisdeclared) as raised:
        asyncio.run(_offers_tools(ctx, [{"step": None, "tools": []}], "answered 200"))
    assert raised.value.key == "declarations.tools" and "bind no tool" in raised.value.message


def test_a_refused_request_names_auth():
    assert "auth: {mode: tokens, tokens: {main: <token>}}" in _refused(parse_target(channel_only()), "POST /v1", 401)
    with_token = parse_target(channel_only(auth={"mode": "tokens", "tokens": {"main": "k"}}))
    assert "refuses the token of auth.tokens.main" in _refused(with_token, "POST /v1", 401)


def test_a_command_without_the_port_placeholder_is_named_when_the_server_does_not_start():
    assert "lack the {port} placeholder" in _start_advice({"command": ["my-server"]}, "/")
    assert "http://127.0.0.1:{port}/v1/models" in _start_advice({"command": ["srv"], "env": {"A": "b"}}, "/v1/models")
    assert _start_advice({"command": ["srv"], "env": {"PORT": "{port}"}}, "/") == ""


# --- the README's channel-only target -------------------------------------------------------------------------------

# A small OpenAI-compatible server: its model is the OpenAI base URL it is given, offered one tool of its own.
SERVER = """
import argparse

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.responses import StreamingResponse
from starlette.routing import Route

parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, required=True)
parser.add_argument("--llm-base-url", required=True)
options = parser.parse_args()
client = httpx.AsyncClient(base_url=options.llm_base_url, timeout=60, trust_env=False)
TOOL = {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}}}


async def forward(request):
    body = await request.json() if request.method == "POST" else None
    if isinstance(body, dict):
        body["tools"] = [TOOL]
    upstream = await client.send(
        client.build_request(request.method, request.url.path.removeprefix("/v1"), json=body), stream=True
    )
    headers = {k: v for k, v in upstream.headers.items() if k in ("content-type", "cache-control")}
    return StreamingResponse(upstream.aiter_raw(), status_code=upstream.status_code, headers=headers)


routes = [Route("/v1/chat/completions", forward, methods=["POST"]), Route("/v1/models", forward, methods=["GET"])]
uvicorn.run(Starlette(routes=routes), host="127.0.0.1", port=options.port, log_level="warning")
"""


@pytest.mark.slow  # starts the fake LLM and a server, and runs the protocol's checks
def test_the_readme_channel_only_target_runs_under_the_protocol_profile(tmp_path):
    data = yaml.safe_load(readme_example("yaml channel-only-target"))
    assert data["start"]["command"][0] == "my-openai-server" and "declarations" not in data
    (tmp_path / "my_openai_server.py").write_text(SERVER, encoding="utf-8")
    data["start"]["command"][:1] = [sys.executable, str(tmp_path / "my_openai_server.py")]
    (tmp_path / "my-server.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    command = readme_command(".venv/bin/copilot-conformance run --target my-server.yaml")
    completed = subprocess.run(
        [str(ROOT / command[0]), *command[1:]], cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert completed.returncode in (0, 1), completed.stdout[-3000:] + completed.stderr[-3000:]
    report = json.loads((tmp_path / "reports" / "conformance.json").read_text())
    assert report["profile"] == "protocol" and report["harness_error"] is None
    verdicts = {r["id"]: r for r in report["requirements"]}
    for record in RECORDS:
        entry = verdicts[record["id"]]
        if record["id"] in PROTOCOL_IDS and record.get("capability") in OPENAI_CAPABILITIES:
            assert entry["verdict"] not in ("N/A", "NOT SELECTED", "ERROR"), entry  # judged
        elif record.get("capability") in OPENAI_CAPABILITIES:  # the contract's rules of its channel
            assert entry["verdict"] == "NOT SELECTED" and "profile protocol" in entry["note"], entry
        else:
            assert entry["verdict"] in ("N/A", "EXCLUDED", "NOT SELECTED"), entry
    assert not any(r["verdict"] == "FAIL" for r in report["requirements"] if r["id"] not in PROTOCOL_IDS)
    assert httpx.URL(report["base_url"]).host == "127.0.0.1"


def test_the_pytest_plugin_skips_what_its_profile_leaves_out_without_a_run(tmp_path):
    (tmp_path / "co.yaml").write_text(yaml.safe_dump(channel_only()), encoding="utf-8")
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--pyargs", "conformance"]
    command += ["--copilot-target", "co.yaml", "--copilot-profile", "protocol", "-k", "CHANNEL-008 or TITLE-003", "-rs"]
    completed = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stdout[-3000:]
    assert "NOT SELECTED: not selected by the profile protocol" in completed.stdout  # CHANNEL-008
    assert "N/A: the target does not serve the GNS3 chat API" in completed.stdout  # TITLE-003
    assert "2 skipped" in completed.stdout and not (tmp_path / "reports").exists()
