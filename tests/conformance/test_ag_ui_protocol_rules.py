"""AG-UI in two voices: what the protocol allows (AG-UI 1.0's lifecycle page, @ag-ui/client's verifyEvents) is never
a violation of any AGUI-PROTO requirement, what it forbids is one, and what only the contract adds is AGUI-002 or
AGUI-003, never a protocol violation. Each case is a golden stream of the reference server changed in one way. The
official validator (verifyEvents, in HttpAgent's pipeline) runs over such bodies too, its rejections named by rule."""

from __future__ import annotations

import json
from typing import Any

import pytest

from conformance.channels import real_clients
from conformance.channels.endpoints import STREAMING, ChannelAnswer
from conformance.checks.channel_ag_ui import client_violations, not_streamed
from conformance.rules import ag_ui as rules_ag_ui
from conformance.rules import ag_ui_protocol
from conformance.transport.exchanges import Exchange
from conformance.transport.sse import parse
from tests.conformance.test_rules_ag_ui import drop, edit, events, expected, golden, inserting, render, setting

P, T, M = "plain-answer", "tool-round-trip", "mid-stream-error"
F1, F2, F3, F4, F5 = (f"AGUI-PROTO-00{n}" for n in range(1, 6))


def without_usage(found: list[dict[str, Any]]) -> None:
    found[-1].pop("usage")


def start_first_as_error(found: list[dict[str, Any]]) -> None:
    found[:] = [{"type": "RUN_ERROR", "message": "the agent is unreachable", "code": "llm_error"}]


def after_run_started(*added: dict[str, Any]):
    def change(found: list[dict[str, Any]]) -> None:
        found[1:1] = list(added)

    return change


def message_again(found: list[dict[str, Any]]) -> None:
    """A second text message under the id of the first, ended, before RUN_FINISHED."""
    message_id = found[1]["messageId"]
    found[-1:-1] = [{"type": "TEXT_MESSAGE_START", "messageId": message_id, "role": "assistant"},
                    {"type": "TEXT_MESSAGE_END", "messageId": message_id}]  # fmt: skip


ALLOWED = [
    # Spec 1.0 lifecycle: RUN_ERROR ends the run whatever is open; verifyEvents checks nothing at RUN_ERROR.
    ("RUN_ERROR with the text message open", M, lambda: edit(M, drop("TEXT_MESSAGE_END"))),
    # A producer must not report a count it has no data for: usage on RUN_ERROR is optional (AGUI-003).
    ("RUN_ERROR without usage", M, lambda: edit(M, without_usage)),
    ("a step opened and closed", P, lambda: edit(P, after_run_started(
        {"type": "STEP_STARTED", "stepName": "llm"}, {"type": "STEP_FINISHED", "stepName": "llm"}))),
    ("a step left open at RUN_ERROR", M, lambda: edit(M, inserting({"type": "STEP_STARTED", "stepName": "llm"},
                                                                   "TEXT_MESSAGE_START"))),
]  # fmt: skip


@pytest.mark.parametrize(("case", "name", "made"), ALLOWED, ids=[c[0] for c in ALLOWED])
def test_what_the_protocol_allows_is_no_violation(case, name, made):
    assert rules_ag_ui.judge(made(), expected(name)) == []


PROTOCOL = [
    ("an event after RUN_ERROR", M, lambda: edit(M, inserting({"type": "CUSTOM", "name": "x", "value": 1}, None)), F2,
     "follows RUN_ERROR"),
    ("a text message started twice", P, lambda: edit(P, inserting(events(golden(P))[1], "TEXT_MESSAGE_END")), F3,
     "already in progress"),
    ("a tool call started twice", T, lambda: edit(T, inserting(
        [e for e in events(golden(T)) if e["type"] == "TOOL_CALL_START"][0], "TOOL_CALL_END")), F4,
     "already in progress"),
    ("a step finished that never started", P, lambda: edit(P, inserting({"type": "STEP_FINISHED", "stepName": "s"},
                                                                        "TEXT_MESSAGE_START")), F2, "not started"),
    ("a step started twice", P, lambda: edit(P, after_run_started(*[{"type": "STEP_STARTED", "stepName": "s"}] * 2)),
     F2, "already active"),
    ("RUN_FINISHED with a step open", P, lambda: edit(P, inserting({"type": "STEP_STARTED", "stepName": "s"},
                                                                   "TEXT_MESSAGE_START")), F5, "steps are still"),
    ("reasoning content of no message", P, lambda: edit(P, inserting(
        {"type": "REASONING_MESSAGE_CONTENT", "messageId": "r", "delta": "hm"}, "TEXT_MESSAGE_START")), F3,
     "reasoning message"),
    ("RUN_FINISHED with reasoning open", P, lambda: edit(P, inserting(
        {"type": "REASONING_START", "messageId": "r"}, "TEXT_MESSAGE_START")), F5, "reasoning spans are still"),
    ("subagentRunId null", P, lambda: edit(P, after_run_started(
        {"type": "CUSTOM", "name": "x", "value": 1, "subagentRunId": None})), F1, "subagentRunId"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "name", "broken", "requirement", "words"), PROTOCOL, ids=[c[0] for c in PROTOCOL])
def test_what_the_protocol_forbids_is_its_violation(case, name, broken, requirement, words):
    found = rules_ag_ui.judge(broken(), expected(name))
    assert any(v.requirement == requirement and words in v.message for v in found), [str(v) for v in found]


