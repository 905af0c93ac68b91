"""The project database, read directly from the file (capability db_access): location, journal mode, schema and
indexes, the checkpointer's tables (DB-001..005), what deleting a session or a project removes (DB-006, DB-007),
the in-place upgrade of a legacy database (MIGRATION-001..003), and no API key or bearer token in the file or
its WAL (SECRET-001, SECRET-002). Every read is a read-only SQLite connection opened and closed in a worker
thread, never held across an await."""

from __future__ import annotations

import asyncio
import base64
import json
import shutil
import sqlite3
import uuid
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

import spec
from spec.db.legacy_fixture import build_legacy_database

from ..context import CheckContext, NotTestable
from ..exchanges import Exchange
from . import check

SQLITE_HEADER = b"SQLite format 3\x00"
SIDE_FILES = ("-wal", "-shm")


@cache
def _contract() -> dict[str, Any]:
    return spec.load_document(spec.DB_DIR / "contract.yaml")


def _need_db_access(ctx: CheckContext) -> None:
    if "db_access" not in ctx.target.capabilities:
        raise NotTestable(
            "the target does not declare the capability db_access: the suite cannot read the project database"
        )


def _need_controller(ctx: CheckContext) -> None:
    if ctx.env.controller is None:
        raise NotTestable("the target has no GNS3-style controller: the suite cannot create, close or delete projects")


def _db_path(ctx: CheckContext, project_id: str | None = None) -> Path:
    return ctx.env.database_path(project_id)


def _side(path: Path, suffix: str) -> Path:
    return path.with_name(path.name + suffix)


# --- read-only SQLite, in a worker thread ------------------------------------------------------------------


def _read_sync(path: Path, statements: list[tuple[str, tuple[Any, ...]]]) -> list[list[tuple[Any, ...]]]:
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=10)
    try:
        return [conn.execute(sql, params).fetchall() for sql, params in statements]
    finally:
        conn.close()


async def _read(path: Path, *statements: str | tuple[str, tuple[Any, ...]]) -> list[list[tuple[Any, ...]]]:
    normalised = [(s, ()) if isinstance(s, str) else s for s in statements]
    return await asyncio.to_thread(_read_sync, path, normalised)


async def _rows(path: Path, table: str, where: str = "", params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    """Every row of `table` (optionally filtered), as dicts, in id order."""

    def read() -> list[dict[str, Any]]:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=10)
        try:
            cursor = conn.execute(f"SELECT * FROM {table} {where} ORDER BY id", params)
            names = [d[0] for d in cursor.description]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
        finally:
            conn.close()

    return await asyncio.to_thread(read)


async def _count(path: Path, table: str, thread_id: str) -> int:
    (rows,) = await _read(path, (f"SELECT count(*) FROM {table} WHERE thread_id = ?", (thread_id,)))
    return rows[0][0]


async def _columns(path: Path, table: str) -> dict[str, str]:
    """name -> declared type, from PRAGMA table_info (empty when the table does not exist)."""
    (rows,) = await _read(path, f"PRAGMA table_info({table})")
    return {row[1]: row[2] for row in rows}


async def _column_problems(path: Path) -> list[str]:
    """DB-003: chat_sessions has exactly the contract's columns, with the same declared types."""
    expected = _contract()["chat_sessions"]["columns"]
    actual = await _columns(path, "chat_sessions")
    if not actual:
        return ["there is no table chat_sessions"]
    problems = [f"column {name} ({kind}) is missing" for name, kind in expected.items() if name not in actual]
    problems += [
        f"column {name} is declared {actual[name]!r}, the contract says {kind!r}"
        for name, kind in expected.items()
        if name in actual and actual[name].upper() != kind.upper()
    ]
    problems += [f"column {name} ({actual[name]}) is not in the contract" for name in actual if name not in expected]
    return problems


