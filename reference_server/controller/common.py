"""What the controller's route modules share: the application's services, and the check of a privilege on a project
(asked by the chat API's route prelude too, reference_server/prelude.py)."""

from __future__ import annotations

from fastapi import Request

from reference_server.errors import ApiError

from .access import AccessControl, project_path
from .auth import Caller


def services_of(request: Request):
    return request.app.state.services


async def require_project_privilege(request: Request, caller: Caller, project_id: str, privilege: str) -> None:
    """403 `project_access_denied` unless the caller holds `privilege` on the project, asked before whether the
    project exists, so that the answer says nothing about it (ACCESS-001, ACCESS-002)."""
    if not await AccessControl(services_of(request).store).has_privilege(
        caller.user, project_path(project_id), privilege
    ):
        raise ApiError(
            403, "project_access_denied", f"Permission denied (privilege {privilege} is required on this project)"
        )
