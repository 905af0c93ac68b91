"""The AG-UI rules of the suite in their two voices (conformance/rules/ag_ui_protocol.py: AGUI-PROTO-*;
conformance/rules/ag_ui.py: the contract's AGUI-002, AGUI-003): every golden stream of the reference server passes
with the ExpectedTurn of the script that recorded it (tools/record_channel_examples.py), and each rule fails on a
golden stream broken in that one way, under its own requirement."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from conformance.channels.endpoints import STREAMING, ChannelAnswer
from conformance.rules import ag_ui as rules_ag_ui
from conformance.rules.expected import ExpectedTurn, expected_turn
from conformance.transport.exchanges import Exchange
from conformance.transport.sse import parse

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "spec" / "examples" / "channels" / "ag-ui"
SCRIPTS = {p.stem: yaml.safe_load(p.read_text()) for p in (ROOT / "fake_llm" / "scripts").glob("*.yaml")}
RECORDED_BY = {  # golden stream -> the fake-LLM script that recorded it (tools/record_channel_examples.py)
    "plain-answer": "plain",
    "tool-round-trip": "tool-round-trip",
    "parallel-tool-calls": "parallel-tools",
    "llm-error": "llm-error",
    "mid-stream-error": "mid-stream-error",
}
HEADERS = {"content-type": "text/event-stream; charset=utf-8"}


def golden(name: str) -> str:
    return (EXAMPLES / f"{name}.sse").read_text()


def expected(name: str) -> ExpectedTurn:
    return expected_turn(SCRIPTS, RECORDED_BY[name])


def answer(name: str, body: str | None = None, headers: dict[str, str] | None = None, **request: Any) -> ChannelAnswer:
    """The answer to a request naming the golden's thread and run (or `request`'s)."""
    started = events(golden(name))[0]
    sent = {"threadId": started["threadId"], "runId": started["runId"], "messages": [], **request}
    body = golden(name) if body is None else body
    exchange = Exchange("POST", "http://target/ag-ui", json.dumps(sent), status=200)
    return ChannelAnswer(
        STREAMING["ag_ui"], exchange, headers=HEADERS if headers is None else headers, sse=parse(body), completed=True,
        raw=body,
    )  # fmt: skip


def events(body: str) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in body.split("\n") if line.startswith("data: {")]


def render(found: list[dict[str, Any]]) -> str:
    return "".join(f"data: {json.dumps(e)}\n\n" for e in found)


@pytest.mark.parametrize("name", RECORDED_BY)
def test_every_golden_stream_passes(name: str):
    assert rules_ag_ui.judge(answer(name), expected(name)) == []
    assert rules_ag_ui.judge(answer(name), None) == []


def edit(name: str, change: Callable[[list[dict[str, Any]]], Any]) -> ChannelAnswer:
    found = events(golden(name))
    change(found)
    return answer(name, render(found))


def drop(kind: str, nth: int = 0) -> Callable[[list[dict[str, Any]]], None]:
    def change(found: list[dict[str, Any]]) -> None:
        found.remove([e for e in found if e["type"] == kind][nth])

    return change


def setting(kind: str, nth: int = 0, **values: Any) -> Callable[[list[dict[str, Any]]], None]:
    def change(found: list[dict[str, Any]]) -> None:
        event = [e for e in found if e["type"] == kind][nth]
        for key, value in values.items():
            if value is None:
                event.pop(key, None)
            else:
                event[key] = value

    return change


def inserting(event: dict[str, Any], before: str | None) -> Callable[[list[dict[str, Any]]], None]:
    def change(found: list[dict[str, Any]]) -> None:
        at = len(found) if before is None else next(i for i, e in enumerate(found) if e["type"] == before)
        found.insert(at, event)

    return change


def args_after_end(found: list[dict[str, Any]]) -> None:
    end = next(i for i, e in enumerate(found) if e["type"] == "TOOL_CALL_END")
    found[end], found[end - 1] = found[end - 1], found[end]


def without_args(found: list[dict[str, Any]]) -> None:
    for event in [e for e in found if e["type"] == "TOOL_CALL_ARGS"]:
        found.remove(event)


def second_call_after_first_result(found: list[dict[str, Any]]) -> None:
    """The second call's START, ARGS and END moved after the first TOOL_CALL_RESULT."""
    second = [e for e in found if e["type"] == "TOOL_CALL_START"][1]["toolCallId"]
    moved = [e for e in found if e.get("toolCallId") == second and e["type"] != "TOOL_CALL_RESULT"]
    for event in moved:
        found.remove(event)
    at = found.index(next(e for e in found if e["type"] == "TOOL_CALL_RESULT")) + 1
    found[at:at] = moved


