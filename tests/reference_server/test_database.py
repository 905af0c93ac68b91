"""The project database: location, WAL, schema, indexes, checkpointer tables, one write per turn, migrations."""

from __future__ import annotations

import shutil
import sqlite3

import pytest

import gns3_copilot_spec as spec
from gns3_copilot_spec.db.legacy_fixture import build_legacy_database
from reference_server.agent.service import database_path

pytestmark = pytest.mark.anyio

CONTRACT = spec.load_document(spec.DB_DIR / "contract.yaml")


def project_db(lab, project_id=None):
    return database_path(lab.settings.projects_dir / (project_id or lab.project_id))


@pytest.mark.covers("DB-001", "DB-002", "DB-003", "DB-004", "DB-005")
async def test_the_database_matches_the_contract(lab):
    await lab.stream("[[fake-llm:tool-round-trip]]", "db-1")
    path = project_db(lab)
    assert path.relative_to(lab.settings.projects_dir / lab.project_id).as_posix() == CONTRACT["location"].removeprefix(
        "{project_dir}/"
    )
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == CONTRACT["journal_mode"]
        columns = {row[1]: row[2] for row in conn.execute("PRAGMA table_info(chat_sessions)")}
        assert columns == CONTRACT["chat_sessions"]["columns"]
        listed = {row[1]: bool(row[2]) for row in conn.execute("PRAGMA index_list(chat_sessions)")}
        for name, expected in CONTRACT["chat_sessions"]["indexes"].items():
            info = [row[2] for row in conn.execute(f"PRAGMA index_info({name})")]
            assert info == expected["columns"] and (listed[name] or not expected["unique"]), name
        assert listed["idx_thread_id"]  # the reference server also makes thread_id's own index unique
        for table, required in CONTRACT["checkpointer_tables"].items():
            present = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
            assert set(required) <= present, table
        assert conn.execute("SELECT COUNT(*) FROM checkpoints WHERE thread_id = 'db-1'").fetchone()[0] > 0


@pytest.mark.covers("STATS-007")
async def test_statistics_are_written_in_one_update_per_turn(lab):
    service = lab.app.state.services.manager.get(lab.project_id)
    statements: list[str] = []
    await service.repo.db.set_trace_callback(statements.append)
    try:
        await lab.stream("[[fake-llm:parallel-tools]]", "one-update")
        await lab.stream("[[fake-llm:plain]]", "one-update")
    finally:
        await service.repo.db.set_trace_callback(None)
    updates = [s for s in statements if s.lstrip().upper().startswith("UPDATE CHAT_SESSIONS")]
    assert len(updates) == 2, updates


@pytest.mark.covers("DB-007")
async def test_deleting_a_project_deletes_its_database(lab):
    await lab.stream("[[fake-llm:plain]]", "gone")
    path = project_db(lab)
    assert path.exists()
    assert (await lab.client.delete(f"/v3/projects/{lab.project_id}", headers=lab.headers)).status_code == 204
    assert not path.exists() and not path.with_name(path.name + "-wal").exists()


async def _install_legacy(lab) -> tuple[str, list[dict]]:
    """A closed project whose database is the legacy fixture of spec/db/, with the admin's rows."""
    me = (await lab.client.get("/v3/access/users/me", headers=lab.headers)).json()
    project_id = await lab.new_project()
    assert (await lab.client.post(f"/v3/projects/{project_id}/close", headers=lab.headers)).status_code == 204
    path = project_db(lab, project_id)
    shutil.rmtree(path.parent)
    rows = build_legacy_database(path, user_id=me["user_id"], project_id=project_id)
    return project_id, rows


@pytest.mark.covers("MIGRATION-001", "MIGRATION-002", "MIGRATION-003", "LIST-001")
async def test_a_legacy_database_is_upgraded_in_place(lab):
    project_id, rows = await _install_legacy(lab)
    assert (await lab.client.post(f"/v3/projects/{project_id}/open", headers=lab.headers)).status_code == 200
    url = lab.prefix(project_id) + "/sessions"
    listing = (await lab.client.get(url, headers=lab.headers)).json()
    mine = sorted(r["thread_id"] for r in rows if r["thread_id"].startswith("legacy-0"))
    assert sorted(s["thread_id"] for s in listing) == mine
    assert all(s["pinned"] is False for s in listing)
    for session in listing:
        row = next(r for r in rows if r["thread_id"] == session["thread_id"])
        assert (session["title"], session["message_count"], session["input_tokens"]) == (
            row["title"],
            row["message_count"],
            row["input_tokens"],
        )
    pinned = await lab.client.put(f"{lab.prefix(project_id)}/sessions/{mine[0]}/pin", headers=lab.headers)
    assert pinned.status_code == 200 and pinned.json()["pinned"] is True
    assert (await lab.client.delete(f"{lab.prefix(project_id)}/sessions/{mine[0]}/pin", headers=lab.headers)).json()[
        "pinned"
    ] is False
    before = (await lab.client.get(url, headers=lab.headers)).json()
    with sqlite3.connect(project_db(lab, project_id)) as conn:
        raw_before = conn.execute("SELECT * FROM chat_sessions ORDER BY id").fetchall()
    for _ in range(2):  # close and reopen: idempotent
        assert (await lab.client.post(f"/v3/projects/{project_id}/close", headers=lab.headers)).status_code == 204
        assert (await lab.client.post(f"/v3/projects/{project_id}/open", headers=lab.headers)).status_code == 200
    assert (await lab.client.get(url, headers=lab.headers)).json() == before
    with sqlite3.connect(project_db(lab, project_id)) as conn:
        assert conn.execute("SELECT * FROM chat_sessions ORDER BY id").fetchall() == raw_before
        assert conn.execute("SELECT COUNT(*) FROM chat_sessions").fetchone()[0] == len(rows)
        columns = {row[1]: row[2] for row in conn.execute("PRAGMA table_info(chat_sessions)")}
        assert columns == CONTRACT["chat_sessions"]["columns"]


@pytest.mark.covers("MIGRATION-001", "SESSION-005")
async def test_a_legacy_session_can_be_continued(lab):
    project_id, rows = await _install_legacy(lab)
    await lab.client.post(f"/v3/projects/{project_id}/open", headers=lab.headers)
    legacy = next(r for r in rows if r["thread_id"].startswith("legacy-0"))
    stream = await lab.stream("[[fake-llm:plain]]", legacy["thread_id"], project_id=project_id)
    assert stream.types[-1] == "done"
    listing = (await lab.client.get(lab.prefix(project_id) + "/sessions", headers=lab.headers)).json()
    session = next(s for s in listing if s["thread_id"] == legacy["thread_id"])
    assert session["title"] == legacy["title"]  # a titled legacy session is not re-titled
    assert session["llm_calls_count"] == legacy["llm_calls_count"] + 1
    assert session["message_count"] == 2  # the checkpointed history: the legacy rows had none
