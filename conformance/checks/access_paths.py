"""Access entries' paths (ACCESS-006): an entry names `/`, `/projects` or `/projects/{project_id}`, the whole string,
whenever it is written. Judged as the administrator, for a user of the check's own with no other entry: the three
paths accepted on creation; a line end, a control character, a trailing `/`, an unknown path and a project id that is
no UUID refused 400 on creation with nothing written, and on a change with the entry left as it was; a project id in
upper case refused 400, or kept lower case and then in effect (the user reads the project).

Every entry it makes, a refused path's that a server wrote all the same included, goes in the run's ledger and is
removed before the check ends.
"""

from __future__ import annotations

from typing import Any

from conformance.checks import check
from conformance.checks.access import as_admin, own_user, remove_entries, require_stranger
from conformance.checks.context import CheckContext
from conformance.transport.exchanges import Exchange, json_or_none

REQUIREMENT = "ACCESS-006"
ENTRY_FIELDS = ("path", "user_id", "role_id", "propagate", "allowed")


def _refused_paths(project_id: str) -> list[tuple[str, str]]:
    """(path, what is wrong with it): each refused 400 on creation."""
    return [
        ("/projects\n", "a trailing newline"),
        (f"/projects/{project_id}\n", "a trailing newline after the project id"),
        (f"/projects/{project_id}\r", "a carriage return after the project id"),
        (f"/projects/{project_id}\t", "a control character (a tab) after the project id"),
        ("/projects\x00", "a control character (NUL)"),
        ("/projects/", "a trailing /"),
        (f"/projects/{project_id}/", "a trailing / after the project id"),
        ("/conformance-no-such-resource", "a path that names no resource"),
        ("/projects/no-such-project", "a project id that is no UUID"),
    ]


def _refused_changes(project_id: str) -> list[tuple[str, str]]:
    """(path, what is wrong with it): each refused 400 when a valid entry is changed to it."""
    return [
        ("/projects\n", "a trailing newline"),
        (f"/projects/{project_id}\x00", "a control character (NUL) after the project id"),
        ("/projects/", "a trailing /"),
        ("/conformance-no-such-resource", "a path that names no resource"),
    ]


class _Entries:
    """The check's entries for one user, written as the administrator: each one made goes in the ledger."""

    def __init__(self, ctx: CheckContext, user: str, role_name: str, role_id: str) -> None:
        self.ctx, self.user_id, self.role_name, self.role_id = ctx, ctx.user(user).user_id, role_name, role_id

    def body(self, path: str) -> dict[str, Any]:
        # Not propagating: an entry on / or /projects reaches nothing below it while it lives.
        fields = {"path": path, "user_id": self.user_id, "role_id": self.role_id, "propagate": False}
        return {"ace_type": "user", **fields, "allowed": True}

    async def create(self, path: str) -> tuple[Exchange, str | None]:
        """POST /v3/access/acl with `path`: the answer, and the id of the entry it made (None when none)."""
        exchange = await as_admin(self.ctx, "POST", "/v3/access/acl", self.body(path))
        ace_id = _member(exchange, "ace_id") if exchange.status is not None and 200 <= exchange.status < 300 else None
        if isinstance(ace_id, str):
            self.ctx.env.ledger.aces[ace_id] = f"role {self.role_id} on {path!r} for user {self.user_id}"
            return exchange, ace_id
        return exchange, None

    async def listed(self) -> list[dict[str, Any]] | None:
        """The user's entries as GET /v3/access/acl lists them; None when it lists nothing readable."""
        exchange = await as_admin(self.ctx, "GET", "/v3/access/acl")
        entries = json_or_none(exchange.body) if exchange.status == 200 else None
        if not isinstance(entries, list):
            return None
        return [e for e in entries if isinstance(e, dict) and str(e.get("user_id")) == self.user_id]

    async def remove_listed(self, listed: list[dict[str, Any]] | None) -> None:
        """Remove the listed entries of the user, which refused requests wrote all the same (the ledger records
        them first, so that the clean-up removes any left)."""
        for entry in listed or []:
            ace_id = entry.get("ace_id")
            if isinstance(ace_id, str):
                self.ctx.env.ledger.aces[ace_id] = f"an entry on {entry.get('path')!r} for user {self.user_id}"
                await remove_entries(self.ctx, [ace_id])