def other_arguments(found: list[dict[str, Any]]) -> None:
    args = [e for e in found if e["type"] == "TOOL_CALL_ARGS"]
    for event in args:
        found.remove(event)
    found.insert(found.index(next(e for e in found if e["type"] == "TOOL_CALL_END")),
                 {"type": "TOOL_CALL_ARGS", "toolCallId": "call_rt_1", "delta": '{"detail": "full"}'})  # fmt: skip


def finished_instead(found: list[dict[str, Any]]) -> None:
    found[-1] = {"type": "RUN_FINISHED", "threadId": found[0]["threadId"], "runId": found[0]["runId"],
                 "usage": [{"inputTokens": 0, "outputTokens": 0, "totalTokens": 0}]}  # fmt: skip


def failed_instead(found: list[dict[str, Any]]) -> None:
    found[-1] = {"type": "RUN_ERROR", "message": "boom", "code": "llm_error",
                 "usage": [{"inputTokens": 0, "outputTokens": 0, "totalTokens": 0}]}  # fmt: skip


P, T, R, E = "plain-answer", "tool-round-trip", "parallel-tool-calls", "llm-error"
F1, F2, F3, F4, F5 = (f"AGUI-PROTO-00{n}" for n in range(1, 6))
BROKEN: list[tuple[str, str, Callable[[], ChannelAnswer], str, str]] = [
    ("content-type", P, lambda: answer(P, headers={"content-type": "application/json"}), F1, "content-type"),
    ("CRLF line ends", P, lambda: answer(P, golden(P).replace("\n", "\r\n")), "AGUI-002", "LF only"),
    ("event field", P, lambda: answer(P, "event: run\n" + golden(P)), "AGUI-002", "fields besides data"),
    ("[DONE]", P, lambda: answer(P, golden(P) + "data: [DONE]\n\n"), F1, "no data: [DONE]"),
    ("not JSON", P, lambda: answer(P, golden(P) + "data: {oops\n\n"), F1, "not a JSON object"),
    ("schema", P, lambda: edit(P, setting("TEXT_MESSAGE_CONTENT", delta=5)), F1, "is invalid"),
    ("unfinished frame", P, lambda: answer(P, golden(P) + 'data: {"type"'), "AGUI-002", "unfinished frame"),
    ("RUN_STARTED not first", P, lambda: edit(P, drop("RUN_STARTED")), F2, "not RUN_STARTED"),
    ("another thread", P, lambda: answer(P, threadId="another"), "AGUI-002", "the request's was"),
    ("another run", P, lambda: answer(P, runId="another"), "AGUI-002", "the request's was"),
    ("a second RUN_STARTED", P, lambda: edit(P, inserting(events(golden(P))[0], "TEXT_MESSAGE_END")), F2,
     "while the run is still active"),
    ("message without role assistant", P, lambda: edit(P, setting("TEXT_MESSAGE_START", role=None)), "AGUI-002",
     "not assistant"),
    ("content of no open message", P, lambda: edit(P, setting("TEXT_MESSAGE_CONTENT", 1, messageId="other")),
     F3, "no TEXT_MESSAGE_START opened"),
    ("message open at the end", P, lambda: edit(P, drop("TEXT_MESSAGE_END")), F5, "text messages are still active"),
    ("text not the script's", P, lambda: edit(P, setting("TEXT_MESSAGE_CONTENT", 1, delta="seems ")), "AGUI-002",
     "the text messages are"),
    ("call without parentMessageId", T, lambda: edit(T, setting("TOOL_CALL_START", parentMessageId=None)), "AGUI-002",
     "no parentMessageId"),
    ("call parented to another message", R, lambda: edit(R, setting("TOOL_CALL_START", 1, parentMessageId="x")),
     "AGUI-002", "different parents"),
    ("call parented to the next generation's message", T, lambda: edit(T, setting(
        "TOOL_CALL_START", parentMessageId="00000000-0000-4000-8000-000000000003")), "AGUI-002", "another generation"),
    ("args after the end", T, lambda: edit(T, args_after_end), F4, "no TOOL_CALL_START opened or is ended"),
    ("call open at the end", T, lambda: edit(T, drop("TOOL_CALL_END")), F5, "tool calls are still active"),
    ("result of an unknown call", T, lambda: edit(T, setting("TOOL_CALL_RESULT", toolCallId="call_unknown")),
     "AGUI-002", "an unknown call"),
    ("result not role tool", T, lambda: edit(T, setting("TOOL_CALL_RESULT", role=None)), "AGUI-002", "not tool"),
    ("no result", T, lambda: edit(T, drop("TOOL_CALL_RESULT")), "AGUI-002", "no TOOL_CALL_RESULT"),
    ("arguments not the script's", T, lambda: edit(T, other_arguments), "AGUI-PROTO-006", "the model's arguments"),
    # ag-ui-langgraph 0.0.47 on a call whole in one chunk (ag-ui issue 2463), and on two calls of one chunk (871, 1016)
    ("a call without its ARGS", T, lambda: edit(T, without_args), "AGUI-PROTO-006", "never streamed"),
    ("no end of the run", P, lambda: edit(P, drop("RUN_FINISHED")), F2, "never ends"),
    ("no end of the run (the contract's usage)", P, lambda: edit(P, drop("RUN_FINISHED")), "AGUI-003",
     "no RUN_FINISHED or RUN_ERROR carries"),
    ("an event after RUN_FINISHED", P, lambda: edit(P, inserting({"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
                                                              None)), "AGUI-003", "events follow"),
    ("RUN_FINISHED of another run", P, lambda: edit(P, setting("RUN_FINISHED", runId="another")), "AGUI-003",
     "RUN_STARTED had"),
    ("RUN_FINISHED without usage", P, lambda: edit(P, setting("RUN_FINISHED", usage=None)), "AGUI-003",
     "must carry usage"),
    ("RUN_ERROR without code", E, lambda: edit(E, setting("RUN_ERROR", code=None)), "AGUI-003", "has no code"),
    ("RUN_ERROR with another code", E, lambda: edit(E, setting("RUN_ERROR", code="oops")), "AGUI-003",
     "the turn's contract error"),
    ("a failing turn finishing", E, lambda: edit(E, finished_instead), "AGUI-003", "but the run ends with"),
    ("a finishing turn failing", P, lambda: edit(P, failed_instead), "AGUI-003", "does not fail"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "name", "broken", "requirement", "words"), BROKEN, ids=[c[0] for c in BROKEN])
def test_each_rule_fails_on_a_stream_broken_that_way(case, name, broken, requirement, words):
    found = rules_ag_ui.judge(broken(), expected(name))
    assert any(v.requirement == requirement and words in v.message for v in found), [str(v) for v in found]
    assert {v.requirement for v in found} <= rules_ag_ui.JUDGED


def test_calls_sent_together_are_all_streamed_before_a_result_of_theirs():
    """ag-ui-langgraph 0.0.47 on two calls of one chunk (ag-ui issues 871, 1016): the second follows the first's
    result. Calls that came one after another may be answered as each completes (a server that runs tools early)."""
    late = edit(R, second_call_after_first_result)
    apart = expected(R)
    together = replace(apart, generations=(replace(apart.generations[0], calls_together=True), *apart.generations[1:]))
    found = [v for v in rules_ag_ui.judge(late, together) if v.requirement == "AGUI-PROTO-006"]
    assert found and "sent the calls together" in found[0].message, [str(v) for v in found]
    assert [v for v in rules_ag_ui.judge(late, apart) if v.requirement == "AGUI-PROTO-006"] == []


def test_an_event_outside_the_mapping_is_left_to_the_schema():
    """AGUI-002 orders the events it maps; another valid AG-UI event (a state snapshot) is not forbidden by its text."""
    extra = edit(P, inserting({"type": "STATE_SNAPSHOT", "snapshot": {}}, "TEXT_MESSAGE_END"))
    assert [v for v in rules_ag_ui.judge(extra, None) if "STATE_SNAPSHOT" in v.message] == []
