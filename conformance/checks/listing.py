"""Listing, pinning and time (LIST-*, PIN-*, TIME-*): each user's sessions of one project, ordered by pinned,
updated_at and id; pin and unpin; RFC 3339 timestamps; updated_at advancing with every mutation and only then."""

from __future__ import annotations

import asyncio
import contextlib
import re
import secrets
from typing import Any

import httpx

from conformance.checks import check
from conformance.checks.context import CheckContext
from conformance.checks.support import answered, history, listed, listing, turn
from conformance.errors import HarnessError
from conformance.harness import project_db
from conformance.rules.operations import operation
from conformance.rules.timestamps import parse_time, time_key
from conformance.transport.exchanges import json_or_none

RFC3339_UTC_Z = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")


@check("listing.per_user_and_project")
async def per_user_and_project(ctx: CheckContext) -> None:
    ctx.user("other")
    mine, theirs = ctx.session_id("main"), ctx.session_id("other")
    await turn(ctx, "LIST-001", mine, user="main")
    await turn(ctx, "LIST-001", theirs, user="other")
    main_list = await listing(ctx, "LIST-001", user="main")
    other_list = await listing(ctx, "LIST-001", user="other")
    main_ids = {s.get("thread_id") for s in main_list}
    other_ids = {s.get("thread_id") for s in other_list}
    ctx.findings.expect("LIST-001", mine in main_ids, f"main's session {mine} is missing from main's listing")
    ctx.findings.expect("LIST-001", theirs in other_ids, f"other's session {theirs} is missing from other's listing")
    ctx.findings.expect("LIST-001", theirs not in main_ids, f"other's session {theirs} is in main's listing")
    ctx.findings.expect("LIST-001", mine not in other_ids, f"main's session {mine} is in other's listing")
    shared = sorted(str(i) for i in main_ids & other_ids)
    ctx.findings.expect("LIST-001", not shared, f"sessions listed for both main and other: {shared[:5]}")
    for name, sessions in (("main", main_list), ("other", other_list)):
        owners = sorted({str(s.get("user_id")) for s in sessions})
        expected = ctx.user(name).user_id
        ok = len(owners) == 1 and (expected is None or owners == [expected])
        ctx.findings.expect(
            "LIST-001", ok, f"{name}'s listing holds sessions of the users {owners}, expected only {expected or name}'s"
        )
        projects = sorted({str(s.get("project_id")) for s in sessions})
        ctx.findings.expect(
            "LIST-001",
            projects == [ctx.env.project_id],
            f"{name}'s listing of project {ctx.env.project_id} holds sessions of the projects {projects}",
        )
    controller = ctx.env.controller
    if controller is None:
        return  # no way to make another project: the user part is judged
    project = await controller.create_project(f"conformance-listing-{secrets.token_hex(3)}")
    try:
        elsewhere = ctx.session_id("elsewhere")
        await turn(ctx, "LIST-001", elsewhere, user="main", project_id=project)
        here = {s.get("thread_id") for s in await listing(ctx, "LIST-001", user="main")}
        there_ids = {s.get("thread_id") for s in await listing(ctx, "LIST-001", user="main", project_id=project)}
        ctx.findings.expect(
            "LIST-001",
            elsewhere not in here,
            f"main's session {elsewhere} of project {project} is listed in project {ctx.env.project_id}",
        )
        ctx.findings.expect(
            "LIST-001",
            there_ids == {elsewhere},
            f"main's listing of the new project {project} holds {sorted(map(str, there_ids))}, expected only "
            f"{elsewhere}",
        )
    finally:
        with contextlib.suppress(HarnessError, httpx.HTTPError):  # cleanup only: nothing is judged by it
            await controller.delete_project(project)


def order_problems(sessions: list[dict[str, Any]]) -> list[str]:
    """Adjacent pairs that break `pinned DESC, updated_at DESC, id DESC` (strictly: the order is total)."""
    problems = []
    for n, (a, b) in enumerate(zip(sessions, sessions[1:], strict=False)):
        pa, pb = bool(a.get("pinned")), bool(b.get("pinned"))
        ta, tb = time_key(a.get("updated_at")), time_key(b.get("updated_at"))
        if pa != pb:
            ok, why = pa, "an unpinned session before a pinned one"
        elif ta[0] != tb[0]:
            ok, why = False, "one updated_at is not a date-time, so the two cannot be ordered"
        elif ta != tb:
            ok, why = ta[1] > tb[1], "an older updated_at before a newer one"
        else:
            try:
                ok = a.get("id") > b.get("id")
            except TypeError:
                ok = False
            why = "equal pinned and updated_at, but the id does not descend"
        if not ok:
            problems.append(
                f"positions {n} and {n + 1}: {why}: (pinned {pa}, updated_at {a.get('updated_at')}, id {a.get('id')}) "
                f"then (pinned {pb}, updated_at {b.get('updated_at')}, id {b.get('id')})"
            )
    return problems


