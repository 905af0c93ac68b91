"""The rules of AG-UI 1.0 as the contract maps a turn (AGUI-002, AGUI-003), judged over one recorded answer.

`judge(answer, expected)` -> [Violation]: the framing (LF-only `data: <event>\\n\\n`, no `[DONE]`), each event valid
against the official `@ag-ui/core` event schema, RUN_STARTED first with the request's thread and run, text messages
and tool calls opened, fed and closed by id, each tool call's parentMessageId its generation's message, TOOL_CALL_RESULT
(role tool) for a known call, everything closed before the run ends (AGUI-002); and the end: RUN_FINISHED with the
thread, run and usage, or RUN_ERROR with message, code and usage for a failing turn, nothing after (AGUI-003). With the
script's ExpectedTurn, the text of each generation and the tool calls (name, parsed arguments) are judged exact.
What @ag-ui/client lets through (no RUN_FINISHED, a result for an unknown call) is judged here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from conformance.rules import official
from conformance.rules.ui import _usage_problem, ident, request_body
from conformance.rules.violations import Violation, short
from conformance.transport.sse import INVALID

if TYPE_CHECKING:
    from conformance.channels.endpoints import ChannelAnswer
    from conformance.rules.expected import ExpectedTurn

EVENTS, END = "AGUI-002", "AGUI-003"
MAPPED = frozenset(
    {
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "TOOL_CALL_RESULT",
        "RUN_FINISHED",
        "RUN_ERROR",
    }
)
TERMINAL = ("RUN_FINISHED", "RUN_ERROR")
FAILED_CODE = "llm_error"  # the contract's code of a turn whose generation failed (the failing scripts' only kind)


def framing(answer: ChannelAnswer) -> list[Violation]:
    """text/event-stream of `data: <event>\\n\\n` frames, LF only, no [DONE], each event valid for @ag-ui/core."""
    content_type = answer.headers.get("content-type", "")
    found = []
    if not content_type.startswith("text/event-stream"):
        found.append(Violation(EVENTS, f"the answer's content-type is {content_type!r}, not text/event-stream"))
    if answer.sse is None:
        return found + [Violation(EVENTS, f"the answer is no SSE stream: {answer.describe()}")]
    odd_ends = sorted(answer.sse.line_ends - {"\n"})
    if odd_ends:
        found.append(Violation(EVENTS, f"frames must be separated by LF only; the body has line ends {odd_ends}"))
    for frame in answer.sse.frames:
        if frame.event is not None or frame.unknown_fields:
            fields = ([f"event: {frame.event}"] if frame.event is not None else []) + frame.unknown_fields
            found.append(Violation(EVENTS, f"a frame has fields besides data: {fields}", frame.index))
        if frame.is_comment:
            continue
        if frame.is_done:
            found.append(Violation(EVENTS, "AG-UI sends no data: [DONE]", frame.index))
            continue
        event = frame.json()
        if event is INVALID or not isinstance(event, dict):
            found.append(Violation(EVENTS, f"the frame's data is not a JSON object: {short(frame.raw)}", frame.index))
            continue
        problems = official.errors("ag_ui_event", event)
        if problems:
            found.append(
                Violation(EVENTS, f"the event {short(event)} is invalid: {'; '.join(problems[:2])}", frame.index)
            )
    if answer.sse.unterminated.strip():
        found.append(Violation(EVENTS, f"the body ends in an unfinished frame: {short(answer.sse.unterminated)}"))
    return found


def events(answer: ChannelAnswer) -> list[tuple[int, dict[str, Any]]]:
    found = []
    for frame in answer.sse.messages if answer.sse else []:
        event = frame.json()
        if event is not INVALID and isinstance(event, dict):
            found.append((frame.index, event))
    return found


@dataclass
class _Call:
    name: Any
    parent: Any
    index: int
    arguments: str = ""
    state: str = "open"  # open -> ended -> result


class _Run:
    def __init__(self, answer: ChannelAnswer, expected: ExpectedTurn | None) -> None:
        self.answer, self.expected = answer, expected
        self.found: list[Violation] = []
        self.open_texts: set[str] = set()
        self.texts: list[tuple[int, Any, str]] = []  # (index, messageId, text) per text message, in order
        self.calls: dict[str, _Call] = {}
        self.order: list[str] = []  # tool call ids in TOOL_CALL_START order
        self.started: dict[str, Any] = {}

    def bad(self, message: str, index: int | None = None, requirement: str = EVENTS) -> None:
        self.found.append(Violation(requirement, message, index))

    def run(self, found: list[tuple[int, dict[str, Any]]]) -> list[Violation]:
        if not found:
            self.bad("the stream has no event")
            self.bad("the run never ends: no RUN_FINISHED or RUN_ERROR", requirement=END)
            return self.found
        self.run_started(*found[0])
        terminal = [(position, index, e) for position, (index, e) in enumerate(found) if e.get("type") in TERMINAL]
        for index, event in found:
            kind = event.get("type")
            if kind not in MAPPED:
                continue  # another AG-UI event (steps, snapshots, CUSTOM, RAW): valid (the schema), not in the rule
            if kind == "RUN_STARTED":
                if index != found[0][0]:
                    self.bad("a second RUN_STARTED", index)
            elif kind.startswith("TEXT_MESSAGE_"):
                self.text(index, event, kind)
            elif kind.startswith("TOOL_CALL_"):
                self.tool(index, event, kind)
            elif kind in TERMINAL:
                self.closed_at(index, kind)
                break
        self.end(found, terminal)
        if self.expected is not None:
            self.judge_expected(terminal)
        return self.found

    def run_started(self, index: int, event: dict[str, Any]) -> None:
        if event.get("type") != "RUN_STARTED":
            self.bad(f"the first event is {short(event)}, not RUN_STARTED", index)
            return
        self.started = event
        request = request_body(self.answer)
        for key in ("threadId", "runId"):
            if key in request and event.get(key) != request[key]:
                self.bad(f"RUN_STARTED has {key} {event.get(key)!r}; the request's was {request[key]!r}", index)

    def text(self, index: int, event: dict[str, Any], kind: str) -> None:
        message_id = ident(event.get("messageId"))
        if kind == "TEXT_MESSAGE_START":
            if event.get("role") != "assistant":
                self.bad(f"TEXT_MESSAGE_START has role {event.get('role')!r}, not assistant", index)
            if any(m == message_id for _, m, _ in self.texts):
                self.bad(f"TEXT_MESSAGE_START reuses the message id {message_id!r}", index)
            self.open_texts.add(message_id)
            self.texts.append((index, message_id, ""))
            return
        if message_id not in self.open_texts:
            self.bad(f"{kind} for the message {message_id!r}, which is not open", index)
            return
        if kind == "TEXT_MESSAGE_CONTENT":
            position = max(i for i, (_, m, _) in enumerate(self.texts) if m == message_id)
            at, _, text = self.texts[position]
            delta = event.get("delta") if isinstance(event.get("delta"), str) else ""
            self.texts[position] = (at, message_id, text + delta)
        else:
            self.open_texts.discard(message_id)

    def tool(self, index: int, event: dict[str, Any], kind: str) -> None:
        call_id = ident(event.get("toolCallId"))
        call = self.calls.get(call_id)
        if kind == "TOOL_CALL_START":
            if call is not None:
                self.bad(f"a second TOOL_CALL_START of {call_id!r}", index)
            parent = ident(event.get("parentMessageId"))
            if not isinstance(parent, str) or not parent:
                self.bad(f"TOOL_CALL_START of {call_id!r} has no parentMessageId", index)
            self.calls[call_id] = _Call(event.get("toolCallName"), parent, index)
            self.order.append(call_id)
            return
        want = "ended" if kind == "TOOL_CALL_RESULT" else "open"
        if call is None or call.state != want:
            state = "an unknown call" if call is None else f"a call in state {call.state}"
            self.bad(f"{kind} for {call_id!r}, {state} (expected {want})", index)
            return
        if kind == "TOOL_CALL_ARGS":
            call.arguments += event["delta"] if isinstance(event.get("delta"), str) else ""
        elif kind == "TOOL_CALL_END":
            call.state = "ended"
            try:
                json.loads(call.arguments)
            except ValueError:
                self.bad(f"the TOOL_CALL_ARGS of {call_id!r} make {call.arguments!r}, not JSON", index)
        else:
            call.state = "result"
            if event.get("role") != "tool":
                self.bad(f"TOOL_CALL_RESULT of {call_id!r} has role {event.get('role')!r}, not tool", index)

    def closed_at(self, index: int, kind: str) -> None:
        for message_id in sorted(map(str, self.open_texts)):
            self.bad(f"the text message {message_id} is still open at {kind}", index)
        for call_id, call in self.calls.items():
            if call.state == "open":
                self.bad(f"the tool call {call_id} is still open (no TOOL_CALL_END) at {kind}", index)
            elif call.state == "ended" and kind == "RUN_FINISHED":
                self.bad(f"the tool call {call_id} has no TOOL_CALL_RESULT before {kind}", index)

    def end(self, found: list[tuple[int, dict[str, Any]]], terminal: list[tuple[int, int, dict[str, Any]]]) -> None:
        if not terminal:
            last = [e.get("type") for _, e in found[-3:]]
            self.bad(f"the run never ends: no RUN_FINISHED or RUN_ERROR (last events {last})", requirement=END)
            return
        position, index, event = terminal[0]
        if position != len(found) - 1:
            after = [e.get("type") for _, e in found[position + 1 :][:5]]
            self.bad(f"events follow {event.get('type')}: {after}", found[position + 1][0], END)
        if event.get("type") == "RUN_FINISHED":
            for key in ("threadId", "runId"):
                if event.get(key) != self.started.get(key) or key not in self.started:
                    self.bad(
                        f"RUN_FINISHED has {key} {event.get(key)!r}; RUN_STARTED had {self.started.get(key)!r}",
                        index,
                        END,
                    )
        else:
            for key in ("message", "code"):
                if not isinstance(event.get(key), str) or not event[key].strip():
                    self.bad(f"RUN_ERROR has no {key}: {short(event)}", index, END)
        usage = event.get("usage")
        problem = _usage_problem(usage[0] if isinstance(usage, list) and len(usage) == 1 else None)
        if problem:
            self.bad(
                f"{event.get('type')} must carry usage [{{inputTokens, outputTokens, totalTokens}}]: {short(usage)}",
                index,
                END,
            )

    def judge_expected(self, terminal: list[tuple[int, int, dict[str, Any]]]) -> None:
        expected = self.expected
        assert expected is not None
        ending = terminal[0][2] if terminal else {}
        if expected.fails:
            if ending.get("type") != "RUN_ERROR":
                self.bad(
                    f"the turn fails ({expected.failure!r}) but the run ends with {ending.get('type')!r}",
                    requirement=END,
                )
            elif ending.get("code") != FAILED_CODE:
                self.bad(
                    f"RUN_ERROR has code {ending.get('code')!r}; the turn's contract error is {FAILED_CODE}",
                    terminal[0][1],
                    END,
                )
        elif ending.get("type") == "RUN_ERROR":
            self.bad(f"the turn does not fail but the run ends with {short(ending)}", terminal[0][1], END)
        texts = [text for _, _, text in self.texts]
        if texts != expected.texts:
            self.bad(f"the text messages are {texts!r}; the generations streamed {expected.texts!r}")
        self.judge_calls()

    def judge_calls(self) -> None:
        expected = self.expected
        assert expected is not None
        got = []
        for call_id in self.order:
            call = self.calls[call_id]
            try:
                arguments = json.loads(call.arguments)
            except ValueError:
                arguments = call.arguments
            got.append((call.name, arguments))
        want = [(call.name, call.arguments) for call in expected.tool_calls]
        if got != want:
            self.bad(f"the tool calls (name, arguments) are {short(got)}; the script's {short(want)}")
            return
        # parentMessageId: the same message for the calls of one generation, the generation's text message when it
        # has one, and another message for each generation.
        text_ids = iter(m for _, m, _ in self.texts)
        calls = iter(self.order)
        parents: list[Any] = []
        for number, generation in enumerate(expected.generations):
            message_id = next(text_ids, None) if generation.text else None
            ids = [next(calls) for _ in generation.tool_calls]
            own = {self.calls[i].parent for i in ids}
            if len(own) > 1:
                self.bad(
                    f"the tool calls of generation {number} name different parents {sorted(map(str, own))}",
                    self.calls[ids[0]].index,
                )
            for call_id in ids:
                call = self.calls[call_id]
                if message_id is not None and call.parent != message_id:
                    self.bad(
                        f"TOOL_CALL_START of {call_id} has parentMessageId {call.parent!r}; its generation's "
                        f"message is {message_id!r}",
                        call.index,
                    )
                elif call.parent in parents or (message_id is None and call.parent in {m for _, m, _ in self.texts}):
                    self.bad(
                        f"TOOL_CALL_START of {call_id} has parentMessageId {call.parent!r}, the message of "
                        "another generation",
                        call.index,
                    )
            if ids:
                parents.append(self.calls[ids[0]].parent)


def order(answer: ChannelAnswer, expected: ExpectedTurn | None = None) -> list[Violation]:
    return _Run(answer, expected).run(events(answer))


def judge(answer: ChannelAnswer, expected: ExpectedTurn | None = None) -> list[Violation]:
    """Every violation of AGUI-002 and AGUI-003 in one recorded answer (content exact when `expected` is given)."""
    if answer.sse is None:
        return framing(answer)
    return framing(answer) + order(answer, expected)
