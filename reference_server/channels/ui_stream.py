"""The Vercel AI SDK UI message stream, protocol v1, as `useChat` with `DefaultChatTransport` consumes it
(spec/behaviour.md, "UI message stream channel": UI-001..004, and "UI message stream protocol": UI-PROTO-001..006,
the protocol's own rules that the contract's mapping keeps).

`UiMessageStream` is the pure translation of a turn's contract events into UI message chunks (UI-002, UI-003);
the routes serve the body of `DefaultChatTransport` (UI-PROTO-006) as the contract maps it (UI-001), start the
turn with the shared core (CHANNEL-002) and serve the session's history as UIMessage[] (UI-004, ui_messages.py).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from gns3_copilot_generated.constants import CHANNEL_MESSAGES_MAX_ITEMS, CHANNEL_PATHS
from reference_server.errors import ApiError, invalid_field
from reference_server.json_input import json_body
from reference_server.prelude import HISTORY_LIMIT_RANGE, Authenticated, OpenedProject, OwnedSession, SessionIdInPath
from reference_server.turns.core import TurnOutcome, TurnRequest, outcome_of, start_channel_turn
from reference_server.turns.sse import DONE_FRAME, HEARTBEAT_FRAME, data_frame, stream_response

from .ui_messages import history_to_ui_messages

# UI-002; the same values as the `ai` package's UI_MESSAGE_STREAM_HEADERS (ui-message-stream-headers.ts).
UI_STREAM_HEADERS = {"x-vercel-ai-ui-message-stream": "v1", "cache-control": "no-cache", "x-accel-buffering": "no"}


def _new_id() -> str:
    return uuid.uuid4().hex


def parsed_arguments(arguments: str) -> Any:
    """A complete call's arguments as the tool part's `input`: the JSON object, or the text when it is not JSON
    (the contract promises an object, TOOLCALL-003; a broken one is still shown, never dropped)."""
    try:
        return json.loads(arguments)
    except ValueError:
        return arguments


@dataclass
class _ToolPart:
    call_id: str
    name: str
    arguments: str = ""
    input_available: bool = False
    output_available: bool = False


@dataclass
class UiMessageStream:
    """Contract events in, UI message chunks out (UI-003), one turn per instance; no I/O.

    `opening()` is sent before any event; then `feed(batch)` per batch of contract events, until `done`, which
    closes every open part and ends the stream with `finish-step`, `finish` (usage from `outcome`, CHANNEL-008)
    and `[DONE]` (UI-002). Optional fields are omitted, never null: the `ai` client rejects a null.
    """

    session_id: str
    outcome: Callable[[], TurnOutcome]
    message_id: str = field(default_factory=_new_id)
    new_id: Callable[[], str] = _new_id
    _text_id: str | None = None
    _tools: dict[str, _ToolPart] = field(default_factory=dict)
    _tool_results_sent: bool = False  # a generation's tools answered: the next text or call is a new step
    _started: bool = False
    _ended: bool = False

    def opening(self) -> str:
        if self._started:
            return ""
        self._started = True
        start = {"type": "start", "messageId": self.message_id, "messageMetadata": {"sessionId": self.session_id}}
        return data_frame(start) + data_frame({"type": "start-step"})

    def feed(self, batch: list[dict[str, Any]]) -> str:
        frames = [self.opening()]
        for event in batch:
            if self._ended:
                break
            if event["type"] == "heartbeat":
                frames.append(HEARTBEAT_FRAME)
            else:
                frames.extend(data_frame(chunk) for chunk in self.chunks(event))
                if event["type"] == "done":
                    frames.append(DONE_FRAME)
        return "".join(frames)

    def chunks(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        """The UI message chunks of one contract event (heartbeats are frames, not chunks: see `feed`)."""
        kind = event["type"]
        if kind == "content":
            return self._content(event["content"])
        if kind == "tool_call":
            return self._tool_call(event["tool_call"])
        if kind == "tool_end":
            return self._tool_end(event)
        if kind == "error":
            return [*self._close_parts(), {"type": "error", "errorText": event["error"]}]
        if kind == "done":
            return self._done()
        return []  # tool_start: the part shows the call from its first tool_call already

    def _next_step(self) -> list[dict[str, Any]]:
        """A generation after tool results is a new step (UI-003); parts never stay open across it."""
        if not self._tool_results_sent:
            return []
        self._tool_results_sent = False
        return [*self._close_parts(), {"type": "finish-step"}, {"type": "start-step"}]

    def _content(self, text: str) -> list[dict[str, Any]]:
        chunks = self._next_step()
        if self._text_id is None:
            self._text_id = self.new_id()
            chunks.append({"type": "text-start", "id": self._text_id})
        chunks.append({"type": "text-delta", "id": self._text_id, "delta": text})
        return chunks

    def _close_text(self) -> list[dict[str, Any]]:
        if self._text_id is None:
            return []
        text_id, self._text_id = self._text_id, None
        return [{"type": "text-end", "id": text_id}]

    def _tool_call(self, call: dict[str, Any]) -> list[dict[str, Any]]:
        chunks = self._next_step()
        chunks.extend(self._close_text())  # a run of content is one text part (UI-003)
        function = call["function"]
        part = self._tools.get(call["id"])
        if part is None:
            part = self._tools[call["id"]] = _ToolPart(call["id"], function["name"])
            chunks.append(
                {
                    "type": "tool-input-start",
                    "toolCallId": part.call_id,
                    "toolName": part.name,
                    "providerExecuted": True,
                }
            )
        if part.input_available:
            return chunks
        arguments = function["arguments"]
        if arguments.startswith(part.arguments) and len(arguments) > len(part.arguments):
            # The contract's arguments grow by prefix (TOOLCALL-002): the delta is the new suffix.
            chunks.append(
                {
                    "type": "tool-input-delta",
                    "toolCallId": part.call_id,
                    "inputTextDelta": arguments[len(part.arguments) :],
                }
            )
        part.arguments = arguments  # a complete event may restate them: its arguments are the input
        if function.get("complete"):
            chunks.append(self._input_available(part))
        return chunks

    # Every call gets its part as its first delta arrives and its tool-input-available with the call's input
    # (UI-PROTO-005) when the generation completes it, before any tool runs and so before the first output (UI-003).
    def _input_available(self, part: _ToolPart) -> dict[str, Any]:
        part.input_available = True
        return {
            "type": "tool-input-available",
            "toolCallId": part.call_id,
            "toolName": part.name,
            "input": parsed_arguments(part.arguments or "{}"),
            "providerExecuted": True,
        }

    def _tool_end(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        part = self._ended_part(event)
        chunks = self._close_text()
        if part is None:  # a result of a call never shown: show the call first, so the output has its part
            call_id = event.get("tool_call_id") or self.new_id()
            part = self._tools[call_id] = _ToolPart(call_id, event["tool_name"], "{}")
        if not part.input_available:
            chunks.append(self._input_available(part))
        part.output_available = True
        self._tool_results_sent = True
        chunks.append(
            {
                "type": "tool-output-available",
                "toolCallId": part.call_id,
                "output": event["tool_output"],
                "providerExecuted": True,
            }
        )
        return chunks

    def _ended_part(self, event: dict[str, Any]) -> _ToolPart | None:
        """The call a `tool_end` answers: by its id, or (the id is a SHOULD, TOOLCALL-007) the oldest call of
        that tool still waiting for its output."""
        call_id = event.get("tool_call_id")
        if call_id:
            return self._tools.get(call_id)
        waiting = (p for p in self._tools.values() if p.name == event["tool_name"] and not p.output_available)
        return next(waiting, None)

    def _close_parts(self) -> list[dict[str, Any]]:
        """Every open part closed (UI-003): the text part, and any call whose arguments never completed (the turn
        was cut short while they streamed) as an input error, its input the text received."""
        chunks = self._close_text()
        for part in self._tools.values():
            if not part.input_available:
                part.input_available = part.output_available = True
                chunks.append(
                    {
                        "type": "tool-input-error",
                        "toolCallId": part.call_id,
                        "toolName": part.name,
                        "input": part.arguments,
                        "errorText": "The turn ended before the call's arguments were complete.",
                        "providerExecuted": True,
                    }
                )
        return chunks

    def _done(self) -> list[dict[str, Any]]:
        self._ended = True
        outcome = self.outcome()
        chunks = self._close_parts()
        if outcome.aborted:
            chunks.append({"type": "abort"})
        usage = {
            "inputTokens": outcome.input_tokens,
            "outputTokens": outcome.output_tokens,
            "totalTokens": outcome.input_tokens + outcome.output_tokens,
        }
        chunks.append({"type": "finish-step"})
        chunks.append({"type": "finish", "messageMetadata": {"sessionId": self.session_id, "usage": usage}})
        return chunks


# --- The request (UI-PROTO-006, mapped by UI-001) ---


class UiTextPart(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: str
    text: Any = None


class UiMessageIn(BaseModel):
    """A UIMessage as `DefaultChatTransport` sends it; only the last one's text parts are read (CHANNEL-004)."""

    model_config = ConfigDict(extra="allow")
    id: str | None = None
    role: Literal["system", "user", "assistant"]
    parts: list[UiTextPart]


