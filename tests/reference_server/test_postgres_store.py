"""The PostgreSQL store (--database-url), in one process: the same behaviour as a project's SQLite file, in one
database for every project, and the listing served by its index."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import psycopg
import pytest

import gns3_copilot_spec as spec
from gns3_copilot_generated.constants import INITIAL_TITLE
from reference_server.agent.stores.postgres_sessions import LISTING_QUERY

from .conftest import in_process_lab

pytestmark = [pytest.mark.anyio, pytest.mark.slow]  # slow: PostgreSQL, not in --quick
CHECKPOINT_TABLES = ("checkpoints", "checkpoint_writes", "checkpoint_blobs")


@pytest.fixture
async def pg_lab(make_settings, postgres_url):
    async with in_process_lab(make_settings(database_url=postgres_url)) as lab:
        lab.postgres_url = postgres_url
        yield lab


def _contract_columns() -> list[str]:
    schema = (spec.DB_DIR / "schema.sql").read_text(encoding="utf-8")
    start = schema.index("CREATE TABLE")
    body = schema[start : schema.index(");", start)]
    return re.findall(r"^\s+([a-z_]+) [A-Z]", body, re.MULTILINE)


def _rows(url: str, sql: str, params: tuple = ()) -> list[tuple]:
    with psycopg.connect(url) as db:
        return db.execute(sql, params).fetchall()


async def test_chat_sessions_has_the_contract_columns_and_indexes(pg_lab):
    columns = [
        r[0]
        for r in _rows(
            pg_lab.postgres_url,
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_name = 'chat_sessions' ORDER BY ordinal_position",
        )
    ]
    assert columns == _contract_columns()
    indexes = {
        r[0] for r in _rows(pg_lab.postgres_url, "SELECT indexname FROM pg_indexes WHERE tablename = 'chat_sessions'")
    }
    # idx_user_project is the first two columns of idx_sessions_listing (postgres_schema.sql)
    assert indexes == {
        "chat_sessions_pkey",
        "chat_sessions_project_thread",
        "idx_thread_id",
        "idx_pinned_updated",
        "idx_sessions_listing",
    }


async def test_the_listing_reads_only_the_callers_rows_through_its_index(pg_lab):
    with psycopg.connect(pg_lab.postgres_url, autocommit=True) as db:
        db.execute(
            "INSERT INTO chat_sessions (thread_id, user_id, project_id, created_at, updated_at, pinned) "
            "SELECT 's' || n, CASE WHEN n <= 3000 THEN 'heavy' ELSE 'u' || (n % 500) END, "
            "CASE WHEN n <= 3000 THEN 'p-heavy' ELSE 'p' || (n % 40) END, "
            "now(), now() - n * interval '1 second', n % 7 = 0 FROM generate_series(1, 50000) AS n"
        )
        db.execute("ANALYZE chat_sessions")

        def plan(user: str, project: str) -> str:
            query = LISTING_QUERY.replace("%s", f"'{user}'", 1).replace("%s", f"'{project}'")
            return str(db.execute("EXPLAIN (FORMAT JSON) " + query).fetchone()[0])

        few, many = plan("u3", "p3"), plan("heavy", "p-heavy")
    # Found through the index whatever their number; PostgreSQL may then sort the caller's own rows (a bitmap
    # scan), whose number does not grow with the table's.
    for plan_text in (few, many):
        assert "idx_sessions_listing" in plan_text and "Seq Scan" not in plan_text, plan_text


@pytest.mark.covers("SESSION-006", "LIST-002")
async def test_a_session_lives_whole_on_postgresql(pg_lab):
    first = await pg_lab.stream("[[fake-llm:tool-round-trip]]", "pg-1")
    assert first.status == 200 and first.types[-1] == "done"
    await pg_lab.stream("hello again", "pg-1")
    other = await pg_lab.stream("hello", "pg-2")
    history = await pg_lab.history("pg-1")
    assert [m["role"] for m in history["messages"]] == ["user", "assistant", "tool", "assistant", "user", "assistant"]
    session = await pg_lab.session("pg-1")
    assert session["message_count"] == 6 and session["llm_calls_count"] >= 2
    assert session["title"] != INITIAL_TITLE
    pinned = await pg_lab.client.put(f"{pg_lab.prefix()}/sessions/pg-1/pin", headers=pg_lab.headers)
    assert pinned.json()["pinned"] is True
    listing = await pg_lab.client.get(f"{pg_lab.prefix()}/sessions", headers=pg_lab.headers)
    assert [s["thread_id"] for s in listing.json()] == ["pg-1", other.session_id]  # pinned first (LIST-002)
    renamed = await pg_lab.client.patch(
        f"{pg_lab.prefix()}/sessions/pg-1", json={"title": "Mine"}, headers=pg_lab.headers
    )
    assert renamed.json()["title"] == "Mine" and renamed.json()["updated_at"] > pinned.json()["updated_at"]
    deleted = await pg_lab.client.delete(f"{pg_lab.prefix()}/sessions/pg-1", headers=pg_lab.headers)
    assert deleted.status_code == 204
    for table in ("chat_sessions", *CHECKPOINT_TABLES):
        assert _rows(pg_lab.postgres_url, f"SELECT 1 FROM {table} WHERE thread_id LIKE %s", ("%pg-1",)) == []
    assert _rows(pg_lab.postgres_url, "SELECT count(*) FROM checkpoints WHERE thread_id LIKE %s", ("%pg-2",))[0][0]


async def test_one_session_id_in_two_projects_is_two_sessions_and_deleting_a_project_takes_only_its_own(pg_lab):
    other_project = await pg_lab.new_project()
    await pg_lab.stream("in the first project", "same-id")
    await pg_lab.stream("in the second project", "same-id", project_id=other_project)
    history = await pg_lab.history("same-id")
    assert [m["content"] for m in history["messages"] if m["role"] == "user"] == ["in the first project"]

    deleted = await pg_lab.client.delete(f"/v3/projects/{pg_lab.project_id}", headers=pg_lab.headers)
    assert deleted.status_code == 204
    for table in ("chat_sessions", "turns_in_flight"):
        assert _rows(pg_lab.postgres_url, f"SELECT 1 FROM {table} WHERE project_id = %s", (pg_lab.project_id,)) == []
    for table in CHECKPOINT_TABLES:
        assert (
            _rows(pg_lab.postgres_url, f"SELECT 1 FROM {table} WHERE thread_id LIKE %s", (pg_lab.project_id + ":%",))
            == []
        )
    kept = _rows(
        pg_lab.postgres_url, "SELECT count(*) FROM checkpoints WHERE thread_id = %s", (f"{other_project}:same-id",)
    )
    assert kept[0][0] > 0
    survivor = await pg_lab.client.get(
        pg_lab.prefix(other_project) + "/sessions/same-id/history", headers=pg_lab.headers
    )
    assert [m["content"] for m in survivor.json()["messages"] if m["role"] == "user"] == ["in the second project"]


@pytest.mark.covers("STATS-001", "STATS-002", "STATS-003", "STATS-004")
async def test_statistics_are_exact_after_concurrent_turns_on_many_sessions(pg_lab):
    sessions = [f"many-{n}" for n in range(12)]
    for _ in range(2):
        results = await asyncio.gather(*(pg_lab.stream("[[fake-llm:plain]]", s) for s in sessions))
        assert {r.status for r in results} == {200}
    expected = None
    for session_id in sessions:
        row = await pg_lab.session(session_id)
        values = (row["message_count"], row["llm_calls_count"], row["input_tokens"], row["output_tokens"])
        assert row["total_tokens"] == row["input_tokens"] + row["output_tokens"]
        expected = expected or values
        assert values == expected  # every session did the same two turns
    assert expected[0] == 4


async def test_a_turn_cut_by_a_crash_is_counted_once_at_the_next_start(make_settings, postgres_url, tmp_path: Path):
    settings = make_settings(database_url=postgres_url)
    async with in_process_lab(settings) as lab:
        await lab.stream("[[fake-llm:plain]]", "crash-1")
        user_message = "00000000-0000-4000-8000-000000000001"
        project_id = lab.project_id
    with psycopg.connect(postgres_url, autocommit=True) as db:  # as a killed worker leaves it
        db.execute("INSERT INTO turns_in_flight VALUES (%s, 'crash-1', %s)", (project_id, user_message))
    async with in_process_lab(settings) as lab:
        lab.project_id = project_id
        session = await lab.session("crash-1")
    assert _rows(postgres_url, "SELECT count(*) FROM turns_in_flight")[0][0] == 0
    assert session["message_count"] == 2  # nothing of that turn was in the checkpoint: nothing added
