"""One error shape for every 4xx/5xx answer: `{"message", "code", "details"?}` (ERROR-001, INPUT-007).

The codes are the contract's (ERROR-002): `unauthorized` and `validation_error` here, the others where
chat/preconditions.py and chat/routes.py refuse a request.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from gns3_copilot_generated.api.error_body import ErrorBody
from gns3_copilot_generated.api.validation_error_body import FieldError, ValidationErrorBody, ValidationErrorDetails

_STATUS_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    422: "validation_error",
    501: "not_implemented",
}


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

    def response(self) -> JSONResponse:
        body = ErrorBody(message=self.message, code=self.code, details=self.details)
        return JSONResponse(body.model_dump(exclude_none=True), status_code=self.status, headers=self.headers)


def unauthorized(message: str) -> ApiError:
    return ApiError(401, "unauthorized", message, headers={"WWW-Authenticate": "Bearer"})


def validation_failed(errors: list[dict[str, Any]], message: str = "Request validation failed") -> ApiError:
    """A 422 whose details list one entry per invalid field (INPUT-007)."""
    entries = [
        FieldError(
            loc=[str(part) if not isinstance(part, int) else part for part in e.get("loc", ())],
            msg=str(e.get("msg", "invalid")),
            type=str(e.get("type", "value_error")),
        )
        for e in errors
    ]
    body = ValidationErrorBody(message=message, code="validation_error", details=ValidationErrorDetails(errors=entries))
    return ApiError(422, "validation_error", message, details=body.model_dump(exclude_none=True)["details"])


def from_pydantic(error: ValidationError, prefix: tuple[str | int, ...]) -> ApiError:
    return validation_failed([{**e, "loc": (*prefix, *e["loc"])} for e in error.errors(include_url=False)])


def install_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api_error(_: Request, exc: ApiError) -> JSONResponse:
        return exc.response()

    @app.exception_handler(RequestValidationError)
    async def _request_validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = list(exc.errors())
        if any(e.get("type") == "json_invalid" for e in errors):
            return ApiError(400, "invalid_json", "The request body is not valid JSON").response()
        return validation_failed(errors).response()

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = _STATUS_CODES.get(exc.status_code, "error")
        return ApiError(exc.status_code, code, str(exc.detail), headers=getattr(exc, "headers", None)).response()