async def _index_problems(path: Path) -> list[str]:
    """DB-004: the contract's indexes on chat_sessions, with their columns in order and their uniqueness."""
    (listed,) = await _read(path, "PRAGMA index_list(chat_sessions)")
    present = {row[1]: bool(row[2]) for row in listed}  # seq, name, unique, origin, partial
    problems = []
    for name, declared in _contract()["chat_sessions"]["indexes"].items():
        if name not in present:
            problems.append(f"index {name} is missing (indexes on chat_sessions: {sorted(present)})")
            continue
        (info,) = await _read(path, f'PRAGMA index_info("{name}")')
        columns = [row[2] for row in sorted(info)]  # seqno, cid, name
        if columns != declared["columns"]:
            problems.append(f"index {name} is on {columns}, the contract says {declared['columns']}")
        if declared["unique"] and not present[name]:
            problems.append(f"index {name} is not unique; the contract requires a unique index")
    # thread_id (and any other column the contract names) must be unique: a UNIQUE constraint (an automatic
    # index) or a unique index on exactly that column both do.
    for column in _contract()["chat_sessions"].get("unique_columns", []):
        unique_on = []
        for name, unique in present.items():
            if unique:
                (info,) = await _read(path, f'PRAGMA index_info("{name}")')
                unique_on.append([row[2] for row in sorted(info)])
        if [column] not in unique_on:
            problems.append(f"column {column} is not unique: no UNIQUE constraint and no unique index on it")
    return problems


async def _turn(ctx: CheckContext, requirement: str, *, script: str = "cs-tool", **kwargs: Any) -> str:
    """Run one completed turn in a new session named by the check; returns its session id."""
    if script not in ctx.env.scripts:
        script = "cs-plain"
    session = ctx.session_id(kwargs.pop("label", "s"))
    text = kwargs.pop("text", "Conformance check")
    result = await ctx.stream({"message": ctx.message(script, text), "session_id": session}, **kwargs)
    ctx.require_stream(result, requirement)
    return session


# --- DB-001..005 ---------------------------------------------------------------------------------------------


@check("db.contract")
async def contract(ctx: CheckContext) -> None:
    _need_db_access(ctx)
    session = await _turn(ctx, "DB-001")
    path = _db_path(ctx)
    exists = await asyncio.to_thread(path.is_file)
    ctx.require(
        exists,
        "DB-001",
        f"after a completed turn in project {ctx.env.project_id}, there is no file at {path} "
        f"(spec/db/contract.yaml: {_contract()['location']})",
    )
    header = await asyncio.to_thread(lambda: path.open("rb").read(len(SQLITE_HEADER)))
    ctx.require(header == SQLITE_HEADER, "DB-001", f"{path} is not a SQLite database: it starts with {header!r}")
    (mode,) = await _read(path, "PRAGMA journal_mode")
    expected_mode = _contract()["journal_mode"]
    ctx.expect(
        "DB-002",
        str(mode[0][0]).lower() == expected_mode,
        f"PRAGMA journal_mode of {path} is {mode[0][0]!r}, expected {expected_mode!r}",
    )
    columns = await _column_problems(path)
    ctx.expect("DB-003", not columns, f"chat_sessions in {path}: " + "; ".join(columns))
    indexes = await _index_problems(path) if "no table" not in " ".join(columns) else ["no table chat_sessions"]
    ctx.expect("DB-004", not indexes, f"chat_sessions in {path}: " + "; ".join(indexes))

    problems = []
    for table, required in _contract()["checkpointer_tables"].items():
        actual = await _columns(path, table)
        if not actual:
            problems.append(f"there is no table {table}")
            continue
        missing = [c for c in required if c not in actual]
        if missing:
            problems.append(f"table {table} lacks the columns {missing} (it has {list(actual)})")
    if not problems:
        checkpoints = await _count(path, "checkpoints", session)
        if checkpoints == 0:
            problems.append(f"after a completed turn of session {session}, checkpoints has no row for that thread_id")
    ctx.expect("DB-005", not problems, f"{path}: " + "; ".join(problems))
    row = await _rows(path, "chat_sessions", "WHERE thread_id = ?", (session,))
    ctx.expect(
        "DB-001",
        len(row) == 1,
        f"after a completed turn of session {session}, chat_sessions in {path} has {len(row)} rows for it, expected 1",
    )


