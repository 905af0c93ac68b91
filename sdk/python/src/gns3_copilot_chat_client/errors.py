"""Typed errors: every refusal of the API raises the subclass of its status, carrying the contract's error body."""

from __future__ import annotations

import json
from typing import Any

from .models.api.error_body import ErrorBody
from .models.api.validation_error_body import ValidationErrorBody


class CopilotError(Exception):
    """Anything this client raises."""


class CopilotStreamError(CopilotError):
    """A chat stream that opened but did not end with its `done` event: the connection broke off (`code`
    "stream_interrupted"; the httpx error is the `__cause__`). The turn is not sent again: it may have run, and
    may still be running on the server (`abort_session_turn` stops it; the session's history tells what it kept)."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


class StreamProtocolError(CopilotStreamError):
    """The server's stream broke the contract: an answer that is not an event stream (`code`
    "not_an_event_stream"), or a frame that is not an event of the contract ("invalid_event")."""


class CopilotApiError(CopilotError):
    """The server refused a request: `status`, and `body` the contract's error body (`message`, `code`; 422 also
    `details`). A body that is not the contract's is kept as `raw`, with `code` "unknown"."""

    status: int = 0

    def __init__(self, status: int, body: ErrorBody | ValidationErrorBody | None, raw: str) -> None:
        self.status, self.body, self.raw = status, body, raw
        message = body.message if body is not None else raw[:300]
        super().__init__(f"HTTP {status} {self.code}: {message}")

    @property
    def code(self) -> str:
        return self.body.code if self.body is not None else "unknown"

    @property
    def message(self) -> str:
        return self.body.message if self.body is not None else self.raw


class BadRequestError(CopilotApiError):
    status = 400  # llm_not_configured, invalid_json


class UnauthorizedError(CopilotApiError):
    status = 401


class ForbiddenError(CopilotApiError):
    status = 403  # project_access_denied, project_not_opened


class NotFoundError(CopilotApiError):
    status = 404  # project_not_found, session_not_found


class ConflictError(CopilotApiError):
    status = 409  # session_busy, conflict (a project name in use)


class PayloadTooLargeError(CopilotApiError):
    status = 413


class ValidationFailedError(CopilotApiError):
    status = 422


class TooManyRequestsError(CopilotApiError):
    status = 429  # too many failed log-ins: see `retry_after`

    @property
    def retry_after(self) -> int | None:
        return self._retry_after

    _retry_after: int | None = None


class NotImplementedByServerError(CopilotApiError):
    status = 501


class LlmUnavailableError(CopilotApiError):
    status = 502


class ServiceUnavailableError(CopilotApiError):
    status = 503  # storage_unavailable, project_unavailable


_BY_STATUS: dict[int, type[CopilotApiError]] = {
    cls.status: cls
    for cls in (
        BadRequestError,
        UnauthorizedError,
        ForbiddenError,
        NotFoundError,
        ConflictError,
        PayloadTooLargeError,
        ValidationFailedError,
        TooManyRequestsError,
        NotImplementedByServerError,
        LlmUnavailableError,
        ServiceUnavailableError,
    )
}


def error_for(status: int, raw: str, headers: Any = None) -> CopilotApiError:
    """The typed error of a refusal: the subclass of its status (CopilotApiError for any other), its body parsed."""
    body: ErrorBody | ValidationErrorBody | None = None
    try:
        data = json.loads(raw)
    except ValueError:  # not JSON: kept raw
        data = None
    shapes: tuple[type[ErrorBody] | type[ValidationErrorBody], ...] = (
        (ValidationErrorBody, ErrorBody) if status == 422 else (ErrorBody,)
    )
    for shape in shapes:
        try:
            body = shape.model_validate(data)
            break
        except ValueError:  # not this shape of the contract's error body
            continue
    error = _BY_STATUS.get(status, CopilotApiError)(status, body, raw)
    error.status = status
    if isinstance(error, TooManyRequestsError) and headers is not None:
        value = headers.get("retry-after")
        error._retry_after = int(value) if value and value.isdigit() else None
    return error
