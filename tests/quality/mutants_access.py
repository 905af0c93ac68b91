"""Mutants of project access control (ACCESS-*) and the controller (CONTROLLER-001), one per way an implementer gets it
wrong: the chat forgets to ask, asks after the project's existence or after the LLM configuration, the controller
forgets to ask, grants are cached past their removal or parent grants read once, a deny removes only its own role's
privileges, a grant propagates though it should not, a deny on a parent path reaches below only when it propagates
or overrides a grant on the project, the channels ignore denies, the LLM configurations' 403 or a token's expiry is
forgotten, anyone creates projects or is asked for the privilege only after the body and the name. Registered in
MUTANTS by tests/quality/mutants.py."""

from __future__ import annotations

from .mutant_kit import mutant


async def _anyone(*_args, **_kwargs) -> None:
    """A privilege check that lets everyone through."""


@mutant(
    "chat-ignores-access",
    "the chat endpoints never ask whether the caller has access to the project",
    {"ACCESS-001", "ACCESS-002", "ACCESS-003"},
    {"CHANNEL-002", "CHANNEL-005"},  # the channels ask the same question (the route prelude): a denied user chats
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
    # Nor does a deny written later: the controller still lets the user read and close the project, and the channels
    # serve the user (CHANNEL-002, -005); and a user once allowed to create projects still may when the entry is gone.
    {"ACCESS-004", "ACCESS-005", "CHANNEL-002", "CHANNEL-005"},
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


# --- the entries beyond a grant on the project, the order of the refusals, the controller (issue 31) ---------------

_ENTRIES_OF_THE_PRIVILEGE = (
    "SELECT acl.path, acl.propagate, acl.allowed FROM acl JOIN role_privileges rp ON rp.role_id = acl.role_id "
    "JOIN privileges p ON p.privilege_id = rp.privilege_id WHERE acl.user_id = ? AND p.name = ?"
)


@mutant(
    "deny-only-its-roles-privileges",
    "a denying entry removes only the privileges its own role holds (gns3-server's lookup): a deny of No Access "
    "on a project that /projects grants forbids nothing, on the chat or the controller",
    {"ACCESS-003", "ACCESS-004"},
    {"CHANNEL-002", "CHANNEL-005"},  # nor on the channels, which ask the same rule
)
def _deny_only_its_roles_privileges() -> None:
    import reference_server.controller.access as access

    async def has_privilege(self, user, path, privilege) -> bool:
        if user.is_superadmin:
            return True
        rows = await self.store._rows(_ENTRIES_OF_THE_PRIVILEGE, (user.user_id, privilege))
        return access.decide(path, [(row[0], bool(row[1]), bool(row[2]), True) for row in rows])

    access.AccessControl.has_privilege = has_privilege


@mutant(
    "grant-propagates-always",
    "an entry on a parent path reaches the paths below it even when it does not propagate",
    {"ACCESS-003"},
    # a role on / that does not propagate lets its user create projects under /projects; the channels, asking the
    # same rule, serve a user whose grant on /projects does not propagate
    {"ACCESS-005", "CHANNEL-002", "CHANNEL-005"},
)
def _grant_propagates_always() -> None:
    import reference_server.controller.access as access

    decide = access.decide
    access.decide = lambda path, entries: decide(path, [(p, True, allowed, holds) for p, _, allowed, holds in entries])


async def _every_entry(store, user_id: str, privilege: str) -> list[tuple[str, bool, bool, bool]]:
    """The user's entries as the reference server's decide() reads them: (path, propagate, allowed, holds), an
    entry of No Access never allowing."""
    import reference_server.controller.access as access

    rows = await store._rows(
        "SELECT acl.path, acl.propagate, acl.allowed, acl.role_id, EXISTS (SELECT 1 FROM role_privileges rp "
        "JOIN privileges p ON p.privilege_id = rp.privilege_id WHERE rp.role_id = acl.role_id AND p.name = ?) "
        "FROM acl WHERE acl.user_id = ?",
        (privilege, user_id),
    )
    return [(r[0], bool(r[1]), bool(r[2]) and r[3] != access.NO_ACCESS_ID, bool(r[4])) for r in rows]


@mutant(
    "parent-grants-read-once",
    "a user's entries on parent paths are read at their first request and kept: a grant on /projects made later "
    "never reaches the projects",
    {"ACCESS-003"},
    {"ACCESS-005", "CHANNEL-002"},  # nor lets the user create projects, nor chat on the channels
)
def _parent_grants_read_once() -> None:
    import reference_server.controller.access as access

    original = access.AccessControl.has_privilege
    parents: dict[tuple[str, str], list] = {}

    async def has_privilege(self, user, path, privilege) -> bool:
        if user.is_superadmin:
            return await original(self, user, path, privilege)
        entries = await _every_entry(self.store, user.user_id, privilege)
        kept = parents.setdefault((user.user_id, privilege), [e for e in entries if e[0] != path])
        return access.decide(path, [e for e in entries if e[0] == path] + kept)

    access.AccessControl.has_privilege = has_privilege


@mutant(
    "llm-config-before-access",
    "a stream request is asked for the caller's LLM configuration before their access: a caller without access "
    "and without a configuration gets 400 llm_not_configured, learning that the check of access comes later",
    {"ACCESS-002"},
)
def _llm_config_before_access() -> None:
    import reference_server.prelude as preconditions
    from reference_server.errors import ApiError

    check_access = preconditions.require_project_privilege

    async def llm_first(request, caller, project_id, privilege) -> None:
        try:
            await check_access(request, caller, project_id, privilege)
        except ApiError:
            configs = await request.app.state.services.store.llm_configs(caller.user.user_id)
            if request.url.path.endswith("/stream") and not configs:
                raise ApiError(400, "llm_not_configured", "LLM configuration not found.") from None
            raise

    preconditions.require_project_privilege = llm_first


@mutant(
    "llm-configs-of-anyone",
    "any user reads and makes any other user's LLM configurations: the controller's 403 is missing",
    {"CONTROLLER-001"},
)
def _llm_configs_of_anyone() -> None:
    import reference_server.controller.llm_configs as llm_configs
    from reference_server.errors import ApiError

    async def anyone(user_id, caller, request) -> None:
        if await llm_configs.services_of(request).store.user_by_id(user_id) is None:
            raise ApiError(404, "user_not_found", f"User ID {user_id} doesn't exist")

    llm_configs._config_owner = anyone


@mutant(
    "expired-tokens-accepted",
    "a bearer token is accepted after it expired: only its signature is checked",
    {"CONTROLLER-001"},
)
def _expired_tokens_accepted() -> None:
    from types import SimpleNamespace

    import jwt

    from reference_server.controller import security

    def decode(token, key, algorithms, options=None, **kwargs):
        return jwt.decode(token, key, algorithms=algorithms, options={**(options or {}), "verify_exp": False}, **kwargs)

    security.jwt = SimpleNamespace(decode=decode, encode=jwt.encode, PyJWTError=jwt.PyJWTError)


@mutant(
    "busy-before-access",
    "a session busy with a turn is answered 409 session_busy before the caller's access is asked: a caller without "
    "access learns that the session exists and runs",
    {"ACCESS-002"},
)
def _busy_before_access() -> None:
    import reference_server.prelude as preconditions
    from reference_server.errors import ApiError

    check_access = preconditions.require_project_privilege

    async def busy_first(request, caller, project_id, privilege) -> None:
        try:
            await check_access(request, caller, project_id, privilege)
        except ApiError:
            service = request.app.state.services.manager.get(project_id)
            parts = request.url.path.split("/sessions/")
            session_id = parts[1].split("/")[0] if len(parts) == 2 else None
            if service is not None and session_id and service.is_busy(session_id):
                raise ApiError(409, "session_busy", "Session is busy with another turn") from None
            raise

    preconditions.require_project_privilege = busy_first


@mutant(
    "anyone-creates-projects",
    "any user creates projects: POST /v3/projects never asks for Project.Allocate on /projects",
    {"ACCESS-005"},
)
def _anyone_creates_projects() -> None:
    from reference_server.controller import projects
    from reference_server.controller.access import PROJECTS_PATH, AccessControl

    class Anyone(AccessControl):
        async def has_privilege(self, user, path, privilege):
            return path == PROJECTS_PATH or await super().has_privilege(user, path, privilege)

    projects.AccessControl = Anyone


def _privilege_asked_after(what: str) -> None:
    """POST /v3/projects asks for Project.Allocate only once it has read its body (`body`), or once it has also
    looked the name up (`name`): the usual order of a framework that validates the body before the handler runs."""
    from contextvars import ContextVar

    from reference_server.controller import projects
    from reference_server.controller.access import PROJECTS_PATH, AccessControl
    from reference_server.controller.store import Conflict, ControllerStore
    from reference_server.errors import ApiError

    asked: ContextVar = ContextVar("allocate_asked", default=None)

    class Later(AccessControl):
        async def has_privilege(self, user, path, privilege):
            if path != PROJECTS_PATH:
                return await super().has_privilege(user, path, privilege)
            asked.set((self, user, privilege))  # answered later, in this request's task
            return True

    async def answer_now() -> None:
        held, _ = asked.get(), asked.set(None)
        if held is not None and not await AccessControl.has_privilege(held[0], held[1], PROJECTS_PATH, held[2]):
            raise ApiError(403, "forbidden", f"Permission denied (privilege {held[2]} is required)")

    projects.AccessControl = Later
    if what == "body":
        read = projects.json_body

        async def json_body(request, model):
            body = await read(request, model)
            await answer_now()
            return body

        projects.json_body = json_body
        return
    add = ControllerStore.add_project

    async def add_project(self, name):
        if any(project.name == name for project in await self.list_projects()):
            raise Conflict(f'Project "{name}" already exists')
        await answer_now()
        return await add(self, name)

    ControllerStore.add_project = add_project


@mutant(
    "creation-body-before-privilege",
    "POST /v3/projects validates its body before it asks for Project.Allocate: a user who may not create projects "
    "gets 422 for an invalid body",
    {"ACCESS-005"},
)
def _creation_body_before_privilege() -> None:
    _privilege_asked_after("body")


@mutant(
    "creation-name-before-privilege",
    "POST /v3/projects looks the name up before it asks for Project.Allocate: a user who may not create projects "
    "learns from a 409 that a project they cannot see holds that name",
    {"ACCESS-005"},
)
def _creation_name_before_privilege() -> None:
    _privilege_asked_after("name")


# --- denying and non-propagating entries on the channels and on parent paths (issue 34) ----------------------------

CHANNEL_PARTS = ("/openai/", "/ui", "/ag-ui")  # what follows the chat prefix in every channel's path


@mutant(
    "channel-ignores-denies",
    "the channel endpoints decide access from the allowing entries alone: a user whom a deny (allowed: false, or any "
    "entry of No Access) refuses on the chat endpoints chats on every channel",
    {"CHANNEL-002", "CHANNEL-005"},  # the channel's access is the chat's; its refusal is 403 project_access_denied
    only=("channels", "across_channels"),
)
def _channel_ignores_denies() -> None:
    import reference_server.controller.access as access
    import reference_server.prelude as prelude
    from reference_server.errors import ApiError

    original = prelude.require_project_privilege

    async def require_project_privilege(request, caller, project_id, privilege) -> None:
        if caller.user.is_superadmin or not any(f"/chat{part}" in request.url.path for part in CHANNEL_PARTS):
            return await original(request, caller, project_id, privilege)
        entries = await _every_entry(request.app.state.services.store, caller.user.user_id, privilege)
        if not access.decide(access.project_path(project_id), [e for e in entries if e[2]]):
            raise ApiError(403, "project_access_denied", f"Permission denied (privilege {privilege} is required)")

    prelude.require_project_privilege = require_project_privilege


@mutant(
    "parent-deny-needs-propagation",
    "a deny on a parent path refuses the paths below it only when it propagates, as a grant reaches them: a deny of "
    "User on /projects that does not propagate leaves the projects to a grant on /",
    {"ACCESS-003"},
    {"CHANNEL-002", "CHANNEL-005"},  # the channels, asking the same rule, serve the user too
)
def _parent_deny_needs_propagation() -> None:
    import reference_server.controller.access as access

    decide = access.decide

    def below_only_when_propagating(path, entries):
        return decide(path, [e for e in entries if e[2] or e[1] or e[0] == path])

    access.decide = below_only_when_propagating


@mutant(
    "parent-deny-overrides-project-grant",
    "a deny anywhere on the path refuses, whatever a more specific level grants: a grant of User on the project no "
    "longer stands under a deny on /projects",
    {"ACCESS-003"},
    {"CHANNEL-002"},  # the channels, asking the same rule, refuse the user too
)
def _parent_deny_overrides_project_grant() -> None:
    import reference_server.controller.access as access

    decide = access.decide

    def any_deny_refuses(path, entries):
        above = {"/".join(path.rstrip("/").split("/")[:end]) or "/" for end in range(1, path.count("/") + 2)}
        return not any(not allowed and p in above for p, _, allowed, _ in entries) and decide(path, entries)

    access.decide = any_deny_refuses
