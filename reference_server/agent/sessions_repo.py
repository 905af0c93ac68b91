"""ChatSessionsRepository: the `chat_sessions` table of one project's SQLite file (DB-003, DB-004, MIGRATION-*);
stores/postgres_sessions.py is the same repository on PostgreSQL."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from functools import cache
from typing import Any

import aiosqlite

import gns3_copilot_spec as spec
from gns3_copilot_generated.api.chat_session import ChatSession
from gns3_copilot_generated.constants import INITIAL_TITLE
from reference_server.storage_faults import project_database
from reference_server.timestamps import later_than, normalise, utc_now

from .stores.base import TurnTotals

NEW_TITLE = INITIAL_TITLE  # TITLE-001
MANUAL_TITLE = "manual"  # metadata.title_source once a user renamed the session (TITLE-003)

# The listing query's filter and order are both served by one index, so GET /sessions does not sort
# (bench/ shows the plan). The contract's indexes (DB-004) are kept; this one is extra.
LISTING_INDEX = (
    "CREATE INDEX IF NOT EXISTS idx_sessions_listing "
    "ON chat_sessions(user_id, project_id, pinned DESC, updated_at DESC, id DESC)"
)
# The caller's sessions of this project and no others (LIST-001), in the contract's total order (LIST-002).
LISTING_QUERY = (
    "SELECT * FROM chat_sessions WHERE user_id = ? AND project_id = ? ORDER BY pinned DESC, updated_at DESC, id DESC"
)
# The server's own bookkeeping beside the contract's table (whose columns DB-003 fixes): the turn each session has
# started and not yet counted. Its row goes in the transaction that writes the turn's statistics, so a turn cut by a
# crash is found at the next start-up and counted once (AgentService.recover).
TURNS_IN_FLIGHT = (
    "CREATE TABLE IF NOT EXISTS turns_in_flight (thread_id TEXT PRIMARY KEY, user_message_id TEXT NOT NULL)"
)


def _json_object(text: str | None) -> dict[str, Any] | None:
    """A JSON column as an object; legacy rows may hold anything, which reads as null rather than failing."""
    try:
        value = json.loads(text) if text else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _row_to_session(row: aiosqlite.Row) -> ChatSession:
    data = dict(row)
    for key in ("metadata", "stats"):
        data[key] = _json_object(data[key])
    for key in ("created_at", "updated_at", "last_message_at"):
        data[key] = normalise(data[key])
    data["pinned"] = bool(data["pinned"])
    return ChatSession.model_validate(data)


@cache
def _db_contract() -> dict[str, Any]:
    """Parsed once per process: every project that opens migrates by it (a YAML parse per project was a tenth of
    the server's CPU in a conformance run)."""
    return spec.load_document(spec.DB_DIR / "contract.yaml")


async def migrate(db: aiosqlite.Connection) -> list[str]:
    """Bring `chat_sessions` to the contract's schema in place; idempotent (MIGRATION-001, MIGRATION-003).

    The legacy schemas and their upgrade statements are data in spec/db/contract.yaml; each upgrade runs only
    when its schema is detected, before the DDL of spec/db/schema.sql creates what is still missing.
    """
    applied: list[str] = []
    columns = {row[1] for row in await db.execute_fetchall("PRAGMA table_info(chat_sessions)")}
    contract = _db_contract()
    if columns and "pinned" not in columns:
        legacy = next(s for s in contract["legacy_schemas"] if s["name"] == "v0-before-pinned")
        for statement in legacy["upgrade"]:  # adds `pinned` DEFAULT FALSE: old rows can be pinned (MIGRATION-002)
            await db.execute(statement)
        applied.append(legacy["name"])
    await db.executescript((spec.DB_DIR / "schema.sql").read_text(encoding="utf-8"))
    await db.execute(LISTING_INDEX)
    await db.commit()
    return applied


async def prepare_bookkeeping(db: aiosqlite.Connection) -> None:
    """The server's own table, apart from the contract's migration: it exists whatever the schema's history."""
    await db.execute(TURNS_IN_FLIGHT)
    await db.commit()


class ChatSessionsRepository:
    def __init__(self, db: aiosqlite.Connection, project_id: str) -> None:
        self.db = db
        self.project_id = project_id
        # One writer at a time, so that each read-modify-write of updated_at is atomic (LIST-003).
        self._write_lock = asyncio.Lock()

    async def _read(self, sql: str, params: tuple[Any, ...] = ()) -> list[aiosqlite.Row]:
        # Every read runs whole in one call: a statement left open across an await on this shared connection
        # would pin an old WAL snapshot, and the next write on it would fail at once with SQLITE_BUSY.
        with project_database(self.project_id):
            return list(await self.db.execute_fetchall(sql, params))

    async def _commit(self, *statements: tuple[str, tuple[Any, ...]]) -> list[aiosqlite.Cursor]:
        """Statements in one transaction, under the caller's write lock."""
        async with self._transaction():
            return [await self.db.execute(sql, params) for sql, params in statements]

    @contextlib.asynccontextmanager
    async def _transaction(self) -> AsyncIterator[None]:
        """Committed at the end, or rolled back when a statement fails (a full disk), so that the connection never
        keeps a half-done write for the next commit; under the caller's write lock."""
        with project_database(self.project_id):
            try:
                yield
                await self.db.commit()
            except BaseException:
                await self.db.rollback()
                raise

    async def get(self, thread_id: str) -> ChatSession | None:
        rows = await self._read("SELECT * FROM chat_sessions WHERE thread_id = ?", (thread_id,))
        return _row_to_session(rows[0]) if rows else None

    async def list_for(self, user_id: str) -> list[ChatSession]:
        return [_row_to_session(row) for row in await self._read(LISTING_QUERY, (user_id, self.project_id))]

    async def create(
        self, thread_id: str, user_id: str, metadata: dict[str, Any] | None = None, *, turn: str | None = None
    ) -> ChatSession | None:
        """The new session, or None when a session with this id exists already (nothing is written then). With
        `turn` (its user message's id), the session's first turn is marked in flight in the same transaction: one
        commit where a new session's turn took two (issue 33)."""
        now = utc_now()  # created_at = updated_at; updates only move updated_at forward (TIME-002)
        insert = (
            "INSERT INTO chat_sessions (thread_id, user_id, project_id, title, created_at, updated_at,"
            " metadata, pinned) VALUES (?, ?, ?, ?, ?, ?, ?, FALSE) ON CONFLICT DO NOTHING",
            (thread_id, user_id, self.project_id, NEW_TITLE, now, now, json.dumps(metadata or {})),
        )
        async with self._write_lock, self._transaction():
            if (await self.db.execute(*insert)).rowcount == 0:
                return None
            if turn is not None:
                await self.db.execute(*_in_flight(thread_id, turn))
        return await self.get(thread_id)

    async def _mutate(
        self, thread_id: str, assignments: str, params: tuple[Any, ...], *also: tuple[str, tuple[Any, ...]]
    ) -> ChatSession | None:
        """Apply one UPDATE that also moves updated_at strictly forward (LIST-003), with `also` in its transaction."""
        async with self._write_lock:
            rows = await self._read("SELECT updated_at FROM chat_sessions WHERE thread_id = ?", (thread_id,))
            if not rows:
                if also:
                    await self._commit(*also)
                return None
            update = (
                f"UPDATE chat_sessions SET {assignments}, updated_at = ? WHERE thread_id = ?",
                (*params, later_than(rows[0][0]), thread_id),
            )
            await self._commit(update, *also)
        return await self.get(thread_id)

    async def rename(self, thread_id: str, title: str) -> ChatSession | None:
        return await self._mutate(
            thread_id,
            "title = ?, "
            "metadata = json_set(CASE WHEN json_valid(metadata) THEN metadata ELSE '{}' END, '$.title_source', ?)",
            (title, MANUAL_TITLE),
        )

    async def set_pinned(self, thread_id: str, pinned: bool) -> ChatSession | None:
        current = await self.get(thread_id)
        if current is None or current.pinned == pinned:  # idempotent: not a mutation (PIN-001, LIST-003)
            return current
        return await self._mutate(thread_id, "pinned = ?", (pinned,))

    async def begin_turn(self, thread_id: str, user_message_id: str) -> None:
        """Remember a turn before it changes the checkpoint: until record_turn, it is a turn in flight."""
        async with self._write_lock:
            await self._commit(_in_flight(thread_id, user_message_id))

    async def turns_in_flight(self, thread_id: str | None = None) -> list[tuple[str, str]]:
        """(thread_id, user_message_id) of turns started and never counted (of one session, or of all)."""
        where, params = ("WHERE thread_id = ?", (thread_id,)) if thread_id else ("", ())
        return [(row[0], row[1]) for row in await self._read(f"SELECT * FROM turns_in_flight {where}", params)]

    async def record_turn(self, thread_id: str, totals: TurnTotals) -> ChatSession | None:
        """Statistics and title of one turn, in one UPDATE (STATS-007); a manual title is kept (TITLE-003).
        The turn stops being in flight in the same transaction: it is counted exactly once."""
        return await self._mutate(
            thread_id,
            "message_count = ?, llm_calls_count = llm_calls_count + ?, input_tokens = input_tokens + ?, "
            "output_tokens = output_tokens + ?, total_tokens = total_tokens + ?, last_message_at = ?, "
            "title = CASE WHEN ? IS NOT NULL AND title = ? "
            "AND NOT (json_valid(metadata) AND COALESCE(json_extract(metadata, '$.title_source'), '') = ?) "
            "THEN ? ELSE title END",
            (
                totals.message_count,
                totals.llm_calls,
                totals.input_tokens,
                totals.output_tokens,
                totals.input_tokens + totals.output_tokens,  # STATS-004
                utc_now(),
                totals.generated_title,
                NEW_TITLE,
                MANUAL_TITLE,
                totals.generated_title,
            ),
            ("DELETE FROM turns_in_flight WHERE thread_id = ?", (thread_id,)),
        )

    async def delete(self, thread_id: str) -> bool:
        async with self._write_lock:
            cursor, _ = await self._commit(
                ("DELETE FROM chat_sessions WHERE thread_id = ?", (thread_id,)),
                ("DELETE FROM turns_in_flight WHERE thread_id = ?", (thread_id,)),
            )
        return cursor.rowcount > 0


def _in_flight(thread_id: str, user_message_id: str) -> tuple[str, tuple[str, str]]:
    return "INSERT OR REPLACE INTO turns_in_flight VALUES (?, ?)", (thread_id, user_message_id)
