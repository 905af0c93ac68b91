"""Mutants of project access control (ACCESS-*), one per way an implementer gets it wrong: the chat forgets to ask,
asks after the project's existence, the controller forgets to ask, or grants are cached past their removal.
Registered in MUTANTS by tests/quality/mutants.py."""

from __future__ import annotations

from .mutant_kit import mutant


async def _anyone(*_args, **_kwargs) -> None:
    """A privilege check that lets everyone through."""


@mutant(
    "chat-ignores-access",
    "the chat endpoints never ask whether the caller has access to the project",
    {"ACCESS-001", "ACCESS-002", "ACCESS-003"},
)
def _chat_ignores_access() -> None:
    import reference_server.prelude as preconditions

    preconditions.require_project_privilege = _anyone


@mutant(
    "access-after-existence",
    "access is asked after the project's existence: a caller without access learns that a project does not exist",
    {"ACCESS-002"},
)
def _access_after_existence() -> None:
    import reference_server.prelude as preconditions

    check_access = preconditions.require_project_privilege

    async def after_existence(request, caller, project_id, privilege) -> None:
        if await request.app.state.services.store.project(project_id) is not None:
            await check_access(request, caller, project_id, privilege)

    preconditions.require_project_privilege = after_existence


@mutant(
    "controller-ignores-access",
    "the controller's project endpoints never ask whether the caller has access to the project",
    {"ACCESS-004"},
)
def _controller_ignores_access() -> None:
    import reference_server.controller.projects as projects

    projects.require_project_privilege = _anyone


@mutant(
    "grants-cached",
    "a granted privilege is remembered per user and project: removing the grant changes nothing until a restart",
    {"ACCESS-003"},
)
def _grants_cached() -> None:
    from reference_server.controller.access import AccessControl

    original = AccessControl.has_privilege
    granted: set[tuple[str, str, str]] = set()

    async def has_privilege(self, user, path, privilege) -> bool:
        key = (user.user_id, path, privilege)
        if key in granted:
            return True
        allowed = await original(self, user, path, privilege)
        if allowed:
            granted.add(key)
        return allowed

    AccessControl.has_privilege = has_privilege
