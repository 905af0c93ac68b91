"""Bearer authentication, shared by the controller and the chat API (AUTH-001, AUTH-002)."""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import Request

from .controller.store import User
from .errors import ApiError, unauthorized


@dataclass(frozen=True)
class Caller:
    user: User
    token: str


async def authenticated(request: Request) -> Caller:
    """The caller, or 401 with `WWW-Authenticate: Bearer` before any other check."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise unauthorized("Authentication required: send 'Authorization: Bearer <token>'")
    state = request.app.state.services
    claims = state.tokens.verify(token.strip())
    if claims is None:
        raise unauthorized("The bearer token is malformed, expired or invalid")
    user = await state.store.user_by_id(claims.user_id)
    if user is None:
        raise unauthorized("The bearer token's user no longer exists")
    return Caller(user=user, token=token.strip())


def require_superadmin(caller: Caller) -> None:
    if not caller.user.is_superadmin:
        raise ApiError(403, "forbidden", "Permission denied: only a superadmin may do this")
