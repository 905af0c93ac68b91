"""Version, authentication and users of the controller, shaped like gns3-server's."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, Field

import gns3_copilot_spec as spec
from reference_server.auth import require_superadmin
from reference_server.errors import ApiError, unauthorized

from .common import Authenticated, services_of
from .security import hash_password, verify_password
from .store import Conflict

router = APIRouter(prefix="/v3")


# --- version and authentication ---------------------------------------------------------------------------


@router.get("/version")
async def version() -> dict[str, Any]:
    return {
        "version": spec.contract_version(),
        "local": True,
        "controller_host": None,
        "implementation": "gns3-copilot-chat reference server",
    }


class Credentials(BaseModel):
    username: str
    password: str


@router.post("/access/users/authenticate")
async def authenticate(body: Credentials, request: Request) -> dict[str, Any]:
    services = services_of(request)
    user = await services.store.user_by_name(body.username)
    if user is None or not verify_password(user.password_hash, body.password):
        raise unauthorized("Authentication was unsuccessful.")
    return {
        "access_token": services.tokens.issue(user.user_id),
        "token_type": "bearer",
        "expires_in": services.tokens.ttl_seconds,
    }


# --- users ------------------------------------------------------------------------------------------------


class NewUser(BaseModel):
    username: Annotated[str, Field(min_length=3, max_length=100, pattern=r"^[a-zA-Z0-9_-]+$")]
    password: Annotated[str, Field(min_length=8, max_length=100)]
    full_name: str | None = None
    email: str | None = None
    is_superadmin: bool = False


@router.get("/access/users/me")
async def me(caller: Authenticated) -> dict[str, Any]:
    return caller.user.public()


@router.get("/access/users")
async def list_users(caller: Authenticated, request: Request) -> list[dict[str, Any]]:
    require_superadmin(caller)
    return [user.public() for user in await services_of(request).store.list_users()]


@router.post("/access/users", status_code=201)
async def create_user(body: NewUser, caller: Authenticated, request: Request) -> dict[str, Any]:
    require_superadmin(caller)
    try:
        user = await services_of(request).store.add_user(
            body.username,
            hash_password(body.password),
            is_superadmin=body.is_superadmin,
            full_name=body.full_name,
            email=body.email,
        )
    except Conflict as exc:
        raise ApiError(400, "bad_request", str(exc)) from exc
    return user.public()


@router.delete("/access/users/{user_id}", status_code=204)
async def delete_user(user_id: str, caller: Authenticated, request: Request) -> Response:
    """gns3-server's user deletion (superadmin only; a superadmin cannot delete itself)."""
    require_superadmin(caller)
    if user_id == caller.user.user_id:
        raise ApiError(403, "forbidden", "Permission denied: a superadmin cannot delete itself")
    if not await services_of(request).store.remove_user(user_id):
        raise ApiError(404, "user_not_found", f"User ID {user_id} doesn't exist")
    return Response(status_code=204)
