"""Preflight: a target file that is wrong about the server stops the run before any check, with exit code 2 and
one message naming the key to change (never dozens of FAILs). Each case runs against one reference server, started
for the module and reached through the target file's base_url (each run removes what it made)."""

from __future__ import annotations

import json
import time

import pytest
import yaml
from click.testing import CliRunner

from conformance.checks import select
from conformance.cli import cli
from conformance.harness.processes import free_port
from tests.reference_server.conftest import start_server_process


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    started = start_server_process(tmp_path_factory.mktemp("preflight") / "data", "--heartbeat-interval", "1")
    yield started
    started.stop()


def target_file(tmp_path, change, server) -> str:
    """The built-in target's declarations, pointed at `server`, with `change` made."""
    data = server.target_data("misdeclared")
    change(data)
    path = tmp_path / "target.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return str(path)


def run_preflight(tmp_path, change, server):
    started = time.monotonic()
    result = CliRunner().invoke(
        cli,
        [
            "run",
            "--target",
            target_file(tmp_path, change, server),
            "--report-dir",
            str(tmp_path / "reports"),
            "--quiet",
        ],
        prog_name="copilot-conformance",
    )
    print(f"\npreflight stopped the run after {time.monotonic() - started:.1f} s")
    return result


def _wrong_prefix(data):
    data["chat_prefix"] = "/v3/copilot/projects/{project_id}/chat"


def _tool_not_offered(data):
    data["declarations"]["tools"]["single"] = {"name": "no_such_tool", "arguments": {}}


def _second_parallel_tool_not_offered(data):
    data["declarations"]["tools"]["parallel"][1] = {"name": "missing_tool", "arguments": {}}


def _slow_tool_that_is_quick(data):
    data["declarations"]["tools"]["slow"] = {"name": "get_topology", "arguments": {"detail": "summary"}}


def _failing_tool_that_succeeds(data):
    data["declarations"]["tools"]["failing"] = {"name": "get_topology", "arguments": {"detail": "summary"}}


def _raising_tool_that_does_not_raise(data):
    data["declarations"]["tools"]["raising"] = {"name": "wait_seconds", "arguments": {"seconds": 0}}


def _llm_not_pointed_at_the_fake_llm(data):
    data["llm"] = {"mode": "preconfigured"}  # nobody configures the users' LLM: turns never reach the fake LLM


def _wrong_port(data):
    data["base_url"] = f"http://127.0.0.1:{free_port()}"  # nothing listens there


def _unresolvable_host(data):
    data["base_url"] = "http://no-such-host.invalid:3080"  # .invalid never resolves (RFC 2606)


def _wrong_admin_password(data):
    data["auth"]["admin"]["password"] = "not-the-admin-password"


def _database_folder_that_does_not_exist(data):
    data["declarations"]["database"]["project_dir"] = "/nonexistent-conformance/{project_id}"


def _no_access_control(data):
    del data["access_control"]  # the server's RBAC then refuses the suite's users the projects its admin made


def _three_tools_not_offered(data):
    tools = data["declarations"]["tools"]
    tools["single"]["name"], tools["slow"]["name"], tools["parallel"][1]["name"] = "nope_a", "nope_b", "nope_c"


def _url(path):
    """What the message must show of a URL tried: the target's base_url (as changed) with `path`."""
    return lambda data: data["base_url"] + path


