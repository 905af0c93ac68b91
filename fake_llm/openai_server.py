"""The fake LLM over HTTP: an OpenAI-compatible chat-completions server, plus a control API for tests.

OpenAI conventions followed (../shared/notes/protocols.md): `chat.completion.chunk` frames, tool-call deltas
with `index` (id and name on a call's first delta), a finish chunk, a final usage chunk sent whether or not the
request asked for it (clients pointed at a custom base URL rarely ask for it), `data: [DONE]`, and errors in
OpenAI's shape. A step's stream shape (playback.py) may cut the deltas otherwise, move the usage into the
finish chunk or leave it out.
Scripted failures carry `x-should-retry: false` unless the script allows retries, so that one generation is
one request even behind the OpenAI client's automatic retries.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

# Starlette, not FastAPI: the suite starts a fake LLM for every run, and FastAPI's import alone costs most of its
# start-up CPU; these few routes read and write JSON by hand.
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from fake_llm.errors import ScriptFileError, ScriptSelectionError
from fake_llm.playback import (
    EmptyDelta,
    FailNow,
    Finish,
    Pause,
    TextDelta,
    ToolCallBatch,
    ToolCallDelta,
    UsageReport,
    pieces,
)
from fake_llm.request_log import RequestLog
from fake_llm.scripts import ScriptLibrary, Usage, parse_script
from fake_llm.selection import Message, Selection, request_digest, select_and_record

MODEL_ID = "fake-model"


def openai_error(
    status: int, message: str, *, code: str | None = None, error_type: str | None = None, retry: bool = False
) -> JSONResponse:
    kind = error_type or ("invalid_request_error" if status < 500 else "server_error")
    body = {"error": {"message": message, "type": kind, "param": None, "code": code}}
    return JSONResponse(body, status_code=status, headers={"x-should-retry": "true" if retry else "false"})


def _message_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def _usage(u: Usage) -> dict[str, int]:
    return {"prompt_tokens": u.input_tokens, "completion_tokens": u.output_tokens, "total_tokens": u.total_tokens}


def _chunk(
    completion_id: str,
    model: str,
    delta: dict[str, Any] | None,
    finish: str | None = None,
    usage: dict[str, int] | None = None,
) -> str:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
    body = {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": 0,
        "model": model,
        "choices": choices,
        "usage": usage,
    }
    return f"data: {json.dumps(body, separators=(',', ':'))}\n\n"


def _tool_call(piece: ToolCallDelta) -> dict[str, Any]:
    call: dict[str, Any] = {"index": piece.index, "function": {"arguments": piece.arguments}}
    if piece.id is not None:
        call.update(id=piece.id, type="function")
        call["function"]["name"] = piece.name
    return call


def _tool_delta(piece: ToolCallDelta | ToolCallBatch) -> dict[str, Any]:
    deltas = piece.deltas if isinstance(piece, ToolCallBatch) else (piece,)
    return {"tool_calls": [_tool_call(delta) for delta in deltas]}


async def _stream(selection: Selection, completion_id: str, model: str) -> AsyncIterator[str]:
    yield _chunk(completion_id, model, {"role": "assistant", "content": ""})
    for piece in pieces(selection.step):
        if isinstance(piece, Pause):
            await asyncio.sleep(piece.seconds)
        elif isinstance(piece, TextDelta):
            yield _chunk(completion_id, model, {"content": piece.text})
        elif isinstance(piece, ToolCallDelta | ToolCallBatch):
            yield _chunk(completion_id, model, _tool_delta(piece))
        elif isinstance(piece, EmptyDelta):
            yield _chunk(completion_id, model, {})
        elif isinstance(piece, Finish):
            usage = _usage(piece.usage) if piece.usage is not None else None
            yield _chunk(completion_id, model, {}, finish=piece.reason, usage=usage)
        elif isinstance(piece, UsageReport):  # whatever the request asked (FAKELLM-005)
            yield _chunk(completion_id, model, None, usage=_usage(piece.usage))
        elif isinstance(piece, FailNow):
            error = {
                "message": selection.failure_message(piece.failure, mid_stream=True),
                "type": "server_error",
                "param": None,
                "code": "fake_llm_mid_stream_failure",
            }
            yield f"data: {json.dumps({'error': error})}\n\n"
            return
    yield "data: [DONE]\n\n"


def _completion(selection: Selection, completion_id: str, model: str) -> dict[str, Any]:
    step = selection.step
    message: dict[str, Any] = {"role": "assistant", "content": step.text or None}
    if step.tool_calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments_json}}
            for c in step.tool_calls
        ]
    completion = {
        "id": completion_id,
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": step.finish_reason}],
        "usage": _usage(step.usage),
    }
    if not step.reports_usage:  # the stream shape `usage: absent`; the rest of the shape means nothing here
        del completion["usage"]
    return completion


def create_app(library: ScriptLibrary | None = None, log: RequestLog | None = None) -> Starlette:
    library = library or ScriptLibrary.from_folders()
    log = log or RequestLog()

    async def list_models(request: Request) -> Response:
        models = [{"id": MODEL_ID, "object": "model", "created": 0, "owned_by": "fake-llm"}]
        return JSONResponse({"object": "list", "data": models})

    async def chat_completions(request: Request) -> Response:
        try:
            body = await request.json()
        except ValueError:
            return openai_error(400, "the request body is not valid JSON", code="invalid_json")
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return openai_error(400, "the request needs a `messages` list", code="invalid_request")
        messages = [
            Message(role=str(m.get("role")), text=_message_text(m.get("content")))
            for m in body["messages"]
            if isinstance(m, dict)
        ]
        tools = body.get("tools") or []
        stream = bool(body.get("stream", False))
        model = str(body.get("model") or MODEL_ID)
        try:
            selection, failure = select_and_record(
                messages,
                tools_bound=bool(tools),
                library=library,
                log=log,
                transport="http",
                model=body.get("model"),
                stream=stream,
                messages=body["messages"],
                tools=[t.get("function", {}).get("name", "?") for t in tools],
                temperature=body.get("temperature"),
                extra={"authorization": request.headers.get("authorization")},
            )
        except ScriptSelectionError as error:
            return openai_error(400, str(error), code=ScriptSelectionError.code)
        completion_id = f"chatcmpl-fake-{request_digest(messages)}"
        if failure is not None:
            if selection.step.delay_before_ms:
                await asyncio.sleep(selection.step.delay_before_ms / 1000)
            return openai_error(
                failure.status,
                selection.failure_message(failure),
                code="fake_llm_scripted_failure",
                retry=failure.retryable,
            )
        if stream:
            return StreamingResponse(
                _stream(selection, completion_id, model),
                media_type="text/event-stream",
                headers={"cache-control": "no-cache"},
            )
        step = selection.step
        if step.fail is not None:  # mid_stream has no meaning without a stream: fail the whole request
            return openai_error(
                step.fail.status,
                selection.failure_message(step.fail),
                code="fake_llm_scripted_failure",
                retry=step.fail.retryable,
            )
        delay = step.delay_before_ms + step.delay_between_ms * max(0, len(step.text_chunks) - 1)
        if delay:
            await asyncio.sleep(delay / 1000)
        return JSONResponse(_completion(selection, completion_id, model))

    # --- control API for tests ----------------------------------------------------------------------------

    async def list_scripts(request: Request) -> Response:
        return JSONResponse({"scripts": library.names()})

    async def register_script(request: Request) -> Response:
        try:
            data = await request.json()
            script = parse_script(data, source="POST /control/scripts")
        except ValueError:
            return JSONResponse({"message": "the body is not valid JSON", "code": "invalid_json"}, status_code=400)
        except ScriptFileError as error:
            return JSONResponse({"message": str(error), "code": "invalid_script"}, status_code=422)
        library.add(script)
        return JSONResponse({"name": script.name, "steps": len(script.steps)}, status_code=201)

    async def list_requests(request: Request) -> Response:
        run, script = request.query_params.get("run"), request.query_params.get("script")
        return JSONResponse({"requests": [r.as_dict() for r in log.records(run=run, script=script)]})

    async def clear_requests(request: Request) -> Response:
        log.clear()
        return Response(status_code=204)

    return Starlette(
        routes=[
            Route("/v1/models", list_models, methods=["GET"]),
            Route("/v1/chat/completions", chat_completions, methods=["POST"]),
            Route("/control/scripts", list_scripts, methods=["GET"]),
            Route("/control/scripts", register_script, methods=["POST"]),
            Route("/control/requests", list_requests, methods=["GET"]),
            Route("/control/requests", clear_requests, methods=["DELETE"]),
        ]
    )
