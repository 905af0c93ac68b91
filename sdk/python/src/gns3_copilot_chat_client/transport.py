"""Requests and answers: URLs under the controller or the chat prefix, the bearer token, typed errors, and the chat
stream read with httpx-sse. Nothing here retries: a chat request may have run a turn, and sending it again would
run another one (the transports are httpx's defaults, which retry nothing)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

import httpx
from httpx_sse import EventSource, ServerSentEvent
from pydantic import BaseModel, TypeAdapter

from .errors import CopilotError, error_for
from .events import StreamEvent
from .models.events.chat_stream_event import ChatStreamEvent

# The two chat prefixes in use: the contract's default, and gns3-server 3.1.0a2 and later's.
DEFAULT_CHAT_PREFIX = "/v3/projects/{project_id}/chat"
GNS3_CHAT_PREFIX = "/v3/copilot/projects/{project_id}/chat"

T = TypeVar("T")
_EVENT = TypeAdapter(ChatStreamEvent)


class StreamProtocolError(CopilotError):
    """The server's stream broke the contract: a frame that is not an event of the contract."""


@dataclass(frozen=True)
class Request:
    """One call, as the generated operations describe it."""

    method: str
    path: str  # under the chat prefix when `chat`, else the controller's own path
    chat: bool
    path_params: dict[str, str] = field(default_factory=dict)
    query: dict[str, Any] = field(default_factory=dict)
    body: Any = None


def body_json(body: Any) -> Any:
    """A model as the JSON the contract describes (unset optional members left out), or a plain value as it is."""
    if isinstance(body, BaseModel):
        return body.model_dump(mode="json", exclude_unset=True, by_alias=True)
    return body


class Settings:
    """Where the server is, how to reach the chat API there, and the token."""

    def __init__(self, base_url: str, token: str | None, chat_prefix: str) -> None:
        if "{project_id}" not in chat_prefix:
            raise ValueError(f"chat_prefix {chat_prefix!r} must contain {{project_id}}")
        self.base_url, self.token, self.chat_prefix = base_url.rstrip("/"), token, chat_prefix.rstrip("/")

    def url(self, request: Request) -> str:
        params = {name: str(value) for name, value in request.path_params.items()}
        path = request.path.format(**params)
        if request.chat:
            return self.base_url + self.chat_prefix.format(project_id=params["project_id"]) + path
        return self.base_url + path

    def headers(self, streaming: bool = False) -> dict[str, str]:
        headers = {"Accept": "text/event-stream" if streaming else "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        return headers

    def build(self, client: httpx.Client | httpx.AsyncClient, request: Request, streaming: bool) -> httpx.Request:
        query = {k: v for k, v in request.query.items() if v is not None}
        return client.build_request(
            request.method,
            self.url(request),
            params=query or None,
            json=body_json(request.body) if request.body is not None else None,
            headers=self.headers(streaming),
        )


def parsed(response: httpx.Response, adapter: TypeAdapter[T] | None) -> T | None:
    """The answer's body as the operation's type; a refusal as its typed error."""
    if response.is_error:
        raise error_for(response.status_code, response.text, response.headers)
    if adapter is None or response.status_code == 204:
        return None
    return adapter.validate_json(response.content)


def _event(sse: ServerSentEvent) -> StreamEvent:
    try:
        return cast(StreamEvent, _EVENT.validate_json(sse.data).root)
    except ValueError as exc:
        problem = f"a frame of the chat stream is not an event of the contract: {sse.data[:300]!r}"
        raise StreamProtocolError(problem) from exc


class ChatStream(AbstractContextManager["ChatStream"]):
    """The events of one turn, typed (`ContentEvent`, `ToolCallEvent`, ... `DoneEvent`), as they arrive. Leaving
    the `with` block, or `close()`, before `done` disconnects: the server then stops the turn and keeps it. A
    refusal (401, 403, 404, 409 busy, 422...) is raised as its typed error when the stream is opened."""

    def __init__(self, client: httpx.Client, request: httpx.Request) -> None:
        self._response = client.send(request, stream=True)
        if self._response.is_error:
            text = self._response.read().decode("utf-8", "replace")
            self._response.close()
            raise error_for(self._response.status_code, text, self._response.headers)
        self.session_id: str | None = None  # known from the first event
        self._events: Iterator[StreamEvent] | None = None

    def __iter__(self) -> Iterator[StreamEvent]:
        """One iterator per stream: iterating again goes on where the last loop stopped."""
        if self._events is None:
            self._events = self._read()
        return self._events

    def _read(self) -> Iterator[StreamEvent]:
        for sse in EventSource(self._response).iter_sse():
            event = _event(sse)
            self.session_id = self.session_id or getattr(event, "session_id", None)
            yield event

    def close(self) -> None:
        self._response.close()

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncChatStream(AbstractAsyncContextManager["AsyncChatStream"]):
    """ChatStream for the async client: `async with await client.stream_chat(...) as stream: async for ...`."""

    def __init__(self, response: httpx.Response) -> None:
        self._response = response
        self.session_id: str | None = None
        self._events: AsyncIterator[StreamEvent] | None = None

    @classmethod
    async def open(cls, client: httpx.AsyncClient, request: httpx.Request) -> AsyncChatStream:
        response = await client.send(request, stream=True)
        if response.is_error:
            text = (await response.aread()).decode("utf-8", "replace")
            await response.aclose()
            raise error_for(response.status_code, text, response.headers)
        return cls(response)

    def __aiter__(self) -> AsyncIterator[StreamEvent]:
        """One iterator per stream: iterating again goes on where the last loop stopped."""
        if self._events is None:
            self._events = self._read()
        return self._events

    async def _read(self) -> AsyncIterator[StreamEvent]:
        async for sse in EventSource(self._response).aiter_sse():
            event = _event(sse)
            self.session_id = self.session_id or getattr(event, "session_id", None)
            yield event

    async def aclose(self) -> None:
        await self._response.aclose()

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