@check("listing.order")
async def order(ctx: CheckContext) -> None:
    tied = [ctx.session_id(f"tie{n}") for n in range(3)]
    pinned = ctx.session_id("pinned")
    # Created concurrently, so that an implementation with a coarse clock already ties them.
    await asyncio.gather(*(turn(ctx, "LIST-002", s) for s in tied))
    await turn(ctx, "LIST-002", pinned)
    exchange = await ctx.client.call("PUT", f"/sessions/{pinned}/pin", operation="pinSession")
    ctx.findings.require_status(exchange, 200, "LIST-002")
    # Then a newer, unpinned session: `pinned` and `updated_at` disagree, and the pinned one must still come first.
    newer = ctx.session_id("newer")
    await turn(ctx, "LIST-002", newer)
    # Over HTTP a tie cannot be forced; with db_access, the database gets one (else only the order is judged).
    forced = ""
    if "db_access" in ctx.target.capabilities:
        path = ctx.env.database_path()
        if path.exists():
            failure = await project_db.tie_updated_at(path, tied)
            forced = f" (a tie could not be written in {path}: {failure})" if failure else " (tied in the database)"
    sessions = await listing(ctx, "LIST-002")
    mine = {s.get("thread_id"): s for s in sessions if s.get("thread_id") in (*tied, pinned, newer)}
    ctx.findings.require(
        len(mine) == 5, "LIST-002", f"{5 - len(mine)} of the check's 5 sessions are missing from the listing"
    )
    ctx.findings.expect(
        "LIST-002", mine[pinned].get("pinned") is True, f"the pinned session {pinned} is listed unpinned"
    )
    older, later = time_key(mine[pinned].get("updated_at")), time_key(mine[newer].get("updated_at"))
    if older[0] == later[0] and later[1] > older[1]:  # they disagree (else LIST-003's to judge, not this order)
        at = {s.get("thread_id"): n for n, s in enumerate(sessions)}
        ctx.findings.expect(
            "LIST-002",
            at[pinned] < at[newer],
            f"the pinned session {pinned} (updated_at {mine[pinned].get('updated_at')}) is listed at position "
            f"{at[pinned]}, after the newer unpinned session {newer} (updated_at {mine[newer].get('updated_at')}) "
            f"at {at[newer]}: pinned sessions come first whatever their updated_at",
        )
    problems = order_problems(sessions)
    ctx.findings.expect(
        "LIST-002",
        not problems,
        f"the listing of {len(sessions)} sessions is not ordered by pinned, updated_at, id (all descending): "
        + "; ".join(problems),
    )
    ties = {time_key(mine[s].get("updated_at")) for s in tied}
    if len(ties) == 1:  # the tie is visible: the id alone orders them
        positions = [n for n, s in enumerate(sessions) if s.get("thread_id") in tied]
        ids = [sessions[n].get("id") for n in positions]
        ctx.findings.expect(
            "LIST-002",
            all(isinstance(i, int) for i in ids) and ids == sorted(ids, reverse=True) and len(set(ids)) == 3,
            f"three sessions with equal pinned and updated_at{forced} are listed with the ids {ids}; "
            "expected descending ids",
        )


@check("listing.pin")
async def pin(ctx: CheckContext) -> None:
    session_id = ctx.session_id()
    await turn(ctx, "PIN-001", session_id)
    for method, operation_id, expected in (
        ("PUT", "pinSession", True),
        ("PUT", "pinSession", True),
        ("DELETE", "unpinSession", False),
        ("DELETE", "unpinSession", False),
    ):
        exchange = await ctx.client.call(method, f"/sessions/{session_id}/pin", operation=operation_id)
        body = json_or_none(exchange.body)
        ok = (
            exchange.status == 200
            and isinstance(body, dict)
            and body.get("pinned") is expected
            and body.get("thread_id") == session_id
        )
        ctx.findings.expect(
            "PIN-001",
            ok,
            f"{answered(exchange)}; expected 200 with session {session_id} and pinned {str(expected).lower()}",
            exchange,
        )
        now = (await listed(ctx, session_id, "PIN-001")).get("pinned")
        ctx.findings.expect(
            "PIN-001",
            now is expected,
            f"after {method} pin the session is listed with pinned {now!r}, expected {expected}",
        )


