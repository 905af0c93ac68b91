"""The chat stream: one turn's SSE answer read with httpx-sse (framing, comments and multi-line data are its job) and
each frame parsed into the contract's typed event. Opened once and never re-sent, whatever happens to it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractAsyncContextManager, AbstractContextManager

import httpx
from httpx_sse import EventSource, ServerSentEvent

from .errors import CopilotStreamError, StreamProtocolError, error_for
from .events import StreamEvent
from .models.events.chat_stream_event import ChatStreamEvent
from .models.events.done import DoneEvent

_INTERRUPTED = "the chat stream broke off before its `done` event; the turn was not sent again"


def _event(sse: ServerSentEvent) -> StreamEvent:
    try:
        return ChatStreamEvent.model_validate_json(sse.data).root
    except ValueError as exc:
        problem = f"a frame of the chat stream is not an event of the contract: {sse.data[:300]!r}"
        raise StreamProtocolError(problem, "invalid_event") from exc


def _not_an_event_stream(response: httpx.Response) -> StreamProtocolError | None:
    """A success that is not an event stream (checked when the stream opens, not at its first read)."""
    content_type = response.headers.get("content-type", "").partition(";")[0].strip()
    if content_type == "text/event-stream":
        return None
    problem = f"the chat stream answered HTTP {response.status_code} with {content_type or 'no content type'!r}"
    return StreamProtocolError(problem, "not_an_event_stream")


class ChatStream(AbstractContextManager["ChatStream"]):
    """The events of one turn, typed (`ContentEvent`, `ToolCallEvent`, ... `DoneEvent`), as they arrive. A refusal
    (401, 403, 404, 409 busy, 422...) is raised as its typed error when the stream is opened, before any event; a
    stream that breaks off before `done` raises CopilotStreamError. Leaving the `with` block, or `close()`, before
    `done` disconnects: the server then stops the turn and keeps what it had (closing inside the loop ends it)."""

    def __init__(self, client: httpx.Client, request: httpx.Request) -> None:
        self._response = response = client.send(request, stream=True)
        if response.is_error:
            text = response.read().decode("utf-8", "replace")
            response.close()
            raise error_for(response.status_code, text, response.headers)
        if (wrong := _not_an_event_stream(response)) is not None:
            response.close()
            raise wrong
        self.session_id: str | None = None  # known from the first event
        self._closed = False
        self._events: Iterator[StreamEvent] | None = None

    def __iter__(self) -> Iterator[StreamEvent]:
        """One iterator per stream: iterating again goes on where the last loop stopped."""
        if self._events is None:
            self._events = self._read()
        return self._events

    def _read(self) -> Iterator[StreamEvent]:
        done = False
        try:
            for sse in EventSource(self._response).iter_sse():
                event = _event(sse)
                self.session_id = self.session_id or event.session_id
                done = done or isinstance(event, DoneEvent)
                yield event
        except (httpx.TransportError, httpx.StreamError) as exc:
            if self._closed:  # the caller closed it inside the loop: the loop just ends
                return
            raise CopilotStreamError(f"{_INTERRUPTED}: {exc!r}", "stream_interrupted") from exc
        if not done and not self._closed:
            raise CopilotStreamError(f"{_INTERRUPTED}: the server closed it", "stream_interrupted")

    def close(self) -> None:
        self._closed = True
        self._response.close()

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncChatStream(AbstractAsyncContextManager["AsyncChatStream"]):
    """ChatStream for the async client: `async with await client.stream_chat(...) as stream: async for ...`."""

    def __init__(self, response: httpx.Response) -> None:
        self._response = response
        self.session_id: str | None = None
        self._closed = False
        self._events: AsyncIterator[StreamEvent] | None = None

    @classmethod
    async def open(cls, client: httpx.AsyncClient, request: httpx.Request) -> AsyncChatStream:
        response = await client.send(request, stream=True)
        if response.is_error:
            text = (await response.aread()).decode("utf-8", "replace")
            await response.aclose()
            raise error_for(response.status_code, text, response.headers)
        if (wrong := _not_an_event_stream(response)) is not None:
            await response.aclose()
            raise wrong
        return cls(response)

    def __aiter__(self) -> AsyncIterator[StreamEvent]:
        """One iterator per stream: iterating again goes on where the last loop stopped."""
        if self._events is None:
            self._events = self._read()
        return self._events

    async def _read(self) -> AsyncIterator[StreamEvent]:
        done = False
        try:
            async for sse in EventSource(self._response).aiter_sse():
                event = _event(sse)
                self.session_id = self.session_id or event.session_id
                done = done or isinstance(event, DoneEvent)
                yield event
        except (httpx.TransportError, httpx.StreamError) as exc:
            if self._closed:
                return
            raise CopilotStreamError(f"{_INTERRUPTED}: {exc!r}", "stream_interrupted") from exc
        if not done and not self._closed:
            raise CopilotStreamError(f"{_INTERRUPTED}: the server closed it", "stream_interrupted")

    async def aclose(self) -> None:
        self._closed = True
        await self._response.aclose()

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
