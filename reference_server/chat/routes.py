"""The chat API of spec/openapi.yaml, under the configured chat path prefix.

Answers are the models generated from spec/schemas, and every refusal is an ApiError rendered as the error
body, so that each status and body is one that openapi.yaml documents for the operation (CONTRACT-001).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

from fastapi import APIRouter, Request, Response
from fastapi.responses import StreamingResponse

from gns3_copilot_generated.api.abort_result import AbortResult
from gns3_copilot_generated.api.chat_request import ChatRequest
from gns3_copilot_generated.api.chat_session import ChatSession
from gns3_copilot_generated.api.conversation_history import ConversationHistory
from gns3_copilot_generated.api.rename_request import RenameSessionRequest
from reference_server.auth import Authenticated, Caller
from reference_server.turns.core import ChannelTurn, TurnRequest, contract_events, start_channel_turn

from .preconditions import history_limit, json_body, opened_project, owned_session, valid_session_id

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}  # FRAME-004


def sse_frames(channel_turn: ChannelTurn) -> AsyncIterator[str]:
    """`data: <json>\\n\\n` per event and nothing else (FRAME-002, FRAME-003)."""

    async def frames() -> AsyncIterator[str]:
        async for batch in contract_events(channel_turn):
            yield "".join(f"data: {json.dumps(e, ensure_ascii=False, separators=(',', ':'))}\n\n" for e in batch)

    return frames()


def build_router(prefix: str) -> APIRouter:
    router = APIRouter(prefix=prefix, tags=["Chat"])  # every chat endpoint under the one prefix (PREFIX-001)

    @router.post("/stream")
    async def stream_chat(project_id: str, request: Request, caller: Authenticated) -> StreamingResponse:
        await opened_project(project_id, request, caller)
        # The generated model checks message, mode, temperature and stream (INPUT-001..004) and ignores unknown
        # members (INPUT-008).
        body: ChatRequest = await json_body(request, ChatRequest)
        wanted = TurnRequest(
            session_id=body.session_id.root if body.session_id is not None else None,
            message=body.message,
            temperature=body.temperature,
        )
        # The one way every channel starts a turn: session, ownership, busy lock (turns/core.py).
        channel_turn = await start_channel_turn(project_id, request, caller, wanted)
        # 200 with media type text/event-stream (FRAME-001).
        return StreamingResponse(sse_frames(channel_turn), media_type="text/event-stream", headers=SSE_HEADERS)

    @router.get("/sessions")
    async def list_sessions(project_id: str, request: Request, caller: Authenticated) -> list[ChatSession]:
        service = await opened_project(project_id, request, caller)
        return await service.repo.list_for(caller.user.user_id)

    @router.get("/sessions/{session_id}/history")
    async def session_history(
        project_id: str, session_id: str, request: Request, caller: Authenticated
    ) -> ConversationHistory:
        service = await opened_project(project_id, request, caller)
        session_id = valid_session_id(session_id)
        limit = history_limit(request)
        session = await owned_session(service, session_id, caller)
        return await service.history(session, limit)

    @router.patch("/sessions/{session_id}")
    async def rename_session(project_id: str, session_id: str, request: Request, caller: Authenticated) -> ChatSession:
        service = await opened_project(project_id, request, caller)
        session_id = valid_session_id(session_id)
        # A title of 1 to 255 characters, else 422; the renamed session is the answer (SESSION-004).
        body: RenameSessionRequest = await json_body(request, RenameSessionRequest)
        await owned_session(service, session_id, caller)
        return await service.repo.rename(session_id, body.title)

    @router.delete("/sessions/{session_id}", status_code=204)  # SESSION-006
    async def delete_session(project_id: str, session_id: str, request: Request, caller: Authenticated) -> Response:
        service = await opened_project(project_id, request, caller)
        session_id = valid_session_id(session_id)
        await owned_session(service, session_id, caller)
        await service.delete_session(session_id)
        return Response(status_code=204)

    async def _set_pinned(
        project_id: str, session_id: str, request: Request, caller: Caller, pinned: bool
    ) -> ChatSession:
        service = await opened_project(project_id, request, caller)
        session_id = valid_session_id(session_id)
        await owned_session(service, session_id, caller)
        return await service.repo.set_pinned(session_id, pinned)

    @router.put("/sessions/{session_id}/pin")
    async def pin_session(project_id: str, session_id: str, request: Request, caller: Authenticated) -> ChatSession:
        return await _set_pinned(project_id, session_id, request, caller, True)

    @router.delete("/sessions/{session_id}/pin")
    async def unpin_session(project_id: str, session_id: str, request: Request, caller: Authenticated) -> ChatSession:
        return await _set_pinned(project_id, session_id, request, caller, False)

    @router.post("/sessions/{session_id}/abort")
    async def abort_session_turn(
        project_id: str, session_id: str, request: Request, caller: Authenticated
    ) -> AbortResult:
        service = await opened_project(project_id, request, caller)
        session_id = valid_session_id(session_id)
        await owned_session(service, session_id, caller)
        return AbortResult(session_id=session_id, aborted=await service.abort(session_id))  # ABORT-002, -003

    return router
