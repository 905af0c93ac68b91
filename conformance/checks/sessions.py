"""Sessions and history: creation (with and without an id), id validation, rename, delete, pinning, listing
order, timestamps and updated_at, and the history's format, ids and limit (SESSION-*, LIST-002/003, PIN-001,
TIME-*, HISTORY-001..008). The helpers at the top are shared with isolation.py."""

from __future__ import annotations

import asyncio
import re
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..context import CheckContext, StreamResult
from ..exchanges import Exchange, json_or_none
from . import check

UUID_PATTERN = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
RFC3339_UTC_Z = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")
_FRACTION = re.compile(r"(\.\d{6})\d+")
STATS_FIELDS = ("message_count", "llm_calls_count", "input_tokens", "output_tokens", "total_tokens")


# --- shared helpers -----------------------------------------------------------------------------------------


def parse_time(value: Any) -> datetime | None:
    """A timestamp as an aware datetime (naive ones read as UTC); None when it is not a date-time."""
    if not isinstance(value, str) or not value.strip():
        return None
    text = _FRACTION.sub(r"\1", value.strip().replace(" ", "T", 1))
    if text[-1:] in ("Z", "z"):
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def time_key(value: Any) -> tuple[int, Any]:
    """Comparable form of a timestamp: parsed when possible, else the raw text (compared as text)."""
    parsed = parse_time(value)
    return (1, parsed) if parsed is not None else (0, str(value))


def body_of(exchange: Exchange) -> Any:
    return json_or_none(exchange.body)


async def listing(ctx: CheckContext, requirement: str, user: str = "main", project_id: str | None = None) -> list:
    """GET {prefix}/sessions; a failure blocks `requirement` (the check's own, not LIST-001)."""
    exchange = await ctx.call("GET", "/sessions", operation="listSessions", user=user, project_id=project_id)
    ctx.require_status(exchange, 200, requirement)
    sessions = body_of(exchange)
    ctx.require(isinstance(sessions, list), requirement, f"the listing is not a JSON array: {exchange.body[:300]}")
    return sessions


async def listed(ctx: CheckContext, session_id: str, requirement: str, user: str = "main") -> dict[str, Any]:
    """The listed session `session_id` of `user`; blocks `requirement` when it is not listed."""
    found = [s for s in await listing(ctx, requirement, user) if s.get("thread_id") == session_id]
    ctx.require(len(found) == 1, requirement, f"session {session_id} is listed {len(found)} time(s) for {user}")
    return found[0]


async def history(ctx: CheckContext, session_id: str, requirement: str, user: str = "main", **params: Any) -> dict:
    exchange = await ctx.call(
        "GET", f"/sessions/{session_id}/history", operation="getSessionHistory", user=user, params=params or None
    )
    ctx.require_status(exchange, 200, requirement)
    data = body_of(exchange)
    ctx.require(
        isinstance(data, dict) and isinstance(data.get("messages"), list),
        requirement,
        f"the history is not an object with a `messages` list: {exchange.body[:300]}",
        exchange,
    )
    return data


def require_turn(ctx: CheckContext, result: StreamResult, requirement: str) -> None:
    """The turn ran: 200, events, no `error`, and the server closed the stream. Its grammar (a `done` last) is
    the stream checks' business, so that a grammar fault does not also fail every session requirement."""
    ok = result.status == 200 and result.completed and bool(result.events) and "error" not in result.types
    ctx.require(
        ok,
        requirement,
        f"the turn did not complete: {result.exchange.describe()}, events {result.types[-5:]}, "
        f"closed by the server: {result.completed} {result.exchange.body[:300]}",
        result.exchange,
    )


async def turn(
    ctx: CheckContext,
    requirement: str,
    session_id: str | None,
    script: str = "cs-plain",
    text: str = "Conformance check",
    user: str = "main",
    project_id: str | None = None,
) -> StreamResult:
    """One complete turn (blocks `requirement` when it does not complete, see require_turn)."""
    body: dict[str, Any] = {"message": ctx.message(script, text)}
    if session_id is not None:
        body["session_id"] = session_id
    result = await ctx.stream(body, user=user, project_id=project_id)
    require_turn(ctx, result, requirement)
    return result


