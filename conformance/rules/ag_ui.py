"""The AG-UI channel's rules: the protocol's own (AGUI-PROTO-001..006, conformance/rules/ag_ui_protocol.py) and what
the contract adds on top of them (AGUI-002, AGUI-003), judged over one recorded answer.

`judge(answer, expected)` -> [Violation], both voices. The contract's additions: the framing (`data: <event>\\n\\n`
frames, LF only, no other field, no unfinished frame), RUN_STARTED with the request's thread and run, each text
message an assistant one under a new id, each tool call started once with a parentMessageId (its generation's
message, which for a generation without text may be a message without content), arguments that make JSON, a
TOOL_CALL_RESULT (role tool) for each ended call (AGUI-002); one run per answer, ended by RUN_FINISHED with the
thread, run and usage, or RUN_ERROR with message and code (a usage on it optional) (AGUI-003). With the script's
ExpectedTurn, the text of each generation is judged exact (the tool calls themselves, name and arguments, are the
protocol's: AGUI-PROTO-006), and each call's parentMessageId against its generation. Whatever the
protocol itself forbids (an event of no open message or call, RUN_FINISHED with work still open, events after the
run's end that verifyEvents refuses) is the protocol module's, never counted here again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from conformance.rules import ag_ui_protocol as protocol
from conformance.rules.ui import _usage_problem, ident, request_body
from conformance.rules.violations import Violation, short

if TYPE_CHECKING:
    from conformance.channels.endpoints import ChannelAnswer
    from conformance.rules.expected import ExpectedTurn

EVENTS, END = "AGUI-002", "AGUI-003"
JUDGED = frozenset({EVENTS, END}) | protocol.PROTOCOL  # every requirement judge() speaks for
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
TERMINAL = protocol.TERMINAL
FAILED_CODE = "llm_error"  # the contract's code of a turn whose generation failed (the failing scripts' only kind)


def framing(answer: ChannelAnswer) -> list[Violation]:
    """The contract's frames: `data: <event>\\n\\n`, LF only, no other field, none left unfinished (HttpAgent would
    read an unfinished last frame, an `event:` field or CRLF-free frames alike: these are the contract's)."""
    if answer.sse is None:
        return []
    found = []
    odd_ends = sorted(answer.sse.line_ends - {"\n"})
    if odd_ends:
        found.append(Violation(EVENTS, f"frames must be separated by LF only; the body has line ends {odd_ends}"))
    for frame in answer.sse.frames:
        if frame.event is not None or frame.unknown_fields:
            fields = ([f"event: {frame.event}"] if frame.event is not None else []) + frame.unknown_fields
            found.append(Violation(EVENTS, f"a frame has fields besides data: {fields}", frame.index))
    if answer.sse.unterminated.strip():
        found.append(Violation(EVENTS, f"the body ends in an unfinished frame: {short(answer.sse.unterminated)}"))
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
        self.open_texts: set[Any] = set()
        self.texts: list[tuple[int, Any, str]] = []  # (index, messageId, text) per text message, in order
        self.calls: dict[Any, _Call] = {}
        self.order: list[Any] = []  # tool call ids in TOOL_CALL_START order
        self.started: dict[str, Any] = {}
        self.cancelled = False  # the run ends stopped (RUN_FINISHED, outcome cancelled): its calls may be cut short

    def bad(self, message: str, index: int | None = None, requirement: str = EVENTS) -> None:
        self.found.append(Violation(requirement, message, index))

    def run(self, found: list[tuple[int, dict[str, Any]]]) -> list[Violation]:
        if not found:
            return self.found  # no event at all: the protocol's (AGUI-PROTO-002)
        self.run_started(*found[0])
        terminal = [(position, index, e) for position, (index, e) in enumerate(found) if e.get("type") in TERMINAL]
        self.cancelled = bool(terminal) and cancelled(terminal[0][2])
        for index, event in found:
            kind = event.get("type")
            if kind not in MAPPED or kind == "RUN_STARTED":
                continue  # other AG-UI events (steps, snapshots, CUSTOM, RAW) are the protocol's alone
            if kind.startswith("TEXT_MESSAGE_"):
                self.text(index, event, kind)
            elif kind.startswith("TOOL_CALL_"):
                self.tool(index, event, kind)
            else:
                self.closed_at(index, kind)
                break
        self.end(found, terminal)
        if self.expected is not None:
            self.judge_expected(terminal)
        return self.found

    def run_started(self, index: int, event: dict[str, Any]) -> None:
        if event.get("type") == "RUN_ERROR":
            # The protocol admits a run that fails before it starts; the contract's run starts with RUN_STARTED.
            self.bad("the run has no RUN_STARTED naming the request's thread and run: it begins with RUN_ERROR", index)
        if event.get("type") != "RUN_STARTED":
            return  # anything else first: the protocol's (AGUI-PROTO-002)
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
            if message_id not in self.open_texts and any(m == message_id for _, m, _ in self.texts):
                self.bad(f"TEXT_MESSAGE_START reuses the id {message_id!r} of an ended message", index)
            self.open_texts.add(message_id)
            self.texts.append((index, message_id, ""))
        elif message_id not in self.open_texts:
            return  # of no open message: the protocol's (AGUI-PROTO-003)
        elif kind == "TEXT_MESSAGE_CONTENT":
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
            if call is not None and call.state != "open":
                self.bad(f"a second TOOL_CALL_START of the ended call {call_id!r}", index)
            if call is not None:
                return  # of a call still open: the protocol's (AGUI-PROTO-004)
            parent = ident(event.get("parentMessageId"))
            if not isinstance(parent, str) or not parent:
                self.bad(f"TOOL_CALL_START of {call_id!r} has no parentMessageId", index)
            self.calls[call_id] = _Call(event.get("toolCallName"), parent, index)
            self.order.append(call_id)
        elif kind == "TOOL_CALL_RESULT":
            if call is None or call.state != "ended":
                state = "an unknown call" if call is None else f"a call in state {call.state}"
                self.bad(f"TOOL_CALL_RESULT for {call_id!r}, {state} (expected ended)", index)
                return
            call.state = "result"
            if event.get("role") != "tool":
                self.bad(f"TOOL_CALL_RESULT of {call_id!r} has role {event.get('role')!r}, not tool", index)
        elif call is None or call.state != "open":
            return  # ARGS or END of no open call: the protocol's (AGUI-PROTO-004)
        elif kind == "TOOL_CALL_ARGS":
            call.arguments += event["delta"] if isinstance(event.get("delta"), str) else ""
        else:
            call.state = "ended"
            if self.expected is not None or self.cancelled:
                return  # the scripted call's arguments are the protocol's (AGUI-PROTO-006); a stopped run's may be cut
            try:
                json.loads(call.arguments)
            except ValueError:
                self.bad(f"the TOOL_CALL_ARGS of {call_id!r} make {call.arguments!r}, not JSON", index)

    def closed_at(self, index: int, kind: str) -> None:
        """RUN_FINISHED with a message or call open is the protocol's (AGUI-PROTO-005), and RUN_ERROR may end a run
        with them open; the contract adds each ended call's result before RUN_FINISHED, but in a run that was stopped
        (a call cut short while its arguments streamed, or stopped before its tool ran, has none)."""
        if kind != "RUN_FINISHED" or self.cancelled:
            return
        for call_id, call in self.calls.items():
            if call.state == "ended":
                self.bad(f"the tool call {call_id} has no TOOL_CALL_RESULT before {kind}", index)

    def end(self, found: list[tuple[int, dict[str, Any]]], terminal: list[tuple[int, int, dict[str, Any]]]) -> None:
        if not terminal:
            self.bad("no RUN_FINISHED or RUN_ERROR carries the run's end (its thread, run and usage)", requirement=END)
            return
        position, index, event = terminal[0]
        if position != len(found) - 1:
            following = found[position + 1][1].get("type")
            # A new run's RUN_STARTED, or a late RUN_ERROR after RUN_FINISHED, the protocol admits (spec 1.0
            # lifecycle; verifyEvents); the contract's answer is one run. Any other event is the protocol's.
            if following == "RUN_STARTED" or (following == "RUN_ERROR" and event.get("type") == "RUN_FINISHED"):
                after = [e.get("type") for _, e in found[position + 1 :][:5]]
                self.bad(
                    f"events follow {event.get('type')}: {after} (one run per answer)", found[position + 1][0], END
                )
        if event.get("type") == "RUN_FINISHED":
            self.finished(index, event)
        else:
            for key in ("message", "code"):
                if not isinstance(event.get(key), str) or not event[key].strip():
                    self.bad(f"RUN_ERROR has no {key}: {short(event)}", index, END)
            if "usage" in event and event["usage"] is not None:  # optional on RUN_ERROR; the turn's when sent
                self.usage(index, event)

    def finished(self, index: int, event: dict[str, Any]) -> None:
        for key in ("threadId", "runId"):
            if event.get(key) != self.started.get(key) or key not in self.started:
                message = f"RUN_FINISHED has {key} {event.get(key)!r}; RUN_STARTED had {self.started.get(key)!r}"
                self.bad(message, index, END)
        self.usage(index, event)

    def usage(self, index: int, event: dict[str, Any]) -> None:
        usage = event.get("usage")
        if _usage_problem(usage[0] if isinstance(usage, list) and len(usage) == 1 else None):
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
            elif ending.get("code") not in (FAILED_CODE, None, ""):  # no code at all: end() says so once
                self.bad(
                    f"RUN_ERROR has code {ending.get('code')!r}; the turn's contract error is {FAILED_CODE}",
                    terminal[0][1],
                    END,
                )
        elif ending.get("type") == "RUN_ERROR":
            self.bad(f"the turn does not fail but the run ends with {short(ending)}", terminal[0][1], END)
        texts = [text for _, _, text in self.counted()]
        if texts != expected.texts:
            self.bad(f"the text messages are {texts!r}; the generations streamed {expected.texts!r}")
        self.judge_calls()

    def counted(self) -> list[tuple[int, Any, str]]:
        """The text messages that carry a run of content: a message without content that a tool call names as its
        parent is that tool-only generation's assistant message (AGUI-002), not an extra text message."""
        parents = {call.parent for call in self.calls.values()}
        return [(i, m, text) for i, m, text in self.texts if text or m not in parents]

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
            return  # calls missing, late or other than the model's: the protocol's (AGUI-PROTO-006)
        # parentMessageId: one message for the calls of a generation, the generation's text message when it has
        # one, else a message of its own (without content, or none streamed); another message for each generation.
        counted = self.counted()
        text_ids = iter(m for _, m, _ in counted)
        texts = {m for _, m, _ in counted}
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
                elif call.parent in parents or (message_id is None and call.parent in texts):
                    self.bad(
                        f"TOOL_CALL_START of {call_id} has parentMessageId {call.parent!r}, the message of "
                        "another generation",
                        call.index,
                    )
            if ids:
                parents.append(self.calls[ids[0]].parent)


