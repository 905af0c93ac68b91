"""Projects of the controller, shaped like gns3-server's; opening, closing and deleting one drives its chat service."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Request, Response
from pydantic import Field

from reference_server.agent.tools import write_default_topology
from reference_server.errors import ApiError
from reference_server.json_input import json_body
from reference_server.private_files import private_dir, write_private

from .access import PROJECTS_PATH, AccessControl
from .auth import Authenticated, Caller
from .bodies import StrictBody
from .common import require_project_privilege, services_of
from .roles import ALLOCATE_PRIVILEGE, CHAT_PRIVILEGE
from .store import Conflict, Project

router = APIRouter(prefix="/v3")


# --- projects ---------------------------------------------------------------------------------------------


class NewProject(StrictBody):
    name: Annotated[str, Field(min_length=1, max_length=255)]


def _project_json(project: Project, request: Request) -> dict[str, Any]:
    return {
        "project_id": project.project_id,
        "name": project.name,
        "status": project.status,
        "path": str(services_of(request).project_dir(project.project_id)),
        "created_at": project.created_at,
    }


async def _project(project_id: str, request: Request, caller: Caller, privilege: str) -> Project:
    """The project, once the caller is known to hold `privilege` on it: 403 comes before 404 (ACCESS-004)."""
    await require_project_privilege(request, caller, project_id, privilege)
    project = await services_of(request).store.project(project_id)
    if project is None:
        raise ApiError(404, "project_not_found", f"Project ID {project_id} doesn't exist")
    return project


@router.post("/projects", status_code=201)
async def create_project(caller: Authenticated, request: Request) -> dict[str, Any]:
    """Project.Allocate on /projects first, as gns3-server asks it, then the body: a caller who may not create
    projects learns nothing from this endpoint, not even that a name is taken (ACCESS-005)."""
    services = services_of(request)
    if not await AccessControl(services.store).has_privilege(caller.user, PROJECTS_PATH, ALLOCATE_PRIVILEGE):
        raise ApiError(403, "forbidden", f"Permission denied (privilege {ALLOCATE_PRIVILEGE} is required)")
    body: NewProject = await json_body(request, NewProject)
    try:
        project = await services.store.add_project(body.name)
    except Conflict as exc:
        raise ApiError(409, "conflict", str(exc)) from exc
    directory = services.project_dir(project.project_id)
    try:
        private_dir(directory)
        write_private(
            directory / "project.gns3",
            json.dumps({"project_id": project.project_id, "name": project.name, "type": "topology"}, indent=2),
        )
        write_default_topology(directory)
        await AccessControl(services.store).grant_creator(project.project_id, caller.user)  # it belongs to its creator
        await services.manager.open_project(project.project_id, directory)
    except BaseException:
        # Nothing half-written (ERROR-003, e.g. a full disk): the files go first, which frees what deleting the
        # rows may need; the failure itself is answered by its handler (503 storage_unavailable).
        await services.manager.delete_project(project.project_id, directory)
        await AccessControl(services.store).forget_project(project.project_id)
        await services.store.remove_project(project.project_id)
        raise
    return _project_json(project, request)


@router.get("/projects")
async def list_projects(caller: Authenticated, request: Request) -> list[dict[str, Any]]:
    """The projects the caller may see (ACCESS-004)."""
    access = AccessControl(services_of(request).store)
    return [
        _project_json(p, request)
        for p in await services_of(request).store.list_projects()
        if await access.has_privilege(caller.user, f"/projects/{p.project_id}", CHAT_PRIVILEGE)
    ]


@router.get("/projects/{project_id}")
async def get_project(project_id: str, caller: Authenticated, request: Request) -> dict[str, Any]:
    return _project_json(await _project(project_id, request, caller, "Project.Audit"), request)


@router.post("/projects/{project_id}/open")
async def open_project(project_id: str, caller: Authenticated, request: Request) -> dict[str, Any]:
    services = services_of(request)
    await _project(project_id, request, caller, ALLOCATE_PRIVILEGE)
    await services.manager.open_project(project_id, services.project_dir(project_id))  # migrates (MIGRATION-001)
    await services.store.set_project_status(project_id, "opened")
    return _project_json(await services.store.project(project_id), request)


@router.post("/projects/{project_id}/close", status_code=204)
async def close_project(project_id: str, caller: Authenticated, request: Request) -> Response:
    services = services_of(request)
    await _project(project_id, request, caller, ALLOCATE_PRIVILEGE)
    await services.store.set_project_status(project_id, "closed")
    await services.manager.close_project(project_id)
    return Response(status_code=204)


@router.delete("/projects/{project_id}", status_code=204)
async def delete_project(project_id: str, caller: Authenticated, request: Request) -> Response:
    services = services_of(request)
    await _project(project_id, request, caller, ALLOCATE_PRIVILEGE)
    await services.store.remove_project(project_id)  # on a full disk this fails first: 503, nothing is deleted
    try:
        await AccessControl(services.store).forget_project(project_id)
    finally:  # the project is gone: its chat data and files go too, whatever happens to its access entries
        await services.manager.delete_project(project_id, services.project_dir(project_id))  # DB-007
    return Response(status_code=204)