def path_endpoints(ctx: CheckContext, session_id: str) -> list[tuple[str, str, str, Any]]:
    """Every endpoint with the session id in its path: (method, path, operationId, JSON body). The session's
    DELETE comes last, so that a server that wrongly obeys it has answered every other call first."""
    endpoints: list[tuple[str, str, str, Any]] = [
        ("GET", f"/sessions/{session_id}/history", "getSessionHistory", None),
        ("PATCH", f"/sessions/{session_id}", "renameSession", {"title": "Renamed by the conformance suite"}),
        ("PUT", f"/sessions/{session_id}/pin", "pinSession", None),
        ("DELETE", f"/sessions/{session_id}/pin", "unpinSession", None),
    ]
    if "abort" in ctx.target.capabilities:
        endpoints.append(("POST", f"/sessions/{session_id}/abort", "abortSessionTurn", None))
    endpoints.append(("DELETE", f"/sessions/{session_id}", "deleteSession", None))
    return endpoints


async def call_endpoint(ctx: CheckContext, endpoint: tuple[str, str, str, Any], user: str = "main") -> Exchange:
    method, path, operation, body = endpoint
    return await ctx.call(method, path, operation=operation, user=user, json_body=body)


def answered(exchange: Exchange) -> str:
    got = exchange.status if exchange.status is not None else exchange.error
    return f"{exchange.method} {exchange.url} answered {got}: {exchange.body[:200]}"


