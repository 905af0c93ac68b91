"""OpenAI Responses over the copilot's turn, the text subset (spec/behaviour.md: OPENAI-005, OPENAI-006; and
the API's own rules that the mapping keeps, OPENAI-PROTO-007..009).

A Response's id names its session and turn (`resp_<session id in hex>_<turn's user message id>`), so that
`previous_response_id` continues the session without any state kept for responses: the id is an earlier response
of the caller when its session is the caller's (the core's ownership check) and holds its turn's user message
(so that an id of a deleted session does not continue a new session of the same id). Only the turn's text is sent,
as one assistant message with one `output_text` part; the server's tools are its own work (CHANNEL-006).
"""

from __future__ import annotations

import re
import sys
import time
import uuid
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse

from gns3_copilot_generated.constants import CHANNEL_PATHS, SESSION_ID_MAX_LENGTH, SESSION_ID_PATTERN
from reference_server.agent.service import AgentService
from reference_server.controller.auth import Caller
from reference_server.errors import ApiError
from reference_server.json_input import json_value
from reference_server.prelude import Authenticated, OpenedProject
from reference_server.turns.core import ChannelTurn, TurnRequest, run_to_end, session_header, start_channel_turn
from reference_server.turns.sse import HEARTBEAT_FRAME, NO_BUFFERING, event_frame, stream_response

from .openai_common import (
    CLIENT_CLOSED_REQUEST,
    MODEL_ID,
    Usage,
    checked_boolean,
    checked_metadata,
    checked_model,
    checked_temperature,
    checked_token_bound,
    checked_user,
    error_object,
    failure_of,
    invalid,
    joined_instructions,
    not_retried,
    refuse_client_tools,
    refuse_off_schema,
    refuse_unknown_members,
    split_conversation,
    usage_of,
)
from .openai_members import RESPONSE_ASKED, RESPONSE_HINTS, refuse_asked

# OPENAI-005: what a Responses request may carry (openai_members.py says why each member is served or not; tools
# only empty, CHANNEL-006); OpenAI's standard members among them (OPENAI-PROTO-007).
RESPONSE_MEMBERS = {"model", "input", "instructions", "stream", "temperature", "metadata", "previous_response_id"}
RESPONSE_MEMBERS |= {"max_output_tokens", "user", "tools", "tool_choice", *RESPONSE_HINTS, *RESPONSE_ASKED}
INPUT_PART_TYPES = ("input_text", "output_text", "text")
_RESPONSE_ID = re.compile(rf"resp_(?P<session>(?:[0-9a-f]{{2}}){{1,{SESSION_ID_MAX_LENGTH}}})_(?P<turn>[0-9a-f]{{32}})")
_SESSION_ID = re.compile(SESSION_ID_PATTERN)  # SESSION-003, with its length


def response_id(session_id: str, user_message_id: str) -> str:
    return f"resp_{session_id.encode().hex()}_{uuid.UUID(user_message_id).hex}"


@dataclass(frozen=True)
class PreviousResponse:
    session_id: str
    user_message_id: str  # the turn that made the response


def previous_response(value: Any) -> PreviousResponse:
    """The session and turn a previous response id names; 404 `previous_response_not_found` for anything that is
    not a response id of this server (never a 422 about a session id nobody sent)."""
    match = _RESPONSE_ID.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise previous_response_not_found(value)
    session_id = bytes.fromhex(match["session"]).decode("latin-1")
    if len(session_id) > SESSION_ID_MAX_LENGTH or not _SESSION_ID.fullmatch(session_id):
        raise previous_response_not_found(value)
    return PreviousResponse(session_id, str(uuid.UUID(match["turn"])))