# --- DB-006, DB-007 -------------------------------------------------------------------------------------------


@check("db.session_delete")
async def session_delete(ctx: CheckContext) -> None:
    _need_db_access(ctx)
    session = await _turn(ctx, "DB-006")
    path = _db_path(ctx)
    tables = ("chat_sessions", "checkpoints", "writes")

    async def counts() -> dict[str, int]:
        return {table: await _count(path, table, session) for table in tables}

    before = await counts()
    ctx.require(
        before["chat_sessions"] == 1 and before["checkpoints"] > 0,
        "DB-006",
        f"before the delete, the rows of session {session} in {path} were {before}: expected one chat_sessions row "
        "and checkpoints, so that their removal can be shown",
    )
    deleted = await ctx.call("DELETE", f"/sessions/{session}", operation="deleteSession")
    ctx.require_status(deleted, 204, "DB-006")

    async def gone() -> dict[str, int] | None:
        now = await counts()
        return None if any(now.values()) else now

    after = await ctx.wait_for(gone, seconds=2)
    left = await counts()
    ctx.expect(
        "DB-006",
        after is not None,
        f"DELETE of session {session} answered 204, but {path} still holds rows with that thread_id: {left} "
        f"(before: {before})",
        deleted,
    )


@check("db.project_delete")
async def project_delete(ctx: CheckContext) -> None:
    _need_db_access(ctx)
    _need_controller(ctx)
    project_id = await ctx.env.controller.create_project(f"cs-{ctx.run}")
    await _turn(ctx, "DB-007", script="cs-plain", project_id=project_id)
    path = _db_path(ctx, project_id)
    ctx.require(
        await asyncio.to_thread(path.is_file),
        "DB-007",
        f"after a completed turn in project {project_id}, there is no database at {path} to see deleted",
    )
    deleted = await _controller(ctx, "DELETE", f"/v3/projects/{project_id}", (204,), "DB-007")

    def leftovers() -> list[str]:
        return [str(p) for p in (path, _side(path, "-wal")) if p.exists()]

    async def gone() -> bool:
        return not await asyncio.to_thread(leftovers)

    await ctx.wait_for(gone, seconds=3)
    left = await asyncio.to_thread(leftovers)
    ctx.expect(
        "DB-007",
        not left,
        f"the controller deleted project {project_id} (204), but these files still exist 3 s later: {left}",
        deleted,
    )


def _admin(ctx: CheckContext) -> dict[str, str]:
    return {"Authorization": f"Bearer {ctx.env.controller.admin_token}"}


async def _controller(
    ctx: CheckContext, method: str, path: str, expected: tuple[int, ...], requirement: str
) -> Exchange:
    """A judged controller call (absolute path, the controller's admin token), kept as evidence."""
    exchange = await ctx.call(
        method,
        path,
        user=None,
        absolute=True,
        headers=_admin(ctx),
    )
    ctx.require(
        exchange.status in expected,
        requirement,
        f"{method} {path} answered {exchange.status if exchange.status is not None else exchange.error}, expected "
        f"{' or '.join(map(str, expected))}: {exchange.body[:300]}",
        exchange,
    )
    return exchange


# --- MIGRATION-001..003 -----------------------------------------------------------------------------------------

TIMESTAMPS = ("last_message_at", "created_at", "updated_at")
COUNTERS = ("title", "message_count", "llm_calls_count", "input_tokens", "output_tokens", "total_tokens")