def cancelled(event: dict[str, Any]) -> bool:
    """RUN_FINISHED with `outcome: {"type": "cancelled"}`: stopped, not failed (@ag-ui/core 1.0.0
    RunFinishedCancelledOutcome; AGUI-003 ends an aborted turn so)."""
    outcome = event.get("outcome") if event.get("type") == "RUN_FINISHED" else None
    return isinstance(outcome, dict) and outcome.get("type") == "cancelled"


def order(answer: ChannelAnswer, expected: ExpectedTurn | None = None) -> list[Violation]:
    """The contract's rules of the events (AGUI-002, AGUI-003)."""
    return _Run(answer, expected).run(protocol.events(answer))


def contract(answer: ChannelAnswer, expected: ExpectedTurn | None = None) -> list[Violation]:
    """Every deviation from the contract's additions (AGUI-002, AGUI-003) in one recorded answer."""
    if answer.sse is None:
        return []
    return framing(answer) + order(answer, expected)


def judge(answer: ChannelAnswer, expected: ExpectedTurn | None = None) -> list[Violation]:
    """Both voices over one recorded answer: the protocol's violations (AGUI-PROTO-*), then the contract's
    deviations (AGUI-002, AGUI-003; content exact when `expected` is given)."""
    return protocol.judge(answer, expected) + contract(answer, expected)