async def check_previous_turn(service: AgentService, caller: Caller, previous: PreviousResponse) -> None:
    """The caller's session must still hold the response's turn; a session that is missing or another user's is
    left to the core, whose `session_not_found` is answered `previous_response_not_found` too, and so is a busy one
    (409 `session_busy`: its running turn may not be kept yet)."""
    session = await service.repo.get(previous.session_id)
    if session is None or session.user_id != caller.user.user_id or await service.busy(previous.session_id):
        return
    history = await service.history(session, limit=sys.maxsize)
    if all(message.id != previous.user_message_id for message in history.messages):
        raise previous_response_not_found(None)


def previous_response_not_found(value: Any) -> ApiError:
    shown = f" {value!r}" if isinstance(value, str) and len(value) <= 300 else ""
    return ApiError(
        404,
        "previous_response_not_found",
        f"Previous response{shown} not found: not a response of yours, or its session was deleted",
        details={"param": "previous_response_id"},
    )


def responses_request(body: Any) -> tuple[TurnRequest, bool, PreviousResponse | None]:
    if not isinstance(body, dict):
        raise invalid("body", "the body must be a JSON object")
    refuse_unknown_members(body, RESPONSE_MEMBERS)
    checked_model(body)
    refuse_client_tools(body)
    refuse_asked(body, RESPONSE_ASKED)
    given = body.get("input")
    if isinstance(given, str):
        message, instructions, earlier, loc = given, [], False, ("body", "input")
    elif isinstance(given, list):
        message, instructions, earlier = split_conversation(given, "input", INPUT_PART_TYPES)
        loc = ("body", "input", len(given) - 1, "content")
    else:
        raise invalid("input", "'input' must be a string or a list of messages")
    extra = body.get("instructions")
    if extra is not None and not isinstance(extra, str):
        raise invalid("instructions", "'instructions' must be a string")
    parts = [extra, *instructions] if extra else instructions
    instructions = joined_instructions(parts, "instructions" if extra else "input")  # CHANNEL-011
    checked_user(body)
    checked_token_bound(body, "max_output_tokens")
    named, temperature = checked_metadata(body).get("session_id"), checked_temperature(body)
    refuse_off_schema(body, "responses")
    given_previous = body.get("previous_response_id")
    previous = previous_response(given_previous) if given_previous is not None else None
    continued = previous.session_id if previous is not None else None
    if named is not None and continued is not None and named != continued:
        raise invalid("metadata", "'metadata.session_id' and 'previous_response_id' name two different sessions")
    wanted = TurnRequest(
        session_id=continued or named,
        message=message,
        temperature=temperature,
        instructions=instructions,
        carries_history=earlier,
        must_exist=continued is not None,
        message_loc=loc,
        session_loc=("body", "metadata", "session_id"),
    )
    return wanted, checked_boolean(body, "stream", False), previous


def response_usage(input_tokens: int, output_tokens: int) -> dict[str, Any]:
    """CHANNEL-008: the turn's tokens."""
    return {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": input_tokens + output_tokens,
    }


class ResponseBuilder:
    """The `Response` object of one turn at each of its stages, and its text item (OPENAI-005), a Response of the
    `openai` package (OPENAI-PROTO-008)."""

    def __init__(self, channel_turn: ChannelTurn, wanted: TurnRequest) -> None:
        self.id = response_id(channel_turn.session_id, channel_turn.user_message_id)
        self.item_id = f"msg_{uuid.UUID(channel_turn.user_message_id).hex}"
        self.created = int(time.time())
        self.session_id = channel_turn.session_id
        self.wanted = wanted

    def part(self, text: str) -> dict[str, Any]:
        return {"type": "output_text", "text": text, "annotations": []}

    def item(self, text: str | None, status: str) -> dict[str, Any]:
        content = [] if text is None else [self.part(text)]
        return {"id": self.item_id, "type": "message", "role": "assistant", "status": status, "content": content}

    def response(
        self, status: str, text: str | None = None, usage: tuple[int, int] | None = None, error: Any = None
    ) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "response",
            "created_at": self.created,
            "status": status,
            "model": MODEL_ID,
            "output": [] if text is None else [self.item(text, "completed")],
            "parallel_tool_calls": False,
            "tool_choice": "none",
            "tools": [],
            "error": error,
            "incomplete_details": None,
            "instructions": self.wanted.instructions,
            "metadata": {"session_id": self.session_id},
            "temperature": self.wanted.temperature,
            "top_p": None,
            "usage": None if usage is None else response_usage(*usage),
        }


