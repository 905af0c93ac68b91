"""`chat_sessions` of one project on PostgreSQL: the SQLite repository's behaviour (sessions_repo.py), with each
read-modify-write done in one statement, so that workers writing the same row never lose an update."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from psycopg_pool import AsyncConnectionPool

from gns3_copilot_generated.api.chat_session import ChatSession
from reference_server.timestamps import normalise

from ..sessions_repo import MANUAL_TITLE, NEW_TITLE
from .base import TurnTotals

_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"
# The caller's sessions of this project and no others (LIST-001), in the contract's total order (LIST-002), all
# served by idx_sessions_listing (postgres_schema.sql).
LISTING_QUERY = (
    "SELECT * FROM chat_sessions WHERE user_id = %s AND project_id = %s ORDER BY pinned DESC, updated_at DESC, id DESC"
)
# updated_at moves strictly forward on every change (LIST-003), decided by the row's own lock: two workers
# changing one session cannot both write the same instant.
_FORWARD = "updated_at = GREATEST(%(now)s, updated_at + interval '1 microsecond')"


def _text(value: datetime | None) -> str | None:
    return None if value is None else value.astimezone(UTC).strftime(_FORMAT)


def _row_to_session(row: dict[str, Any]) -> ChatSession:
    data = dict(row)
    for key in ("metadata", "stats"):
        data[key] = data[key] if isinstance(data[key], dict) else None
    for key in ("created_at", "updated_at", "last_message_at"):
        data[key] = normalise(_text(data[key]))
    return ChatSession.model_validate(data)


class PostgresSessionsRepository:
    def __init__(self, pool: AsyncConnectionPool, project_id: str) -> None:
        self.pool = pool
        self.project_id = project_id

    async def _one(self, sql: str, params: dict[str, Any]) -> ChatSession | None:
        async with self.pool.connection() as conn:
            row = await (await conn.execute(sql, {"project": self.project_id, **params})).fetchone()
        return _row_to_session(row) if row else None

    async def get(self, thread_id: str) -> ChatSession | None:
        return await self._one(
            "SELECT * FROM chat_sessions WHERE project_id = %(project)s AND thread_id = %(thread)s",
            {"thread": thread_id},
        )

    async def list_for(self, user_id: str) -> list[ChatSession]:
        async with self.pool.connection() as conn:
            rows = await (await conn.execute(LISTING_QUERY, (user_id, self.project_id))).fetchall()
        return [_row_to_session(row) for row in rows]

    async def create(
        self, thread_id: str, user_id: str, metadata: dict[str, Any] | None = None, *, turn: str | None = None
    ) -> ChatSession | None:
        """The new session, or None when a session with this id exists already (another worker may have made it
        meanwhile; nothing is written then). With `turn`, the session's first turn is marked in flight by the same
        statement (issue 33: one statement where a new session's turn took four)."""
        values = (
            "INSERT INTO chat_sessions"
            " (thread_id, user_id, project_id, title, created_at, updated_at, metadata, pinned)"
            " VALUES (%(thread)s, %(user)s, %(project)s, %(title)s, %(now)s, %(now)s, %(metadata)s, FALSE)"
            " ON CONFLICT (project_id, thread_id) DO NOTHING RETURNING *"
        )
        if turn is not None:  # a data-modifying CTE: both rows or neither, in one statement
            values = (
                f"WITH made AS ({values}), marked AS (INSERT INTO turns_in_flight"
                " SELECT project_id, thread_id, %(turn)s FROM made ON CONFLICT (project_id, thread_id)"
                " DO UPDATE SET user_message_id = EXCLUDED.user_message_id) SELECT * FROM made"
            )
        params = {
            "thread": thread_id,
            "user": user_id,
            "title": NEW_TITLE,
            "now": datetime.now(UTC),  # created_at = updated_at (TIME-002)
            "metadata": json.dumps(metadata or {}),
            "turn": turn,
        }
        return await self._one(values, params)

    async def _update(self, thread_id: str, assignments: str, params: dict[str, Any]) -> ChatSession | None:
        return await self._one(
            f"UPDATE chat_sessions SET {assignments}, {_FORWARD} "
            "WHERE project_id = %(project)s AND thread_id = %(thread)s RETURNING *",
            {"thread": thread_id, "now": datetime.now(UTC), **params},
        )

    async def rename(self, thread_id: str, title: str) -> ChatSession | None:
        return await self._update(
            thread_id,
            "title = %(title)s, metadata = CASE WHEN jsonb_typeof(metadata) = 'object' THEN metadata ELSE '{}' END"
            " || jsonb_build_object('title_source', %(manual)s::text)",
            {"title": title, "manual": MANUAL_TITLE},
        )

    async def set_pinned(self, thread_id: str, pinned: bool) -> ChatSession | None:
        # Idempotent: pinning a pinned session changes nothing, updated_at included (PIN-001, LIST-003).
        changed = await self._one(
            f"UPDATE chat_sessions SET pinned = %(pinned)s, {_FORWARD} "
            "WHERE project_id = %(project)s AND thread_id = %(thread)s AND pinned <> %(pinned)s RETURNING *",
            {"thread": thread_id, "pinned": pinned, "now": datetime.now(UTC)},
        )
        return changed or await self.get(thread_id)

    async def begin_turn(self, thread_id: str, user_message_id: str) -> None:
        async with self.pool.connection() as conn:
            await conn.execute(
                "INSERT INTO turns_in_flight VALUES (%s, %s, %s) ON CONFLICT (project_id, thread_id)"
                " DO UPDATE SET user_message_id = EXCLUDED.user_message_id",
                (self.project_id, thread_id, user_message_id),
            )

    async def turns_in_flight(self, thread_id: str | None = None) -> list[tuple[str, str]]:
        where, params = ("AND thread_id = %s", (self.project_id, thread_id)) if thread_id else ("", (self.project_id,))
        async with self.pool.connection() as conn:
            rows = await (
                await conn.execute(f"SELECT * FROM turns_in_flight WHERE project_id = %s {where}", params)
            ).fetchall()
        return [(row["thread_id"], row["user_message_id"]) for row in rows]

    async def record_turn(self, thread_id: str, totals: TurnTotals) -> ChatSession | None:
        """Statistics and title of one turn in one UPDATE, added to what the row holds (STATS-007); the turn stops
        being in flight in the same transaction, so it is counted exactly once; a manual title is kept (TITLE-003)."""
        params = {
            "project": self.project_id,
            "thread": thread_id,
            "now": datetime.now(UTC),
            "messages": totals.message_count,
            "calls": totals.llm_calls,
            "input": totals.input_tokens,
            "output": totals.output_tokens,
            "total": totals.input_tokens + totals.output_tokens,  # STATS-004
            "title": totals.generated_title,
            "new_title": NEW_TITLE,
            "manual": MANUAL_TITLE,
        }
        async with self.pool.connection() as conn:
            # One statement, so atomic without a transaction's BEGIN and COMMIT: the in-flight row goes in a CTE.
            row = await (
                await conn.execute(
                    "WITH counted AS (DELETE FROM turns_in_flight WHERE project_id = %(project)s"
                    " AND thread_id = %(thread)s)"
                    " UPDATE chat_sessions SET message_count = %(messages)s,"
                    " llm_calls_count = llm_calls_count + %(calls)s, input_tokens = input_tokens + %(input)s,"
                    " output_tokens = output_tokens + %(output)s, total_tokens = total_tokens + %(total)s,"
                    " last_message_at = %(now)s,"
                    " title = CASE WHEN %(title)s::text IS NOT NULL AND title = %(new_title)s"
                    " AND COALESCE(metadata->>'title_source', '') <> %(manual)s THEN %(title)s ELSE title END,"
                    f" {_FORWARD} WHERE project_id = %(project)s AND thread_id = %(thread)s RETURNING *",
                    params,
                )
            ).fetchone()
        return _row_to_session(row) if row else None

    async def delete(self, thread_id: str) -> bool:
        async with self.pool.connection() as conn, conn.transaction():
            cursor = await conn.execute(
                "DELETE FROM chat_sessions WHERE project_id = %s AND thread_id = %s", (self.project_id, thread_id)
            )
            await conn.execute(
                "DELETE FROM turns_in_flight WHERE project_id = %s AND thread_id = %s", (self.project_id, thread_id)
            )
        return cursor.rowcount > 0

    async def thread_ids(self) -> list[str]:
        """Every session of the project, whoever owns it (for deleting the project)."""
        async with self.pool.connection() as conn:
            rows = await (
                await conn.execute("SELECT thread_id FROM chat_sessions WHERE project_id = %s", (self.project_id,))
            ).fetchall()
        return [row["thread_id"] for row in rows]
