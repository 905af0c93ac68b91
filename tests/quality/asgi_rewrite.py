"""Rewriting the reference server's answers on their way out, for the variants of tests/quality/ that break an
answer's status or body rather than the code that made it: the app is wrapped in a small ASGI middleware."""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from typing import Any

# change(status, body, path) -> (status, body); body is the parsed JSON, or the raw bytes when it is not JSON.
Change = Callable[[int, Any, str], tuple[int, Any]]


def rewrite_answers(method: str, path: str, change: Change) -> None:
    """Let `change` rewrite every answer to `method` on a path matching `path` (a regular expression)."""
    import reference_server.cli as cli

    original = cli.create_app

    def create_app(settings, *args, **kwargs):
        app = original(settings, *args, **kwargs)

        async def rewriting(scope, receive, send):
            if scope["type"] != "http" or scope["method"] != method or not re.search(path, scope["path"]):
                return await app(scope, receive, send)
            start: dict[str, Any] = {}
            chunks: list[bytes] = []

            async def capture(message):
                if message["type"] == "http.response.start":
                    start.update(message)
                    if b"text/event-stream" in dict(message["headers"]).get(b"content-type", b""):
                        start["streaming"] = True  # a stream goes out as it comes: only whole bodies are rewritten
                        await send(message)
                    return
                if message["type"] != "http.response.body" or start.get("streaming"):
                    return await send(message)
                chunks.append(message.get("body", b""))
                if message.get("more_body"):
                    return
                raw = b"".join(chunks)
                try:
                    body: Any = json.loads(raw)
                except ValueError:
                    body = raw
                status, body = change(start["status"], body, scope["path"])
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                headers = [(k, v) for k, v in start["headers"] if k.lower() != b"content-length"]
                headers.append((b"content-length", str(len(data)).encode()))
                await send({"type": "http.response.start", "status": status, "headers": headers})
                await send({"type": "http.response.body", "body": data})

            await app(scope, receive, capture)

        return rewriting

    cli.create_app = create_app


def edit_request_body(path: str, change: Callable[[dict[str, Any]], dict[str, Any] | None]) -> None:
    """Let `change` rewrite the JSON object sent to POST `path` before the server reads it (None: as sent)."""
    import reference_server.cli as cli

    original = cli.create_app

    def create_app(settings, *args, **kwargs):
        app = original(settings, *args, **kwargs)

        async def editing(scope, receive, send):
            if scope["type"] != "http" or scope["method"] != "POST" or not re.search(path, scope["path"]):
                return await app(scope, receive, send)
            raw, more = b"", True
            while more:
                message = await receive()
                raw += message.get("body", b"")
                more = message.get("more_body", False)
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
            if isinstance(body, dict) and (edited := change(body)) is not None:
                raw = json.dumps(edited).encode()
            sent = [False]

            async def replay():
                if not sent[0]:
                    sent[0] = True
                    return {"type": "http.request", "body": raw, "more_body": False}
                return await receive()

            await app(scope, replay, send)

        return editing

    cli.create_app = create_app


# handle(app, scope, body, receive, send): a stream request with its body read whole; `receive` replays it.
StreamHandler = Callable[[Any, dict[str, Any], bytes, Any, Any], Awaitable[None]]


def on_stream_requests(handle: StreamHandler) -> None:
    """Hand every POST .../stream request to `handle`, its body read whole first (a check's run tag is in it)."""
    import reference_server.cli as cli

    original = cli.create_app

    def create_app(settings, *args, **kwargs):
        app = original(settings, *args, **kwargs)

        async def reading(scope, receive, send):
            if scope["type"] != "http" or scope["method"] != "POST" or not scope["path"].endswith("/stream"):
                return await app(scope, receive, send)
            received, body, more = [], b"", True
            while more:
                message = await receive()
                received.append(message)
                body += message.get("body", b"")
                more = message.get("more_body", False)
            replay = iter(received)

            async def receive_again():
                return next(replay, None) or await receive()

            await handle(app, scope, body, receive_again, send)

        return reading

    cli.create_app = create_app


def on_each_request(note: Callable[[dict[str, Any]], None]) -> None:
    """Call `note(scope)` at the start of every HTTP request, in the request's context: a ContextVar it sets is seen
    by everything that serves the request (the turn's tasks copy the context)."""
    import reference_server.cli as cli

    original = cli.create_app

    def create_app(settings, *args, **kwargs):
        app = original(settings, *args, **kwargs)

        async def noting(scope, receive, send):
            if scope["type"] == "http":
                note(scope)
            await app(scope, receive, send)

        return noting

    cli.create_app = create_app
