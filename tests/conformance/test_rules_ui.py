"""The UI message stream rules of the suite (conformance/rules/ui.py): every golden stream of the reference
server passes with the ExpectedTurn of the script that recorded it (tools/record_channel_examples.py), and each rule
fails on a golden stream broken in that one way."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from conformance.channels import real_clients
from conformance.channels.endpoints import STREAMING, ChannelAnswer
from conformance.rules import ui as rules_ui
from conformance.rules import ui_protocol as rules_ui_protocol
from conformance.rules.expected import ExpectedTurn, expected_turn
from conformance.transport.exchanges import Exchange
from conformance.transport.sse import parse

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "spec" / "examples" / "channels" / "ui"
SCRIPTS = {p.stem: yaml.safe_load(p.read_text()) for p in (ROOT / "fake_llm" / "scripts").glob("*.yaml")}
RECORDED_BY = {  # golden stream -> the fake-LLM script that recorded it (tools/record_channel_examples.py)
    "plain-answer": "plain",
    "tool-round-trip": "tool-round-trip",
    "parallel-tool-calls": "parallel-tools",
    "llm-error": "llm-error",
    "mid-stream-error": "mid-stream-error",
}
HEADERS = {
    "content-type": "text/event-stream; charset=utf-8",
    "x-vercel-ai-ui-message-stream": "v1",
    "cache-control": "no-cache",
    "x-accel-buffering": "no",
}


def golden(name: str) -> str:
    return (EXAMPLES / f"{name}.sse").read_text()


def expected(name: str) -> ExpectedTurn:
    return expected_turn(SCRIPTS, RECORDED_BY[name])


def answer(body: str, headers: dict[str, str] | None = None, chat_id: str | None = None) -> ChannelAnswer:
    named = re.search(r'"sessionId": ?"([^"]+)"', body)
    request = {"id": chat_id or (named.group(1) if named else None), "messages": [], "trigger": "submit-message"}
    exchange = Exchange("POST", "http://target/ui", json.dumps(request), status=200)
    return ChannelAnswer(
        STREAMING["ui"], exchange, headers=HEADERS if headers is None else headers, sse=parse(body), completed=True,
        raw=body,
    )  # fmt: skip


def chunks(body: str) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in body.split("\n") if line.startswith("data: {")]


def render(found: list[dict[str, Any]], done: bool = True) -> str:
    return "".join(f"data: {json.dumps(c)}\n\n" for c in found) + ("data: [DONE]\n\n" if done else "")


@pytest.mark.parametrize("name", RECORDED_BY)
def test_every_golden_stream_passes(name: str):
    assert rules_ui.judge(answer(golden(name)), expected(name)) == []
    assert rules_ui.judge(answer(golden(name)), None) == []


def edit(name: str, change: Callable[[list[dict[str, Any]]], Any]) -> str:
    found = chunks(golden(name))
    change(found)
    return render(found)


def drop(kind: str, nth: int = 0) -> Callable[[list[dict[str, Any]]], None]:
    def change(found: list[dict[str, Any]]) -> None:
        found.remove([c for c in found if c["type"] == kind][nth])

    return change


def setting(kind: str, nth: int = 0, **values: Any) -> Callable[[list[dict[str, Any]]], None]:
    def change(found: list[dict[str, Any]]) -> None:
        chunk = [c for c in found if c["type"] == kind][nth]
        for key, value in values.items():
            if value is None:
                chunk.pop(key, None)
            else:
                chunk[key] = value

    return change


def inserting(chunk: dict[str, Any], before: str) -> Callable[[list[dict[str, Any]]], None]:
    def change(found: list[dict[str, Any]]) -> None:
        found.insert(next(i for i, c in enumerate(found) if c["type"] == before), chunk)

    return change


def merged_steps(found: list[dict[str, Any]]) -> None:
    """The two generations in one step: the finish-step / start-step between them left out."""
    middle = next(i for i, c in enumerate(found) if c["type"] == "finish-step")
    del found[middle : middle + 2]


def renamed_tool(found: list[dict[str, Any]]) -> None:
    for chunk in found:
        if chunk.get("toolName"):
            chunk["toolName"] = "another_tool"


def text_after_error(found: list[dict[str, Any]]) -> None:
    error = next(c for c in found if c["type"] == "error")
    found.remove(error)
    found.insert(2, error)


def finish_before_finish_step(found: list[dict[str, Any]]) -> None:
    found[-1], found[-2] = found[-2], found[-1]


def delta_before_start(found: list[dict[str, Any]]) -> None:
    start = next(i for i, c in enumerate(found) if c["type"] == "tool-input-start")
    found[start], found[start + 1] = found[start + 1], found[start]


def text_end_after_finish_step(found: list[dict[str, Any]]) -> None:
    """The text part's end after the step's end: `ai` drops the step's open parts at finish-step."""
    end = next(c for c in found if c["type"] == "text-end")
    found.remove(end)
    found.insert(next(i for i, c in enumerate(found) if c["type"] == "finish-step") + 1, end)


