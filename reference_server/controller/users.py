"""Version, authentication and users of the controller, shaped like gns3-server's."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from fastapi import APIRouter, Request, Response
from pydantic import Field
from starlette.convertors import StringConvertor, register_url_convertor

import gns3_copilot_spec as spec
from reference_server.errors import ApiError, invalid_field, unauthorized

from .auth import Authenticated, require_superadmin
from .bodies import StrictBody
from .common import services_of
from .security import LoginThrottle, decoy_hash, hash_password, needs_rehash, verify_password
from .store import Conflict, User

router = APIRouter(prefix="/v3")


class UserIdConvertor(StringConvertor):
    """A user id in a path: never one of the fixed names beside it. Without this, `PUT /access/users/me` or
    `DELETE /access/users/authenticate` reached the `{user_id}` routes (a 404 or 422 for a user named so) instead of
    the 405 with `Allow` that any other method not served at a documented path gets (Schemathesis' ST204)."""

    regex = "(?!(?:me|authenticate|logout)$)[^/]+"


register_url_convertor("user_id", UserIdConvertor())


# --- version and authentication ---------------------------------------------------------------------------


@router.get("/version")
async def version() -> dict[str, Any]:
    return {
        "version": spec.contract_version(),
        "local": True,
        "controller_host": None,
        "implementation": "gns3-copilot-chat reference server",
    }


class Credentials(StrictBody):
    username: str
    password: str


def _throttle(request: Request, name: str) -> LoginThrottle:
    """One per application and door, made on its first use (in memory: see LoginThrottle): `login_throttle` for
    logins by username, `password_change_throttle` for own password changes by user id (a rename, which needs no
    password, cannot start that count again; a login name cannot reach its keys)."""
    state = request.app.state
    if getattr(state, name, None) is None:
        settings = services_of(request).settings
        setattr(state, name, LoginThrottle(settings.login_max_failures, settings.login_failure_window_seconds))
    return getattr(state, name)


def _login_throttle(request: Request) -> LoginThrottle:
    return _throttle(request, "login_throttle")


def _profile(request: Request) -> str:
    return services_of(request).settings.password_hash_profile


@router.post("/access/users/authenticate")
async def authenticate(body: Credentials, request: Request) -> dict[str, Any]:
    """Every refusal is the same 401, after the same Argon2 verification, whether the user is unknown, inactive or
    gave a wrong password; too many of them for one username answer 429 until the oldest leaves the window."""
    services, throttle = services_of(request), _login_throttle(request)
    if wait := throttle.begin(body.username):
        raise ApiError(
            429,
            "too_many_login_attempts",
            f"Too many failed logins for this username: try again in {wait} seconds",
            headers={"Retry-After": str(wait)},
        )
    profile = services.settings.password_hash_profile
    decoy = decoy_hash(profile)  # asked before the lookup: its one-time cost falls on any first login, not on unknowns
    user = await services.store.user_by_name(body.username)
    # In a worker thread: ~0.1 s of Argon2 would otherwise stop every other request, chat streams included.
    valid = await asyncio.to_thread(verify_password, user.password_hash if user else decoy, body.password)
    if user is None or not user.is_active or not valid:
        raise unauthorized("Authentication was unsuccessful.")
    throttle.succeeded(body.username)
    if needs_rehash(user.password_hash, profile):  # made under another profile: it takes the server's own now
        await services.store.rehash_password(
            user.user_id, await asyncio.to_thread(hash_password, body.password, profile)
        )
    return {
        "access_token": services.tokens.issue(user.user_id, user.token_version),
        "token_type": "bearer",
        "expires_in": services.tokens.ttl_seconds,
    }


@router.post("/access/users/logout", status_code=204)
async def logout(caller: Authenticated, request: Request) -> Response:
    """Revokes the presented token, until it would have expired (gns3-server's logout revokes all of the user's
    tokens; here the other sessions of the user stay logged in)."""
    await services_of(request).store.revoke_token(caller.claims.token_id, caller.claims.expires_at)
    return Response(status_code=204)


# --- users ------------------------------------------------------------------------------------------------

Username = Annotated[str, Field(min_length=3, max_length=100, pattern=r"^[a-zA-Z0-9_-]+$")]
Password = Annotated[str, Field(min_length=8, max_length=100)]


class NewUser(StrictBody):
    username: Username
    password: Password
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
            await asyncio.to_thread(hash_password, body.password, _profile(request)),
            is_superadmin=body.is_superadmin,
            full_name=body.full_name,
            email=body.email,
        )
    except Conflict as exc:
        raise ApiError(400, "bad_request", str(exc)) from exc
    return user.public()


