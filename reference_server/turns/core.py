"""Starting a turn for any channel: the same checks, session, busy lock and turn as `POST {prefix}/stream`
(CHANNEL-002), so that a channel differs from the GNS3 stream only in its wire format.

A channel parses its own body into a TurnRequest; everything after that is here, in the order of the GNS3
stream: project access and status, the message, the LLM configuration, the session and its owner, the busy lock.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from fastapi import Request
from pydantic import ValidationError

from gns3_copilot_generated.api.chat_session import ChatSession
from gns3_copilot_generated.api.session_id import SessionId
from gns3_copilot_generated.constants import MESSAGE_MAX_LENGTH, MESSAGE_MIN_LENGTH
from reference_server.agent.context import set_request_context
from reference_server.agent.service import AgentService, NewSession, SessionExists
from reference_server.agent.turn import Turn
from reference_server.controller.auth import Caller
from reference_server.errors import ApiError, from_pydantic, invalid_field
from reference_server.prelude import llm_settings, opened_project


@dataclass(frozen=True)
class TurnRequest:
    session_id: str | None  # None: a new session with a server-made UUID (SESSION-001)
    message: str
    temperature: float | None = None
    instructions: str | None = None  # added to the system prompt of this turn only
    carries_history: bool = False  # earlier user/assistant messages came with it (CHANNEL-004)
    must_exist: bool = False  # the session must exist already (a Responses `previous_response_id`)
    message_loc: tuple[str | int, ...] = ("body", "message")  # where the message was, for a 422's details
    session_loc: tuple[str | int, ...] = ("body", "session_id")


@dataclass
class ChannelTurn:
    turn: Turn
    session_id: str
    created: bool  # the turn started its session

    @property
    def user_message_id(self) -> str:
        return self.turn.user_message_id


def _checked_message(wanted: TurnRequest) -> str:
    message = wanted.message
    if not isinstance(message, str) or not MESSAGE_MIN_LENGTH <= len(message) <= MESSAGE_MAX_LENGTH:
        raise invalid_field(
            wanted.message_loc,
            f"The message must be text of {MESSAGE_MIN_LENGTH} to {MESSAGE_MAX_LENGTH} characters",
            "string_too_short" if not message else "string_too_long",
        )
    return message


def _checked_session_id(wanted: TurnRequest) -> str:
    if wanted.session_id is None:
        return str(uuid.uuid4())
    try:
        return SessionId.model_validate(wanted.session_id).root  # SESSION-003
    except ValidationError as exc:
        raise from_pydantic(exc, wanted.session_loc) from exc


async def start_channel_turn(project_id: str, request: Request, caller: Caller, wanted: TurnRequest) -> ChannelTurn:
    """Every refusal is an ApiError raised before the stream begins (PRECHECK-001, CHANNEL-005)."""
    service = await opened_project(project_id, request, caller)
    message = _checked_message(wanted)
    session_id = _checked_session_id(wanted)
    llm = await llm_settings(request, caller, wanted.temperature)
    session = await service.repo.get(session_id)  # an existing session of the caller continues (SESSION-005)
    if session is not None and session.user_id != caller.user.user_id:  # ISOLATION-002
        raise ApiError(404, "session_not_found", f"Session {session_id} not found")
    if session is None and wanted.must_exist:
        raise ApiError(404, "session_not_found", f"Session {session_id} not found")
    if session is None and wanted.carries_history:  # CHANNEL-004: never continue a conversation we do not have
        raise ApiError(
            422,
            "unknown_conversation",
            f"The request carries earlier messages, but session {session_id} does not exist: this server keeps "
            "the conversation itself. Start a new conversation, or name an existing session.",
        )
    if not await service.claim(session_id):  # CONCURRENCY-001, on every channel and worker (CHANNEL-002)
        raise ApiError(409, "session_busy", "Session is busy with another turn")
    try:
        if session is not None and service.store.shared:  # another worker may have deleted it since it was read
            session = await _owned(service, session_id, caller, wanted)
        set_request_context(llm, wanted.instructions)  # copied into the turn's tasks, never into the graph config
        created = session is None
        if created:  # SESSION-002; a deleted session's id starts a new, empty one (SESSION-007)
            try:
                turn = await service.start_turn(NewSession(session_id, caller.user.user_id), message)
            except SessionExists:  # made since it was read (another worker, or a turn here that has finished)
                created, session = False, await _owned(service, session_id, caller, wanted)
        if session is not None:
            turn = await service.start_turn(session, message)
    except BaseException:
        await service.release(session_id)
        raise
    return ChannelTurn(turn=turn, session_id=session_id, created=created)


async def _owned(service: AgentService, session_id: str, caller: Caller, wanted: TurnRequest) -> ChatSession | None:
    """The session read again under the lease: the caller's, or none when a new one may start; else 404."""
    session = await service.repo.get(session_id)
    gone = session is None and wanted.must_exist
    if gone or (session is not None and session.user_id != caller.user.user_id):
        raise ApiError(404, "session_not_found", f"Session {session_id} not found")
    return session


