"""Build a legacy project database with rows in it, for the migration tests (MIGRATION-001..003).

    python -m gns3_copilot_spec.db.legacy_fixture OUT.db --user-id U --project-id P [--other-user-id O]

The file gets the legacy `chat_sessions` schema named in spec/db/contract.yaml (no `pinned` column), in WAL
mode, with LEGACY_ROWS for the user and one row of another user (so isolation can be checked after the
upgrade). The rows have no LangGraph checkpoints: their history is empty, which the checks know.
Install it as `{project_dir}/gns3-copilot/copilot_checkpoints.db` before the project opens.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
from pathlib import Path
from typing import Any

import gns3_copilot_spec as spec

# Timestamps in SQLite's CURRENT_TIMESTAMP form, as legacy builds stored them.
LEGACY_ROWS: tuple[dict[str, Any], ...] = (
    {
        "thread_id": "legacy-0001",
        "title": "Legacy session one",
        "message_count": 4,
        "llm_calls_count": 3,
        "input_tokens": 900,
        "output_tokens": 120,
        "last_message_at": "2025-06-01 10:00:05",
        "created_at": "2025-06-01 10:00:00",
        "updated_at": "2025-06-01 10:00:05",
    },
    {
        "thread_id": "legacy-0002",
        "title": "Legacy session two",
        "message_count": 2,
        "llm_calls_count": 2,
        "input_tokens": 300,
        "output_tokens": 40,
        "last_message_at": "2025-06-02 11:30:00",
        "created_at": "2025-06-02 11:29:50",
        "updated_at": "2025-06-02 11:30:00",
    },
    {
        "thread_id": "legacy-0003",
        "title": "New Conversation",
        "message_count": 0,
        "llm_calls_count": 0,
        "input_tokens": 0,
        "output_tokens": 0,
        "last_message_at": None,
        "created_at": "2025-06-03 09:00:00",
        "updated_at": "2025-06-03 09:00:00",
    },
)
OTHER_USER_ROW: dict[str, Any] = {
    "thread_id": "legacy-other-0001",
    "title": "Someone else's session",
    "message_count": 2,
    "llm_calls_count": 1,
    "input_tokens": 50,
    "output_tokens": 10,
    "last_message_at": "2025-06-04 08:00:01",
    "created_at": "2025-06-04 08:00:00",
    "updated_at": "2025-06-04 08:00:01",
}


def legacy_schema(name: str) -> str:
    """The DDL of one legacy schema listed in spec/db/contract.yaml."""
    contract = spec.load_document(spec.DB_DIR / "contract.yaml")
    for legacy in contract["legacy_schemas"]:
        if legacy["name"] == name:
            return (spec.DB_DIR / legacy["ddl"]).read_text(encoding="utf-8")
    known = [legacy["name"] for legacy in contract["legacy_schemas"]]
    raise ValueError(f"unknown legacy schema {name!r}; spec/db/contract.yaml lists {known}")


def build_legacy_database(
    path: Path,
    *,
    user_id: str,
    project_id: str,
    other_user_id: str = "legacy-other-user",
    schema: str = "v0-before-pinned",
) -> list[dict[str, Any]]:
    """Write the fixture to `path` (which must not exist) and return the rows as inserted."""
    if path.exists():
        raise FileExistsError(f"{path} exists; the fixture never overwrites a database")
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [{**row, "user_id": user_id} for row in LEGACY_ROWS] + [{**OTHER_USER_ROW, "user_id": other_user_id}]
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.executescript(legacy_schema(schema))
        for row in rows:
            row.update(project_id=project_id, total_tokens=row["input_tokens"] + row["output_tokens"])
            columns = ", ".join(row)
            conn.execute(
                f"INSERT INTO chat_sessions ({columns}) VALUES ({', '.join('?' * len(row))})", tuple(row.values())
            )
    conn.close()
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("output", type=Path)
    parser.add_argument("--user-id", required=True)
    parser.add_argument("--project-id", required=True)
    parser.add_argument("--other-user-id", default="legacy-other-user")
    parser.add_argument("--schema", default="v0-before-pinned")
    args = parser.parse_args(argv)
    try:
        rows = build_legacy_database(
            args.output,
            user_id=args.user_id,
            project_id=args.project_id,
            other_user_id=args.other_user_id,
            schema=args.schema,
        )
    except (FileExistsError, ValueError) as error:
        parser.error(str(error))
    print(f"wrote {args.output} with {len(rows)} rows ({args.schema})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
