"""The rules of AG-UI 1.0 itself (AGUI-PROTO-001..006), judged over one recorded answer; the contract's additions are
conformance/rules/ag_ui.py's.

Sources, as each rule's comment cites them: the AG-UI 1.0 specification (docs.ag-ui.com/spec/1.0: events/lifecycle
"Runs and Steps", the text message and tool call event pages), @ag-ui/core 1.0.0's EventSchemas (the official
schema, spec/channels/official/), and @ag-ui/client 1.0.0: HttpAgent's SSE parser (transformHttpEventStream) and
`verifyEvents`, which HttpAgent applies to every run. The walk below follows verifyEvents' state machine, so that the
suite never fails a server for a stream the protocol's own validator accepts.

`judge(answer)` -> [Violation]; `client_requirement(message)`: the requirement that a message of @ag-ui/client's
(verifyEvents' own wording, or its parser's) breaks.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from conformance.rules import official
from conformance.rules.expected import calls_by_generation
from conformance.rules.violations import Violation, short
from conformance.transport.sse import INVALID

if TYPE_CHECKING:
    from conformance.channels.endpoints import ChannelAnswer
    from conformance.rules.expected import ExpectedTurn

FORMAT, RUN, TEXT, TOOL, END, CALLS = (f"AGUI-PROTO-00{n}" for n in range(1, 7))
PROTOCOL = frozenset({FORMAT, RUN, TEXT, TOOL, END, CALLS})
TERMINAL = ("RUN_FINISHED", "RUN_ERROR")


def framing(answer: ChannelAnswer) -> list[Violation]:
    """AGUI-PROTO-001: text/event-stream whose `data:` events are JSON events valid against @ag-ui/core."""
    content_type = answer.headers.get("content-type", "")
    found = []
    # The SSE transport's media type: AG-UI's EventEncoder (docs.ag-ui.com/sdk/python/encoder) answers it, with each
    # event `data: <json>\n\n`. HttpAgent parses any type but AG-UI's protobuf one as SSE: its read misses this.
    if not content_type.startswith("text/event-stream"):
        found.append(Violation(FORMAT, f"the answer's content-type is {content_type!r}, not text/event-stream"))
    if answer.sse is None:
        return found + [Violation(FORMAT, f"the answer is no SSE stream: {answer.describe()}")]
    for frame in answer.sse.frames:
        if frame.data is None:
            continue  # HttpAgent's parser reads data: lines only; comments and other fields are skipped
        if frame.is_done:
            # HttpAgent JSON.parses every data: event; `[DONE]` (an OpenAI habit) makes the run fail.
            found.append(Violation(FORMAT, "AG-UI has no data: [DONE] (@ag-ui/client cannot parse it)", frame.index))
            continue
        event = frame.json()
        if event is INVALID or not isinstance(event, dict):
            found.append(Violation(FORMAT, f"the frame's data is not a JSON object: {short(frame.raw)}", frame.index))
            continue
        # @ag-ui/core 1.0.0 EventSchemas (the discriminated union of every event type), which HttpAgent applies too;
        # it also refuses what verifyEvents words "with 'subagentRunId: null'" (the field is a string or absent).
        problems = official.errors("ag_ui_event", event)
        if problems:
            message = f"the event {short(event)} is invalid: {'; '.join(problems)}"
            found.append(Violation(FORMAT, message, frame.index))
    return found


class _Walk:
    """verifyEvents' state machine over the events in order (@ag-ui/client 1.0.0; spec 1.0 events/lifecycle)."""

    def __init__(self) -> None:
        self.found: list[Violation] = []
        self.phase = "none"  # none -> active -> finished | errored -> active (a new run) ...
        self.reset()

    def reset(self) -> None:
        """A new run: verifyEvents forgets what the last one opened."""
        self.texts: set[Any] = set()  # open text messages
        self.reasoning: set[Any] = set()  # open reasoning messages
        self.spans: set[Any] = set()  # open reasoning spans (REASONING_START .. REASONING_END)
        self.calls: set[Any] = set()  # open tool calls
        self.steps: set[tuple[Any, Any]] = set()  # open steps: (subagentRunId, stepName)

    def bad(self, requirement: str, message: str, index: int) -> None:
        self.found.append(Violation(requirement, message, index))

    def walk(self, events: list[tuple[int, dict[str, Any]]]) -> list[Violation]:
        for index, event in events:
            if not self.admitted(index, event):
                break  # verifyEvents stops the run at its first violation of the run's lifecycle
            self.event(index, event)
        if self.phase == "active":
            # Spec 1.0 events/lifecycle: a run ends with RUN_FINISHED or RUN_ERROR.
            last = [e.get("type") for _, e in events[-3:]]
            self.found.append(Violation(RUN, f"the run never ends: no RUN_FINISHED or RUN_ERROR (last events {last})"))
        elif self.phase == "none":
            self.found.append(Violation(RUN, "the stream has no event"))
        return self.found

    def admitted(self, index: int, event: dict[str, Any]) -> bool:
        kind = event.get("type")
        if self.phase == "errored" and kind != "RUN_STARTED":
            # verifyEvents: "The run has already errored with 'RUN_ERROR'. No further events can be sent."
            self.bad(RUN, f"{kind} follows RUN_ERROR (only a new run's RUN_STARTED may)", index)
            return False
        if self.phase == "finished" and kind not in TERMINAL[1:] + ("RUN_STARTED",):
            # verifyEvents: "The run has already finished with 'RUN_FINISHED'. Start a new run with 'RUN_STARTED'."
            self.bad(RUN, f"{kind} follows RUN_FINISHED (only a new run's RUN_STARTED or a RUN_ERROR may)", index)
            return False
        if self.phase == "none" and kind not in ("RUN_STARTED", "RUN_ERROR"):
            # Spec 1.0: "A stream MUST begin with RUN_STARTED or RUN_ERROR"; verifyEvents: "First event must be
            # 'RUN_STARTED'" (RUN_ERROR is admitted first: a run may fail before it begins).
            self.bad(RUN, f"the first event is {short(event)}, not RUN_STARTED", index)
            return False
        if kind == "RUN_STARTED" and self.phase == "active":
            # verifyEvents: "Cannot send 'RUN_STARTED' while a run is still active."
            self.bad(RUN, "RUN_STARTED while the run is still active (no RUN_FINISHED or RUN_ERROR before it)", index)
            return False
        return True

    def event(self, index: int, event: dict[str, Any]) -> None:
        kind = str(event.get("type"))
        if kind == "RUN_STARTED":
            self.reset()
            self.phase = "active"
        elif kind == "RUN_ERROR":
            # Spec 1.0: RUN_ERROR ends the run whatever is open (messages, calls, steps); verifyEvents checks nothing.
            self.phase = "errored"
        elif kind == "RUN_FINISHED":
            self.finished(index)
            self.phase = "finished"
        elif kind.startswith("TEXT_MESSAGE_"):
            # Spec 1.0 text message events; verifyEvents: "A text message with ID ... is already in progress",
            # "No active text message found with ID ...". (TEXT_MESSAGE_CHUNK: HttpAgent's transformChunks opens and
            # closes it, not judged here.)
            self.lifecycle(TEXT, self.texts, "text message", "TEXT_MESSAGE", kind, event.get("messageId"), index)
        elif kind.startswith("TOOL_CALL_") and kind != "TOOL_CALL_RESULT":
            # Spec 1.0 tool call events; verifyEvents: "A tool call with ID ... is already in progress",
            # "No active tool call found with ID ...". A TOOL_CALL_RESULT is not checked by verifyEvents.
            self.lifecycle(TOOL, self.calls, "tool call", "TOOL_CALL", kind, event.get("toolCallId"), index)
        elif kind.startswith("REASONING_MESSAGE_"):
            # verifyEvents: "A reasoning message with ID ... is already in progress", "No active reasoning message".
            self.lifecycle(TEXT, self.reasoning, "reasoning message", "REASONING_MESSAGE", kind, event.get("messageId"),
                           index)  # fmt: skip
        elif kind in ("REASONING_START", "REASONING_END"):
            # verifyEvents: "A reasoning span with ID ... is already in progress", "No active reasoning span".
            self.lifecycle(TEXT, self.spans, "reasoning span", "REASONING", kind, event.get("messageId"), index)
        elif kind in ("STEP_STARTED", "STEP_FINISHED"):
            self.step(index, event, kind)

    def lifecycle(self, rule: str, open_: set[Any], what: str, prefix: str, kind: str, ident: Any, index: int) -> None:
        key = ident if isinstance(ident, str) else short(ident)
        if kind == f"{prefix}_START":
            if key in open_:
                self.bad(rule, f"{kind} of the {what} {key!r}, which is already in progress", index)
            open_.add(key)
        elif kind in (f"{prefix}_CONTENT", f"{prefix}_ARGS", f"{prefix}_END"):
            if key not in open_:
                self.bad(rule, f"{kind} names the {what} {key!r}, which no {prefix}_START opened or is ended", index)
            elif kind.endswith("_END"):
                open_.discard(key)

    def step(self, index: int, event: dict[str, Any], kind: str) -> None:
        # Spec 1.0 events/lifecycle (steps); verifyEvents: 'Step "..." is already active for STEP_STARTED',
        # "Cannot send 'STEP_FINISHED' for step ... that was not started".
        key = (event.get("subagentRunId"), short(event.get("stepName")))
        if kind == "STEP_STARTED":
            if key in self.steps:
                self.bad(RUN, f"STEP_STARTED of the step {key[1]}, which is already active", index)
            self.steps.add(key)
        elif key not in self.steps:
            self.bad(RUN, f"STEP_FINISHED of the step {key[1]}, which was not started", index)
        else:
            self.steps.discard(key)

    def finished(self, index: int) -> None:
        # Spec 1.0: RUN_FINISHED closes a run whose work ended; verifyEvents: "Cannot send 'RUN_FINISHED' while text
        # messages / reasoning messages / reasoning spans / tool calls / steps are still active".
        for what, open_ in (("text messages", self.texts), ("reasoning messages", self.reasoning),
                            ("reasoning spans", self.spans), ("tool calls", self.calls)):  # fmt: skip
            if open_:
                self.bad(END, f"RUN_FINISHED while {what} are still active: {sorted(map(str, open_))}", index)
        if self.steps:
            names = sorted(str(name) for _, name in self.steps)
            self.bad(END, f"RUN_FINISHED while steps are still active: {names}", index)