# Each case: the change, the key to change, and what the message must show of what was tried (from the target file
# as changed): the URL, the path, or the value.
CASES = {
    "wrong-port": (_wrong_port, "base_url", _url("")),
    "unresolvable-host": (_unresolvable_host, "base_url", _url("")),
    "wrong-admin-password": (_wrong_admin_password, "auth.admin", _url("/v3/access/users/authenticate as 'admin'")),
    "no-database-folder": (
        _database_folder_that_does_not_exist,
        "declarations.database.project_dir",
        lambda data: "/nonexistent-conformance/",  # the folder of the run's own project, then the declared value
    ),
    "no-access-control": (_no_access_control, "access_control", _url("/v3/projects/")),
    "three-tools-not-offered": (_three_tools_not_offered, "declarations.tools", lambda data: "names 'nope_a'"),
    "wrong-prefix": (_wrong_prefix, "chat_prefix", _url("/v3/copilot/projects/")),
    "tool-not-offered": (_tool_not_offered, "declarations.tools.single", lambda data: "'no_such_tool'"),
    "parallel-tool-not-offered": (
        _second_parallel_tool_not_offered,
        "declarations.tools.parallel[1]",
        lambda data: "names 'missing_tool'",
    ),
    "quick-slow-tool": (_slow_tool_that_is_quick, "declarations.tools.slow", lambda data: "calling 'get_topology'"),
    "failing-tool-succeeds": (
        _failing_tool_that_succeeds,
        "declarations.tools.failing",
        lambda data: "calling 'get_topology'",
    ),
    "raising-tool-does-not-raise": (
        _raising_tool_that_does_not_raise,
        "declarations.tools.raising",
        lambda data: "calling 'wait_seconds'",
    ),
    "llm-not-routed": (
        _llm_not_pointed_at_the_fake_llm,
        "llm",
        lambda data: "the suite's fake LLM at http://127.0.0.1:",
    ),
}


@pytest.mark.parametrize(("change", "key", "tried"), list(CASES.values()), ids=list(CASES))
@pytest.mark.slow  # whole suite runs or servers: left out of --quick
def test_a_misdeclared_target_stops_at_preflight_with_exit_2_naming_the_key(tmp_path, change, key, tried, server):
    result = run_preflight(tmp_path, change, server)
    said = " ".join(result.output.split())  # the message as one line, however the terminal wrapped it
    assert result.exit_code == 2, result.output
    assert f"change the target file: {key}: " in said
    data = yaml.safe_load((tmp_path / "target.yaml").read_text(encoding="utf-8"))
    assert tried(data) in said, said
    assert "Traceback" not in result.output and "FAIL" not in result.output
    assert not (tmp_path / "reports").exists()  # nothing was judged, so nothing is reported
    assert server.what_is_on() == {"users": ["admin"], "projects": []}  # what the run made went again
    if change is _three_tools_not_offered:  # every mismatch at once, each with its key and the name it gave
        for wrong, name in (("single", "nope_a"), ("slow", "nope_b"), ("parallel[1]", "nope_c")):
            assert f"declarations.tools.{wrong} names {name!r}" in said


@pytest.mark.slow  # a suite run: left out of --quick
def test_the_slow_tool_is_measured_only_for_a_run_whose_checks_play_it(tmp_path, server):
    """A run of checks that never play the slow tool does not wait for it: a slow tool that is quick passes preflight
    there (no verdict depends on it), and stops a run that plays it (the test above)."""
    result = CliRunner().invoke(
        cli,
        ["run", "--target", target_file(tmp_path, _slow_tool_that_is_quick, server), "--only", "titles",
         "--report-dir", str(tmp_path / "reports"), "--quiet"],
        prog_name="copilot-conformance",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert not any(spec.slow_tool for spec in select(["titles"]))
    assert {spec.id for spec in select(None) if spec.slow_tool} >= {"abort.running_turn", "channels.abort"}


@pytest.mark.covers("TOOLCALL-008")
@pytest.mark.slow  # a suite run: left out of --quick
def test_without_a_raising_tool_its_case_of_toolcall_008_is_not_judged_and_says_why(tmp_path, server):
    """A target that declares no raising tool: TOOLCALL-008's other cases are played, and the rule is not PASS (its
    state of a tool that raises was not judged) but N/A, naming the key to declare."""
    path = target_file(tmp_path, lambda data: data["declarations"]["tools"].pop("raising"), server)
    result = CliRunner().invoke(
        cli,
        ["run", "--target", path, "--only", "tool_calls.failing_tool", "--report-dir", str(tmp_path / "reports"),
         "--quiet"],
        prog_name="copilot-conformance",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "reports" / "conformance.json").read_text(encoding="utf-8"))
    verdict = next(r for r in report["requirements"] if r["id"] == "TOOLCALL-008")
    assert verdict["verdict"] == "N/A", verdict
    assert "declarations.tools.raising" in json.dumps(verdict)