def output_first(found: list[dict[str, Any]]) -> None:
    """The tool's output before any chunk that announced its call."""
    output = next(c for c in found if c["type"] == "tool-output-available")
    found.remove(output)
    found.insert(next(i for i, c in enumerate(found) if c["type"] == "tool-input-start"), output)


P, T, E, M = "plain-answer", "tool-round-trip", "llm-error", "mid-stream-error"
PROTO_1, PROTO_2, PROTO_3, PROTO_4, PROTO_5 = (f"UI-PROTO-00{n}" for n in range(1, 6))
ALL = {"UI-002", "UI-003", PROTO_1, PROTO_2, PROTO_3, PROTO_4, PROTO_5}
# The cases whose break the protocol's rules also see (besides the requirement the case names): the contract's
# stream begins with start and ends with finish, as the protocol says a message SHOULD (UI-PROTO-004).
ALSO_PROTOCOL = {
    "no start": {PROTO_4},
    "no finish": {PROTO_4},
    "finish before finish-step": {PROTO_4},
    # an input other than the model's arguments: the call the client shows is not the one made (UI-PROTO-005)
    "input not the deltas": {PROTO_5},
    # no tool-input-available: the output comes to a part still streaming its input, the contract's order too
    "a call without tool-input-available": {PROTO_5},
}
# (case, golden, broken body or headers, requirement, words of the violation)
BROKEN: list[tuple[str, str, Callable[[], ChannelAnswer], str, str]] = [
    ("content-type", P, lambda: answer(golden(P), {**HEADERS, "content-type": "application/json"}), PROTO_1,
     "content-type"),
    ("protocol header", P, lambda: answer(golden(P), {**HEADERS, "x-vercel-ai-ui-message-stream": "v2"}), PROTO_1,
     "x-vercel-ai-ui-message-stream"),
    ("cache-control", P, lambda: answer(golden(P), {**HEADERS, "cache-control": "max-age=60"}), "UI-002",
     "cache-control"),
    ("x-accel-buffering", P, lambda: answer(golden(P), {k: v for k, v in HEADERS.items() if k != "x-accel-buffering"}),
     "UI-002", "x-accel-buffering"),
    ("CRLF line ends", P, lambda: answer(golden(P).replace("\n", "\r\n")), "UI-002", "line ends"),
    ("event field", P, lambda: answer(golden(P).replace("data: {\"type\":\"start-step\"}",
                                                        "event: step\ndata: {\"type\":\"start-step\"}")),
     "UI-002", "fields besides data"),
    ("not JSON", P, lambda: answer(golden(P).replace("data: {\"type\":\"start-step\"}", "data: {start-step")),
     PROTO_1, "not a JSON chunk"),
    ("schema", P, lambda: answer(edit(P, setting("start", messageId=7))), PROTO_1, "invalid for `ai`"),
    ("no [DONE]", P, lambda: answer(render(chunks(golden(P)), done=False)), PROTO_1, "does not end with data: [DONE]"),
    ("a frame after [DONE]", P, lambda: answer(golden(P) + "data: {\"type\":\"start-step\"}\n\n"), PROTO_4,
     "follows data: [DONE]"),
    ("a second [DONE]", P, lambda: answer(golden(P) + "data: [DONE]\n\n"), PROTO_4, "follows data: [DONE]"),
    ("unfinished frame after [DONE]", P, lambda: answer(golden(P) + "data: {\"type\""), PROTO_4,
     "unfinished frame follows"),
    ("unfinished frame, no [DONE]", P, lambda: answer(render(chunks(golden(P)), done=False) + "data: {\"type\""),
     PROTO_1, "ends in an unfinished frame"),
    ("no start", P, lambda: answer(edit(P, drop("start")), chat_id="example-plain-answer"), "UI-003", "not start"),
    ("start without sessionId", P, lambda: answer(edit(P, setting("start", messageMetadata={}))), "UI-003",
     "no sessionId"),
    ("start without messageId", P, lambda: answer(edit(P, setting("start", messageId=None))), "UI-003",
     "no messageId"),
    ("another session than the chat id", P, lambda: answer(golden(P), chat_id="another"), "UI-003",
     "the request's chat id"),
    ("a second start", P, lambda: answer(edit(P, inserting(chunks(golden(P))[0], "finish-step"))), "UI-003",
     "a second start"),
    ("no start-step", P, lambda: answer(edit(P, drop("start-step"))), "UI-003", "start-step must follow start"),
    ("text-delta of no open part", P, lambda: answer(edit(P, setting("text-delta", 1, id="other"))), PROTO_2,
     "missing text part"),
    ("text-end after finish-step", P, lambda: answer(edit(P, text_end_after_finish_step)), PROTO_2,
     "text-end of the text part"),
    ("reasoning-delta of no open part", P, lambda: answer(edit(P, inserting(
        {"type": "reasoning-delta", "id": "r", "delta": "hm"}, "finish-step"))), PROTO_2, "missing reasoning part"),
    ("text part open at finish-step", P, lambda: answer(edit(P, drop("text-end"))), "UI-003",
     "still open at finish-step"),
    ("text not the script's", P, lambda: answer(edit(P, setting("text-delta", 1, delta="seems "))), "UI-003",
     "streams the text"),
    ("tool delta before its start", T, lambda: answer(edit(T, delta_before_start)), PROTO_3,
     "before any tool-input-start"),
    ("tool output of an unannounced call", T, lambda: answer(edit(T, setting("tool-output-available",
                                                                             toolCallId="call_other"))), PROTO_3,
     "No tool invocation found"),
    ("tool output before any input chunk", T, lambda: answer(edit(T, output_first)), PROTO_3, "announced"),
    ("a last chunk other than finish", P, lambda: answer(edit(P, finish_before_finish_step)), PROTO_4,
     "the last chunk before [DONE]"),
    ("tool not provider-executed", T, lambda: answer(edit(T, setting("tool-input-start", providerExecuted=None))),
     "UI-003", "providerExecuted"),
    ("input not the deltas", T, lambda: answer(edit(T, setting("tool-input-available", input={"detail": "full"}))),
     "UI-003", "parse to"),
    ("no output before finish-step", T, lambda: answer(edit(T, drop("tool-output-available"))), "UI-003",
     "no tool-output-available"),
    ("generations in one step", T, lambda: answer(edit(T, merged_steps)), "UI-003", "1 steps"),
    ("tool call not the script's", T, lambda: answer(edit(T, renamed_tool)), PROTO_5, "the model called"),
    ("a call without tool-input-available", T, lambda: answer(edit(T, drop("tool-input-available"))), "UI-003",
     "tool-output-available"),
    ("a failing turn without error", E, lambda: answer(edit(E, drop("error"))), "UI-003", "expected one error chunk"),
    ("an error in a finishing turn", P, lambda: answer(edit(P, inserting({"type": "error", "errorText": "x"},
                                                                          "finish-step"))), "UI-003",
     "does not fail"),
    ("error without errorText", E, lambda: answer(edit(E, setting("error", errorText=" "))), "UI-003",
     "no errorText"),
    ("chunks after the error", M, lambda: answer(edit(M, text_after_error)), "UI-003", "follows the error chunk"),
    ("no finish", P, lambda: answer(edit(P, drop("finish"))), "UI-003", "never sends finish"),
    ("finish before finish-step", P, lambda: answer(edit(P, finish_before_finish_step)), "UI-003",
     "finish must follow finish-step"),
    ("finish names another session", P, lambda: answer(edit(P, setting(
        "finish", messageMetadata={"sessionId": "x", "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}}
    ))), "UI-003", "finish names the session"),
    ("finish without usage", P, lambda: answer(edit(P, setting(
        "finish", messageMetadata={"sessionId": "example-plain-answer", "usage": {"inputTokens": 1}}
    ))), "UI-003", "lacks non-negative integers"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "name", "broken", "requirement", "words"), BROKEN, ids=[c[0] for c in BROKEN])
def test_each_rule_fails_on_a_stream_broken_that_way(case, name, broken, requirement, words):
    found = rules_ui.judge(broken(), expected(name))
    assert any(v.requirement == requirement and words in v.message for v in found), [str(v) for v in found]
    assert {v.requirement for v in found} <= ALL
    # Two voices: a break of the contract alone is never worded as the protocol's (and the protocol's rules see
    # exactly the protocol's breaks).
    protocol = {requirement} if requirement.startswith("UI-PROTO-") else set()
    assert {v.requirement for v in found if v.requirement.startswith("UI-PROTO-")} == protocol | ALSO_PROTOCOL.get(
        case, set()
    ), [str(v) for v in found]


def test_a_chunk_outside_the_mapping_is_left_to_the_schema():
    """UI-003 orders the chunks it maps; another chunk type `ai` knows is not forbidden by the rule's text."""
    extra = answer(edit(P, inserting({"type": "reasoning-start", "id": "r"}, "finish-step")))
    assert [v for v in rules_ui.judge(extra, None) if "reasoning" in v.message] == []


def failed_tool(found: list[dict[str, Any]]) -> None:
    """The tool's end as `tool-output-error`, as `ai`'s own server sends a tool whose execute threw."""
    chunk = next(c for c in found if c["type"] == "tool-output-available")
    chunk.pop("output")
    chunk.update(type="tool-output-error", errorText="the controller is unreachable")


def test_a_tool_part_closed_by_tool_output_error_is_said_closed_not_open():
    """Issue 29: `tool-output-error` closes an announced tool part (ai 6.0.325's processUIMessageStream sets it to
    state output-error), so the protocol's rules see nothing, and UI-003's deviation says what happened (closed by
    an error, where the contract maps a tool's end to tool-output-available), not that the part was left open."""
    found = rules_ui.judge(answer(edit(T, failed_tool)), expected(T))
    assert [v for v in found if v.requirement.startswith("UI-PROTO-")] == []
    assert [v.requirement for v in found] == ["UI-003"], [str(v) for v in found]
    assert "closed by tool-output-error" in found[0].message
    assert "the controller is unreachable" in found[0].message
    assert "open" not in found[0].message and "no tool-output-available" not in found[0].message
    read = real_clients.ui([render(chunks(edit(T, failed_tool)))])[0]
    assert read.ok, read.error
    assert [p["state"] for p in read.detail["message"]["parts"] if p["type"].startswith("tool-")] == ["output-error"]


def cut_tool(found: list[dict[str, Any]]) -> None:
    """A call cut short announced only by its `tool-input-error` (no tool-input-start): `ai` makes the part of it."""
    start = next(i for i, c in enumerate(found) if c["type"] == "tool-input-start")
    tool = found[start]
    del found[start : next(i for i, c in enumerate(found) if c["type"] == "finish-step")]
    found.insert(start, {"type": "tool-input-error", "toolCallId": tool["toolCallId"], "toolName": tool["toolName"],
                         "input": "{\"det", "errorText": "cut short", "providerExecuted": True})  # fmt: skip


def test_a_tool_input_error_alone_is_the_protocols_and_the_contracts_business_apart():
    """ai 6.0.325 accepts a tool-input-error of a call no chunk announced (it makes the part): no protocol violation;
    the contract sends it only to close a call whose tool-input-start it sent (UI-003)."""
    body = render(chunks(edit(T, cut_tool)))
    found = rules_ui.judge(answer(body), None)
    assert [v for v in found if v.requirement.startswith("UI-PROTO-")] == []
    assert any(v.requirement == "UI-003" and "tool-input-error" in v.message for v in found), [str(v) for v in found]
    assert real_clients.ui([body])[0].ok


def test_the_readers_rejections_are_the_protocols_in_its_own_words():
    """Each rejection of `ai`'s own reader is filed under the protocol rule it breaks, quoting `ai`; the stream's
    own `error` chunk is no rejection."""
    bodies = {
        "UI-PROTO-001": answer(golden(P).replace('data: {"type":"start-step"}', "data: {start-step")),
        "UI-PROTO-002": answer(edit(P, setting("text-delta", 1, id="other"))),
        "UI-PROTO-003": answer(edit(T, delta_before_start)),
    }
    reads = real_clients.ui([a.raw for a in bodies.values()] + [golden(E)])
    for (rule, broken), read in zip(bodies.items(), reads, strict=False):
        rejection = rules_ui_protocol.reader_rejection(read.detail.get("error"), [])
        assert rejection is not None and rejection.requirement == rule, (rule, read.error)
        assert str(read.detail["error"]["message"])[:40] in rejection.message
        assert rule in {v.requirement for v in rules_ui_protocol.judge(broken)}  # the rules see it too
    error_chunk = reads[-1].detail.get("error")
    assert error_chunk["name"] == "Error"
    assert rules_ui_protocol.reader_rejection(error_chunk, [error_chunk["message"]]) is None