def differences(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    keys = sorted(set(before) | set(after))
    return [f"{k}: {before.get(k)!r} -> {after.get(k)!r}" for k in keys if before.get(k) != after.get(k)]


def message_keys(messages: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """What identifies a message apart from its id (id stability is HISTORY-003's alone)."""
    return [(m.get("role"), m.get("content"), m.get("tool_call_id"), m.get("name")) for m in messages]


def database_path(ctx: CheckContext, project_id: str | None = None) -> Path | None:
    """The project database file (DB-001), when the target declares db_access."""
    return ctx.env.database_path(project_id) if "db_access" in ctx.target.capabilities else None


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
        result = await ctx.stream({"message": sent, **body_extra})
        require_turn(ctx, result, "SESSION-001")
        carried, missing = _carried_ids(result)
        session_id = result.session_id
        ok = len(carried) == 1 and not missing and isinstance(session_id, str)
        ctx.expect(
            "SESSION-001",
            ok,
            f"with {label}: the events carry the session ids {sorted(map(str, carried))}"
            f"{f' and {missing} events carry none' if missing else ''}; expected one server-generated id on "
            "every event",
            result.exchange,
        )
        ctx.require(isinstance(session_id, str), "SESSION-001", f"with {label}: no event carries a session id")
        ctx.expect(
            "SESSION-001",
            bool(UUID_PATTERN.match(session_id)),
            f"with {label}: the generated session id {session_id!r} is not a UUID",
            result.exchange,
        )
        created.append(session_id)
        sessions = [s for s in await listing(ctx, "SESSION-001") if s.get("thread_id") == session_id]
        ctx.expect(
            "SESSION-001",
            len(sessions) == 1,
            f"with {label}: the new session {session_id} is listed {len(sessions)} time(s) for its user, expected once",
        )
        data = await history(ctx, session_id, "SESSION-001", limit=1000)
        users = [m.get("content") for m in data["messages"] if m.get("role") == "user"]
        ctx.expect(
            "SESSION-001",
            users == [sent],
            f"with {label}: the new session's history holds the user messages {users!r}, expected only {sent!r}",
        )
    ctx.expect(
        "SESSION-001",
        created[0] != created[1],
        f"two requests without a session id both got session {created[0]}: each must create a new session",
    )


@check("sessions.create_with_id")
async def create_with_id(ctx: CheckContext) -> None:
    session_id = ctx.session_id("chosen")
    sent = ctx.message("cs-plain", "A session with an id chosen by the client")
    result = await ctx.stream({"message": sent, "session_id": session_id})
    require_turn(ctx, result, "SESSION-002")
    carried, _ = _carried_ids(result)
    ctx.expect(
        "SESSION-002",
        carried == {session_id},
        f"the events carry the session ids {sorted(map(str, carried))}, expected only the requested {session_id}",
        result.exchange,
    )
    mine = [s for s in await listing(ctx, "SESSION-002") if s.get("thread_id") == session_id]
    ctx.require(
        len(mine) == 1, "SESSION-002", f"session {session_id} is listed {len(mine)} time(s) for its creator, expected 1"
    )
    owner = ctx.user("main").user_id
    if owner is not None:
        ctx.expect(
            "SESSION-002",
            mine[0].get("user_id") == owner,
            f"session {session_id} has user_id {mine[0].get('user_id')!r}, expected the caller's {owner!r}",
        )
    others = [s for s in await listing(ctx, "SESSION-002", user="other") if s.get("thread_id") == session_id]
    ctx.expect("SESSION-002", not others, f"session {session_id}, created by main, is listed for user other")
    data = await history(ctx, session_id, "SESSION-002", limit=1000)
    users = [m.get("content") for m in data["messages"] if m.get("role") == "user"]
    ctx.expect(
        "SESSION-002",
        users == [sent] and data.get("thread_id") == session_id,
        f"the history of the new session {session_id} has thread_id {data.get('thread_id')!r} and the user messages "
        f"{users!r}, expected only {sent!r}",
    )


# --- ids ----------------------------------------------------------------------------------------------------

INVALID_BODY_IDS: list[tuple[str, Any]] = [
    ("empty", ""),
    ("a space", "has space"),
    ("129 characters", "x" * 129),
    ("a slash", "a/b"),
    ("a non-ASCII letter", "é"),
    ("a number", 12345),
]
INVALID_PATH_IDS = [("'bad id!' (URL-encoded)", "bad%20id%21"), ("129 characters", "y" * 129), ("'é'", "%C3%A9")]


@check("sessions.id_validation")
async def id_validation(ctx: CheckContext) -> None:
    for label, value in INVALID_BODY_IDS:
        result = await ctx.stream({"message": ctx.message("cs-plain"), "session_id": value})
        ctx.expect(
            "SESSION-003",
            result.status == 422,
            f"POST /stream with session_id {value!r} ({label}) answered "
            f"{result.status if result.status is not None else result.exchange.error}, expected 422",
            result.exchange,
        )
    for label, value in INVALID_PATH_IDS:
        for endpoint in path_endpoints(ctx, value):
            exchange = await call_endpoint(ctx, endpoint)
            ctx.expect(
                "SESSION-003",
                exchange.status == 422,
                f"session id {label} in the path: {answered(exchange)}; expected 422",
                exchange,
            )
    # The longest valid id, with every kind of allowed character, is accepted.
    prefix = ctx.session_id("Az09._:-")
    longest = prefix + "x" * (128 - len(prefix))
    result = await ctx.stream({"message": ctx.message("cs-plain"), "session_id": longest})
    ctx.expect(
        "SESSION-003",
        result.status == 200 and result.completed and "error" not in result.types and result.session_id == longest,
        f"a valid 128-character session id was refused or changed: status {result.status}, events "
        f"{result.types[-3:]}, session id {result.session_id!r}",
        result.exchange,
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
    for title in ("Z", "Renamed: «ünïcode» & 'quotes'", "T" * 255):
        exchange = await ctx.call(
            "PATCH", f"/sessions/{session_id}", operation="renameSession", json_body={"title": title}
        )
        body = body_of(exchange)
        ok = (
            exchange.status == 200
            and isinstance(body, dict)
            and body.get("title") == title
            and body.get("thread_id") == session_id
        )
        ctx.expect(
            "SESSION-004",
            ok,
            f"renaming to a {len(title)}-character title {title[:40]!r}: {answered(exchange)}; expected 200 with the "
            f"session {session_id} titled as sent",
            exchange,
        )
        last = title
    for label, body in INVALID_TITLES:
        exchange = await ctx.call("PATCH", f"/sessions/{session_id}", operation="renameSession", json_body=body)
        ctx.expect("SESSION-004", exchange.status == 422, f"{label}: {answered(exchange)}; expected 422", exchange)
    now = (await listed(ctx, session_id, "SESSION-004")).get("title")
    ctx.expect(
        "SESSION-004",
        now == last,
        f"after the refused renames the listed title is {str(now)[:60]!r}, expected the last valid one "
        f"({len(str(last))} characters)",
    )


# --- delete -------------------------------------------------------------------------------------------------


@check("sessions.delete")
async def delete(ctx: CheckContext) -> None:
    session_id = ctx.session_id()
    await turn(ctx, "SESSION-006", session_id, text="Before the delete")
    first = await listed(ctx, session_id, "SESSION-006")
    exchange = await ctx.call("DELETE", f"/sessions/{session_id}", operation="deleteSession")
    ctx.require(
        exchange.status == 204, "SESSION-006", f"{answered(exchange)}; expected 204 for an existing session", exchange
    )
    remaining = [s for s in await listing(ctx, "SESSION-006") if s.get("thread_id") == session_id]
    ctx.expect("SESSION-006", not remaining, f"session {session_id} is still listed after its delete answered 204")
    for endpoint in path_endpoints(ctx, session_id):
        exchange = await call_endpoint(ctx, endpoint)
        ctx.expect(
            "SESSION-007",
            exchange.status == 404,
            f"after the delete: {answered(exchange)}; expected 404",
            exchange,
        )
    sent = ctx.message("cs-plain", "After the delete")
    result = await ctx.stream({"message": sent, "session_id": session_id})
    require_turn(ctx, result, "SESSION-007")
    data = await history(ctx, session_id, "SESSION-007", limit=1000)
    shown = [(m.get("role"), m.get("content")) for m in data["messages"] if m.get("role") != "system"]
    expected_roles = _expected_roles(ctx.env.scripts["cs-plain"])
    ctx.expect(
        "SESSION-007",
        [r for r, _ in shown] == expected_roles and shown[0] == ("user", sent),
        f"after the delete, a new turn with the same id shows the history {shown!r}; expected only the new turn's "
        f"messages (roles {expected_roles}, first the user message {sent!r}): a new, empty session",
    )
    again = await listed(ctx, session_id, "SESSION-007")
    stats_now = {k: again.get(k) for k in STATS_FIELDS}
    stats_first = {k: first.get(k) for k in STATS_FIELDS}
    ctx.expect(
        "SESSION-007",
        stats_now == stats_first,
        f"the session re-created after the delete has the statistics {stats_now} after one turn; the same turn on "
        f"the first session gave {stats_first} (a new session starts from zero)",
    )


# --- listing order ------------------------------------------------------------------------------------------


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


def _tie_in_database(path: Path, session_ids: list[str]) -> str | None:
    """Give the sessions the first one's stored updated_at (the value exactly as the implementation wrote it);
    None when done, else why not."""
    try:
        connection = sqlite3.connect(path, timeout=10)
        try:
            with connection:
                row = connection.execute(
                    "SELECT updated_at FROM chat_sessions WHERE thread_id = ?", (session_ids[0],)
                ).fetchone()
                if row is None:
                    return f"session {session_ids[0]} has no row in chat_sessions"
                marks = ", ".join("?" for _ in session_ids[1:])
                connection.execute(
                    f"UPDATE chat_sessions SET updated_at = ? WHERE thread_id IN ({marks})",
                    (row[0], *session_ids[1:]),
                )
        finally:
            connection.close()
    except sqlite3.Error as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


@check("sessions.order")
async def order(ctx: CheckContext) -> None:
    tied = [ctx.session_id(f"tie{n}") for n in range(3)]
    pinned = ctx.session_id("pinned")
    # Created concurrently, so that an implementation with a coarse clock already ties them.
    await asyncio.gather(*(turn(ctx, "LIST-002", s) for s in tied))
    await turn(ctx, "LIST-002", pinned)
    exchange = await ctx.call("PUT", f"/sessions/{pinned}/pin", operation="pinSession")
    ctx.require_status(exchange, 200, "LIST-002")
    # Over HTTP a tie cannot be forced; with db_access, the database gets one (else only the order is judged).
    forced = ""
    path = database_path(ctx)
    if path is not None and path.exists():
        failure = await asyncio.to_thread(_tie_in_database, path, tied)
        forced = f" (a tie could not be written in {path}: {failure})" if failure else " (tied in the database)"
    sessions = await listing(ctx, "LIST-002")
    mine = {s.get("thread_id"): s for s in sessions if s.get("thread_id") in (*tied, pinned)}
    ctx.require(len(mine) == 4, "LIST-002", f"{4 - len(mine)} of the check's 4 sessions are missing from the listing")
    ctx.expect("LIST-002", mine[pinned].get("pinned") is True, f"the pinned session {pinned} is listed unpinned")
    problems = order_problems(sessions)
    ctx.expect(
        "LIST-002",
        not problems,
        f"the listing of {len(sessions)} sessions is not ordered by pinned, updated_at, id (all descending): "
        + "; ".join(problems[:4]),
    )
    ties = {time_key(mine[s].get("updated_at")) for s in tied}
    if len(ties) == 1:  # the tie is visible: the id alone orders them
        positions = [n for n, s in enumerate(sessions) if s.get("thread_id") in tied]
        ids = [sessions[n].get("id") for n in positions]
        ctx.expect(
            "LIST-002",
            all(isinstance(i, int) for i in ids) and ids == sorted(ids, reverse=True) and len(set(ids)) == 3,
            f"three sessions with equal pinned and updated_at{forced} are listed with the ids {ids}; "
            "expected descending ids",
        )


# --- pin ----------------------------------------------------------------------------------------------------


@check("sessions.pin")
async def pin(ctx: CheckContext) -> None:
    session_id = ctx.session_id()
    await turn(ctx, "PIN-001", session_id)
    for method, operation, expected in (
        ("PUT", "pinSession", True),
        ("PUT", "pinSession", True),
        ("DELETE", "unpinSession", False),
        ("DELETE", "unpinSession", False),
    ):
        exchange = await ctx.call(method, f"/sessions/{session_id}/pin", operation=operation)
        body = body_of(exchange)
        ok = (
            exchange.status == 200
            and isinstance(body, dict)
            and body.get("pinned") is expected
            and body.get("thread_id") == session_id
        )
        ctx.expect(
            "PIN-001",
            ok,
            f"{answered(exchange)}; expected 200 with session {session_id} and pinned {str(expected).lower()}",
            exchange,
        )
        now = (await listed(ctx, session_id, "PIN-001")).get("pinned")
        ctx.expect(
            "PIN-001",
            now is expected,
            f"after {method} pin the session is listed with pinned {now!r}, expected {expected}",
        )


# --- timestamps ---------------------------------------------------------------------------------------------


@check("sessions.timestamps")
async def timestamps(ctx: CheckContext) -> None:
    session_id = ctx.session_id()
    await turn(ctx, "TIME-002", session_id)
    exchange = await ctx.call(
        "PATCH", f"/sessions/{session_id}", operation="renameSession", json_body={"title": "Timestamps"}
    )
    ctx.require_status(exchange, 200, "TIME-002")
    sessions = await listing(ctx, "TIME-002")
    ctx.require(
        any(s.get("thread_id") == session_id for s in sessions), "TIME-002", f"session {session_id} is not listed"
    )
    data = await history(ctx, session_id, "TIME-002", limit=1000)
    records: list[tuple[str, dict[str, Any]]] = [(f"session {s.get('thread_id')}", s) for s in sessions]
    records.append((f"history of {session_id}", data))
    not_rfc3339, order_broken = [], []
    for where, record in records:
        for field in ("created_at", "updated_at", "last_message_at"):
            value = record.get(field)
            if value is None and field == "last_message_at":
                continue
            if not (isinstance(value, str) and RFC3339_UTC_Z.match(value) and parse_time(value)):
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
        if value is not None and not (isinstance(value, str) and RFC3339_UTC_Z.match(value) and parse_time(value)):
            not_rfc3339.append(f"history of {session_id}: message {message.get('id')} created_at {value!r}")
    ctx.expect(
        "TIME-001",
        not not_rfc3339,
        f"{len(not_rfc3339)} timestamp(s) are not RFC 3339 UTC date-times with `Z`: " + "; ".join(not_rfc3339[:5]),
    )
    ctx.expect(
        "TIME-002",
        not order_broken,
        f"{len(order_broken)} record(s) have a created_at later than updated_at: " + "; ".join(order_broken[:5]),
    )


@check("sessions.updated_at_advances")
async def updated_at_advances(ctx: CheckContext) -> None:
    session_id = ctx.session_id()
    await turn(ctx, "LIST-003", session_id)
    previous = (await listed(ctx, session_id, "LIST-003")).get("updated_at")
    steps: list[tuple[str, str, str, str, Any, bool]] = [
        ("a turn", "POST", "/stream", "streamChat", None, True),
        ("a rename", "PATCH", "", "renameSession", {"title": "Advances"}, True),
        ("a pin", "PUT", "/pin", "pinSession", None, True),
        ("a second pin (not a mutation)", "PUT", "/pin", "pinSession", None, False),
        ("an unpin", "DELETE", "/pin", "unpinSession", None, True),
        ("a second unpin (not a mutation)", "DELETE", "/pin", "unpinSession", None, False),
    ]
    for what, method, suffix, operation, body, advances in steps:
        if operation == "streamChat":
            await turn(ctx, "LIST-003", session_id)
        else:
            exchange = await ctx.call(method, f"/sessions/{session_id}{suffix}", operation=operation, json_body=body)
            ctx.require_status(exchange, 200, "LIST-003")
        now = (await listed(ctx, session_id, "LIST-003")).get("updated_at")
        before, after = time_key(previous), time_key(now)
        if advances:
            ok = before[0] == after[0] and after[1] > before[1]
            expected = "strictly later"
        else:
            ok = before == after
            expected = "unchanged"
        ctx.expect("LIST-003", ok, f"{what} moved updated_at from {previous!r} to {now!r}; expected {expected}")
        previous = now


# --- history ------------------------------------------------------------------------------------------------


def _expected_roles(script: dict[str, Any]) -> list[str]:
    """user, then per LLM step one assistant message and one tool message per tool call."""
    roles = ["user"]
    for step in script["steps"]:
        roles += ["assistant"] + ["tool"] * len(step.get("tool_calls", []))
    return roles


def _parsed_arguments(value: Any) -> Any:
    return json_or_none(value) if isinstance(value, str) else value


@check("history.format")
async def history_format(ctx: CheckContext) -> None:
    session_id = ctx.session_id()
    scripts = ["cs-tool", "cs-parallel" if "cs-parallel" in ctx.env.scripts else "cs-tool", "cs-plain"]
    sent = []
    for n, script in enumerate(scripts):
        sent.append(ctx.message(script, f"History format, turn {n + 1}"))
        require_turn(ctx, await ctx.stream({"message": sent[-1], "session_id": session_id}), "HISTORY-001")
    session = await listed(ctx, session_id, "HISTORY-001")
    data = await history(ctx, session_id, "HISTORY-001", limit=1000)
    messages = [m for m in data["messages"] if m.get("role") != "system"]

    # HISTORY-001: the session's messages, oldest first, with the session's id and title.
    ctx.expect(
        "HISTORY-001",
        data.get("thread_id") == session_id,
        f"thread_id {data.get('thread_id')!r}, expected the session id {session_id!r}",
    )
    ctx.expect(
        "HISTORY-001",
        data.get("title") == session.get("title"),
        f"the history's title {data.get('title')!r} differs from the session's {session.get('title')!r}",
    )
    expected_roles = [r for s in scripts for r in _expected_roles(ctx.env.scripts[s])]
    roles = [m.get("role") for m in messages]
    users = [m.get("content") for m in messages if m.get("role") == "user"]
    ctx.expect(
        "HISTORY-001",
        roles == expected_roles and users == sent,
        f"the messages, oldest first, should have the roles {expected_roles} and the user messages in the order sent; "
        f"got the roles {roles} and the user messages {users!r}",
    )
    scripted = [
        (call["name"], call["arguments"])
        for s in scripts
        for step in ctx.env.scripts[s]["steps"]
        for call in step.get("tool_calls", [])
    ]
    calls = [
        ((c.get("function") or {}).get("name"), _parsed_arguments((c.get("function") or {}).get("arguments")))
        for m in messages
        if m.get("role") == "assistant"
        for c in m.get("tool_calls") or []
        if isinstance(c, dict)
    ]
    # Arguments that do not parse to an object are HISTORY-004's finding; the others must be the LLM's.
    same = len(calls) == len(scripted) and all(
        name == want_name and (not isinstance(arguments, dict) or arguments == want_arguments)
        for (name, arguments), (want_name, want_arguments) in zip(calls, scripted, strict=True)
    )
    ctx.expect(
        "HISTORY-001",
        same,
        f"the assistant messages' tool calls (name, parsed arguments) are {calls}, the LLM made {scripted}",
    )

    # HISTORY-004: arguments are JSON strings of objects.
    bad_arguments, seen = [], 0
    for message in messages:
        if message.get("role") != "assistant":
            continue
        for call in message.get("tool_calls") or []:
            seen += 1
            arguments = (call.get("function") or {}).get("arguments") if isinstance(call, dict) else None
            parsed = json_or_none(arguments) if isinstance(arguments, str) else None
            if not isinstance(parsed, dict):
                bad_arguments.append(f"message {message.get('id')}: arguments {arguments!r}")
    ctx.require(seen > 0, "HISTORY-004", "the history holds no assistant tool call, though the LLM made some")
    ctx.expect(
        "HISTORY-004",
        not bad_arguments,
        "tool call arguments that are not a JSON string of an object: " + "; ".join(bad_arguments[:5]),
    )

    # HISTORY-005: tool messages name an earlier call, with its function name.
    earlier: dict[str, str | None] = {}
    bad_tools, tools_seen = [], 0
    for message in messages:
        if message.get("role") == "assistant":
            for call in message.get("tool_calls") or []:
                if isinstance(call, dict):
                    earlier[call.get("id")] = (call.get("function") or {}).get("name")
        elif message.get("role") == "tool":
            tools_seen += 1
            call_id, name = message.get("tool_call_id"), message.get("name")
            if call_id not in earlier:
                bad_tools.append(f"message {message.get('id')}: tool_call_id {call_id!r} names no earlier tool call")
            elif name != earlier[call_id]:
                bad_tools.append(
                    f"message {message.get('id')}: name {name!r}, the call {call_id} is {earlier[call_id]!r}"
                )
    ctx.require(tools_seen > 0, "HISTORY-005", "the history holds no tool message, though tools ran")
    ctx.expect("HISTORY-005", not bad_tools, "; ".join(bad_tools[:5]))

    # HISTORY-008: llm_calls and the timestamps.
    ctx.expect(
        "HISTORY-008",
        data.get("llm_calls") == session.get("llm_calls_count"),
        f"llm_calls {data.get('llm_calls')!r}, the session's llm_calls_count is {session.get('llm_calls_count')!r}",
    )
    empty = [f for f in ("created_at", "updated_at") if not (isinstance(data.get(f), str) and data[f].strip())]
    ctx.expect("HISTORY-008", not empty, f"the history's {empty} are not filled in: {[data.get(f) for f in empty]}")


@check("history.ids")
async def history_ids(ctx: CheckContext) -> None:
    session_id = ctx.session_id()
    await turn(ctx, "HISTORY-002", session_id, "cs-tool")
    await turn(ctx, "HISTORY-002", session_id, "cs-plain")
    first = (await history(ctx, session_id, "HISTORY-002", limit=1000))["messages"]
    second = (await history(ctx, session_id, "HISTORY-003", limit=1000))["messages"]
    ids = [m.get("id") for m in first]
    duplicates = sorted({str(i) for i in ids if ids.count(i) > 1})
    missing = [n for n, i in enumerate(ids) if not isinstance(i, str) or not i]
    ctx.expect(
        "HISTORY-002",
        not duplicates and not missing and len(ids) >= 6,
        f"{len(ids)} messages (6 expected); ids used more than once: {duplicates}; positions without an id: {missing}",
    )
    ctx.expect(
        "HISTORY-003",
        [m.get("id") for m in second] == ids,
        f"two history calls in a row gave different ids: {ids} then {[m.get('id') for m in second]}",
    )
    await turn(ctx, "HISTORY-003", session_id, "cs-plain")
    third = (await history(ctx, session_id, "HISTORY-003", limit=1000))["messages"]
    ctx.expect(
        "HISTORY-003",
        [m.get("id") for m in third[: len(ids)]] == ids,
        f"after another turn the earlier messages have the ids {[m.get('id') for m in third[: len(ids)]]}, "
        f"before {ids}",
    )
    newest = (await history(ctx, session_id, "HISTORY-003", limit=2))["messages"]
    tail = third[-len(newest) :] if newest else []  # which messages a limit selects is HISTORY-006's
    ctx.expect(
        "HISTORY-003",
        [m.get("id") for m in newest] == [m.get("id") for m in tail],
        f"with limit=2 the ids are {[m.get('id') for m in newest]}, the same messages of the full history have "
        f"{[m.get('id') for m in tail]}",
    )
    all_ids = [m.get("id") for m in third]
    ctx.expect(
        "HISTORY-002",
        len(set(all_ids)) == len(all_ids),
        f"after a third turn, ids are reused: {sorted({str(i) for i in all_ids if all_ids.count(i) > 1})}",
    )


def _shown(messages: list[dict[str, Any]]) -> str:
    return ", ".join(f"{m.get('role')}:{str(m.get('content'))[:24]!r}" for m in messages[:4]) + (
        f" ... ({len(messages)} messages)" if len(messages) > 4 else ""
    )


@check("history.limit")
async def history_limit(ctx: CheckContext) -> None:
    session_id = ctx.session_id()
    # Every user message is unique and the last turn is the only plain one, so a window of the newest messages
    # matches the full history's tail only at its true place (compared without ids: those are HISTORY-003's).
    # Fewer than 100 messages: a history past the default of 100 takes 21 turns (6-9 s more for the suite
    # on the reference server, far more with tools that wait), so the default is judged on a short session.
    middle = "cs-parallel" if "cs-parallel" in ctx.env.scripts else "cs-tool"
    for n, script in enumerate(("cs-tool", middle, "cs-plain")):
        await turn(ctx, "HISTORY-006", session_id, script, text=f"History limit, turn {n + 1}")
    full = (await history(ctx, session_id, "HISTORY-006", limit=1000))["messages"]
    expected_length = sum(len(_expected_roles(ctx.env.scripts[s])) for s in ("cs-tool", middle, "cs-plain"))
    ctx.require(
        len(full) == expected_length,
        "HISTORY-006",
        f"after 3 turns that make {expected_length} messages, limit=1000 returned {len(full)}: {_shown(full)}",
    )
    default = (await history(ctx, session_id, "HISTORY-006"))["messages"]
    ctx.expect(
        "HISTORY-006",
        message_keys(default) == message_keys(full),
        f"without limit: {_shown(default)}; expected all {len(full)} messages (fewer than the default 100), "
        "oldest first",
    )
    for limit in (1, 2, 3, 6, len(full) - 1, len(full), 1000):
        got = (await history(ctx, session_id, "HISTORY-006", limit=limit))["messages"]
        expected = full[-limit:]
        ctx.expect(
            "HISTORY-006",
            message_keys(got) == message_keys(expected),
            f"limit={limit}: got {_shown(got)}; expected the newest {len(expected)} of {len(full)}, oldest first: "
            f"{_shown(expected)}",
        )
    for value in ("0", "1001", "-1", "abc", "1.5"):
        exchange = await ctx.call(
            "GET",
            f"/sessions/{session_id}/history",
            operation="getSessionHistory",
            params={"limit": value},
        )
        ctx.expect(
            "HISTORY-007", exchange.status == 422, f"limit={value!r}: {answered(exchange)}; expected 422", exchange
        )
