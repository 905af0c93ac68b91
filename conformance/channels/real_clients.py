"""Each protocol's real client run over a recorded answer: what a user's client would make of the body.

- OpenAI: the `openai` Python client reads the body through its own SSE decoder and stream classes, and its stream
  state assembles the completion (`ChatCompletionStreamState`) or the response (`client.responses.stream`).
- UI message stream: `ai`'s `readUIMessageStream` behind `DefaultChatTransport`'s response parsing (node.py).
- AG-UI: `@ag-ui/client`'s `HttpAgent` pipeline, verification included (node.py).

And what each of the JavaScript clients sends: the request body `DefaultChatTransport` and `HttpAgent` build for a
turn, captured before it leaves (request-bodies.mjs), which the checks then send as it is.

A client's rejection is what a user would see fail: the checks report it as a FAIL with the client's own error text.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import httpx
import openai
from openai.lib.streaming.chat import ChatCompletionStreamState

from conformance.channels import node


@dataclass
class ClientRead:
    """What a real client made of one body."""

    ok: bool  # it read the body to its end without raising
    error: str | None = None  # the client's own error, as it words it ("APIError: ...")
    error_code: Any = None  # the code of an error the client raised from an in-stream error, when it carries one
    text: str | None = None  # the assistant text the client assembled
    detail: dict[str, Any] = field(default_factory=dict)


def _replaying(body: str) -> openai.OpenAI:
    """The `openai` client, every request of which is answered with the recorded `body`."""
    answer = httpx.Response(200, text=body, headers={"content-type": "text/event-stream"})
    transport = httpx.MockTransport(lambda request: answer)
    return openai.OpenAI(
        api_key="recorded", base_url="http://recorded.invalid/v1", http_client=httpx.Client(transport=transport)
    )


def _raised(exc: Exception) -> ClientRead:
    return ClientRead(False, f"{type(exc).__name__}: {exc}", getattr(exc, "code", None))


def openai_chat(body: str, model: str) -> ClientRead:
    state = ChatCompletionStreamState()
    try:
        with _replaying(body) as client:
            for chunk in client.chat.completions.create(model=model, messages=[], stream=True):
                state.handle_chunk(chunk)
            completion = state.get_final_completion()
    except Exception as exc:  # noqa: BLE001 - whatever the client raises is its verdict
        return _raised(exc)
    choice = completion.choices[0] if completion.choices else None
    text = choice.message.content if choice is not None else None
    return ClientRead(True, text=text or "", detail={"finish_reason": choice.finish_reason if choice else None})


def openai_responses(body: str, model: str) -> ClientRead:
    """`detail["events"]`: the event types the client's stream yielded, so that a failed turn's `response.failed`
    shows even though the stream helper then raises (it wants `response.completed`)."""
    seen: list[str] = []
    try:
        with _replaying(body) as client:
            with client.responses.stream(model=model, input="recorded") as stream:
                for event in stream:
                    seen.append(event.type)
                response = stream.get_final_response()
    except Exception as exc:  # noqa: BLE001 - whatever the client raises is its verdict
        read = _raised(exc)
        read.detail["events"] = seen
        return read
    return ClientRead(True, text=response.output_text, detail={"status": response.status, "events": seen})


def _node_read(result: dict[str, Any], text: str | None) -> ClientRead:
    error = result.get("error")
    message = f"{error.get('name')}: {error.get('message')}" if isinstance(error, dict) else None
    return ClientRead(bool(result.get("ok")), message, text=text, detail=result)


def _ui_text(message: Any) -> str | None:
    if not isinstance(message, dict):
        return None
    parts = [p for p in message.get("parts") or [] if isinstance(p, dict) and p.get("type") == "text"]
    return "".join(str(p.get("text", "")) for p in parts)


def ui(bodies: list[str]) -> list[ClientRead]:
    results = node.run_driver("ui-read.mjs", [{"body": body} for body in bodies])
    return [_node_read(result, _ui_text(result.get("message"))) for result in results]


def _ag_ui_text(result: dict[str, Any]) -> str | None:
    messages = result.get("newMessages") or []
    texts = [m.get("content") for m in messages if isinstance(m, dict) and m.get("role") == "assistant"]
    return "".join(t for t in texts if isinstance(t, str))


def ag_ui(cases: list[dict[str, Any]]) -> list[ClientRead]:
    """`cases`: {"body", "threadId", "runId", "messages"} each, as the request that got the body sent them."""
    results = node.run_driver("ag-ui-run.mjs", cases)
    reads = []
    for result in results:
        read = _node_read(result, _ag_ui_text(result))
        run_error = result.get("runError")
        if isinstance(run_error, dict):
            read.error_code = run_error.get("code")
        reads.append(read)
    return reads


def request_bodies(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The body the real client builds for each case (js/request-bodies.mjs gives the fields of a case); a client
    that builds none is the suite's own set-up failing."""
    results = node.run_driver("request-bodies.mjs", cases)
    for case, result in zip(cases, results, strict=True):
        if not result.get("ok"):
            raise node.RealClientUnavailable(f"the {case['protocol']} client built no request: {result.get('error')}")
    return [result["request"] for result in results]


async def ui_request_bodies(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`DefaultChatTransport`'s body for each {"id", "messages"?, "text", "messageId"?, "body"?}."""
    return await asyncio.to_thread(request_bodies, [{"protocol": "ui", **case} for case in cases])


async def ag_ui_request_bodies(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`HttpAgent`'s RunAgentInput for each {"threadId", "runId", "messages"?, "state"?, "context"?,
    "forwardedProps"?}."""
    return await asyncio.to_thread(request_bodies, [{"protocol": "ag_ui", **case} for case in cases])


async def read_openai_chat(body: str, model: str) -> ClientRead:
    return await asyncio.to_thread(openai_chat, body, model)


async def read_openai_responses(body: str, model: str) -> ClientRead:
    return await asyncio.to_thread(openai_responses, body, model)


async def read_ui(bodies: list[str]) -> list[ClientRead]:
    return await asyncio.to_thread(ui, bodies)


async def read_ag_ui(cases: list[dict[str, Any]]) -> list[ClientRead]:
    return await asyncio.to_thread(ag_ui, cases)


def client_model_ids(body: str) -> list[str] | str:
    """The ids the `openai` client lists from the recorded body, or its error."""
    answer = httpx.Response(200, text=body, headers={"content-type": "application/json"})
    transport = httpx.MockTransport(lambda request: answer)
    try:
        with openai.OpenAI(
            api_key="recorded", base_url="http://recorded.invalid/v1", http_client=httpx.Client(transport=transport)
        ) as replaying:
            return [model.id for model in replaying.models.list()]
    except Exception as exc:  # noqa: BLE001 - whatever the client raises is its verdict
        return f"{type(exc).__name__}: {exc}"
