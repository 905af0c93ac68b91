"""A size limit on every request body (INPUT-010): 413 `payload_too_large`, without reading the rest of the body.

This runs before everything else, authentication included: AUTH-001 puts 401 before any other check, and this
refusal is the one exception the contract allows (INPUT-010), so that no caller, known or not, can make the server
take in more than the limit. A Content-Length over the limit is answered at once, the body unread; a body without
one (chunked) is counted as the app reads it, and refused as soon as it passes the limit.
"""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .errors import ApiError, shapes_of

# 2 MiB: the longest valid chat message (100 000 characters, INPUT-001) outside the Basic Multilingual Plane, sent with
# JSON \u escapes as Python's json.dumps does, is about 1.2 MB; 1 MiB would refuse it.
MAX_BODY_BYTES = 2 * 1024 * 1024


def _message(limit: int) -> str:
    return f"The request body is larger than {limit} bytes"


class BodyTooLarge(HTTPException):
    """Raised from `receive` while the app reads the body. An HTTPException, because FastAPI's body parsing lets
    those through (any other exception becomes its 400), and the app's handler answers it 413 payload_too_large."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, _message(limit))


def _declared_too_long(headers: Headers, limit: int) -> bool:
    value = headers.get("content-length", "").strip()
    # Length checked before int(): a 5000-digit value must not cost (or fail) an integer conversion.
    return value.isascii() and value.isdigit() and (len(value) > len(str(limit)) or int(value) > limit)


class BodyLimit:
    def __init__(self, app: ASGIApp, max_bytes: int = MAX_BODY_BYTES) -> None:
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if _declared_too_long(Headers(scope=scope), self.max_bytes):
            await ApiError(413, "payload_too_large", _message(self.max_bytes)).response(
                scope["path"], shapes_of(scope.get("app"))
            )(scope, receive, send)
            return
        received = 0

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise BodyTooLarge(self.max_bytes)
            return message

        await self.app(scope, counted, send)
