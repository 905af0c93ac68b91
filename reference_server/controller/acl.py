"""Roles, privileges and the access control list, as gns3-server 3.x serves them under /v3/access (superadmins
only here; gns3-server asks for the ACE.* and Role.* privileges). The rules they feed are in access.py."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Request, Response
from pydantic import ConfigDict, Field

from reference_server.errors import ApiError

from .access import AccessControl, Ace, canonical_path
from .auth import Authenticated, require_superadmin
from .bodies import StrictBody
from .common import services_of

router = APIRouter(prefix="/v3/access")


class AceFields(StrictBody):
    """gns3-server's ACECreate / ACEUpdate; only user entries (this server has no groups)."""

    model_config = ConfigDict(strict=True, extra="ignore")

    ace_type: Literal["user"]
    path: Annotated[str, Field(min_length=1, max_length=1024)]
    propagate: bool = True
    allowed: bool = True
    user_id: str
    group_id: None = None
    role_id: str


def _entry(body: AceFields) -> dict[str, Any]:
    return body.model_dump(include={"path", "user_id", "role_id", "propagate", "allowed"})


def _access(request: Request) -> AccessControl:
    return AccessControl(services_of(request).store)


async def _checked(body: AceFields, request: Request) -> AceFields:
    """The entry as it is kept, checked on creation and on change alike (ACCESS-006: gns3-server checks the path on
    creation only)."""
    path = canonical_path(body.path)
    if path is None:
        raise ApiError(
            400,
            "bad_request",
            f"Path '{body.path}' doesn't match any endpoint this server controls access to: "
            "'/', '/projects' or '/projects/{project_id}'",
        )
    if await services_of(request).store.user_by_id(body.user_id) is None:
        raise ApiError(404, "user_not_found", f"User ID {body.user_id} doesn't exist")
    if await _access(request).role(body.role_id) is None:
        raise ApiError(404, "role_not_found", f"Role ID {body.role_id} doesn't exist")
    return body.model_copy(update={"path": path})


async def _existing(ace_id: str, request: Request) -> Ace:
    ace = await _access(request).ace(ace_id)
    if ace is None:
        raise ApiError(404, "ace_not_found", f"ACL entry '{ace_id}' not found")
    return ace


@router.get("/privileges")
async def list_privileges(caller: Authenticated, request: Request) -> list[dict[str, Any]]:
    require_superadmin(caller)
    return await _access(request).privileges()


@router.get("/roles")
async def list_roles(caller: Authenticated, request: Request) -> list[dict[str, Any]]:
    require_superadmin(caller)
    return await _access(request).roles()


@router.get("/roles/{role_id}")
async def get_role(role_id: str, caller: Authenticated, request: Request) -> dict[str, Any]:
    require_superadmin(caller)
    role = await _access(request).role(role_id)
    if role is None:
        raise ApiError(404, "role_not_found", f"Role ID {role_id} doesn't exist")
    return role


@router.get("/acl")
async def list_aces(caller: Authenticated, request: Request) -> list[dict[str, Any]]:
    require_superadmin(caller)
    return [ace.public() for ace in await _access(request).aces()]


@router.post("/acl", status_code=201)
async def create_ace(body: AceFields, caller: Authenticated, request: Request) -> dict[str, Any]:
    require_superadmin(caller)
    body = await _checked(body, request)
    ace = await _access(request).add_ace(**_entry(body))
    return ace.public()


@router.get("/acl/{ace_id}")
async def get_ace(ace_id: str, caller: Authenticated, request: Request) -> dict[str, Any]:
    require_superadmin(caller)
    return (await _existing(ace_id, request)).public()


@router.put("/acl/{ace_id}")
async def update_ace(ace_id: str, body: AceFields, caller: Authenticated, request: Request) -> dict[str, Any]:
    require_superadmin(caller)
    await _existing(ace_id, request)
    body = await _checked(body, request)
    ace = await _access(request).update_ace(ace_id, **_entry(body))
    return ace.public()


@router.delete("/acl/{ace_id}", status_code=204)
async def delete_ace(ace_id: str, caller: Authenticated, request: Request) -> Response:
    require_superadmin(caller)
    await _existing(ace_id, request)
    await _access(request).remove_ace(ace_id)
    return Response(status_code=204)