def _instant(value: Any) -> datetime | None | str:
    """A timestamp as an instant (naive values are UTC, as SQLite's CURRENT_TIMESTAMP); other values as text."""
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return str(value)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _same_row(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """How an upgraded raw row differs from its legacy row (timestamps compared as instants)."""
    differences = []
    for name, value in before.items():
        now = after.get(name, "(no such column)")
        same = _instant(value) == _instant(now) if name in TIMESTAMPS else value == now
        if not same:
            differences.append(f"{name} {value!r} -> {now!r}")
    return differences


def _diff(before: list[dict[str, Any]], after: list[dict[str, Any]], key: str) -> str:
    """What changed between two lists of records: order, records added or removed, fields changed."""
    old, new = {r.get(key): r for r in before}, {r.get(key): r for r in after}
    changes = [f"{key} {k} disappeared" for k in old if k not in new]
    changes += [f"{key} {k} appeared" for k in new if k not in old]
    for k in old.keys() & new.keys():
        fields = [
            f"{f} {old[k].get(f)!r} -> {new[k].get(f)!r}" for f in old[k] | new[k] if old[k].get(f) != new[k].get(f)
        ]
        if fields:
            changes.append(f"{key} {k}: " + ", ".join(fields))
    if not changes and list(old) != list(new):
        changes.append(f"the order changed: {list(old)} -> {list(new)}")
    return "; ".join(changes[:6]) or "(a difference in duplicates)"


async def _listing(ctx: CheckContext, project_id: str, requirement: str, user: str = "main") -> list[dict[str, Any]]:
    exchange = await ctx.call("GET", "/sessions", operation="listSessions", user=user, project_id=project_id)
    ctx.require_status(exchange, 200, requirement)
    return json.loads(exchange.body)


@check("db.migration")
async def migration(ctx: CheckContext) -> None:
    _need_db_access(ctx)
    _need_controller(ctx)
    main, other = ctx.user("main"), ctx.user("other")
    if not main.user_id or not other.user_id:
        raise NotTestable("the suite does not know the user ids of main and other, which the legacy rows need")
    project_id = await ctx.env.controller.create_project(f"cs-{ctx.run}")
    await ctx.env.controller.close_project(project_id)
    path = _db_path(ctx, project_id)

    def install() -> list[dict[str, Any]]:
        shutil.rmtree(path.parent, ignore_errors=True)
        return build_legacy_database(path, user_id=main.user_id, project_id=project_id, other_user_id=other.user_id)

    inserted = await asyncio.to_thread(install)
    legacy = await _rows(path, "chat_sessions")
    mine = {r["thread_id"]: r for r in inserted if r["user_id"] == main.user_id}
    others = [r["thread_id"] for r in inserted if r["user_id"] != main.user_id]

    # MIGRATION-001: opening upgrades the file in place, keeping every row.
    opened = await ctx.call("POST", f"/v3/projects/{project_id}/open", user=None, absolute=True, headers=_admin(ctx))
    listing = await ctx.call("GET", "/sessions", operation="listSessions", project_id=project_id)
    if opened.status not in (200, 201) or listing.status != 200:
        # The legacy rows cannot be read, pinned or reopened: every migration rule fails.
        message = (
            f"with the legacy database of spec/db/legacy_fixture.py installed, {opened.describe()} (expected 200 "
            f"or 201), then {listing.describe()} (expected 200): {(opened.body or listing.body)[:300]}"
        )
        for requirement in ("MIGRATION-001", "MIGRATION-002", "MIGRATION-003"):
            ctx.expect(requirement, False, message, opened, listing)
        return
    listed = json.loads(listing.body)
    by_id = {s.get("thread_id"): s for s in listed}
    problems = []
    if sorted(by_id) != sorted(mine):
        problems.append(f"main's listing holds {sorted(by_id)}, expected the legacy sessions {sorted(mine)}")
    for thread_id, row in mine.items():
        session = by_id.get(thread_id)
        if session is None:
            continue
        differing = [f"{k} {session.get(k)!r} (legacy {row[k]!r})" for k in COUNTERS if session.get(k) != row[k]]
        differing += [
            f"{k} {session.get(k)!r} (legacy {row[k]!r})"
            for k in TIMESTAMPS
            if _instant(session.get(k)) != _instant(row[k])
        ]
        if differing:
            problems.append(f"{thread_id}: " + ", ".join(differing))
    other_listed = {s.get("thread_id") for s in await _listing(ctx, project_id, "MIGRATION-001", user="other")}
    if other_listed != set(others):
        problems.append(f"other's listing holds {sorted(other_listed)}, expected its legacy session {others}")
    upgraded = await _rows(path, "chat_sessions")
    if len(upgraded) != len(legacy):
        problems.append(f"chat_sessions had {len(legacy)} rows before the upgrade, {len(upgraded)} after")
    for before, after in zip(legacy, upgraded, strict=False):
        differences = _same_row(before, after)
        if differences:
            problems.append(f"raw row id {before['id']} changed: " + "; ".join(differences))
        if after.get("pinned") not in (0, False):
            problems.append(f"raw row id {before['id']} has pinned = {after.get('pinned')!r} after the upgrade")
    problems += [f"after the upgrade: {p}" for p in await _column_problems(path) + await _index_problems(path)]
    ctx.expect(
        "MIGRATION-001",
        not problems,
        f"opening project {project_id} with the legacy database of spec/db/legacy_fixture.py: " + "; ".join(problems),
    )

    # MIGRATION-002: legacy rows read as pinned false, and can be pinned and unpinned.
    unpinned = {t: s.get("pinned") for t, s in by_id.items() if s.get("pinned") is not False}
    ctx.expect("MIGRATION-002", not unpinned, f"legacy sessions do not read as pinned false: {unpinned}")
    target = "legacy-0002" if "legacy-0002" in mine else next(iter(mine))
    for method, pinned, operation in (("PUT", True, "pinSession"), ("DELETE", False, "unpinSession")):
        answer = await ctx.call(method, f"/sessions/{target}/pin", operation=operation, project_id=project_id)
        ctx.require_status(answer, 200, "MIGRATION-002")
        body = json.loads(answer.body)
        shown = {s.get("thread_id"): s for s in await _listing(ctx, project_id, "MIGRATION-002")}
        ctx.expect(
            "MIGRATION-002",
            body.get("pinned") is pinned and shown.get(target, {}).get("pinned") is pinned,
            f"{method} /sessions/{target}/pin on a legacy session answered pinned {body.get('pinned')!r} and the "
            f"listing shows pinned {shown.get(target, {}).get('pinned')!r}, expected {pinned}",
            answer,
        )
    # One legacy session stays pinned, so that a reopening that re-runs the upgrade and resets `pinned` shows.
    kept = "legacy-0001" if "legacy-0001" in mine else target
    answer = await ctx.call("PUT", f"/sessions/{kept}/pin", operation="pinSession", project_id=project_id)
    ctx.require_status(answer, 200, "MIGRATION-002")
    ctx.expect(
        "MIGRATION-002",
        json.loads(answer.body).get("pinned") is True,
        f"PUT /sessions/{kept}/pin on a legacy session answered {answer.body[:300]}, expected pinned true",
        answer,
    )

    # MIGRATION-003: closing and reopening neither fails nor changes the rows.
    reference_listing = await _listing(ctx, project_id, "MIGRATION-003")
    reference_rows = await _rows(path, "chat_sessions")
    problems = []
    for attempt in (1, 2):
        await _controller(ctx, "POST", f"/v3/projects/{project_id}/close", (200, 204), "MIGRATION-003")
        await _controller(ctx, "POST", f"/v3/projects/{project_id}/open", (200, 201), "MIGRATION-003")
        now_listing = await _listing(ctx, project_id, "MIGRATION-003")
        now_rows = await _rows(path, "chat_sessions")
        if now_listing != reference_listing:
            problems.append(
                f"reopening #{attempt} changed main's listing: " + _diff(reference_listing, now_listing, "thread_id")
            )
        if now_rows != reference_rows:
            problems.append(
                f"reopening #{attempt} changed the raw chat_sessions rows: " + _diff(reference_rows, now_rows, "id")
            )
        problems += [f"after reopening #{attempt}: {p}" for p in await _column_problems(path)]
    ctx.expect("MIGRATION-003", not problems, f"project {project_id}: " + "; ".join(problems))


# --- SECRET-001, SECRET-002 -------------------------------------------------------------------------------------


def _secret_forms(secret: str) -> list[tuple[str, bytes]]:
    """The byte strings that betray `secret`: itself, and its standard and URL-safe base64 at the three
    alignments (prefixed by 0, 1 and 2 bytes), without the edge characters that depend on neighbours."""
    raw = secret.encode()
    forms = [("in the clear", raw)]
    for offset in range(3):
        encoded = base64.b64encode(b"\x00" * offset + raw).rstrip(b"=")
        start = -(-8 * offset // 6)  # the first character made only of the secret's bits
        end = 8 * (offset + len(raw)) // 6  # past the last character made only of the secret's bits
        core = encoded[start:end]
        forms.append((f"base64 (alignment {offset})", core))
        urlsafe = core.replace(b"+", b"-").replace(b"/", b"_")
        if urlsafe != core:
            forms.append((f"URL-safe base64 (alignment {offset})", urlsafe))
    return forms


def _self_test_forms() -> None:
    """The base64 forms must be found inside the encoding of any text holding the secret, at any offset."""
    secret = "sk-self-test-" + uuid.uuid4().hex
    for before in range(6):
        text = b"x" * before + secret.encode() + b"yz"
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            encoded = encode(text)
            if not any(form in encoded for label, form in _secret_forms(secret) if label != "in the clear"):
                raise AssertionError(f"the base64 scan misses a secret at offset {before} ({encode.__name__})")


def _scan(files: dict[str, bytes], secrets: dict[str, str]) -> list[str]:
    """Where each secret (description -> value) appears, in any of its forms."""
    found = []
    for description, secret in secrets.items():
        for label, form in _secret_forms(secret):
            for name, data in files.items():
                at = data.find(form)
                if at >= 0:
                    found.append(f"{description} {label} in {name} at byte {at}")
    return found


def _redacted(secret: str) -> str:
    return f"{secret[:6]}... ({len(secret)} characters)"


@check("db.no_secrets")
async def no_secrets(ctx: CheckContext) -> None:
    _need_db_access(ctx)
    _self_test_forms()
    marker = f"cs-marker-{uuid.uuid4().hex}"
    turns = [("main", "cs-plain", marker), ("main", "cs-tool", "Tool turn"), ("other", "cs-plain", "Plain turn")]
    turns.append(("other", "cs-tool", "Tool turn"))
    for index, (user, script, text) in enumerate(turns):
        if script not in ctx.env.scripts:
            script = "cs-plain"
        result = await ctx.stream(
            {"message": ctx.message(script, text), "session_id": ctx.session_id(f"{user}-{index}")}, user=user
        )
        ctx.require_stream(result, "SECRET-001")
    path = _db_path(ctx)

    def read_files() -> dict[str, bytes]:
        files = {}
        for candidate in [path, *(_side(path, s) for s in SIDE_FILES)]:
            if candidate.exists():
                files[candidate.name] = candidate.read_bytes()
        return files

    files = await asyncio.to_thread(read_files)
    ctx.require(path.name in files, "SECRET-001", f"after four completed turns there is no database at {path}")
    sizes = {name: len(data) for name, data in files.items()}
    control = _scan(files, {"the marker": marker})
    if not any("in the clear" in hit for hit in control):
        raise NotTestable(
            f"the positive control failed: the unique text {marker!r} of a user message is not in {sizes} "
            "(compressed or encrypted storage?), so a scan for secrets would prove nothing"
        )
    keys = {f"LLM API key #{i + 1} ({_redacted(k)})": k for i, k in enumerate(getattr(ctx.env, "api_keys", []))}
    tokens = {f"the bearer token of {u.name} ({_redacted(u.token)})": u.token for u in ctx.env.users.values()}
    if keys:
        found = _scan(files, keys)
        ctx.expect("SECRET-001", not found, f"{path} (files {sizes}): " + "; ".join(found))
    else:
        ctx.not_testable("SECRET-001", "the suite does not know the target's LLM API keys (llm.mode is not controller)")
    found = _scan(files, tokens)
    ctx.expect("SECRET-002", not found, f"{path} (files {sizes}): " + "; ".join(found))