def contract_events(channel_turn: ChannelTurn) -> AsyncIterator[list[dict[str, Any]]]:
    """The turn's contract events in batches (spec/events); a consumer that goes away (the client disconnected)
    stops the turn, which still finishes, is kept and is counted (CHANNEL-009). Every channel translates these
    same events: its statistics are the turn's whatever the channel (CHANNEL-003), and an in-stream `error` is the
    contract's, which each translator sends in its own error form, the turn kept and counted (CHANNEL-010)."""
    turn = channel_turn.turn

    async def batches() -> AsyncIterator[list[dict[str, Any]]]:
        try:
            async for batch in turn.stream():
                yield batch
        finally:
            if not turn.finished.is_set():
                turn.stop("client disconnected")

    return batches()


async def _collected(channel_turn: ChannelTurn) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    async for batch in contract_events(channel_turn):
        events.extend(event for event in batch if event["type"] != "heartbeat")
    return events


async def _client_gone(request: Request) -> None:
    """Returns when the client closes the connection (its body was read: the next message is the disconnect). A
    server that answers with more (empty) body messages instead is asked again a little later, never in a spin."""
    while (await request.receive())["type"] != "http.disconnect":
        await asyncio.sleep(0.05)


async def run_to_end(channel_turn: ChannelTurn, request: Request) -> list[dict[str, Any]] | None:
    """Every event of the turn, heartbeats left out, for answers that are not streamed; None when the client left
    first, which stops the turn as a stream's client does (CHANNEL-009): it still finishes, is kept and counted, and
    a client that times out and sends the request again does not leave whole turns running behind it."""
    collecting = asyncio.ensure_future(_collected(channel_turn))
    watching = asyncio.ensure_future(_client_gone(request))
    try:
        await asyncio.wait({collecting, watching}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        watching.cancel()
    if collecting.done():
        return collecting.result()
    collecting.cancel()  # contract_events stops the turn
    with contextlib.suppress(asyncio.CancelledError):
        await collecting
    return None


def session_header(channel_turn: ChannelTurn) -> dict[str, str]:
    """How a client that did not name the session learns it (OPENAI-002)."""
    return {"X-Copilot-Session-Id": channel_turn.session_id}


@dataclass(frozen=True)
class TurnOutcome:
    """What the end of the stream reports, read when `done` came: the turn's statistics are final then."""

    input_tokens: int
    output_tokens: int
    aborted: bool = False


def outcome_of(channel_turn: ChannelTurn) -> Callable[[], TurnOutcome]:
    turn = channel_turn.turn

    def outcome() -> TurnOutcome:
        stats = turn.stats
        # Stopped by an abort (or the server) while a client still reads; a disconnected client reads nothing.
        return TurnOutcome(stats.input_tokens, stats.output_tokens, aborted=turn.stop_reason is not None)

    return outcome