class ResponseEventStream:
    """OPENAI-006: `event: <type>` + `data: <event>` frames with a `sequence_number` from 0; ResponseStreamEvents,
    numbered by one, created first, each item and part added before its deltas and done after, one terminal event
    last (OPENAI-PROTO-009)."""

    def __init__(self, builder: ResponseBuilder, usage: Usage) -> None:
        self.builder, self.usage = builder, usage
        self.sequence = 0
        self.text: list[str] = []
        self.ended = False

    def event(self, kind: str, **fields: Any) -> str:
        payload = {"type": kind, "sequence_number": self.sequence, **fields}
        self.sequence += 1
        return event_frame(kind, payload)

    def _at(self) -> dict[str, Any]:
        return {"item_id": self.builder.item_id, "output_index": 0, "content_index": 0}

    def opening(self) -> str:
        b = self.builder
        return "".join(
            [
                self.event("response.created", response=b.response("in_progress")),
                self.event("response.in_progress", response=b.response("in_progress")),
                self.event("response.output_item.added", output_index=0, item=b.item(None, "in_progress")),
                self.event("response.content_part.added", **self._at(), part=b.part("")),
            ]
        )

    def feed(self, batch: list[dict[str, Any]]) -> str:
        out: list[str] = []
        for event in batch:
            if self.ended:
                break
            kind = event["type"]
            if kind == "content":
                self.text.append(event["content"])
                out.append(self.event("response.output_text.delta", **self._at(), delta=event["content"], logprobs=[]))
            elif kind == "heartbeat":
                out.append(HEARTBEAT_FRAME)
            elif kind == "error":
                failed = error_object(event)
                error = {"code": "server_error", "message": failed["message"]}
                out.append(self.event("response.failed", response=self.builder.response("failed", error=error)))
                self.ended = True
            elif kind == "done":
                text, b = "".join(self.text), self.builder
                out += [
                    self.event("response.output_text.done", **self._at(), text=text, logprobs=[]),
                    self.event("response.content_part.done", **self._at(), part=b.part(text)),
                    self.event("response.output_item.done", output_index=0, item=b.item(text, "completed")),
                    self.event("response.completed", response=b.response("completed", text, self.usage())),
                ]
                self.ended = True
        return "".join(out)


router = APIRouter()


@router.post(CHANNEL_PATHS["openai"] + "/responses")
async def create_response(project_id: str, caller: Authenticated, project: OpenedProject, request: Request) -> Any:
    wanted, stream, previous = responses_request(await json_value(request))
    if previous is not None:
        await check_previous_turn(project, caller, previous)
    try:
        channel_turn = await start_channel_turn(project_id, request, caller, wanted)
    except ApiError as refused:
        if wanted.must_exist and refused.code == "session_not_found":  # unknown, deleted or another user's
            raise previous_response_not_found(None) from refused
        raise not_retried(refused) from None
    builder = ResponseBuilder(channel_turn, wanted)
    if not stream:
        events = await run_to_end(channel_turn, request)
        if events is None:  # the client left: the turn was stopped, and there is no one to answer
            return Response(status_code=CLIENT_CLOSED_REQUEST)
        if (failure := failure_of(events, channel_turn)) is not None:
            raise failure
        text = "".join(event["content"] for event in events if event["type"] == "content")
        body = builder.response("completed", text, usage_of(channel_turn)())
        return JSONResponse(body, headers=session_header(channel_turn))
    return stream_response(channel_turn, ResponseEventStream(builder, usage_of(channel_turn)), NO_BUFFERING)
