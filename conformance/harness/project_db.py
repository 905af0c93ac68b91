"""A project's database file, read as the contract describes it (spec/db/contract.yaml), for the checks of a
target that declares db_access. Every read is a read-only SQLite connection opened and closed in a worker
thread, never held across an await; the one write (a forced tie of updated_at) is as short."""

from __future__ import annotations

import asyncio
import sqlite3
from functools import cache
from pathlib import Path
from typing import Any

import gns3_copilot_spec as spec

SQLITE_HEADER = b"SQLite format 3\x00"
SIDE_FILES = ("-wal", "-shm")


@cache
def contract() -> dict[str, Any]:
    return spec.load_document(spec.DB_DIR / "contract.yaml")


def side_file(path: Path, suffix: str) -> Path:
    return path.with_name(path.name + suffix)


def _read_sync(path: Path, statements: list[tuple[str, tuple[Any, ...]]]) -> list[list[tuple[Any, ...]]]:
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=10)
    try:
        return [conn.execute(sql, params).fetchall() for sql, params in statements]
    finally:
        conn.close()


async def read(path: Path, *statements: str | tuple[str, tuple[Any, ...]]) -> list[list[tuple[Any, ...]]]:
    normalised = [(s, ()) if isinstance(s, str) else s for s in statements]
    return await asyncio.to_thread(_read_sync, path, normalised)


async def rows(path: Path, table: str, where: str = "", params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    """Every row of `table` (optionally filtered), as dicts, in id order."""

    def read_rows() -> list[dict[str, Any]]:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=10)
        try:
            cursor = conn.execute(f"SELECT * FROM {table} {where} ORDER BY id", params)
            names = [d[0] for d in cursor.description]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
        finally:
            conn.close()

    return await asyncio.to_thread(read_rows)


async def count(path: Path, table: str, thread_id: str) -> int:
    (found,) = await read(path, (f"SELECT count(*) FROM {table} WHERE thread_id = ?", (thread_id,)))
    return found[0][0]


async def columns(path: Path, table: str) -> dict[str, str]:
    """name -> declared type, from PRAGMA table_info (empty when the table does not exist)."""
    (found,) = await read(path, f"PRAGMA table_info({table})")
    return {row[1]: row[2] for row in found}


async def column_problems(path: Path) -> list[str]:
    """DB-003: chat_sessions has exactly the contract's columns, with the same declared types."""
    expected = contract()["chat_sessions"]["columns"]
    actual = await columns(path, "chat_sessions")
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


async def index_problems(path: Path) -> list[str]:
    """DB-004: the contract's indexes on chat_sessions, with their columns in order and their uniqueness."""
    (listed,) = await read(path, "PRAGMA index_list(chat_sessions)")
    present = {row[1]: bool(row[2]) for row in listed}  # seq, name, unique, origin, partial
    problems = []
    for name, declared in contract()["chat_sessions"]["indexes"].items():
        if name not in present:
            problems.append(f"index {name} is missing (indexes on chat_sessions: {sorted(present)})")
            continue
        (info,) = await read(path, f'PRAGMA index_info("{name}")')
        indexed = [row[2] for row in sorted(info)]  # seqno, cid, name
        if indexed != declared["columns"]:
            problems.append(f"index {name} is on {indexed}, the contract says {declared['columns']}")
        if declared["unique"] and not present[name]:
            problems.append(f"index {name} is not unique; the contract requires a unique index")
    # thread_id (and any other column the contract names) must be unique: a UNIQUE constraint (an automatic
    # index) or a unique index on exactly that column both do.
    for column in contract()["chat_sessions"].get("unique_columns", []):
        unique_on = []
        for name, unique in present.items():
            if unique:
                (info,) = await read(path, f'PRAGMA index_info("{name}")')
                unique_on.append([row[2] for row in sorted(info)])
        if [column] not in unique_on:
            problems.append(f"column {column} is not unique: no UNIQUE constraint and no unique index on it")
    return problems


def _tie_sync(path: Path, session_ids: list[str]) -> str | None:
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


async def tie_updated_at(path: Path, session_ids: list[str]) -> str | None:
    """Give the sessions the first one's stored updated_at (the value exactly as the implementation wrote it);
    None when done, else why not."""
    return await asyncio.to_thread(_tie_sync, path, session_ids)
