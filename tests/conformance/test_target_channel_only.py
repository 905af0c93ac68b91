"""A channel-only target (an OpenAI-compatible, UI message stream or AG-UI server with nothing of GNS3): its file
needs no GNS3 declaration, a path at the server's own root is fine, tools are declared only for the scenarios that
need them, and what is wrong with the file is said clearly."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from conformance.harness.environment import Environment
from conformance.harness.target import DEFAULT_HEARTBEAT_INTERVAL, TargetError, load_target, parse_target

REPO = Path(__file__).resolve().parents[2]


def channel_only(**channels) -> dict:
    """The least a channel-only target file says: its name, where the server is, where its channel is."""
    return {
        "name": "my-server",
        "base_url": "http://127.0.0.1:8000",
        "channels": channels or {"openai": {"path": "/v1"}},
    }


def problem(data) -> str:
    with pytest.raises(TargetError) as raised:
        parse_target(data)
    return str(raised.value)


def test_a_minimal_channel_only_target_is_valid_and_declares_nothing_of_gns3():
    target = parse_target(channel_only())
    assert not target.serves_gns3 and target.default_profile == "protocol"
    assert target.capabilities == {"channel_openai", "openai_responses", "openai_models"}  # every endpoint
    assert target.auth == {"mode": "none"} and target.llm == {"mode": "preconfigured"}
    assert target.tools == {} and target.declarations == {}
    assert target.heartbeat_interval == DEFAULT_HEARTBEAT_INTERVAL and target.title_counts_in_stats is True
    assert target.ready_path == "/"  # not the GNS3 API's /v3/version


def test_a_target_with_the_gns3_api_defaults_to_the_contract_profile():
    assert load_target("reference").default_profile == "contract"
    assert load_target("reference").ready_path == "/v3/version"


@pytest.mark.parametrize("path", sorted((REPO / "peers" / "targets").glob("*.yaml")), ids=lambda p: p.stem)
def test_the_peers_are_channel_only_targets_judged_on_the_protocol_by_default(path):
    target = load_target(str(path))
    assert not target.serves_gns3 and target.default_profile == "protocol"


@pytest.mark.parametrize(
    ("path", "url"),
    [
        ("/", "http://127.0.0.1:8000/chat/completions"),  # the routes at the server's own root
        ("/v1/", "http://127.0.0.1:8000/v1/chat/completions"),
        ("/api/openai", "http://127.0.0.1:8000/api/openai/chat/completions"),
    ],
)
def test_a_channel_path_at_the_servers_own_root(path, url):
    from conformance.channels.endpoints import OpenAIChat

    target = parse_target(channel_only(openai={"path": path}))
    env = Environment(target, "http://127.0.0.1:8000", "", {}, {}, None, None, None, None, httpx.AsyncClient())
    assert env.base_url + env.channel_path("openai") + OpenAIChat.suffix == url


def test_ui_and_ag_ui_paths_at_the_root():
    target = parse_target(channel_only(ui={"path": "/api/chat"}, ag_ui={"path": "/api/ag-ui"}))
    assert target.channels == {"ui": {"path": "/api/chat"}, "ag_ui": {"path": "/api/ag-ui"}}
    assert target.capabilities == {"channel_ui", "channel_ag_ui"}


@pytest.mark.parametrize(
    ("path", "base"),
    [("/v1/chat/completions", "'/v1'"), ("/v1/responses/", "'/v1'"), ("/models", "'/'")],
)
def test_an_openai_path_that_names_an_endpoint_is_refused_with_the_base_to_give(path, base):
    message = problem(channel_only(openai={"path": path}))
    assert f"channels.openai.path: {path!r} names the endpoint" in message
    assert f"give the base the suite appends /chat/completions, /responses, /models to: {base}" in message


def test_tools_are_declared_only_for_the_scenarios_that_need_them():
    data = channel_only()
    data["declarations"] = {"tools": {"failing": {"name": "broken", "arguments": {}}}}
    assert parse_target(data).tools == {"failing": {"name": "broken", "arguments": {}}}


def test_a_token_for_one_user_is_enough_for_a_channel_only_target():
    data = channel_only()
    data["auth"] = {"mode": "tokens", "tokens": {"main": "sk-key"}}
    assert parse_target(data).auth["tokens"] == {"main": "sk-key"}
    data["channels"] = {"gns3": {}}  # the GNS3 chat API's isolation rules need a second user
    assert "auth.tokens.other (a second user: the isolation rules need one) is required" in problem(data)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda d: d.update(channels={}), "channels: {} should be non-empty"),
        (lambda d: d.update(channels={"openai": {"path": "v1"}}), "channels/openai/path: 'v1' does not match"),
        (lambda d: d.update(channels={"grpc": {"path": "/x"}}), "'grpc' was unexpected"),
        (lambda d: d.update(channels={"ui": {"path": "/ui", "model": "m"}}), "'model' was unexpected"),
        (lambda d: d.update(declarations={"heartbeat_interval": 0}), "declarations/heartbeat_interval: 0 is less"),
        (lambda d: d.update(declarations={"tools": {"single": {"name": "x"}}}), "'arguments' is a required property"),
        (lambda d: d.update(declarations={"tool": {}}), "'tool' was unexpected"),
        (lambda d: d.update(auth={"mode": "tokens", "tokens": {}}), "auth/tokens: 'main' is a required property"),
        (lambda d: d.update(auth={"mode": "oauth"}), "auth/mode: 'oauth' is not one of 'controller', 'tokens', 'none'"),
        (lambda d: d.pop("base_url"), "give exactly one of `base_url` (a running server) and `start` (a command)"),
        (lambda d: d.update(start={"command": ["srv", "--port", "{port}"]}), "give exactly one of"),
    ],
    ids=[
        "no-channel",
        "relative-path",
        "unknown-channel",
        "unknown-channel-key",
        "zero-heartbeat",
        "tool-without-arguments",
        "unknown-declaration",
        "tokens-without-main",
        "unknown-auth-mode",
        "no-server",
        "both-base-url-and-start",
    ],
)
def test_bad_channel_only_input_is_named_with_its_place(change, expected):
    data = channel_only()
    change(data)
    assert expected in problem(data)


def test_a_ready_path_must_be_a_path():
    data = channel_only()
    del data["base_url"]
    data["start"] = {"command": ["srv", "--port", "{port}"], "ready_path": "health"}
    assert "start/ready_path: 'health' does not match '^/'" in problem(data)


def test_a_channel_under_the_chat_prefix_still_needs_the_prefix_and_nothing_else():
    data = channel_only(openai={"path": "{chat_prefix}/openai/v1"})
    assert (
        problem(data)
        == "target: `chat_prefix` is required when the target serves the GNS3 chat API or a channel under it"
    )
    data["chat_prefix"] = "/v3/projects/{project_id}/chat"
    assert parse_target(data).default_profile == "protocol"


def test_an_openai_server_of_chat_completions_alone_lists_its_endpoints():
    """A server without /responses or /models says so; the rules of what it does not serve are N/A with the reason,
    never a protocol failure, and the suite sends nothing there."""
    from conformance.channels.endpoints import declared
    from conformance.harness.findings import not_applicable
    from gns3_copilot_spec import load_requirements

    target = parse_target(channel_only(openai={"path": "/v1", "endpoints": ["chat_completions"]}))
    assert target.capabilities == {"channel_openai"} and target.openai_endpoints == ("chat_completions",)
    assert [e.name for e in declared(target.channels)] == ["openai_chat"]
    records = {r["id"]: r for r in load_requirements()["requirements"]}
    for rid in ("OPENAI-PROTO-007", "OPENAI-PROTO-008", "OPENAI-PROTO-009", "OPENAI-005", "OPENAI-006"):
        assert not_applicable(records[rid], target.capabilities) == (
            "the target's channels.openai.endpoints does not list responses"
        ), rid
    for rid in ("OPENAI-PROTO-010", "OPENAI-007"):
        assert "does not list models" in not_applicable(records[rid], target.capabilities), rid
    for rid in ("OPENAI-PROTO-002", "OPENAI-PROTO-006", "OPENAI-001"):
        assert not_applicable(records[rid], target.capabilities) is None, rid
    no_openai = parse_target(channel_only(ag_ui={"path": "/ag-ui"}))
    assert (
        not_applicable(records["OPENAI-PROTO-009"], no_openai.capabilities)
        == "capability `channel_openai` not declared"
    )


@pytest.mark.parametrize(
    ("endpoints", "says"),
    [([], "should be non-empty"), (["chat"], "is not one of"), (["models", "models"], "non-unique elements")],
)
def test_a_wrong_endpoints_list_is_refused_clearly(endpoints, says):
    text = problem(channel_only(openai={"path": "/v1", "endpoints": endpoints}))
    assert "endpoints" in text and says in text, text