class UserUpdate(StrictBody):
    """gns3-server's UserUpdate: only the fields sent change; null is taken for full_name and email only."""

    username: Username = None
    password: Password = None
    full_name: str | None = None
    email: str | None = None
    is_active: bool = None
    # Asked for when users change their own password (issue 34): a token alone (a stolen one, a browser left open)
    # must not be enough to take over the account. Not in gns3-server 3.1, which asks for nothing.
    current_password: Annotated[str, Field(max_length=100)] = None


async def _check_current_password(user: User, current: str | None, request: Request) -> None:
    """A user's own password change gives the current password; wrong ones are throttled as failed logins are (the
    same limit and window, per user), so that a stolen token cannot guess it without end (issue 34, CONTROLLER-002)."""
    if current is None:
        raise invalid_field(["body", "current_password"], "your current password is needed to change it", "missing")
    throttle = _throttle(request, "password_change_throttle")
    if wait := throttle.begin(user.user_id):
        raise ApiError(
            429,
            "too_many_password_attempts",
            f"Too many wrong current passwords for this user: try again in {wait} seconds",
            headers={"Retry-After": str(wait)},
        )
    if not await asyncio.to_thread(verify_password, user.password_hash, current):
        raise ApiError(403, "forbidden", "Permission denied: the current password is not right")
    throttle.succeeded(user.user_id)


@router.put("/access/users/{user_id:user_id}")
async def update_user(user_id: str, body: UserUpdate, caller: Authenticated, request: Request) -> dict[str, Any]:
    """A superadmin changes any user, but cannot deactivate itself; a user changes his own fields but is_active.
    A new password revokes the user's older tokens; `is_active: false` refuses all of them until `true`."""
    values = body.model_dump(exclude_unset=True)
    if not caller.user.is_superadmin and (user_id != caller.user.user_id or "is_active" in values):
        raise ApiError(403, "forbidden", "Permission denied: only a superadmin may do this")
    if user_id == caller.user.user_id and values.get("is_active") is False:
        raise ApiError(403, "forbidden", "Permission denied: a superadmin cannot deactivate itself")
    current = values.pop("current_password", None)
    if "password" in values and user_id == caller.user.user_id:  # an administrator changing another's needs none
        await _check_current_password(caller.user, current, request)
    if "password" in values:
        values["password_hash"] = await asyncio.to_thread(hash_password, values.pop("password"), _profile(request))
    try:
        user = await services_of(request).store.update_user(user_id, values)
    except Conflict as exc:
        raise ApiError(400, "bad_request", str(exc)) from exc
    if user is None:
        raise ApiError(404, "user_not_found", f"User ID {user_id} doesn't exist")
    return user.public()


@router.delete("/access/users/{user_id:user_id}", status_code=204)
async def delete_user(user_id: str, caller: Authenticated, request: Request) -> Response:
    """gns3-server's user deletion (superadmin only; a superadmin cannot delete itself)."""
    require_superadmin(caller)
    if user_id == caller.user.user_id:
        raise ApiError(403, "forbidden", "Permission denied: a superadmin cannot delete itself")
    if not await services_of(request).store.remove_user(user_id):
        raise ApiError(404, "user_not_found", f"User ID {user_id} doesn't exist")
    return Response(status_code=204)