CONTRACT = [
    ("a run that fails before it starts", P, lambda: edit(P, start_first_as_error), "AGUI-002",
     "begins with RUN_ERROR"),
    ("a late RUN_ERROR after RUN_FINISHED", P, lambda: edit(P, inserting(
        {"type": "RUN_ERROR", "message": "late", "code": "llm_error"}, None)), "AGUI-003", "one run per answer"),
    ("a text message id used again", P, lambda: edit(P, message_again), "AGUI-002", "of an ended message"),
    ("RUN_ERROR with malformed usage", M, lambda: edit(M, setting("RUN_ERROR", usage=[{"inputTokens": 1}])), "AGUI-003",
     "must carry usage"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "name", "broken", "requirement", "words"), CONTRACT, ids=[c[0] for c in CONTRACT])
def test_what_only_the_contract_adds_is_no_protocol_violation(case, name, broken, requirement, words):
    found = rules_ag_ui.judge(broken(), None)
    assert any(v.requirement == requirement and words in v.message for v in found), [str(v) for v in found]
    assert [str(v) for v in found if v.requirement in ag_ui_protocol.PROTOCOL] == []


CLIENT_WORDS = [  # @ag-ui/client 1.0.0's own messages (verifyEvents, its SSE parser, zod), as it words them
    ("Error: First event must be 'RUN_STARTED'", F2),
    ("Error: Cannot send event type 'CUSTOM': The run has already finished with 'RUN_FINISHED'.", F2),
    ("Error: Cannot send event type 'TEXT_MESSAGE_CONTENT': The run has already errored with 'RUN_ERROR'.", F2),
    ("Error: Cannot send 'STEP_FINISHED' for step \"s\" that was not started", F2),
    ("Error: Cannot send 'TEXT_MESSAGE_CONTENT' event: No active text message found with ID 'x'.", F3),
    ("Error: Cannot send 'TOOL_CALL_ARGS' event: No active tool call found with ID 'x'.", F4),
    ("Error: Cannot send 'RUN_FINISHED' while text messages are still active: m1", F5),
    ("Error: Cannot send 'RUN_FINISHED' while tool calls are still active: c1", F5),
    ("Error: Cannot send 'RUN_FINISHED' while steps are still active: s", F5),
    ("SyntaxError: Unexpected token 'D', \"[DONE]\" is not valid JSON", F1),
    ("Error: Cannot send 'TEXT_MESSAGE_CONTENT' with 'subagentRunId: null'. The field is optional — omit it.", F1),
    ('ZodError: [ { "expected": "string", "path": ["messageId"] } ]', F1),
]


@pytest.mark.parametrize(("message", "requirement"), CLIENT_WORDS)
def test_each_rejection_of_the_official_client_names_the_protocol_rule_it_states(message, requirement):
    assert ag_ui_protocol.client_requirement(message) == requirement


def reorder_content_after_end(found: list[dict[str, Any]]) -> None:
    end = next(i for i, e in enumerate(found) if e["type"] == "TEXT_MESSAGE_END")
    found[end], found[end - 1] = found[end - 1], found[end]


VALIDATED = [  # golden streams broken one way, read by HttpAgent (which applies verifyEvents) as the check reads them
    ("[DONE]", P, lambda: golden(P) + "data: [DONE]\n\n", F1),
    ("RUN_STARTED not first", P, lambda: render(events(golden(P))[1:]), F2),
    ("content after the message's end", P, lambda: changed(P, reorder_content_after_end), F3),
    ("args of an unknown call", T, lambda: changed(T, setting("TOOL_CALL_ARGS", toolCallId="call_unknown")), F4),
    ("RUN_FINISHED with a text message open", P, lambda: changed(P, drop("TEXT_MESSAGE_END")), F5),
]  # fmt: skip


def changed(name: str, change) -> str:
    found = events(golden(name))
    change(found)
    return render(found)


def test_the_official_validator_runs_over_each_body_and_its_rejection_names_the_protocol_rule():
    """The suite's read of a body is HttpAgent's whole pipeline, verifyEvents included: each rejection is reported,
    in its own words, under the AGUI-PROTO requirement it states (channel_ag_ui.client_violations)."""
    cases = []
    for _case, name, body, _requirement in VALIDATED:
        started = events(golden(name))[0]
        cases.append({"body": body(), "threadId": started["threadId"], "runId": started["runId"]})
    for (case, name, _body, requirement), read in zip(VALIDATED, real_clients.ag_ui(cases), strict=True):
        found = client_violations(read, expected(name))
        assert [v.requirement for v in found] == [requirement], (case, [str(v) for v in found])
        assert read.error and read.error.split(": ", 1)[1] in found[0].message, case


def test_a_refused_run_agent_input_is_the_protocols_a_server_error_the_contracts():
    """channel_ag_ui.run on a run not streamed: a 4xx refusal of the RunAgentInput HttpAgent sends is AGUI-PROTO-007's,
    with the answer as evidence; a server error or a stream cut short the contract's run (AGUI-002); a 200 that is no
    event stream breaks AGUI-PROTO-001."""

    def answer(status: int, body: str = "", streamed: bool = False, completed: bool = True) -> ChannelAnswer:
        exchange = Exchange("POST", "http://target/ag-ui", json.dumps({"threadId": "t"}), status=status, body=body)
        sse = parse(body) if streamed else None
        return ChannelAnswer(STREAMING["ag_ui"], exchange, sse=sse, completed=completed, raw=body)

    refused = not_streamed(answer(422, '{"detail": "state: this agent takes no state"}'))
    assert refused.requirement == "AGUI-PROTO-007"
    assert "HttpAgent" in refused.message and "422" in refused.message and "takes no state" in refused.message
    assert not_streamed(answer(500, "Internal Server Error")).requirement == "AGUI-002"
    assert not_streamed(answer(200, 'data: {"type": "RUN_STARTED"}\n\n', True, False)).requirement == "AGUI-002"
    assert not_streamed(answer(200, "{}")).requirement == "AGUI-PROTO-001"
