"""The OpenAI rules in two voices, on what langgraph-openai-serve 0.31 really answered (tests/conformance/fixtures/
openai/, recorded by record_langgraph_openai_serve.sh; README.md there): its two real protocol defects come out as
protocol findings (OPENAI-PROTO-001: standard members refused; OPENAI-PROTO-002 / -009: a turn whose text precedes a
tool call fails), and the verdicts the protocol contradicts are gone (OPENAI-004: `misalignment`, `code: null`, 404
typed `invalid_request_error`; OPENAI-005: a null metadata value sent by the suite)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from conformance.channels.endpoints import STREAMING, ChannelAnswer
from conformance.rules import official
from conformance.rules import openai as rules_openai
from conformance.rules.expected import ExpectedTurn, expected_turn
from conformance.rules.openai_bodies import error_problems, response_problems
from conformance.rules.openai_requests import (
    chat_contract_accepted,
    chat_standard,
    not_served,
    responses_standard,
    session_metadata,
)
from conformance.rules.openai_responses import judge_responses
from conformance.rules.scenarios import PLAIN_TEXT, scenario_scripts
from conformance.transport.exchanges import Exchange
from conformance.transport.sse import parse

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "openai"
PEER = "langgraph-openai-serve-0.31"
TARGET = Path(__file__).resolve().parents[2] / "peers" / "targets" / f"{PEER}.yaml"
SCRIPTS = scenario_scripts(yaml.safe_load(TARGET.read_text())["declarations"]["tools"], 5)


def recorded(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{PEER}-{name}.json").read_text(encoding="utf-8"))


def exchange(name: str) -> Exchange:
    record = recorded(name)
    return Exchange(
        record["method"],
        f"http://peer{record['path']}",
        record["request"],
        status=record["status"],
        body=record["body"],
    )


def answer(name: str) -> ChannelAnswer:
    record = recorded(name)
    chosen = STREAMING["openai_responses" if record["path"].endswith("/responses") else "openai_chat"]
    streamed = record["headers"].get("content-type", "").startswith("text/event-stream")
    return ChannelAnswer(
        chosen,
        exchange(name),
        headers=record["headers"],
        sse=parse(record["body"]) if streamed else None,
        completed=True,
        raw=record["body"],
    )


def expected(script: str) -> ExpectedTurn:
    return expected_turn(SCRIPTS, script)


def protocol(found: list[Any]) -> list[str]:
    return sorted({v.requirement for v in found if v.requirement.startswith("OPENAI-PROTO-")})


# --- the two real defects, as protocol findings ---------------------------------------------------------------


@pytest.mark.parametrize("member", ["temperature", "n1", "max-completion-tokens", "developer"])
def test_a_refused_standard_member_is_an_openai_proto_001_finding(member: str):
    """It answers 400 `Extra inputs are not permitted` (or a developer role not allowed): the protocol's, not only
    the contract's. The requests check sends each of these members in a request of its own."""
    refused = answer(f"chat-{member}")
    assert refused.status == 400
    found = not_served("OPENAI-PROTO-001", member, refused)
    assert [v.requirement for v in found] == ["OPENAI-PROTO-001"]
    sent = {
        json.dumps(body, sort_keys=True) for body in chat_standard(lambda label, **m: {"messages": [], **m}).values()
    }
    request = json.loads(recorded(f"chat-{member}")["request"])
    standard = {k: v for k, v in request.items() if k not in ("model", "stream", "stream_options")}
    if member == "developer":
        assert any('"developer"' in body for body in sent)
    else:
        assert (
            json.dumps({"messages": [], **{k: v for k, v in standard.items() if k != "messages"}}, sort_keys=True)
            in sent
        )


def test_a_system_message_is_served_by_the_peer():
    assert not_served("OPENAI-PROTO-001", "a system message", answer("chat-system")) == []


def test_text_before_a_tool_call_fails_the_chat_stream_as_a_protocol_finding():
    """cs-parallel streams "Checking both." and two tool calls in one generation; the peer ends the stream with an
    error frame: a completion the fake LLM finished became an error (the `openai` client raises APIError)."""
    found = rules_openai.judge_chat(answer("chat-text-then-tool"), expected("cs-parallel"))
    assert protocol(found) == ["OPENAI-PROTO-002"], [str(v) for v in found]  # the error waives the finish chunk
    assert any("where the fake LLM completed the turn" in v.message for v in found)


