"""channel_ui.stream in two voices (conformance/checks/channel_ui.py): it records a finding for every rule it lists
(the protocol's UI-PROTO-001..006 and the contract's UI-002, UI-003); `ai`'s own reader's rejection of a stream is
the protocol's verdict in `ai`'s words, while what `ai` assembled against the script is the contract's."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from conformance.channels.endpoints import STREAMING, ChannelAnswer
from conformance.channels.real_clients import ClientRead
from conformance.checks import channel_ui, requirements_of_checks
from conformance.rules.expected import expected_turn
from conformance.transport.exchanges import Exchange
from conformance.transport.sse import parse

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = {p.stem: yaml.safe_load(p.read_text()) for p in (ROOT / "fake_llm" / "scripts").glob("*.yaml")}
GOLDEN = ROOT / "spec" / "examples" / "channels" / "ui"


def answer(body: str, status: int = 200, completed: bool = True, streamed: bool = True) -> ChannelAnswer:
    exchange = Exchange("POST", "http://target/ui", json.dumps({"id": "s", "messages": []}), status=status)
    sse = parse(body) if streamed else None
    return ChannelAnswer(STREAMING["ui"], exchange, sse=sse, completed=completed, raw=body)


def test_the_stream_check_judges_every_rule_it_lists():
    listed = set(requirements_of_checks()["channel_ui.stream"])
    assert {"UI-PROTO-001", "UI-PROTO-002", "UI-PROTO-003", "UI-PROTO-004", "UI-002", "UI-003"} <= listed
    assert channel_ui.JUDGED | {channel_ui.REQUEST} == listed  # UI-PROTO-006: each turn's request served or refused


def test_a_rejection_by_ais_reader_is_the_protocols():
    rejected = ClientRead(
        False,
        "AI_UIMessageStreamError: Received text-delta for missing text part",
        detail={"error": {"name": "AI_UIMessageStreamError", "message": "Received text-delta for missing text part "
                          "with ID \"x\".", "chunkType": "text-delta", "chunkId": "x"}},
    )  # fmt: skip
    plain = expected_turn(SCRIPTS, "plain")
    found = channel_ui.client_violations(rejected, plain, answer((GOLDEN / "plain-answer.sse").read_text()))
    assert [v.requirement for v in found] == ["UI-PROTO-002"]
    assert "Received text-delta for missing text part" in found[0].message
    schema = ClientRead(
        False, detail={"error": {"name": "AI_TypeValidationError", "message": "Type validation failed"}}
    )
    assert [v.requirement for v in channel_ui.client_violations(schema, plain, answer(""))] == ["UI-PROTO-001"]


def test_what_ai_assembled_against_the_script_is_the_contracts():
    body = (GOLDEN / "plain-answer.sse").read_text()
    other = ClientRead(True, text="something else", detail={"message": {"parts": []}})
    found = channel_ui.client_violations(other, expected_turn(SCRIPTS, "plain"), answer(body))
    assert found and {v.requirement for v in found} == {"UI-003"}
    # an error chunk in a turn that does not fail: `ai` stops at it; no rejection of the stream
    stopped = ClientRead(False, "Error: boom", detail={"error": {"name": "Error", "message": "boom"}})
    errored = body.replace('data: {"type":"finish-step"}', 'data: {"type":"error","errorText":"boom"}\n\n'
                           'data: {"type":"finish-step"}', 1)  # fmt: skip
    found = channel_ui.client_violations(stopped, expected_turn(SCRIPTS, "plain"), answer(errored))
    assert [v.requirement for v in found] == ["UI-003"]


def test_an_answer_not_streamed_is_judged_in_the_right_voice():
    """A refusal (4xx) of the body DefaultChatTransport sends is the protocol's (UI-PROTO-006), a server error the
    contract's (it streams every turn); a 200 that never ends is no UI stream."""
    refused = channel_ui.not_streamed(answer('{"code": "validation_error"}', status=422, streamed=False))
    assert refused.requirement == "UI-PROTO-006" and "DefaultChatTransport" in refused.message
    assert "422" in refused.message  # the evidence: the answer itself
    assert channel_ui.not_streamed(answer("", status=500, streamed=False)).requirement == "UI-003"
    assert channel_ui.not_streamed(answer("data: {}\n\n", completed=False)).requirement == "UI-PROTO-001"
    assert channel_ui.not_streamed(answer("{}", streamed=False)).requirement == "UI-PROTO-001"
