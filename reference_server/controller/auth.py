"""Bearer authentication of the controller's tokens, shared by the controller and the chat API (AUTH-001, AUTH-002):
every route asks for the caller as `caller: Authenticated`, the controller's routes from here, the chat API's and
the channels' through the route prelude (reference_server/prelude.py), which names it first among its checks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request

from reference_server.errors import AUTHENTICATES, ApiError, unauthorized

from .security import TokenClaims
from .store import User


@dataclass(frozen=True)
class Caller:
    user: User
    token: str
    claims: TokenClaims


async def authenticated(request: Request) -> Caller:
    """The caller, or 401 with `WWW-Authenticate: Bearer` before any other check. A token is refused from the
    request after its logout, its user's deactivation or its user's password change (gns3-server's `ver`)."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise unauthorized("Authentication required: send 'Authorization: Bearer <token>'")
    state = request.app.state.services
    claims = state.tokens.verify(token.strip())
    if claims is None:
        raise unauthorized("The bearer token is malformed, expired or invalid")
    user, revoked = await state.store.bearer(claims.user_id, claims.token_id)
    if user is None:
        raise unauthorized("The bearer token's user no longer exists")
    if not user.is_active:
        raise unauthorized("The bearer token's user is not an active user")
    if claims.version != user.token_version or revoked:
        raise unauthorized("The bearer token has been revoked")
    return Caller(user=user, token=token.strip(), claims=claims)


def require_superadmin(caller: Caller) -> None:
    if not caller.user.is_superadmin:
        raise ApiError(403, "forbidden", "Permission denied: only a superadmin may do this")


setattr(authenticated, AUTHENTICATES, True)  # errors._caller_first finds the route's authentication by it

# The authenticated caller, or 401 before any other check: the one way every route asks for it.
Authenticated = Annotated[Caller, Depends(authenticated)]
