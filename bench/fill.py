"""Bulk-fill one project's chat_sessions table with sqlite3: N sessions across N/50 users, one transaction."""

from __future__ import annotations

import json
import random
import sqlite3
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

SESSIONS_PER_USER = 50
PINNED_PER_USER = 5
COLUMNS = (
    "thread_id, user_id, project_id, title, message_count, llm_calls_count, input_tokens, output_tokens, "
    "total_tokens, last_message_at, created_at, updated_at, metadata, stats, pinned"
)
INSERT = f"INSERT INTO chat_sessions ({COLUMNS}) VALUES ({', '.join('?' * 15)})"


@dataclass(frozen=True)
class FillReport:
    rows: int
    users: int
    caller_rows: int
    caller_pinned: int
    seconds: float  # generating the rows, inserting them and checkpointing the WAL


def _uuid4(rng: random.Random) -> str:
    digits = f"{rng.getrandbits(128):032x}"
    variant = "89ab"[int(digits[16], 16) & 3]
    return f"{digits[:8]}-{digits[8:12]}-4{digits[13:16]}-{variant}{digits[17:20]}-{digits[20:]}"


def _timestamp(seconds: int, micros: int) -> str:
    """The server's own format (TIME-001), without a datetime per row."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{micros:06d}Z"


def _rows(project_id: str, caller_id: str, total: int, rng: random.Random) -> list[tuple]:
    users = max(1, total // SESSIONS_PER_USER)
    user_ids = [caller_id] + [_uuid4(rng) for _ in range(users - 1)]
    owners = [user_ids[min(i // SESSIONS_PER_USER, users - 1)] for i in range(total)]
    rng.shuffle(owners)  # the caller's sessions are spread over the table, as they would be after months of use
    seen: dict[str, int] = {}
    base = int(datetime(2025, 1, 1, tzinfo=UTC).timestamp())
    metadata = json.dumps({"source": "bench"})
    rows = []
    for owner in owners:
        nth = seen[owner] = seen.get(owner, 0) + 1
        created = base + rng.randrange(300 * 86400)
        updated = created + rng.randrange(30 * 86400)
        stamp = _timestamp(updated, rng.randrange(1_000_000))
        messages = rng.randrange(2, 40)
        tokens_in, tokens_out = messages * 120, messages * 40
        rows.append(
            (
                _uuid4(rng),
                owner,
                project_id,
                f"Session {nth} of the bench",
                messages,
                messages // 2,
                tokens_in,
                tokens_out,
                tokens_in + tokens_out,
                stamp,
                _timestamp(created, rng.randrange(1_000_000)),
                stamp,
                metadata,
                None,
                nth <= PINNED_PER_USER,
            )
        )
    return rows


def fill(db_path: Path, project_id: str, caller_id: str, total: int, *, seed: int = 1) -> FillReport:
    """Insert `total` sessions into the (already migrated) project database while the server has it open."""
    start = time.perf_counter()
    rows = _rows(project_id, caller_id, total, random.Random(seed))
    conn = sqlite3.connect(db_path, isolation_level=None)
    try:
        conn.execute("PRAGMA busy_timeout=10000")
        conn.execute("PRAGMA synchronous=OFF")  # this connection only; the server's keep theirs
        conn.execute("PRAGMA cache_size=-65536")
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(INSERT, sorted(rows))  # by thread_id: the unique index grows at its end
        conn.execute("COMMIT")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # read from the main file, as after a quiet period
    finally:
        conn.close()
    seconds = time.perf_counter() - start
    caller = [row for row in rows if row[1] == caller_id]
    users = len({row[1] for row in rows})
    return FillReport(len(rows), users, len(caller), sum(1 for row in caller if row[-1]), seconds)
