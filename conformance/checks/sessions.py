"""Sessions (SESSION-*): created with or without a client-chosen id, ids validated in bodies and paths, renamed,
deleted (gone everywhere, and a new empty session when the id is used again)."""

from __future__ import annotations

import re
from typing import Any

from conformance.channels.gns3_stream import StreamResult
from conformance.checks import check
from conformance.checks.blame import require_served, require_turn
from conformance.checks.context import CheckContext
from conformance.checks.support import (
    STATS_FIELDS,
    answered,
    call_operation,
    expected_roles,
    history,
    listed,
    listing,
    turn,
)
from conformance.rules.operations import session_endpoints
from conformance.transport.exchanges import json_or_none
from gns3_copilot_generated.constants import SESSION_ID_MAX_LENGTH

UUID_PATTERN = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")


# --- creation -----------------------------------------------------------------------------------------------


def _carried_ids(result: StreamResult) -> tuple[set[Any], list[str]]:
    """The session ids the events carry, and the events (other than `content`, see EVENT-003) that carry none."""
    carried = {e.get("session_id") for e in result.events if "session_id" in e}
    missing = [e.get("type") for e in result.events if "session_id" not in e and e.get("type") != "content"]
    return carried, missing


@check("sessions.create")
async def create(ctx: CheckContext) -> None:
    created: list[str] = []
    for label, body_extra in (("no session_id", {}), ('"session_id": null', {"session_id": None})):
        sent = ctx.message("cs-plain", f"New session ({label})")
        result = await ctx.client.stream({"message": sent, **body_extra})
        await require_turn(ctx, result, "SESSION-001")
        carried, missing = _carried_ids(result)
        session_id = result.session_id
        ok = len(carried) == 1 and not missing and isinstance(session_id, str)
        ctx.findings.expect(
            "SESSION-001",
            ok,
            f"with {label}: the events carry the session ids {sorted(map(str, carried))}"
            f"{f' and {missing} events carry none' if missing else ''}; expected one server-generated id on "
            "every event",
            result.exchange,
        )
        ctx.findings.require(isinstance(session_id, str), "SESSION-001", f"with {label}: no event carries a session id")
        ctx.findings.expect(
            "SESSION-001",
            bool(UUID_PATTERN.match(session_id)),
            f"with {label}: the generated session id {session_id!r} is not a UUID",
            result.exchange,
        )
        created.append(session_id)
        sessions = [s for s in await listing(ctx, "SESSION-001") if s.get("thread_id") == session_id]
        ctx.findings.expect(
            "SESSION-001",
            len(sessions) == 1,
            f"with {label}: the new session {session_id} is listed {len(sessions)} time(s) for its user, expected once",
        )
        data = await history(ctx, session_id, "SESSION-001")
        users = [m.get("content") for m in data["messages"] if m.get("role") == "user"]
        ctx.findings.expect(
            "SESSION-001",
            users == [sent],
            f"with {label}: the new session's history holds the user messages {users!r}, expected only {sent!r}",
        )
    ctx.findings.expect(
        "SESSION-001",
        created[0] != created[1],
        f"two requests without a session id both got session {created[0]}: each must create a new session",
    )


