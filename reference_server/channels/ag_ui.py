"""AG-UI 1.0, as `@ag-ui/client`'s `HttpAgent` runs it (spec/behaviour.md, "AG-UI channel": AGUI-001..003, and
"AG-UI protocol": AGUI-PROTO-001..007, the protocol's own rules that the contract's mapping keeps).

`AgUiStream` is the pure translation of a turn's contract events into AG-UI events (AGUI-002, AGUI-003); the
route runs a `RunAgentInput` (AGUI-PROTO-007) as the contract maps it (AGUI-001) and starts the turn with the shared
core (CHANNEL-002).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from gns3_copilot_generated.constants import AG_UI_RUN_ID_MAX_LENGTH, CHANNEL_MESSAGES_MAX_ITEMS, CHANNEL_PATHS
from reference_server.errors import ApiError, invalid_field
from reference_server.json_input import json_body
from reference_server.prelude import Authenticated, OpenedProject
from reference_server.turns.core import TurnOutcome, TurnRequest, outcome_of, start_channel_turn
from reference_server.turns.sse import HEARTBEAT_FRAME, NO_BUFFERING, data_frame, stream_response


def _new_id() -> str:
    return str(uuid.uuid4())


@dataclass
class _Call:
    call_id: str
    name: str
    arguments: str = ""
    ended: bool = False
    answered: bool = False


@dataclass
class AgUiStream:
    """Contract events in, AG-UI events out (AGUI-002, AGUI-003), one run per instance; no I/O.

    `opening()` is `RUN_STARTED`, sent before any event; then `feed(batch)` per batch of contract events, until
    `done`, after which nothing is sent: `RUN_FINISHED` with the usage (CHANNEL-008), or `RUN_ERROR` when the
    turn had a contract `error`. Every text message and tool call is closed before either. Optional fields are
    omitted, never null.
    """

    thread_id: str
    run_id: str
    outcome: Callable[[], TurnOutcome]
    new_id: Callable[[], str] = _new_id
    _generation_id: str | None = None  # the assistant message of the current generation
    _generation_has_text: bool = False
    _text_id: str | None = None
    _calls: dict[str, _Call] = field(default_factory=dict)
    _tool_results_sent: bool = False  # the next text or call belongs to the next generation
    _error: dict[str, Any] | None = None
    _started: bool = False
    _ended: bool = False

    def opening(self) -> str:
        if self._started:
            return ""
        self._started = True  # RUN_STARTED first, once (AGUI-PROTO-002)
        return data_frame({"type": "RUN_STARTED", "threadId": self.thread_id, "runId": self.run_id})

    def feed(self, batch: list[dict[str, Any]]) -> str:
        frames = [self.opening()]
        for event in batch:
            if self._ended:
                break
            if event["type"] == "heartbeat":
                frames.append(HEARTBEAT_FRAME)
            else:  # each event one `data: <event>` frame of text/event-stream (AGUI-PROTO-001)
                frames.extend(data_frame(e) for e in self.events(event))
        return "".join(frames)

    def events(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        """The AG-UI events of one contract event (heartbeats are comments, not events: see `feed`)."""
        kind = event["type"]
        if kind == "content":
            return self._content(event["content"])
        if kind == "tool_call":
            return self._tool_call(event["tool_call"])
        if kind == "tool_end":
            return self._tool_end(event)
        if kind == "error":
            self._error = event  # the run ends with RUN_ERROR at `done`, which always follows (ERRSTREAM-001)
            return self._close_all()
        if kind == "done":
            return self._done()
        return []  # tool_start: the call was shown from its first tool_call

    def _generation(self) -> str:
        if self._tool_results_sent or self._generation_id is None:
            self._tool_results_sent = False
            self._generation_id, self._generation_has_text = self.new_id(), False
        return self._generation_id

    def _content(self, text: str) -> list[dict[str, Any]]:
        generation = self._generation()
        events: list[dict[str, Any]] = []
        if self._text_id is None:
            # The generation's first text is its assistant message; text after its calls a message of its own,
            # under a new id, never one still open (AGUI-PROTO-003).
            self._text_id = self.new_id() if self._generation_has_text else generation
            self._generation_has_text = True
            events.append({"type": "TEXT_MESSAGE_START", "messageId": self._text_id, "role": "assistant"})
        events.append({"type": "TEXT_MESSAGE_CONTENT", "messageId": self._text_id, "delta": text})
        return events

    def _close_text(self) -> list[dict[str, Any]]:
        if self._text_id is None:
            return []
        text_id, self._text_id = self._text_id, None
        return [{"type": "TEXT_MESSAGE_END", "messageId": text_id}]

    def _start_call(self, call_id: str, name: str) -> dict[str, Any]:
        # One TOOL_CALL_START per call id, its ARGS and END after it (AGUI-PROTO-004); every call of a generation,
        # however the model's deltas cut it, is started and given its arguments as they arrive, so calls that came
        # together are all streamed before the generation's first TOOL_CALL_RESULT (AGUI-PROTO-006).
        self._calls[call_id] = _Call(call_id, name)
        self._generation_has_text = True  # the generation's message exists now (the client made it)
        return {
            "type": "TOOL_CALL_START",
            "toolCallId": call_id,
            "toolCallName": name,
            "parentMessageId": self._generation_id,
        }

    def _tool_call(self, streamed: dict[str, Any]) -> list[dict[str, Any]]:
        self._generation()
        events = self._close_text()
        function = streamed["function"]
        call = self._calls.get(streamed["id"])
        if call is None:
            events.append(self._start_call(streamed["id"], function["name"]))
            call = self._calls[streamed["id"]]
        if call.ended:
            return events
        arguments = function["arguments"]
        if arguments.startswith(call.arguments) and len(arguments) > len(call.arguments):
            # Prefix-growing arguments (TOOLCALL-002): each growth is one TOOL_CALL_ARGS with the new suffix.
            events.append(
                {"type": "TOOL_CALL_ARGS", "toolCallId": call.call_id, "delta": arguments[len(call.arguments) :]}
            )
            call.arguments = arguments
        if function.get("complete"):
            events.append(self._end_call(call))
        return events

    def _end_call(self, call: _Call) -> dict[str, Any]:
        call.ended = True
        return {"type": "TOOL_CALL_END", "toolCallId": call.call_id}

    def _tool_end(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        events = self._close_text()
        call_id = event.get("tool_call_id") or self._waiting_call(event["tool_name"])
        if call_id is None or call_id not in self._calls:  # a result of a call never shown: show the call first
            call_id = call_id or self.new_id()
            self._generation()
            events.append(self._start_call(call_id, event["tool_name"]))
        call = self._calls[call_id]
        if not call.ended:
            events.append(self._end_call(call))
        self._tool_results_sent = True
        result = {
            "type": "TOOL_CALL_RESULT",
            "messageId": self.new_id(),
            "toolCallId": call_id,
            "content": event["tool_output"],
            "role": "tool",
        }
        call.answered = True
        return [*events, result]

    def _waiting_call(self, name: str) -> str | None:
        """`tool_end` without its call's id (TOOLCALL-007 is a SHOULD): the oldest unanswered call of that tool."""
        return next((c.call_id for c in self._calls.values() if c.name == name and not c.answered), None)

    def _close_all(self) -> list[dict[str, Any]]:
        events = self._close_text()
        events.extend(self._end_call(call) for call in self._calls.values() if not call.ended)
        return events

    def _done(self) -> list[dict[str, Any]]:
        self._ended = True  # nothing after RUN_FINISHED or RUN_ERROR (AGUI-PROTO-002)
        outcome = self.outcome()
        events = self._close_all()  # every message and call ended before RUN_FINISHED (AGUI-PROTO-005)
        usage = [
            {
                "inputTokens": outcome.input_tokens,
                "outputTokens": outcome.output_tokens,
                "totalTokens": outcome.input_tokens + outcome.output_tokens,
            }
        ]
        if self._error is not None:
            error: dict[str, Any] = {"type": "RUN_ERROR", "message": self._error["error"]}
            if self._error.get("code"):
                error["code"] = self._error["code"]
            return [*events, {**error, "usage": usage}]
        finished: dict[str, Any] = {"type": "RUN_FINISHED", "threadId": self.thread_id, "runId": self.run_id}
        if outcome.aborted:
            finished["outcome"] = {"type": "cancelled"}  # stopped, not failed (AG-UI 1.0 RunFinishedCancelledOutcome)
        return [*events, {**finished, "usage": usage}]


