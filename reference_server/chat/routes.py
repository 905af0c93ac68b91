"""The chat API of spec/openapi.yaml, under the configured chat path prefix.

Answers are the models generated from spec/schemas, and every refusal is an ApiError rendered as the error
body, so that each status and body is one that openapi.yaml documents for the operation (CONTRACT-001).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import StreamingResponse

from gns3_copilot_generated.api.abort_result import AbortResult
from gns3_copilot_generated.api.chat_request import ChatRequest
from gns3_copilot_generated.api.chat_session import ChatSession
from gns3_copilot_generated.api.conversation_history import ConversationHistory
from gns3_copilot_generated.api.rename_request import RenameSessionRequest
from reference_server.json_input import json_body
from reference_server.prelude import Authenticated, HistoryLimit, OpenedProject, OwnedSession, SessionIdInPath
from reference_server.turns.core import ChannelTurn, TurnRequest, contract_events, start_channel_turn
from reference_server.turns.sse import NO_BUFFERING, data_frame

SSE_HEADERS = NO_BUFFERING  # FRAME-004


def sse_frames(channel_turn: ChannelTurn) -> AsyncIterator[str]:
    """`data: <json>\\n\\n` per event and nothing else (FRAME-002, FRAME-003): the contract's events as they are, in
    the SSE framing every channel shares (turns/sse.py); its heartbeats are `heartbeat` events, and no end marker."""

    async def frames() -> AsyncIterator[str]:
        async for batch in contract_events(channel_turn):
            yield "".join(data_frame(e) for e in batch)

    return frames()


# Every chat endpoint under the one prefix, which the app gives when it includes this router (PREFIX-001).
router = APIRouter(tags=["Chat"])


async def rename_body(request: Request) -> RenameSessionRequest:
    """A title of 1 to 255 characters, else 422 (SESSION-004): an input check, before the session's owner."""
    return await json_body(request, RenameSessionRequest)


@router.post("/stream")
async def stream_chat(
    project_id: str, caller: Authenticated, project: OpenedProject, request: Request
) -> StreamingResponse:
    # The generated model checks message, mode, temperature and stream (INPUT-001..004) and ignores unknown
    # members (INPUT-008).
    body: ChatRequest = await json_body(request, ChatRequest)
    wanted = TurnRequest(
        session_id=body.session_id.root if body.session_id is not None else None,
        message=body.message,
        temperature=body.temperature,
    )
    # The one way every channel starts a turn: LLM configuration, session, ownership, busy lock (turns/core.py).
    channel_turn = await start_channel_turn(project_id, request, caller, wanted)
    # 200 with media type text/event-stream (FRAME-001).
    return StreamingResponse(sse_frames(channel_turn), media_type="text/event-stream", headers=SSE_HEADERS)


@router.get("/sessions")
async def list_sessions(caller: Authenticated, project: OpenedProject) -> list[ChatSession]:
    return await project.repo.list_for(caller.user.user_id)


@router.get("/sessions/{session_id}/history")
async def session_history(
    project: OpenedProject, session_id: SessionIdInPath, limit: HistoryLimit, session: OwnedSession
) -> ConversationHistory:
    return await project.history(session, limit)


@router.patch("/sessions/{session_id}")
async def rename_session(
    project: OpenedProject,
    session_id: SessionIdInPath,
    body: Annotated[RenameSessionRequest, Depends(rename_body)],
    session: OwnedSession,
) -> ChatSession:
    return await project.repo.rename(session_id, body.title)  # the renamed session is the answer (SESSION-004)


@router.delete("/sessions/{session_id}", status_code=204)  # SESSION-006
async def delete_session(project: OpenedProject, session_id: SessionIdInPath, session: OwnedSession) -> Response:
    await project.delete_session(session_id)
    return Response(status_code=204)


@router.put("/sessions/{session_id}/pin")
async def pin_session(project: OpenedProject, session_id: SessionIdInPath, session: OwnedSession) -> ChatSession:
    return await project.repo.set_pinned(session_id, True)


@router.delete("/sessions/{session_id}/pin")
async def unpin_session(project: OpenedProject, session_id: SessionIdInPath, session: OwnedSession) -> ChatSession:
    return await project.repo.set_pinned(session_id, False)


@router.post("/sessions/{session_id}/abort")
async def abort_session_turn(project: OpenedProject, session_id: SessionIdInPath, session: OwnedSession) -> AbortResult:
    return AbortResult(session_id=session_id, aborted=await project.abort(session_id))  # ABORT-002, -003