class UiChatRequest(BaseModel):
    """The body of `DefaultChatTransport`, served whatever its own members hold (UI-PROTO-006); mapped by UI-001, other
    members are ignored (INPUT-008)."""

    model_config = ConfigDict(extra="allow")
    id: str
    messages: Annotated[list[UiMessageIn], Field(min_length=1, max_length=CHANNEL_MESSAGES_MAX_ITEMS)]  # CHANNEL-011
    trigger: Literal["submit-message", "regenerate-message"] = "submit-message"
    messageId: str | None = None  # the wire name; not read
    temperature: Annotated[float | None, Field(ge=0.0, le=2.0)] = None


def turn_request(body: UiChatRequest) -> TurnRequest:
    if body.trigger == "regenerate-message":  # CHANNEL-006
        raise ApiError(
            422,
            "regenerate_not_supported",
            "This server keeps the conversation and cannot regenerate an answer; send a new message instead.",
        )
    position = len(body.messages) - 1
    last = body.messages[position]
    if last.role != "user":  # CHANNEL-004
        raise invalid_field(
            ["body", "messages", position, "role"], "The last message must be a user message", "literal_error"
        )
    texts = [part.text for part in last.parts if part.type == "text"]
    if not all(isinstance(text, str) for text in texts):
        raise invalid_field(["body", "messages", position, "parts"], "A text part's text is a string", "string_type")
    return TurnRequest(
        session_id=body.id,
        message="".join(texts),
        temperature=body.temperature,
        carries_history=any(m.role in ("user", "assistant") for m in body.messages[:-1]),
        message_loc=("body", "messages", position, "parts"),
        session_loc=("body", "id"),
    )


router = APIRouter()


@router.post(CHANNEL_PATHS["ui"])
async def ui_chat(
    project_id: str, caller: Authenticated, project: OpenedProject, request: Request
) -> StreamingResponse:
    body: UiChatRequest = await json_body(request, UiChatRequest)
    channel_turn = await start_channel_turn(project_id, request, caller, turn_request(body))
    stream = UiMessageStream(session_id=channel_turn.session_id, outcome=outcome_of(channel_turn))
    return stream_response(channel_turn, stream, UI_STREAM_HEADERS)


@router.get(CHANNEL_PATHS["ui"] + "/{session_id}/messages")
async def ui_messages(project: OpenedProject, session_id: SessionIdInPath, session: OwnedSession) -> list[dict]:
    # 404 for a session that is not the caller's, as the history endpoint (UI-004)
    history = await project.history(session, HISTORY_LIMIT_RANGE[1])
    return history_to_ui_messages([m.model_dump(exclude_none=True) for m in history.messages])
