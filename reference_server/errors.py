"""One error shape for every 4xx/5xx answer: `{"message", "code", "details"?}` (ERROR-001, ERROR-003, INPUT-007).

The codes are the contract's (ERROR-002): `unauthorized`, `validation_error`, `invalid_json` and
`payload_too_large` here, the others where prelude.py, the routes and the turn core (turns/core.py) refuse a
request; an exception nothing else answered is a 500 `internal_error` (LastResort).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gns3_copilot_generated.api.error_body import ErrorBody
from gns3_copilot_generated.api.validation_error_body import FieldError, ValidationErrorBody, ValidationErrorDetails

log = logging.getLogger(__name__)

_STATUS_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    422: "validation_error",
    500: "internal_error",
    501: "not_implemented",
}


def _text(value: str) -> str:
    """A lone surrogate echoed from a request (not Unicode, not encodable) written as its escape, `\\ud800`."""
    return value.encode("utf-8", "backslashreplace").decode("utf-8")


class ApiError(Exception):
    """An answer refused before any work started; rendered as the contract's error body."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.details, self.headers = status, code, message, details, headers

    def response(self, path: str = "", shapes: ErrorShapes = ()) -> JSONResponse:
        """The contract's error body, or the body shape of the channel whose path this is (CHANNEL-005): `shapes`
        are the app's (shapes_of)."""
        for marker, render in shapes:
            if marker in path:
                return JSONResponse(render(self), status_code=self.status, headers=self.headers)
        body = ErrorBody(message=_text(self.message), code=self.code, details=self.details)
        return JSONResponse(body.model_dump(exclude_none=True), status_code=self.status, headers=self.headers)


# (path marker, body renderer): a channel whose protocol has its own error body gives it to the app it is served by
# (install_handlers), so that every refusal on its paths, from authentication to the body limit and the last resort,
# has that shape.
ErrorShapes = tuple[tuple[str, Callable[["ApiError"], dict[str, Any]]], ...]


def shapes_of(app: Any) -> ErrorShapes:
    """The error shapes of the app serving a request (`request.app`, or `scope["app"]` in a middleware)."""
    return getattr(getattr(app, "state", None), "error_shapes", ())


def unauthorized(message: str) -> ApiError:
    return ApiError(401, "unauthorized", message, headers={"WWW-Authenticate": "Bearer"})


def invalid_json(reason: str) -> ApiError:
    """400 for a body that is not JSON, or not JSON this server can take (INPUT-009, json_input.py)."""
    return ApiError(400, "invalid_json", f"The request body is not valid JSON: {reason}")


def validation_failed(errors: list[dict[str, Any]], message: str = "Request validation failed") -> ApiError:
    """A 422 whose details list one entry per invalid field (INPUT-007); 400 invalid_json instead when pydantic
    found the JSON itself unusable (its error type `json_invalid`)."""
    for e in errors:
        if e.get("type") == "json_invalid":
            return invalid_json(str((e.get("ctx") or {}).get("error") or e.get("msg") or "unreadable"))
    entries = [
        FieldError(
            loc=[_text(str(part)) if not isinstance(part, int) else part for part in e.get("loc", ())],
            msg=_text(str(e.get("msg", "invalid"))),
            type=str(e.get("type", "value_error")),
        )
        for e in errors
    ]
    body = ValidationErrorBody(message=message, code="validation_error", details=ValidationErrorDetails(errors=entries))
    return ApiError(422, "validation_error", message, details=body.model_dump(exclude_none=True)["details"])


def invalid_field(loc: list[str | int] | tuple[str | int, ...], msg: str, kind: str = "value_error") -> ApiError:
    """A 422 for one invalid field (validation_failed with its one entry)."""
    return validation_failed([{"loc": list(loc), "msg": msg, "type": kind}])


def from_pydantic(error: ValidationError, prefix: tuple[str | int, ...]) -> ApiError:
    return validation_failed([{**e, "loc": (*prefix, *e["loc"])} for e in error.errors(include_url=False)])


_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def _allowed_methods(request: Request) -> str:
    """Every method some route serves at this path: Starlette's 405 names only the first matching route's. Asked
    of the app's routes through `matches`, one method at a time, since FastAPI nests included routers."""
    routes = request.app.routes
    served = [m for m in _METHODS if any(r.matches({**request.scope, "method": m})[0] is Match.FULL for r in routes)]
    return ", ".join(served)


def _parse_failure(exc: StarletteHTTPException) -> ApiError | None:
    """FastAPI answers a body json.loads could not parse for a reason other than syntax (too deep, not UTF-8, a
    5000-digit number) with a bare 400; it is invalid JSON."""
    cause = exc.__cause__
    if exc.status_code != 400 or not isinstance(cause, RecursionError | ValueError):
        return None
    if isinstance(cause, RecursionError):
        return invalid_json("arrays and objects are nested too deeply")
    if isinstance(cause, UnicodeDecodeError):
        return invalid_json("it is not UTF-8 text")
    return invalid_json(str(cause))


AUTHENTICATES = "authenticates_the_caller"  # the attribute controller.auth.authenticated carries


async def _caller_first(request: Request, refusal: ApiError) -> ApiError:
    """FastAPI parses a body before it runs the route's dependencies: a body it cannot parse is answered only once
    the caller is known, so that an unauthenticated caller still gets 401 first (AUTH-001)."""
    dependant = getattr(request.scope.get("route"), "dependant", None)
    # The route's authentication is the dependency controller/auth.py marks (this module cannot import it: it is
    # imported by it), asked for by the route or by one of its dependencies (prelude.py's OpenedProject, OwnedSession).
    pending, calls = list(dependant.dependencies) if dependant else [], []
    while pending:
        found = pending.pop(0)
        calls.append(found.call)
        pending.extend(found.dependencies)
    authenticate = next((call for call in calls if getattr(call, AUTHENTICATES, False)), None)
    if refusal.status == 400 and authenticate is not None:
        try:
            await authenticate(request)
        except ApiError as exc:
            return exc
    return refusal


class LastResort:
    """An exception no handler answered becomes a 500 `internal_error` body, its traceback logged (ERROR-003).
    Once an answer has begun (a stream) it can only be re-raised, for the server to cut the connection."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def sending(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except ClientDisconnect:
            return  # the client went away while its body was read: nobody to answer
        except Exception as exc:
            if started:
                raise
            log.error("%s %s failed", scope.get("method"), scope.get("path"), exc_info=exc)
            await ApiError(500, "internal_error", "Internal server error").response(
                scope["path"], shapes_of(scope.get("app"))
            )(scope, receive, send)


def install_handlers(app: FastAPI, error_shapes: ErrorShapes = ()) -> None:
    app.state.error_shapes = tuple(error_shapes)
    app.add_middleware(LastResort)

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
        return exc.response(request.url.path, shapes_of(request.app))

    @app.exception_handler(RequestValidationError)
    async def _request_validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        return (await _caller_first(request, validation_failed(list(exc.errors())))).response(
            request.url.path, shapes_of(request.app)
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if (refusal := _parse_failure(exc)) is not None:
            return (await _caller_first(request, refusal)).response(request.url.path, shapes_of(request.app))
        headers = dict(getattr(exc, "headers", None) or {})
        if exc.status_code == 405:
            headers["Allow"] = _allowed_methods(request)
        code = _STATUS_CODES.get(exc.status_code, "error")
        return ApiError(exc.status_code, code, str(exc.detail), headers=headers or None).response(
            request.url.path, shapes_of(request.app)
        )