def events(answer: ChannelAnswer) -> list[tuple[int, dict[str, Any]]]:
    """The answer's events as HttpAgent reads them: each data: frame's JSON object, in order."""
    return answer.sse.json_objects() if answer.sse else []


def order(answer: ChannelAnswer) -> list[Violation]:
    """AGUI-PROTO-002..005 over the answer's events."""
    return _Walk().walk(events(answer))


def judge(answer: ChannelAnswer, expected: ExpectedTurn | None = None) -> list[Violation]:
    """Every violation of AGUI-PROTO-001..006 in one recorded answer (AGUI-PROTO-006 with the script's turn)."""
    if answer.sse is None:
        return framing(answer)
    return framing(answer) + order(answer) + tool_calls(answer, expected)


@dataclass
class ShownCall:
    """One tool call as the events show it: where it started, its arguments' deltas, where it ended and got its
    result (event indexes)."""

    name: Any
    started: int
    arguments: str = ""
    deltas: int = 0
    late: int = 0  # TOOL_CALL_ARGS after the call's end (AGUI-PROTO-004's to judge; here: the arguments are lost)
    ended: int | None = None
    result: int | None = None


def shown_calls(found: list[tuple[int, dict[str, Any]]]) -> dict[Any, ShownCall]:
    """The tool calls of the events, in the order they started. TOOL_CALL_CHUNK is read as the client expands it
    (spec 1.0 events, ToolCallChunk: the first chunk of a call starts it, each delta is an ARGS, the call ends when
    the stream switches to another call or to another event)."""
    calls: dict[Any, ShownCall] = {}
    chunked: Any = None  # the call TOOL_CALL_CHUNK events are streaming

    def close_chunked(index: int) -> None:
        nonlocal chunked
        if chunked is not None and calls[chunked].ended is None:
            calls[chunked].ended = index
        chunked = None

    for index, event in found:
        kind, call_id = event.get("type"), short(event.get("toolCallId"))
        if kind == "TOOL_CALL_CHUNK":
            call_id = call_id if event.get("toolCallId") is not None else chunked
            if call_id != chunked:
                close_chunked(index)
                chunked = call_id
            kind = "TOOL_CALL_START" if call_id not in calls else ("TOOL_CALL_ARGS" if event.get("delta") else "")
            if kind == "TOOL_CALL_START" and event.get("delta"):
                calls[call_id] = ShownCall(event.get("toolCallName"), index)
                kind = "TOOL_CALL_ARGS"
        elif kind != "TOOL_CALL_RESULT" or call_id == chunked:
            close_chunked(index)
        call = calls.get(call_id)
        if kind == "TOOL_CALL_START" and call is None:
            calls[call_id] = ShownCall(event.get("toolCallName"), index)
        elif call is None:
            continue
        elif kind == "TOOL_CALL_ARGS" and call.ended is None:
            call.arguments += event["delta"] if isinstance(event.get("delta"), str) else ""
            call.deltas += 1
        elif kind == "TOOL_CALL_ARGS":
            call.late += 1
        elif kind == "TOOL_CALL_END" and call.ended is None:
            call.ended = index
        elif kind == "TOOL_CALL_RESULT" and call.result is None:
            call.result = index
    close_chunked(found[-1][0] + 1 if found else 0)
    return calls


