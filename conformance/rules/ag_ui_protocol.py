"""The rules of AG-UI 1.0 itself (AGUI-PROTO-001..005), judged over one recorded answer; the contract's additions are
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

from typing import TYPE_CHECKING, Any

from conformance.rules import official
from conformance.rules.violations import Violation, short
from conformance.transport.sse import INVALID

if TYPE_CHECKING:
    from conformance.channels.endpoints import ChannelAnswer

FORMAT, RUN, TEXT, TOOL, END = (f"AGUI-PROTO-00{n}" for n in range(1, 6))
PROTOCOL = frozenset({FORMAT, RUN, TEXT, TOOL, END})
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


def judge(answer: ChannelAnswer) -> list[Violation]:
    """Every violation of AGUI-PROTO-001..005 in one recorded answer."""
    if answer.sse is None:
        return framing(answer)
    return framing(answer) + order(answer)


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
