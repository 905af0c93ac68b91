"""Creating projects (ACCESS-005): `POST /v3/projects` needs `Project.Allocate` on `/projects`, as gns3-server 3.x
asks it, before the body is looked at. Judged for a user of the check's own in each state the rule covers: no entry
(with a fresh name, a taken name and an invalid body alike), the role on `/projects` with and without propagation,
on `/` with and without it, and a deny on `/projects` under a grant on `/`."""

from __future__ import annotations

import secrets
from typing import Any

from conformance.checks import check
from conformance.checks.access import (
    admin_view,
    as_admin,
    own_user,
    remove_entries,
    require_stranger,
    role_named,
    write_entry,
)
from conformance.checks.context import CheckContext
from conformance.transport.exchanges import json_or_none

REQUIREMENT = "ACCESS-005"


async def _projects_named(ctx: CheckContext, name: str) -> list[str]:
    """The ids of the projects called `name`, as the administrator lists them."""
    listing = await as_admin(ctx, "GET", "/v3/projects")
    found = json_or_none(listing.body) if listing.status == 200 else None
    return [p.get("project_id") for p in found or [] if isinstance(p, dict) and p.get("name") == name]


async def _post_taken_name(ctx: CheckContext, user: str, taken: str, who: str, status: int, why: str) -> None:
    """POST /v3/projects as `user` with the name of the check's project: answered `status`."""
    exchange = await ctx.client.call("POST", "/v3/projects", user=user, absolute=True, json_body={"name": taken})
    ctx.findings.expect(
        REQUIREMENT,
        exchange.status == status,
        f"POST /v3/projects with the taken name of the check's project by {who}: answered {exchange.excerpt()}, "
        f"expected {status} ({why})",
        exchange,
    )


async def _create(ctx: CheckContext, user: str, body: Any, who: str, *, may: bool) -> None:
    """POST /v3/projects as `user`: 201 and the project made when it `may`, else 403 and nothing made."""
    exchange = await ctx.client.call("POST", "/v3/projects", user=user, absolute=True, json_body=body)
    name = body.get("name") if isinstance(body, dict) else None
    made = await _projects_named(ctx, name) if isinstance(name, str) and name else []
    for project_id in made:  # the check's own: the administrator deletes it
        ctx.env.ledger.projects[project_id] = name
    status, count, expected = (201, 1, "201 and the project") if may else (403, 0, "403 and nothing made")
    ctx.findings.expect(
        REQUIREMENT,
        exchange.status == status and len(made) == count,
        f"POST /v3/projects {body} by {who}: answered {exchange.excerpt()}, {len(made)} project(s) of that name "
        f"made; expected {expected}",
        exchange,
    )
    for project_id in made:
        deleted = await as_admin(ctx, "DELETE", f"/v3/projects/{project_id}")
        if deleted.status in (200, 204):
            ctx.env.ledger.projects.pop(project_id, None)


def _fresh() -> dict[str, str]:
    return {"name": f"conformance-allocate-{secrets.token_hex(4)}"}


@check("access.project_creation")
async def creating_projects_needs_the_allocate_privilege(ctx: CheckContext) -> None:
    require_stranger(ctx)
    access = ctx.target.data.get("access_control") or {}
    role_name, no_access_name = access.get("role", "User"), access.get("no_access_role")
    role = await ctx.env.controller.role_id(role_name)
    no_access = await role_named(ctx, no_access_name) if no_access_name else None
    user = await own_user(ctx, "allocate", with_llm=False)
    taken = (await admin_view(ctx, ctx.env.project_id)).get("name")
    nobody = "a user with no entry"
    await _create(ctx, user, _fresh(), nobody, may=False)
    await _create(ctx, user, {"name": ""}, f"{nobody} (an invalid body)", may=False)
    if taken is not None:
        await _post_taken_name(ctx, user, taken, nobody, 403, "a 409 tells the name is taken")
    states = [  # (what, [(path, role, propagate, allowed)], may create)
        (f"{role_name} on /projects, not propagating", [("/projects", role, False, True)], True),
        (f"{role_name} on /projects, propagating", [("/projects", role, True, True)], True),
        (f"{role_name} on /, propagating", [("/", role, True, True)], True),
        (f"{role_name} on /, not propagating", [("/", role, False, True)], False),
        (
            f"{role_name} on /, propagating, and a deny of it on /projects",
            [("/", role, True, True), ("/projects", role, True, False)],
            False,
        ),
    ]
    if no_access is not None:  # an entry on /projects whose role does not hold Project.Allocate
        states.append((f"{no_access_name} on /projects", [("/projects", no_access, True, True)], False))
    for what, entries, may in states:
        made = [
            await write_entry(ctx, REQUIREMENT, user, path, role_id, propagate=propagate, allowed=allowed)
            for path, role_id, propagate, allowed in entries
        ]
        try:
            await _create(ctx, user, _fresh(), f"a user with {what}", may=may)
            if may and taken is not None:
                await _post_taken_name(ctx, user, taken, f"a user with {what}", 409, "names are unique")
        finally:
            await remove_entries(ctx, made)