# --- The request (AGUI-PROTO-007, mapped by AGUI-001) ---


class _Loose(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class AgUiMessage(_Loose):
    """A message of `RunAgentInput.messages`; only the last one, a user message, is read (CHANNEL-004)."""

    id: str
    role: Literal["developer", "system", "assistant", "user", "tool", "activity", "reasoning"]
    content: Any = None


class RunAgentInput(_Loose):
    """AG-UI 1.0's RunAgentInput (`@ag-ui/core` RunAgentInputSchema): `threadId`, `runId` and `messages` are
    required; `state` and `context` are ignored, whatever they hold (AGUI-PROTO-007, AGUI-001); unknown members are
    kept by AG-UI and ignored here. The contract bounds the messages and the run ids (CHANNEL-011)."""

    thread_id: Annotated[str, Field(alias="threadId")]
    run_id: Annotated[str, Field(alias="runId", max_length=AG_UI_RUN_ID_MAX_LENGTH)]  # echoed: bounded (CHANNEL-011)
    messages: Annotated[list[AgUiMessage], Field(max_length=CHANNEL_MESSAGES_MAX_ITEMS)]
    tools: list[dict[str, Any]] = []
    context: list[dict[str, Any]] = []
    state: Any = None
    forwarded_props: Annotated[Any, Field(alias="forwardedProps")] = None
    protocol_version: Annotated[str | None, Field(alias="protocolVersion")] = None
    parent_run_id: Annotated[str | None, Field(alias="parentRunId", max_length=AG_UI_RUN_ID_MAX_LENGTH)] = None


def _message_text(content: Any) -> str | None:
    """A user message's text: its string content, or its text parts (the other parts are media: not read)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, dict) for p in content):
        texts = [p.get("text") for p in content if p.get("type") == "text"]
        if all(isinstance(t, str) for t in texts):
            return "".join(texts)
    return None


def _temperature(forwarded: Any) -> float | None:
    """`forwardedProps.temperature`, INPUT-003's 0.0..2.0."""
    value = forwarded.get("temperature") if isinstance(forwarded, dict) else None
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 2.0:
        raise invalid_field(["body", "forwardedProps", "temperature"], "temperature must be a number from 0.0 to 2.0")
    return float(value)


def turn_request(body: RunAgentInput) -> TurnRequest:
    if body.tools:  # CHANNEL-006: the server runs its own tools, never the client's
        raise ApiError(
            422,
            "client_tools_not_supported",
            "This agent runs its own tools and cannot call tools of the client; send the run without tools.",
        )
    if not body.messages or body.messages[-1].role != "user":  # CHANNEL-004
        loc: list[str | int] = ["body", "messages"] + ([len(body.messages) - 1, "role"] if body.messages else [])
        raise invalid_field(loc, "The last message must be a user message")
    position = len(body.messages) - 1
    text = _message_text(body.messages[position].content)
    if text is None:
        raise invalid_field(
            ["body", "messages", position, "content"],
            "A user message's content is a string or a list of content parts",
            "string_type",
        )
    return TurnRequest(
        session_id=body.thread_id,
        message=text,
        temperature=_temperature(body.forwarded_props),
        carries_history=any(m.role in ("user", "assistant") for m in body.messages[:-1]),
        message_loc=("body", "messages", position, "content"),
        session_loc=("body", "threadId"),
    )


router = APIRouter()


@router.post(CHANNEL_PATHS["ag_ui"])
async def ag_ui_run(
    project_id: str, caller: Authenticated, project: OpenedProject, request: Request
) -> StreamingResponse:
    body: RunAgentInput = await json_body(request, RunAgentInput)
    channel_turn = await start_channel_turn(project_id, request, caller, turn_request(body))
    stream = AgUiStream(thread_id=channel_turn.session_id, run_id=body.run_id, outcome=outcome_of(channel_turn))
    return stream_response(channel_turn, stream, NO_BUFFERING)  # RUN_STARTED first, at once (AGUI-002)