@check("sessions.create_with_id")
async def create_with_id(ctx: CheckContext) -> None:
    session_id = ctx.session_id("chosen")
    sent = ctx.message("cs-plain", "A session with an id chosen by the client")
    result = await ctx.client.stream({"message": sent, "session_id": session_id})
    await require_turn(ctx, result, "SESSION-002")
    carried, _ = _carried_ids(result)
    ctx.findings.expect(
        "SESSION-002",
        carried == {session_id},
        f"the events carry the session ids {sorted(map(str, carried))}, expected only the requested {session_id}",
        result.exchange,
    )
    mine = [s for s in await listing(ctx, "SESSION-002") if s.get("thread_id") == session_id]
    ctx.findings.require(
        len(mine) == 1, "SESSION-002", f"session {session_id} is listed {len(mine)} time(s) for its creator, expected 1"
    )
    owner = ctx.user("main").user_id
    if owner is not None:
        ctx.findings.expect(
            "SESSION-002",
            mine[0].get("user_id") == owner,
            f"session {session_id} has user_id {mine[0].get('user_id')!r}, expected the caller's {owner!r}",
        )
    others = [s for s in await listing(ctx, "SESSION-002", user="other") if s.get("thread_id") == session_id]
    ctx.findings.expect("SESSION-002", not others, f"session {session_id}, created by main, is listed for user other")
    data = await history(ctx, session_id, "SESSION-002")
    users = [m.get("content") for m in data["messages"] if m.get("role") == "user"]
    ctx.findings.expect(
        "SESSION-002",
        users == [sent] and data.get("thread_id") == session_id,
        f"the history of the new session {session_id} has thread_id {data.get('thread_id')!r} and the user messages "
        f"{users!r}, expected only {sent!r}",
    )


# --- ids ----------------------------------------------------------------------------------------------------

INVALID_BODY_IDS: list[tuple[str, Any]] = [
    ("empty", ""),
    ("a space", "has space"),
    (f"{SESSION_ID_MAX_LENGTH + 1} characters", "x" * (SESSION_ID_MAX_LENGTH + 1)),
    ("a slash", "a/b"),
    ("a non-ASCII letter", "é"),
    ("a number", 12345),
    ("`.`, a path segment clients rewrite", "."),
    ("`..`, a path segment clients rewrite", ".."),
]
INVALID_PATH_IDS = [
    ("'bad id!' (URL-encoded)", "bad%20id%21"),
    (f"{SESSION_ID_MAX_LENGTH + 1} characters", "y" * (SESSION_ID_MAX_LENGTH + 1)),
    ("'é'", "%C3%A9"),
]


@check("sessions.id_validation")
async def id_validation(ctx: CheckContext) -> None:
    for label, value in INVALID_BODY_IDS:
        result = await ctx.client.stream({"message": ctx.message("cs-plain"), "session_id": value})
        ctx.findings.expect(
            "SESSION-003",
            result.status == 422,
            f"POST /stream with session_id {value!r} ({label}) answered {result.exchange.outcome}, expected 422",
            result.exchange,
        )
    for label, value in INVALID_PATH_IDS:
        for endpoint in session_endpoints(ctx.target.capabilities):
            exchange = await call_operation(ctx, endpoint, value)
            ctx.findings.expect(
                "SESSION-003",
                exchange.status == 422,
                f"session id {label} in the path: {answered(exchange)}; expected 422",
                exchange,
            )
    # The longest valid id, with every kind of allowed character, is accepted.
    prefix = ctx.session_id("Az09._:-")
    longest = prefix + "x" * (SESSION_ID_MAX_LENGTH - len(prefix))
    result = await ctx.client.stream({"message": ctx.message("cs-plain"), "session_id": longest})
    await require_served(
        ctx,
        result.status == 200 and result.completed and "error" not in result.types and result.session_id == longest,
        result,
        "SESSION-003",
        f"a valid {SESSION_ID_MAX_LENGTH}-character session id was refused or changed: status {result.status}, events "
        f"{result.types[-3:]}, session id {result.session_id!r}",
        stop=False,
    )


# --- rename -------------------------------------------------------------------------------------------------

INVALID_TITLES: list[tuple[str, Any]] = [
    ("an empty title", {"title": ""}),
    ("a 256-character title", {"title": "t" * 256}),
    ("a null title", {"title": None}),
    ("a number", {"title": 42}),
    ("no title", {}),
]


