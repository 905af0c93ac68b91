"""Capture what both renderers send for one step of a script, pauses skipped: the HTTP stream's text and the
in-process model's chunks (as plain data), for golden and equivalence tests."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from langchain_core.messages import AIMessage, HumanMessage

import fake_llm.chat_model as chat_model
import fake_llm.openai_server as openai_server
from fake_llm.chat_model import FakeScriptedChatModel
from fake_llm.errors import ScriptedFailure
from fake_llm.scripts import ScriptLibrary
from fake_llm.selection import tag_for

TOOLS = [{"type": "function", "function": {"name": "t", "parameters": {"type": "object"}}}]


async def _no_sleep(_seconds: float) -> None:
    return None


def _messages(script: str, step: int | None) -> list[dict[str, str]]:
    """The conversation selecting `step` (None: the title request)."""
    messages = [{"role": "user", "content": tag_for(script, "cap")}]
    return messages + [{"role": "assistant", "content": f"answer {i}"} for i in range(step or 0)]


def http_stream(library: ScriptLibrary, script: str, step: int | None, monkeypatch) -> str:
    """The streamed body, byte for byte, as the HTTP server sends it."""
    monkeypatch.setattr(openai_server.asyncio, "sleep", _no_sleep)
    body: dict[str, Any] = {"model": "fake-model", "stream": True, "messages": _messages(script, step)}
    if step is not None:
        body["tools"] = TOOLS
    with TestClient(openai_server.create_app(library)) as client:
        return client.post("/v1/chat/completions", json=body).text


def http_completion(library: ScriptLibrary, script: str, step: int | None) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "fake-model", "messages": _messages(script, step)}
    if step is not None:
        body["tools"] = TOOLS
    with TestClient(openai_server.create_app(library)) as client:
        return client.post("/v1/chat/completions", json=body).json()


def _plain(chunk) -> dict[str, Any]:
    message = chunk.message if hasattr(chunk, "message") else chunk
    return {
        "content": message.content,
        "id": message.id,
        "tool_call_chunks": [dict(c) for c in message.tool_call_chunks],
        "usage_metadata": message.usage_metadata,
        "response_metadata": dict(message.response_metadata),
        "chunk_position": getattr(message, "chunk_position", None),
    }


def in_process_chunks(library: ScriptLibrary, script: str, step: int | None, monkeypatch) -> list[dict[str, Any]]:
    """The model's chunks as plain data; a scripted failure ends the list with {"error": message}."""
    monkeypatch.setattr(chat_model.time, "sleep", lambda _s: None)
    model = FakeScriptedChatModel(library=library)
    runnable = model if step is None else model.bind_tools(TOOLS)
    messages = [
        HumanMessage(m["content"]) if m["role"] == "user" else AIMessage(m["content"]) for m in _messages(script, step)
    ]
    out: list[dict[str, Any]] = []
    try:
        for chunk in runnable.stream(messages):
            out.append(_plain(chunk))
    except ScriptedFailure as error:
        out.append({"error": str(error)})
    return out


def steps_of(library: ScriptLibrary, name: str) -> list[int | None]:
    return [*range(len(library.get(name).steps)), None]
