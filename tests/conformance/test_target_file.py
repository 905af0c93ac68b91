"""The target file is validated up front, and every problem is reported with where and why."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from conformance.harness.target import BUILTIN_TARGETS, TargetError, load_baseline, load_target, parse_target


def minimal() -> dict:
    return {
        "name": "my-server",
        "base_url": "http://127.0.0.1:3080",
        "chat_prefix": "/v3/projects/{project_id}/chat",
        "auth": {"mode": "tokens", "tokens": {"main": "t-main", "other": "t-other"}},
        "projects": {"mode": "fixed", "opened": "p1", "closed": "p2"},
        "llm": {"mode": "preconfigured"},
        "declarations": {
            "heartbeat_interval": 1,
            "title_counts_in_stats": True,
            "capabilities": [],
            "tools": {"single": {"name": "get_topology", "arguments": {}}},
        },
    }


def problem(data, path: Path | None = None) -> str:
    with pytest.raises(TargetError) as raised:
        parse_target(data, path=path)
    return str(raised.value)


def test_a_minimal_target_is_valid():
    target = parse_target(minimal())
    assert target.name == "my-server"
    assert target.channels == {"gns3": {}}  # the GNS3 chat API alone, by default
    assert target.capabilities == {"channel_gns3"}
    assert target.baseline.known_failures == {} and target.baseline.not_testable == {}


@pytest.mark.parametrize("path", sorted(BUILTIN_TARGETS.glob("*.yaml")), ids=lambda p: p.stem)
def test_every_built_in_target_is_valid(path):
    assert load_target(path.stem).path == path.resolve()


def test_the_default_target_is_the_reference_server():
    target = load_target(None)
    assert target.name == "reference-server"
    assert target.capabilities == {
        "abort",
        "temperature_override",
        "db_access",
        "channel_gns3",
        "channel_openai",
        "openai_responses",  # its OpenAI channel serves every endpoint (channels.openai.endpoints left out)
        "openai_models",
        "channel_ui",
        "channel_ag_ui",
        "controller_auth",  # its users log in through its GNS3-style controller (auth: controller)
    }


def test_an_unknown_key_is_named():
    data = minimal()
    data["colour"] = "blue"
    message = problem(data, Path("/x/my.yaml"))
    assert "/x/my.yaml is not a valid target file" in message
    assert "'colour'" in message and "not allowed" in message


def test_an_unknown_declaration_is_named_with_its_place():
    data = minimal()
    data["declarations"]["streaming"] = True
    message = problem(data)
    assert "declarations: " in message and "'streaming'" in message


def test_missing_declarations():
    data = minimal()
    del data["declarations"]
    assert (
        "`declarations` (heartbeat_interval, title_counts_in_stats, capabilities, tools) is required when the "
        "target serves the GNS3 chat API" in problem(data)
    )


def test_a_missing_declaration_is_named():
    data = minimal()
    del data["declarations"]["heartbeat_interval"]
    message = problem(data)
    assert "declarations.heartbeat_interval is required when the target serves the GNS3 chat API" in message


def test_every_missing_gns3_declaration_is_listed_at_once():
    data = minimal()
    for key in ("auth", "llm", "projects"):
        del data[key]
    del data["declarations"]["tools"]["single"]
    message = problem(data)
    assert message.startswith("target is not a valid target file:\n")
    for key in ("`projects`", "`auth`", "`llm`", "declarations.tools.single"):
        assert f"  - {key}" in message, key


@pytest.mark.parametrize("prefix", ["/v3/chat", "v3/projects/{project_id}/chat", "/v3/projects/{project_id}/chat/"])
def test_a_bad_chat_prefix(prefix):
    data = minimal()
    data["chat_prefix"] = prefix
    message = problem(data)
    assert message.splitlines()[1].startswith("  - chat_prefix: ")
    assert repr(prefix) in message


def test_the_controller_rule_applies_only_where_users_log_in_through_a_controller():
    """CONTROLLER-001 needs `controller_auth`, which only `auth: controller` gives: with tokens it is N/A."""
    from conformance import requirement
    from conformance.harness.findings import not_applicable

    rule = requirement("CONTROLLER-001")
    with_tokens = parse_target(minimal())
    assert "controller_auth" not in with_tokens.capabilities
    assert "controller_auth" in (not_applicable(rule, with_tokens.capabilities) or "")
    assert not_applicable(rule, load_target(None).capabilities) is None


def test_an_unknown_capability():
    data = minimal()
    data["declarations"]["capabilities"] = ["abort", "teleport"]
    message = problem(data)
    assert "declarations/capabilities/1" in message and "'teleport'" in message


def test_both_base_url_and_start():
    data = minimal()
    data["start"] = {"command": ["my-server"]}
    assert "give exactly one of `base_url` (a running server) and `start` (a command)" in problem(data)


def test_neither_base_url_nor_start():
    data = minimal()
    del data["base_url"]
    assert "give exactly one of `base_url`" in problem(data)


def test_a_base_url_that_is_not_http():
    data = minimal()
    data["base_url"] = "127.0.0.1:3080"
    assert "base_url: '127.0.0.1:3080' does not match" in problem(data)


def test_db_access_without_a_database():
    data = minimal()
    data["declarations"]["capabilities"] = ["db_access"]
    assert "capability db_access needs declarations.database.project_dir" in problem(data)
    data["declarations"]["database"] = {"project_dir": "/srv/projects/{project_id}"}
    assert parse_target(data).capabilities == {"db_access", "channel_gns3"}


def test_every_problem_is_listed_at_once():
    data = minimal()
    data["colour"] = "blue"
    data["chat_prefix"] = "/nope"
    message = problem(data)
    assert "colour" in message and "chat_prefix" in message
    assert len([line for line in message.splitlines() if line.startswith("  - ")]) == 2


def test_auth_with_a_mode_and_the_wrong_fields():
    data = minimal()
    data["auth"] = {"mode": "tokens", "tokens": {"main": "a"}}
    assert "auth" in problem(data)


def test_a_baseline_is_read_relative_to_the_target_file(tmp_path):
    (tmp_path / "baseline.yaml").write_text(
        yaml.safe_dump(
            {
                "target": "my-server",
                "known_failures": {"FRAME-004": "no cache-control header yet"},
                "not_testable": {"DB-001": "the database is remote"},
            }
        )
    )
    data = minimal()
    data["baseline"] = "baseline.yaml"
    target = parse_target(data, path=tmp_path / "my.yaml")
    assert target.baseline.known_failures == {"FRAME-004": "no cache-control header yet"}
    assert target.baseline.not_testable == {"DB-001": "the database is remote"}
    assert target.baseline.source == str(tmp_path / "baseline.yaml")


def test_a_missing_baseline_file(tmp_path):
    data = minimal()
    data["baseline"] = "missing.yaml"
    message = problem(data, tmp_path / "my.yaml")
    assert message.startswith(f"baseline {tmp_path / 'missing.yaml'}: ")
    assert "No such file" in message


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("known_failures: [FRAME-004]\n", "`known_failures` maps requirement ids to a one-line reason each"),
        ("known_failures:\n  FRAME-004:\n", "`known_failures` maps requirement ids to a one-line reason each"),
        ("not_testable:\n  DB-001: ''\n", "`not_testable` maps requirement ids to a one-line reason each"),
        ("known_failure:\n  FRAME-004: typo in the key\n", "expected the keys target, known_failures, not_testable"),
        ("- FRAME-004\n", "expected the keys target, known_failures, not_testable"),
        ("known_failures: {FRAME-004: [unclosed\n", "baseline "),
    ],
)
def test_baseline_problems(tmp_path, content, expected):
    path = tmp_path / "baseline.yaml"
    path.write_text(content)
    with pytest.raises(TargetError) as raised:
        load_baseline(path)
    assert expected in str(raised.value)
    assert str(path) in str(raised.value)


def test_an_unknown_target_name_lists_the_built_in_ones():
    with pytest.raises(TargetError) as raised:
        load_target("no-such-target")
    message = str(raised.value)
    assert "no target file 'no-such-target' and no built-in target of that name" in message
    assert "'reference'" in message


def test_a_target_file_that_is_not_yaml(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("name: [unclosed\n")
    with pytest.raises(TargetError) as raised:
        load_target(str(path))
    assert str(path) in str(raised.value)


def test_a_target_file_that_is_not_a_mapping(tmp_path):
    path = tmp_path / "list.yaml"
    path.write_text("- a\n- b\n")
    with pytest.raises(TargetError) as raised:
        load_target(str(path))
    assert "is not a valid target file" in str(raised.value)


def test_a_target_file_loaded_by_path(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(minimal()))
    target = load_target(str(path))
    assert target.name == "my-server" and target.path == path.resolve()
    assert target.data == parse_target(copy.deepcopy(minimal())).data


def channel_only() -> dict:
    """A peer serving one protocol: no chat prefix, no projects, nobody authenticated."""
    data = minimal()
    for key in ("chat_prefix", "projects"):
        del data[key]
    data["auth"] = {"mode": "none"}
    data["channels"] = {"ag_ui": {"path": "/ag-ui"}}
    return data


def test_a_target_may_serve_a_channel_only():
    target = parse_target(channel_only())
    assert not target.serves_gns3
    assert target.capabilities == {"channel_ag_ui"}


def test_the_gns3_api_needs_a_chat_prefix_and_projects():
    data = channel_only()
    data["channels"]["gns3"] = {}
    assert "`chat_prefix` is required" in problem(data)
    data["chat_prefix"] = "/v3/projects/{project_id}/chat"
    assert "`projects` is required" in problem(data)


def test_a_channel_under_the_chat_prefix_needs_it():
    data = channel_only()
    data["channels"] = {"openai": {"path": "{chat_prefix}/openai/v1"}}
    assert "`chat_prefix` is required" in problem(data)


def test_nobody_authenticated_is_only_for_a_target_without_the_gns3_api():
    data = minimal()
    data["auth"] = {"mode": "none"}
    assert "auth.mode none" in problem(data)


@pytest.mark.parametrize(
    ("channels", "expected"),
    [
        ({"openai": {"path": "v1"}}, "does not match"),  # neither absolute nor under {chat_prefix}
        ({"openai": {}}, "'path' is a required property"),
        ({"smoke_signals": {"path": "/x"}}, "'smoke_signals' was unexpected"),
        ({}, "should be non-empty"),
    ],
)
def test_a_wrong_channel_declaration_is_named(channels, expected):
    data = channel_only()
    data["channels"] = channels
    assert expected in problem(data)


def test_a_postgresql_target_makes_the_sqlite_file_rules_not_applicable_with_the_reason():
    """declarations.database.engine postgresql: DB-*, MIGRATION-* and SECRET-* (capability db_access, about the
    per-project SQLite file) are N/A with that reason, not FAIL and not the generic "capability not declared"."""
    import gns3_copilot_spec as spec
    from conformance.harness.findings import NOT_THE_SQLITE_FILE, Verdict, judge, not_applicable

    data = minimal()
    data["declarations"]["database"] = {"engine": "postgresql"}
    target = parse_target(data)
    assert target.database_engine == "postgresql"
    records = spec.load_requirements()["requirements"]
    sqlite_rules = {r["id"] for r in records if r.get("capability") == "db_access"}
    assert {"DB-001", "DB-007", "MIGRATION-001", "SECRET-001", "SECRET-002"} <= sqlite_rules
    for record in records:
        reason = not_applicable(record, target.capabilities)
        if record["id"] in sqlite_rules:
            assert reason == NOT_THE_SQLITE_FILE
            verdict = judge(record, [], capabilities=target.capabilities, known_failures={}, accepted_not_testable={})
            assert (verdict.verdict, verdict.note) == (Verdict.NOT_APPLICABLE, NOT_THE_SQLITE_FILE)
        else:
            assert reason != NOT_THE_SQLITE_FILE
    assert "PostgreSQL (declarations.database.engine)" in NOT_THE_SQLITE_FILE
    # An SQLite target keeps its reasons as they were.
    assert parse_target(minimal()).database_engine == "sqlite"
    assert not_applicable(spec.load_requirements()["requirements"][0], parse_target(minimal()).capabilities) is None
    assert load_target("reference-postgres").database_engine == "postgresql"


def test_db_access_cannot_go_with_postgresql():
    data = minimal()
    data["declarations"]["capabilities"] = ["db_access"]
    data["declarations"]["database"] = {"engine": "postgresql"}
    message = problem(data)
    assert "capability db_access means the suite reads the per-project SQLite file" in message
    assert "PostgreSQL (engine: postgresql) cannot declare it" in message


@pytest.mark.parametrize(
    "database",
    [{"engine": "postgresql", "project_dir": "/srv/{project_id}"}, {"engine": "mysql"}, {"engine": "sqlite"}],
    ids=["postgresql-with-a-project-dir", "an-unknown-engine", "sqlite-without-a-project-dir"],
)
def test_a_database_declaration_of_neither_form(database):
    data = minimal()
    data["declarations"]["database"] = database
    assert "declarations/database" in problem(data)


def test_an_sqlite_database_may_name_its_engine():
    data = minimal()
    data["declarations"]["database"] = {"engine": "sqlite", "project_dir": "/srv/projects/{project_id}"}
    data["declarations"]["capabilities"] = ["db_access"]
    assert parse_target(data).database_engine == "sqlite"


def test_the_launcher_placeholder_is_left_as_written_and_an_unknown_one_is_refused():
    from conformance.harness.provisioning import _fill

    data = minimal()
    del data["base_url"]
    data["start"] = {
        "command": ["{python}", "{repo}/tools/with_postgres.py", "--", "srv", "--db", "{database_url}"],
        "env": {"HOME": "{workdir}"},
    }
    parse_target(data)
    mapping = {"python": "py", "port": "1", "workdir": "/w", "fake_llm_url": "u", "repo": "/r"}
    assert [_fill(part, mapping) for part in data["start"]["command"]] == [
        "py",
        "/r/tools/with_postgres.py",
        "--",
        "srv",
        "--db",
        "{database_url}",
    ]
    data["start"]["command"].append("{databse_url}")
    data["start"]["env"]["DATA"] = "{workdri}/data"
    message = problem(data)
    assert "start/command/6: unknown placeholder {databse_url}" in message
    assert "start/env/DATA: unknown placeholder {workdri}" in message
    assert "leaves {database_url} for a launcher in the command to fill" in message