def tool_calls(answer: ChannelAnswer, expected: ExpectedTurn | None) -> list[Violation]:
    """AGUI-PROTO-006 over the calls the script's model made, generation by generation, in the order they started.
    Spec 1.0 events, Tool Call Events: "When an agent needs to use a tool, it emits a ToolCallStart event, followed
    by one or more ToolCallArgs events that stream the arguments ..., and concludes with a ToolCallEnd event";
    "Frontends should concatenate these deltas in the order received to construct the complete arguments object";
    "This streaming approach allows frontends to show tool executions in real-time". So each call is shown, its
    arguments in ARGS; and calls the model sent together, whole in one chunk, are all shown before any of them has a
    result (a server that runs a call as soon as it is complete may answer it before a later call is made: only
    calls that came together are held to that)."""
    if expected is None or expected.fails or answer.sse is None:
        return []
    shown = shown_calls(events(answer))
    found: list[Violation] = []
    for number, generation, mine in calls_by_generation(expected, list(shown)):
        made = [call.name for call in generation.tool_calls]
        if len(mine) < len(made):
            message = f"generation {number} made {len(made)} tool calls {made}; {len(mine)} were streamed (started)"
            found.append(Violation(CALLS, message))
            return found
        results = [shown[call_id].result for call_id in mine if shown[call_id].result is not None]
        first_result = min(results, default=None) if generation.calls_together else None
        for call, call_id in zip(generation.tool_calls, mine, strict=True):
            found += _call_problems(call_id, shown[call_id], call, first_result)
    return found