def _rfc3339_utc(value: Any) -> bool:
    return isinstance(value, str) and bool(RFC3339_UTC_Z.match(value)) and parse_time(value) is not None


@check("listing.timestamps")
async def timestamps(ctx: CheckContext) -> None:
    session_id = ctx.session_id()
    await turn(ctx, "TIME-002", session_id)
    exchange = await ctx.client.call(
        "PATCH", f"/sessions/{session_id}", operation="renameSession", json_body={"title": "Timestamps"}
    )
    ctx.findings.require_status(exchange, 200, "TIME-002")
    sessions = await listing(ctx, "TIME-002")
    ctx.findings.require(
        any(s.get("thread_id") == session_id for s in sessions), "TIME-002", f"session {session_id} is not listed"
    )
    data = await history(ctx, session_id, "TIME-002")
    records: list[tuple[str, dict[str, Any]]] = [(f"session {s.get('thread_id')}", s) for s in sessions]
    records.append((f"history of {session_id}", data))
    not_rfc3339, order_broken = [], []
    for where, record in records:
        for field in ("created_at", "updated_at", "last_message_at"):
            value = record.get(field)
            if value is None and field == "last_message_at":
                continue
            if not _rfc3339_utc(value):
                not_rfc3339.append(f"{where}: {field} {value!r}")
        created, updated = parse_time(record.get("created_at")), parse_time(record.get("updated_at"))
        # Missing or malformed timestamps are TIME-001's, CONTRACT-001's and HISTORY-008's to report; TIME-002 is
        # about the order of two that can be read.
        if created is not None and updated is not None and created > updated:
            order_broken.append(
                f"{where}: created_at {record.get('created_at')!r}, updated_at {record.get('updated_at')!r}"
            )
    for message in data["messages"]:
        value = message.get("created_at")
        if value is not None and not _rfc3339_utc(value):
            not_rfc3339.append(f"history of {session_id}: message {message.get('id')} created_at {value!r}")
    ctx.findings.expect(
        "TIME-001",
        not not_rfc3339,
        f"{len(not_rfc3339)} timestamp(s) are not RFC 3339 UTC date-times with `Z`: " + "; ".join(not_rfc3339[:5]),
    )
    ctx.findings.expect(
        "TIME-002",
        not order_broken,
        f"{len(order_broken)} record(s) have a created_at later than updated_at: " + "; ".join(order_broken[:5]),
    )


# What updated_at must do after each step (LIST-003): advance on a mutation, stay on a repeated (idempotent) one.
_STEPS: list[tuple[str, str, Any, bool]] = [
    ("a turn", "streamChat", None, True),
    ("a rename", "renameSession", {"title": "Advances"}, True),
    ("a pin", "pinSession", None, True),
    ("a second pin (not a mutation)", "pinSession", None, False),
    ("an unpin", "unpinSession", None, True),
    ("a second unpin (not a mutation)", "unpinSession", None, False),
]


@check("listing.updated_at_advances")
async def updated_at_advances(ctx: CheckContext) -> None:
    session_id = ctx.session_id()
    await turn(ctx, "LIST-003", session_id)
    previous = (await listed(ctx, session_id, "LIST-003")).get("updated_at")
    for what, operation_id, body, advances in _STEPS:
        if operation_id == "streamChat":
            await turn(ctx, "LIST-003", session_id)
        else:
            step = operation(operation_id)
            exchange = await ctx.client.call(step.method, step.url(session_id), operation=step.id, json_body=body)
            ctx.findings.require_status(exchange, 200, "LIST-003")
        now = (await listed(ctx, session_id, "LIST-003")).get("updated_at")
        before, after = time_key(previous), time_key(now)
        if advances:
            ok = before[0] == after[0] and after[1] > before[1]
            expected = "strictly later"
        else:
            ok = before == after
            expected = "unchanged"
        ctx.findings.expect(
            "LIST-003", ok, f"{what} moved updated_at from {previous!r} to {now!r}; expected {expected}"
        )
        previous = now
