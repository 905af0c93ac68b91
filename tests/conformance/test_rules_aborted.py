"""How each channel ends an aborted turn (conformance/rules/aborted.py), on the reference server's answers to an abort
during the slow tool and while a call's arguments still streamed: they pass, and each wrong ending fails its own
rule in its own voice (OPENAI-002 and AGUI-003, UI-003 ours; UI-PROTO-004, AGUI-PROTO-005 the protocols'). And when
an abort counts as having reached a running turn (AbortedTurn.not_running): an `aborted: false` is no excuse then."""

from __future__ import annotations

import json
from typing import Any

from conformance.channels.endpoints import STREAMING, ChannelAnswer
from conformance.channels.real_clients import ClientRead
from conformance.rules.aborted import AbortedTurn, ending
from conformance.transport.exchanges import Exchange
from conformance.transport.sse import parse

UI_HEADERS = {
    "content-type": "text/event-stream; charset=utf-8",
    "x-vercel-ai-ui-message-stream": "v1",
    "cache-control": "no-cache",
    "x-accel-buffering": "no",
}
START = {"type": "start", "messageId": "m1", "messageMetadata": {"sessionId": "s1"}}
USAGE = {"inputTokens": 70, "outputTokens": 9, "totalTokens": 79}
FINISH = [{"type": "finish-step"}, {"type": "finish", "messageMetadata": {"sessionId": "s1", "usage": USAGE}}]
CUT_CALL = [
    {"type": "tool-input-start", "toolCallId": "c1", "toolName": "get_topology", "providerExecuted": True},
    {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": '{"de'},
]
CUT_CLOSED = {
    "type": "tool-input-error", "toolCallId": "c1", "toolName": "get_topology", "input": '{"de',
    "errorText": "The turn ended before the call's arguments were complete.", "providerExecuted": True,
}  # fmt: skip
UI_CUT = [START, {"type": "start-step"}, *CUT_CALL, CUT_CLOSED, {"type": "abort"}, *FINISH]
RUN = {"threadId": "t1", "runId": "r1"}
AG_CUT = [
    {"type": "RUN_STARTED", **RUN},
    {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "get_topology", "parentMessageId": "p1"},
    {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": '{"de'},
    {"type": "TOOL_CALL_END", "toolCallId": "c1"},
    {"type": "RUN_FINISHED", **RUN, "outcome": {"type": "cancelled"}, "usage": [USAGE]},
]


def _chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gns3-copilot",
            "choices": [choice], "usage": None, **extra}  # fmt: skip


USAGE_CHUNK = {**_chunk({}), "choices": [], "usage": {"prompt_tokens": 70, "completion_tokens": 9, "total_tokens": 79}}
CHAT = [_chunk({"role": "assistant", "content": ""}), _chunk({}, "stop"), USAGE_CHUNK]


def answer(name: str, payloads: list[dict[str, Any]], *, done: bool = True, request: Any = None) -> ChannelAnswer:
    body = "".join(f"data: {json.dumps(p)}\n\n" for p in payloads) + ("data: [DONE]\n\n" if done else "")
    sent = json.dumps(request if request is not None else ({"id": "s1"} if name == "ui" else {**RUN}))
    exchange = Exchange("POST", f"http://target/{name}", sent, status=200)
    headers = UI_HEADERS if name == "ui" else {"content-type": "text/event-stream"}
    return ChannelAnswer(STREAMING[name], exchange, headers=headers, sse=parse(body), completed=True, raw=body)


def broken(name: str, payloads: list[dict[str, Any]], **options: Any) -> set[str]:
    return {v.requirement for v in ending(answer(name, payloads, **options))}


def test_the_reference_servers_aborted_endings_pass():
    assert ending(answer("ui", UI_CUT)) == []
    assert ending(answer("ag_ui", AG_CUT, done=False)) == []
    assert ending(answer("openai_chat", CHAT)) == []


def test_a_ui_stream_without_its_abort_chunk_fails_ui_003():
    assert broken("ui", [c for c in UI_CUT if c["type"] != "abort"]) == {"UI-003"}


def test_a_cut_call_left_open_fails_ui_003():
    assert broken("ui", [c for c in UI_CUT if c["type"] != "tool-input-error"]) == {"UI-003"}


def test_an_aborted_message_ending_with_finish_step_fails_the_protocols_ui_proto_004():
    assert "UI-PROTO-004" in broken("ui", UI_CUT[:-1])


def test_an_aborted_run_read_as_a_success_or_a_failure_fails_agui_003():
    finished = {k: v for k, v in AG_CUT[-1].items() if k != "outcome"}
    assert broken("ag_ui", [*AG_CUT[:-1], finished], done=False) == {"AGUI-003", "AGUI-002"}  # a cut call then too
    failed = {"type": "RUN_ERROR", "message": "aborted", "code": "aborted"}
    assert "AGUI-003" in broken("ag_ui", [*AG_CUT[:-1], failed], done=False)


def test_a_cut_call_open_at_run_finished_fails_the_protocols_agui_proto_005():
    assert broken("ag_ui", [e for e in AG_CUT if e["type"] != "TOOL_CALL_END"], done=False) == {"AGUI-PROTO-005"}


def test_an_aborted_chat_completion_ends_with_stop_ours_and_one_finish_chunk_the_protocols():
    assert broken("openai_chat", [CHAT[0], _chunk({}, "length"), USAGE_CHUNK]) == {"OPENAI-002"}
    assert broken("openai_chat", [CHAT[0], _chunk({}, "stop"), _chunk({}, "stop"), USAGE_CHUNK]) == {"OPENAI-PROTO-003"}


def _turn(aborted: bool, generations: list[dict[str, Any]], *, ended: float = 20.0) -> AbortedTurn:
    exchange = Exchange("POST", "http://target/abort", None, status=200, body=json.dumps({"aborted": aborted}))
    reply = answer("ui", UI_CUT)
    reply.started, reply.exchange.elapsed = ended, 0.0
    return AbortedTurn(reply, "cs-slow-tool", "run", exchange, 10.0, 100.0, 100.5, generations)


def test_an_abort_answered_false_while_the_turn_ran_is_judged_not_skipped():
    assert _turn(False, [{"step": 0, "received_at": 99.0}, {"step": 1, "received_at": 103.0}]).not_running() is None
    assert _turn(False, [{"step": 0, "received_at": 99.0}]).not_running() is None
    # its last generation had begun before the abort was sent: the turn may have ended first
    assert "last generation" in _turn(False, [{"step": 0, "received_at": 98.0}, {"step": 1, "received_at": 99.0}]
                                      ).not_running()  # fmt: skip
    assert "ended before" in _turn(True, [{"step": 0, "received_at": 99.0}], ended=5.0).not_running()


def test_a_turn_that_went_on_after_the_abort_has_no_aborted_ending_to_judge():
    went_on = _turn(True, [{"step": 0, "received_at": 99.0}, {"step": 1, "received_at": 103.0}])
    assert went_on.later(went_on.answered_clock) == [103.0]
    assert "went on" in went_on.unended({"steps": [{}]})


def test_the_protocols_own_client_rejecting_an_aborted_run_is_the_protocols_rule():
    rejected = ClientRead(False, error="Cannot send 'RUN_FINISHED' while tool calls are still active: c1")
    found = ending(answer("ag_ui", [e for e in AG_CUT if e["type"] != "TOOL_CALL_END"], done=False), rejected)
    assert {v.requirement for v in found} == {"AGUI-PROTO-005"}
    assert any("@ag-ui/client" in v.message for v in found)
