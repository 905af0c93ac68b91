"""Mutants of what is written through the controller (issue 34): an access entry's path matched with `$` (a trailing
newline let through), checked on creation only (gns3-server's way), or kept in the case it was written in (ACCESS-006);
an own password changed without the current one, or with any (CONTROLLER-002). Registered in MUTANTS by
tests/quality/mutants.py."""

from __future__ import annotations

from .mutant_kit import mutant


@mutant(
    "ace-path-dollar-anchored",
    "an access entry's path is matched with ^...$ (re.match), so that a trailing newline gets through: the entry is "
    "kept with it, and matches nothing",
    {"ACCESS-006"},
)
def _ace_path_dollar_anchored() -> None:
    import re

    import reference_server.controller.acl as acl
    from reference_server.controller.access import UUID_PATTERN

    anchored = re.compile(rf"^(?:/|/projects|/projects/{UUID_PATTERN})$")
    acl.canonical_path = lambda path: path.lower() if anchored.match(path) else None


@mutant(
    "ace-path-checked-on-creation-only",
    "an access entry's path is checked when the entry is created, not when it is changed (gns3-server 3.1's way): "
    "PUT /v3/access/acl/{ace_id} keeps any path as written",
    {"ACCESS-006"},
)
def _ace_path_checked_on_creation_only() -> None:
    import reference_server.controller.acl as acl

    checked = acl._checked

    async def on_creation_only(body, request):
        if request.method != "PUT":
            return await checked(body, request)
        # The user and the role are still checked; the path goes through as written.
        return (await checked(body.model_copy(update={"path": "/"}), request)).model_copy(update={"path": body.path})

    acl._checked = on_creation_only


@mutant(
    "ace-project-id-kept-as-written",
    "an access entry's project id is matched whatever its case and kept as written: an entry written in upper case "
    "is accepted and never matches the project",
    {"ACCESS-006"},
)
def _ace_project_id_kept_as_written() -> None:
    import re

    import reference_server.controller.acl as acl
    from reference_server.controller.access import UUID_PATTERN

    any_case = re.compile(rf"/|/projects|/projects/{UUID_PATTERN}", re.IGNORECASE)
    acl.canonical_path = lambda path: path if any_case.fullmatch(path) else None


@mutant(
    "own-password-change-without-current",
    "users change their own password with their token alone: current_password is neither asked for nor checked",
    {"CONTROLLER-002"},
)
def _own_password_change_without_current() -> None:
    import reference_server.controller.users as users

    async def nothing_asked(user, current, request) -> None:
        return None

    users._check_current_password = nothing_asked


@mutant(
    "own-password-change-any-current",
    "users changing their own password must give a current_password, but any one will do: it is never compared "
    "with the password",
    {"CONTROLLER-002"},
)
def _own_password_change_any_current() -> None:
    import reference_server.controller.users as users

    check = users._check_current_password

    async def present_only(user, current, request) -> None:
        if current is None:
            await check(user, current, request)  # the 422 naming current_password

    users._check_current_password = present_only
