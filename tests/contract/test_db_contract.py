"""The database contract: the DDL matches contract.yaml, the legacy fixture builds, the migration rule holds."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import gns3_copilot_spec as spec
from gns3_copilot_generated.constants import DB_LOCATION
from gns3_copilot_spec.db.legacy_fixture import LEGACY_ROWS, build_legacy_database, main

CONTRACT = spec.load_document(spec.DB_DIR / "contract.yaml")


def columns(conn: sqlite3.Connection) -> dict[str, str]:
    return {row[1]: row[2] for row in conn.execute("PRAGMA table_info(chat_sessions)")}


def indexes(conn: sqlite3.Connection) -> dict[str, dict]:
    """The contract's indexes as found: columns, and `unique` only where the contract requires it."""
    found = {}
    for _, name, unique, *_ in conn.execute("PRAGMA index_list(chat_sessions)"):
        if name.startswith("sqlite_autoindex") or name not in CONTRACT["chat_sessions"]["indexes"]:
            continue
        cols = [row[2] for row in conn.execute(f"PRAGMA index_info({name})")]
        required = CONTRACT["chat_sessions"]["indexes"][name]["unique"]
        found[name] = {"columns": cols, "unique": bool(unique) if required else False}
    return found


def unique_columns(conn: sqlite3.Connection) -> list[list[str]]:
    """Columns covered by a unique index, automatic ones (UNIQUE constraints) included."""
    return [
        [row[2] for row in conn.execute(f'PRAGMA index_info("{name}")')]
        for _, name, unique, *_ in conn.execute("PRAGMA index_list(chat_sessions)")
        if unique
    ]


def test_schema_sql_matches_the_contract():
    conn = sqlite3.connect(":memory:")
    conn.executescript((spec.DB_DIR / "schema.sql").read_text())
    conn.executescript((spec.DB_DIR / "schema.sql").read_text())  # idempotent
    assert columns(conn) == CONTRACT["chat_sessions"]["columns"]
    assert indexes(conn) == CONTRACT["chat_sessions"]["indexes"]
    assert all([column] in unique_columns(conn) for column in CONTRACT["chat_sessions"]["unique_columns"])


def test_contract_location_and_journal_mode():
    assert CONTRACT["location"] == "{project_dir}/gns3-copilot/copilot_checkpoints.db"
    assert CONTRACT["journal_mode"] == "wal"


def test_legacy_fixture_has_rows_and_no_pinned(tmp_path: Path):
    path = Path(DB_LOCATION.format(project_dir=tmp_path))
    rows = build_legacy_database(path, user_id="u-1", project_id="p-1")
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert "pinned" not in columns(conn)
    assert "idx_pinned_updated" not in indexes(conn)
    stored = conn.execute(
        "SELECT thread_id, user_id, project_id, total_tokens FROM chat_sessions ORDER BY id"
    ).fetchall()
    assert stored == [(r["thread_id"], r["user_id"], r["project_id"], r["total_tokens"]) for r in rows]
    assert sum(1 for r in rows if r["user_id"] == "u-1") == len(LEGACY_ROWS)


def test_legacy_fixture_never_overwrites(tmp_path: Path):
    path = tmp_path / "x.db"
    build_legacy_database(path, user_id="u", project_id="p")
    with pytest.raises(FileExistsError):
        build_legacy_database(path, user_id="u", project_id="p")
    with pytest.raises(ValueError, match="unknown legacy schema"):
        build_legacy_database(tmp_path / "y.db", user_id="u", project_id="p", schema="v9")


def test_legacy_fixture_cli(tmp_path: Path, capsys):
    assert main([str(tmp_path / "cli.db"), "--user-id", "u", "--project-id", "p"]) == 0
    assert "4 rows" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main([str(tmp_path / "cli.db"), "--user-id", "u", "--project-id", "p"])


def upgrade(conn: sqlite3.Connection) -> None:
    """The migration rule of contract.yaml, applied as an implementation would, then the current DDL."""
    for legacy in CONTRACT["legacy_schemas"]:
        if "pinned" not in columns(conn):
            for statement in legacy["upgrade"]:
                conn.execute(statement)
    conn.executescript((spec.DB_DIR / "schema.sql").read_text())
    conn.commit()


def test_migration_rule_upgrades_in_place_keeping_rows_idempotently(tmp_path: Path):
    path = tmp_path / "legacy.db"
    build_legacy_database(path, user_id="u", project_id="p")
    conn = sqlite3.connect(path)
    before = conn.execute("SELECT * FROM chat_sessions ORDER BY id").fetchall()
    upgrade(conn)
    upgrade(conn)  # MIGRATION-003
    assert columns(conn) == CONTRACT["chat_sessions"]["columns"]
    assert indexes(conn) == CONTRACT["chat_sessions"]["indexes"]
    after = conn.execute("SELECT * FROM chat_sessions ORDER BY id").fetchall()
    assert [row[:-1] for row in after] == before  # MIGRATION-001: every row kept
    assert {row[-1] for row in after} == {0}  # MIGRATION-002: legacy rows read as not pinned
