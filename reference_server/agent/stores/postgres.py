"""Every project's chat data in one PostgreSQL database, shared by the deployment's workers (--database-url).

Checkpoints go through LangGraph's own AsyncPostgresSaver, on a psycopg_pool pool with the settings it requires
(autocommit, prepare_threshold=0, mapping rows); `chat_sessions` has the contract's columns in PostgreSQL's types
(postgres_schema.sql). A session's checkpoints are those of the thread `<project_id>:<session_id>`. The busy lock
and stop requests cross workers through postgres_workers.py.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from .base import ProjectStorage
from .postgres_sessions import PostgresSessionsRepository
from .postgres_workers import STOPPED_TURN_SECONDS, Handler, WorkerLink

log = logging.getLogger(__name__)

SCHEMA = Path(__file__).with_name("postgres_schema.sql").read_text(encoding="utf-8")


def _statements(script: str) -> list[str]:
    """One statement per execute: psycopg's extended protocol takes no multi-statement string."""
    code = "\n".join(line for line in script.splitlines() if not line.lstrip().startswith("--"))
    return [statement.strip() for statement in code.split(";") if statement.strip()]


CONNECT_SECONDS = 10.0  # a server that cannot reach its database fails to start, saying so
# The workers' pools share DEPLOYMENT_POOL connections: more worker processes do not make the database faster, and
# every connection costs its worker a connect and the preparing of each statement it runs (issue 33: four workers
# of 16 connections each opened 64 for the load two workers served with 32, and streamed 0.95 of their events/s;
# 0.98 with 8 each). With its lease and listen connections, a worker holds pool + 2, so up to 16 workers stay under
# PostgreSQL's default max_connections of 100.
DEPLOYMENT_POOL = 32
POOL_MAX_SIZE = 16
POOL_MIN_SIZE = 4


def pool_size(workers: int) -> int:
    """A worker's pool: its share of DEPLOYMENT_POOL, from POOL_MIN_SIZE (more than 16 workers need a larger
    max_connections: README, "PostgreSQL and several workers") to POOL_MAX_SIZE."""
    return max(POOL_MIN_SIZE, min(POOL_MAX_SIZE, DEPLOYMENT_POOL // workers))


def _pool(url: str, max_size: int = POOL_MAX_SIZE) -> AsyncConnectionPool:
    return AsyncConnectionPool(
        url,
        min_size=1,
        max_size=max_size,
        open=False,
        kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},  # what AsyncPostgresSaver needs
    )


async def prepare_database(url: str) -> None:
    """Create or upgrade the tables, once, before any worker starts: concurrent DDL would race."""
    pool = _pool(url, max_size=2)
    await pool.open(wait=True, timeout=CONNECT_SECONDS)
    try:
        await AsyncPostgresSaver(pool).setup()
        async with pool.connection() as conn, conn.transaction():
            for statement in _statements(SCHEMA):
                await conn.execute(statement)
    finally:
        await pool.close()


class PostgresLeases:
    """SessionLeases of one project, on the worker's link (postgres_workers.py)."""

    def __init__(self, link: WorkerLink, project_id: str) -> None:
        self.link, self.project_id = link, project_id

    async def acquire(self, session_id: str) -> bool:
        return await self.link.try_lock(self.project_id, session_id)

    async def release(self, session_id: str) -> None:
        await self.link.unlock(self.project_id, session_id)

    async def held_elsewhere(self, session_id: str) -> bool:
        return await self.link.held(self.project_id, session_id)

    async def stop_elsewhere(self, session_id: str, reason: str, *, wait: bool = False) -> bool:
        if not await self.link.held(self.project_id, session_id):
            return False
        stopped = await self.link.request_stop(self.project_id, session_id, reason)
        if wait and not await self.link.wait_released(self.project_id, session_id, STOPPED_TURN_SECONDS):
            log.warning("project %s, session %s: its stopped turn still runs elsewhere", self.project_id, session_id)
        return stopped


class PostgresChatStore:
    shared = True

    def __init__(self, url: str, workers: int = 1) -> None:
        self.url = url
        self.pool = _pool(url, pool_size(workers))
        self.link = WorkerLink(url)

    async def open(self, handler: Handler) -> None:
        await self.pool.open(wait=True, timeout=CONNECT_SECONDS)
        try:
            self.saver = AsyncPostgresSaver(self.pool)
            self.link.handler = handler
            await self.link.open()
        except BaseException:
            await self.close()
            raise

    async def open_project(self, project_id: str, project_dir: Path) -> ProjectStorage:
        async def close() -> None:  # the pool and the link are the worker's, not the project's
            return None

        return ProjectStorage(
            PostgresSessionsRepository(self.pool, project_id),
            self.saver,
            PostgresLeases(self.link, project_id),
            close,
            checkpoint_prefix=f"{project_id}:",
        )

    async def announce_closed(self, project_id: str) -> None:
        """The other workers stop this project's turns too."""
        await self.link.broadcast("close", project_id, "project closed")

    async def delete_project(self, project_id: str, project_dir: Path) -> None:
        """Exactly this project's rows and checkpoints (DB-007), once no worker runs a turn of it any more."""
        await self.link.broadcast("close", project_id, "project deleted")
        if not await self.link.wait_released(project_id, None, STOPPED_TURN_SECONDS):
            log.warning("project %s: deleted while a turn of it still runs in another worker", project_id)
        repo = PostgresSessionsRepository(self.pool, project_id)
        for thread_id in await repo.thread_ids():
            await self.saver.adelete_thread(f"{project_id}:{thread_id}")
            await repo.delete(thread_id)
        async with self.pool.connection() as conn:
            await conn.execute("DELETE FROM turns_in_flight WHERE project_id = %s", (project_id,))
        shutil.rmtree(project_dir, ignore_errors=True)

    async def close(self) -> None:
        await self.link.close()
        await self.pool.close()
