"""The embedded default: each project's chat data in its own SQLite file (DB-001..007), one process."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import aiosqlite
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from gns3_copilot_generated.constants import DB_LOCATION
from reference_server.private_files import private_dir, private_file
from reference_server.storage_faults import project_database

from ..sessions_repo import ChatSessionsRepository, migrate, prepare_bookkeeping
from .base import LocalLeases, ProjectStorage

log = logging.getLogger(__name__)

DB_RELATIVE_PATH = Path(DB_LOCATION.format(project_dir="."))  # DB-001


def database_path(project_dir: Path) -> Path:
    return project_dir / DB_RELATIVE_PATH


async def _connect(path: Path) -> aiosqlite.Connection:
    conn = await aiosqlite.connect(path)
    try:
        await conn.execute("PRAGMA journal_mode=WAL")  # DB-002; a file that is not SQLite fails here
        await conn.execute("PRAGMA busy_timeout=10000")
    except BaseException:
        await conn.close()  # its thread is not a daemon: left open, the process would never exit
        raise
    return conn


async def _close(project_id: str, *conns: aiosqlite.Connection | None) -> None:
    for conn in conns:
        if conn is not None:
            try:
                await conn.close()  # stops the connection's thread even when it fails
            except Exception:
                log.exception("project %s: closing its database failed", project_id)


class SqliteChatStore:
    shared = False

    async def open(self, on_message) -> None:
        return None  # no other worker to hear from

    async def announce_closed(self, project_id: str) -> None:
        return None

    async def open_project(self, project_id: str, project_dir: Path) -> ProjectStorage:
        path = database_path(project_dir)
        private_dir(path.parent)
        private_file(path)  # 0600 before SQLite creates it: its -wal and -shm files take its mode
        repo_conn = saver_conn = None
        try:
            with project_database(project_id):
                # Two connections: the checkpointer owns its transactions, the repository its own.
                repo_conn = await _connect(path)
                repo_conn.row_factory = aiosqlite.Row
                for upgraded in await migrate(repo_conn):
                    log.info("project %s: chat_sessions upgraded from the legacy schema %s", project_id, upgraded)
                await prepare_bookkeeping(repo_conn)
                saver_conn = await _connect(path)
                saver = AsyncSqliteSaver(saver_conn)  # its checkpoints and writes, in the same file (DB-005)
                await saver.setup()
        except BaseException:
            # An open connection is a non-daemon thread: left behind, it would keep the process alive at exit.
            await _close(project_id, saver_conn, repo_conn)
            raise

        async def close() -> None:
            await _close(project_id, saver_conn, repo_conn)

        return ProjectStorage(ChatSessionsRepository(repo_conn, project_id), saver, LocalLeases(), close)

    async def delete_project(self, project_id: str, project_dir: Path) -> None:
        """The database file goes with the project's directory (DB-007)."""
        shutil.rmtree(project_dir, ignore_errors=True)

    async def close(self) -> None:
        return None