def _member(exchange: Exchange, name: str) -> Any:
    body = json_or_none(exchange.body or "")
    return body.get(name) if isinstance(body, dict) else None


def _fields(entry: Any) -> dict[str, Any]:
    return {k: entry.get(k) for k in ENTRY_FIELDS} if isinstance(entry, dict) else {}


@check("access.entry_paths")
async def entry_paths_are_checked_whenever_written(ctx: CheckContext) -> None:
    require_stranger(ctx)
    role_name = (ctx.target.data.get("access_control") or {}).get("role", "User")
    user = await own_user(ctx, "paths", with_llm=False)
    entries = _Entries(ctx, user, role_name, await ctx.env.controller.role_id(role_name))
    project_id = ctx.env.project_id
    # First, while the user has no entry: the upper-case project id, whose effect is the user reading the project.
    await _upper_case_project_id(ctx, entries, user, project_id)
    await _creations(ctx, entries, project_id)
    await _changes(ctx, entries, project_id)


async def _creations(ctx: CheckContext, entries: _Entries, project_id: str) -> None:
    """The three paths accepted; each refused path answered 400 with nothing written."""
    for path in ("/", "/projects", f"/projects/{project_id}"):
        exchange, ace_id = await entries.create(path)
        ctx.findings.expect(
            REQUIREMENT,
            exchange.status == 201 and ace_id is not None and _member(exchange, "path") in (None, path),
            f"POST /v3/access/acl with the path {path!r} answered {exchange.excerpt()}; expected 201 with an ace_id "
            "and the path as written",
            exchange,
        )
        await remove_entries(ctx, [ace_id] if ace_id else [])
    listing_seen = True
    known = {e.get("ace_id") for e in await entries.listed() or []}  # any left by a removal that failed
    for path, what in _refused_paths(project_id):
        exchange, ace_id = await entries.create(path)
        listed = await entries.listed()
        listing_seen = listing_seen and listed is not None
        written = [e for e in listed or [] if e.get("ace_id") not in known]
        ctx.findings.expect(
            REQUIREMENT,
            exchange.status == 400 and ace_id is None and not written,
            f"POST /v3/access/acl with the path {path!r} ({what}) answered {exchange.excerpt()}, and "
            f"{[e.get('path') for e in written]} written; expected 400 and nothing written",
            exchange,
        )
        await entries.remove_listed(written)
        await remove_entries(ctx, [ace_id] if ace_id else [])
        known |= {e.get("ace_id") for e in written}
    if not listing_seen:
        ctx.findings.not_testable(
            REQUIREMENT, "GET /v3/access/acl did not list the entries: whether a refused one was written is not seen"
        )