@check("sessions.rename")
async def rename(ctx: CheckContext) -> None:
    session_id = ctx.session_id()
    await turn(ctx, "SESSION-004", session_id)
    last = None
    # A blank title is 1 to 255 characters like any other: the schema has no pattern, so it is accepted as sent.
    for title in ("Z", " ", " \t ", "Renamed: «ünïcode» & 'quotes'", "T" * 255):
        exchange = await ctx.client.call(
            "PATCH", f"/sessions/{session_id}", operation="renameSession", json_body={"title": title}
        )
        body = json_or_none(exchange.body)
        ok = (
            exchange.status == 200
            and isinstance(body, dict)
            and body.get("title") == title
            and body.get("thread_id") == session_id
        )
        ctx.findings.expect(
            "SESSION-004",
            ok,
            f"renaming to a {len(title)}-character title {title[:40]!r}: {answered(exchange)}; expected 200 with the "
            f"session {session_id} titled as sent",
            exchange,
        )
        last = title
    for label, body in INVALID_TITLES:
        exchange = await ctx.client.call("PATCH", f"/sessions/{session_id}", operation="renameSession", json_body=body)
        ctx.findings.expect(
            "SESSION-004", exchange.status == 422, f"{label}: {answered(exchange)}; expected 422", exchange
        )
    now = (await listed(ctx, session_id, "SESSION-004")).get("title")
    ctx.findings.expect(
        "SESSION-004",
        now == last,
        f"after the refused renames the listed title is {str(now)[:60]!r}, expected the last valid one "
        f"({len(str(last))} characters)",
    )


@check("sessions.never_created")
async def never_created(ctx: CheckContext) -> None:
    # Valid ids no one ever used: one of the suite's own shape, and the longest an id may be.
    for session_id in (ctx.session_id("never"), "n" * SESSION_ID_MAX_LENGTH):
        for endpoint in session_endpoints(ctx.target.capabilities):
            exchange = await call_operation(ctx, endpoint, session_id)
            ctx.findings.expect(
                "SESSION-008",
                exchange.status == 404,
                f"a session that was never created: {answered(exchange)}; expected 404",
                exchange,
            )


# --- delete -------------------------------------------------------------------------------------------------


@check("sessions.delete")
async def delete(ctx: CheckContext) -> None:
    session_id = ctx.session_id()
    await turn(ctx, "SESSION-006", session_id, text="Before the delete")
    first = await listed(ctx, session_id, "SESSION-006")
    exchange = await ctx.client.call("DELETE", f"/sessions/{session_id}", operation="deleteSession")
    ctx.findings.require(
        exchange.status == 204, "SESSION-006", f"{answered(exchange)}; expected 204 for an existing session", exchange
    )
    remaining = [s for s in await listing(ctx, "SESSION-006") if s.get("thread_id") == session_id]
    ctx.findings.expect(
        "SESSION-006", not remaining, f"session {session_id} is still listed after its delete answered 204"
    )
    for endpoint in session_endpoints(ctx.target.capabilities):
        exchange = await call_operation(ctx, endpoint, session_id)
        ctx.findings.expect(
            "SESSION-007",
            exchange.status == 404,
            f"after the delete: {answered(exchange)}; expected 404",
            exchange,
        )
    sent = ctx.message("cs-plain", "After the delete")
    result = await ctx.client.stream({"message": sent, "session_id": session_id})
    await require_turn(ctx, result, "SESSION-007")
    data = await history(ctx, session_id, "SESSION-007")
    shown = [(m.get("role"), m.get("content")) for m in data["messages"] if m.get("role") != "system"]
    roles = expected_roles(ctx.env.scripts["cs-plain"])
    ctx.findings.expect(
        "SESSION-007",
        [r for r, _ in shown] == roles and shown[0] == ("user", sent),
        f"after the delete, a new turn with the same id shows the history {shown!r}; expected only the new turn's "
        f"messages (roles {roles}, first the user message {sent!r}): a new, empty session",
    )
    again = await listed(ctx, session_id, "SESSION-007")
    stats_now = {k: again.get(k) for k in STATS_FIELDS}
    stats_first = {k: first.get(k) for k in STATS_FIELDS}
    ctx.findings.expect(
        "SESSION-007",
        stats_now == stats_first,
        f"the session re-created after the delete has the statistics {stats_now} after one turn; the same turn on "
        f"the first session gave {stats_first} (a new session starts from zero)",
    )