def _call_problems(call_id: Any, shown: ShownCall, call: Any, first_result: int | None) -> list[Violation]:
    problems = []
    if shown.name != call.name:
        problems.append(f"the call {call_id} is named {shown.name!r}; the model called {call.name!r}")
    made = json.dumps(call.arguments, sort_keys=True)
    if not shown.deltas and call.arguments and shown.late:
        late = f"{shown.late} came after it"
        problems.append(f"the call {call_id} ({call.name}) has no TOOL_CALL_ARGS before its TOOL_CALL_END ({late}): "
                        f"its arguments {made} are not the call's")  # fmt: skip
    elif not shown.deltas and call.arguments:
        problems.append(f"the call {call_id} ({call.name}) has no TOOL_CALL_ARGS: its arguments {made} never streamed")
    else:
        try:
            same = json.loads(shown.arguments) == call.arguments
        except ValueError:
            same = False
        if not same:
            problems.append(f"the TOOL_CALL_ARGS of {call_id} make {shown.arguments!r}; the model's arguments: {made}")
    if first_result is not None and (shown.ended is None or shown.ended > first_result):
        where = "is never ended" if shown.ended is None else f"ends at event {shown.ended}"
        problems.append(
            f"the call {call_id} ({call.name}) starts at event {shown.started} and {where}, after a TOOL_CALL_RESULT "
            f"of its generation (event {first_result}): the model sent the calls together, in one chunk, and each is "
            "streamed before any of them has a result"
        )
    return [Violation(CALLS, problem, shown.started) for problem in problems]


# @ag-ui/client's own words (verifyEvents, HttpAgent's parser), each to the requirement it states.
_CLIENT_WORDS = (
    (FORMAT, ("null'. The field is optional",)),  # "Cannot send '<type>' with '<field>: null'": the event's form
    (END, ("Cannot send 'RUN_FINISHED' while",)),
    (RUN, ("First event must", "already finished", "already errored", "while a run is still active")),
    (TEXT, ("text message", "reasoning message", "reasoning span", "TEXT_MESSAGE", "REASONING")),
    (TOOL, ("tool call", "TOOL_CALL")),
    (RUN, ("Step ", "STEP_")),
)


def client_requirement(message: str) -> str:
    """The AGUI-PROTO requirement a rejection of @ag-ui/client breaks: verifyEvents' lifecycle messages by their
    words; anything else (its parser's JSON error, a schema error, an event it cannot apply) the event format's."""
    for requirement, words in _CLIENT_WORDS:
        if any(word in message for word in words):
            return requirement
    return FORMAT