def test_text_before_a_tool_call_fails_the_responses_stream_as_a_protocol_finding():
    found = judge_responses(answer("responses-text-then-tool"), expected("cs-parallel"))
    assert protocol(found) == ["OPENAI-PROTO-009"], [str(v) for v in found]
    assert any("where the fake LLM completed the turn" in v.message for v in found)


# --- and nothing else of the peer is a protocol finding -------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "script", "include_usage"),
    [("chat-plain", "cs-plain", True), ("chat-system", "cs-plain", False), ("chat-llm-error", "cs-llm-error", True)],
)
def test_the_peer_s_other_chat_streams_break_only_the_contract(name: str, script: str, include_usage: bool):
    found = rules_openai.judge_chat(answer(name), expected(script), include_usage)
    assert protocol(found) == [], [str(v) for v in found]
    assert found, "the first delta without content, the in-stream code null: the contract's (OPENAI-002, -004)"


@pytest.mark.parametrize(("name", "script"), [("responses-plain", "cs-plain"), ("responses-llm-error", "cs-llm-error")])
def test_the_peer_s_other_responses_streams_break_only_the_contract(name: str, script: str):
    found = judge_responses(answer(name), expected(script))
    assert protocol(found) == [], [str(v) for v in found]


def test_the_peer_s_response_and_model_list_are_openai_s():
    assert protocol(response_problems(answer("responses-metadata-string"), "".join(PLAIN_TEXT))) == []
    models = json.loads(recorded("models")["body"])
    assert models["object"] == "list"
    assert all(official.errors("openai_model", model) == [] for model in models["data"])


# --- OPENAI-004's false verdicts ----------------------------------------------------------------------------------

ERRORS = [  # recorded answer, the status and code the contract asks (None: the contract has no code for it)
    ("chat-invalid-json", 400, "invalid_json"),
    ("chat-get", 405, None),
    ("chat-unknown-model", 404, "model_not_found"),
    ("responses-unknown-model", 404, "model_not_found"),
    ("chat-whole-llm-error", 502, "llm_error"),
    ("responses-metadata-null", 400, None),
]


@pytest.mark.parametrize(("name", "status", "code"), ERRORS, ids=[e[0] for e in ERRORS])
def test_every_recorded_error_body_is_openai_s_error_object(name: str, status: int, code: str | None):
    """`misalignment` is a member of openai's ErrorObject; `code: null` and `param: null` are allowed."""
    body = json.loads(recorded(name)["body"])
    assert "misalignment" in body["error"]
    assert rules_openai.error_body_problems(body) == []
    found = error_problems(exchange(name), status, code)
    assert protocol(found) == [], [str(v) for v in found]


def test_code_null_is_a_contract_deviation_only_where_the_contract_has_a_code():
    assert error_problems(exchange("chat-get"), 405, None) == []
    found = error_problems(exchange("chat-invalid-json"), 400, "invalid_json")
    assert [(v.requirement, v.message) for v in found] == [
        ("OPENAI-004", "the code is None, not the contract's 'invalid_json'")
    ]


def test_an_unknown_model_is_invalid_request_error_with_model_not_found_as_openai_answers():
    assert error_problems(exchange("chat-unknown-model"), 404, "model_not_found") == []


# --- OPENAI-005's false verdict: the suite sent a null metadata value ----------------------------------------------


def test_the_suite_never_sends_a_metadata_value_that_is_not_a_string():
    """The peer refused `metadata: {"session_id": null}` with 400, rightly: metadata values are strings."""
    assert recorded("responses-metadata-null")["status"] == 400
    assert session_metadata(None) is None and session_metadata("") is None
    assert session_metadata("s-1") == {"session_id": "s-1"}
    plain = {"model": "gns3-copilot", "input": "Hello", "stream": False}
    bodies = [responses_standard(plain, "Be brief."), {**plain, "metadata": session_metadata("s-1")}]
    for body in bodies:
        assert official.errors("openai_response_create_params_non_streaming", body) == []
        assert all(isinstance(v, str) for v in body["metadata"].values())


def test_the_standard_chat_requests_are_valid_create_params():
    def body(label: str, **members: Any) -> dict[str, Any]:
        made = {"model": "gns3-copilot", "messages": [{"role": "user", "content": label}], "stream": True}
        return {**made, "stream_options": {"include_usage": True}, **members}

    for made in [*chat_standard(body).values(), *list(chat_contract_accepted(body).values())[:3]]:
        assert official.errors("openai_chat_completion_create_params_streaming", made) == [], made