async def _upper_case_project_id(ctx: CheckContext, entries: _Entries, user: str, project_id: str) -> None:
    """An entry on the project written with its id in upper case: refused 400 with nothing written, or kept lower
    case and in effect (the user, refused before, reads the project)."""
    upper = f"/projects/{project_id.upper()}"
    if upper == f"/projects/{project_id}":
        ctx.findings.not_testable(REQUIREMENT, f"the project id {project_id} has no letter to write in upper case")
        return
    read = f"/v3/projects/{project_id}"
    before = await ctx.client.call("GET", read, user=user, absolute=True)
    exchange, ace_id = await entries.create(upper)
    try:
        if exchange.status == 400 and ace_id is None:
            written = await entries.listed()  # the user had none before
            ctx.findings.expect(
                REQUIREMENT,
                not written,
                f"POST /v3/access/acl with the path {upper!r} was refused 400, and the user's entries are now "
                f"{[e.get('path') for e in written or []]}; expected nothing written",
                exchange,
            )
            return
        kept = await as_admin(ctx, "GET", f"/v3/access/acl/{ace_id}") if ace_id else None
        stored = _member(kept, "path") if kept is not None and kept.status == 200 else _member(exchange, "path")
        ctx.findings.expect(
            REQUIREMENT,
            exchange.status == 201 and ace_id is not None and stored == f"/projects/{project_id}",
            f"POST /v3/access/acl with the path {upper!r} (the project id in upper case) answered "
            f"{exchange.excerpt()} and the entry keeps the path {stored!r}; expected 400, or 201 and the id kept lower "
            "case",
            *(e for e in (exchange, kept) if e is not None),
        )
        if before.status != 403:
            ctx.findings.not_testable(
                REQUIREMENT,
                f"GET {read} by a user with no entry answered {before.excerpt()}, not 403: whether the entry written "
                "with the id in upper case takes effect is not seen",
            )
            return
        after = await ctx.client.call("GET", read, user=user, absolute=True)
        ctx.findings.expect(
            REQUIREMENT,
            after.status == 200,
            f"GET {read} by the user, refused 403 before, answered {after.excerpt()} once {entries.role_name} was "
            f"written on {upper!r} (accepted); expected 200: the entry matches nothing",
            before,
            after,
        )
    finally:
        await remove_entries(ctx, [ace_id] if ace_id else [])
        await entries.remove_listed(await entries.listed())  # the user's only: it had none before


async def _changes(ctx: CheckContext, entries: _Entries, project_id: str) -> None:
    """A valid entry changed to each refused path: 400, and the entry as it was."""
    exchange, ace_id = await entries.create("/projects")
    ctx.findings.require(
        ace_id is not None,
        REQUIREMENT,
        f"POST /v3/access/acl with the path '/projects' answered {exchange.excerpt()}, expected 201 with an ace_id: "
        "no entry to change",
        exchange,
    )
    url = f"/v3/access/acl/{ace_id}"
    try:
        before = await as_admin(ctx, "GET", url)
        original = _fields(json_or_none(before.body) if before.status == 200 else None) or _fields(
            json_or_none(exchange.body)
        )
        for path, what in _refused_changes(project_id):
            changed = await as_admin(ctx, "PUT", url, entries.body(path))
            after = await as_admin(ctx, "GET", url)
            now = _fields(json_or_none(after.body) if after.status == 200 else None)
            ctx.findings.expect(
                REQUIREMENT,
                changed.status == 400 and now == original,
                f"PUT {url} changing the path '/projects' to {path!r} ({what}) answered {changed.excerpt()}, and the "
                f"entry is now {now}; expected 400 and the entry as it was ({original})",
                changed,
                after,
            )
            if now != original:  # put it back, so that the next change is judged on its own
                await as_admin(ctx, "PUT", url, entries.body("/projects"))
        upper, lower = f"/projects/{project_id.upper()}", f"/projects/{project_id}"
        if upper != lower:  # else said NOT TESTABLE on creation
            changed = await as_admin(ctx, "PUT", url, entries.body(upper))
            after = await as_admin(ctx, "GET", url)
            now = _fields(json_or_none(after.body) if after.status == 200 else None)
            ctx.findings.expect(
                REQUIREMENT,
                (changed.status == 400 and now == original) or (changed.status == 200 and now.get("path") == lower),
                f"PUT {url} changing the path '/projects' to {upper!r} (the project id in upper case) answered "
                f"{changed.excerpt()}, and the entry is now {now}; expected 400 and the entry as it was, or 200 and "
                "the id kept lower case",
                changed,
                after,
            )
    finally:
        await remove_entries(ctx, [ace_id])
