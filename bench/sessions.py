"""GET {prefix}/sessions latency against the number of sessions in the project, and the listing query's plan.

The reference server runs in this process behind httpx's ASGI transport (no socket): the latency is the
server's work for one request (authentication, project check, query, validation, JSON) plus httpx's in-process
overhead, the same at every size, so the ratio between sizes shows how the listing scales.
"""

from __future__ import annotations

import shutil
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx

import gns3_copilot_spec as spec
from reference_server.agent.service import database_path
from reference_server.agent.sessions_repo import LISTING_INDEX, LISTING_QUERY
from reference_server.app import create_app
from reference_server.settings import Settings

from .fill import FillReport, fill
from .http_client import login, my_user_id, new_project
from .samples import median

WARM_UP_CALLS = 3


@dataclass(frozen=True)
class QueryPlan:
    rows: list[str]

    @property
    def sorts(self) -> bool:
        return any("TEMP B-TREE" in row for row in self.rows)

    @property
    def index(self) -> str | None:
        for row in self.rows:
            if row.startswith("SEARCH") and " INDEX " in row:
                return row.split(" INDEX ", 1)[1].split(" ", 1)[0]
        return None

    @property
    def index_serves_filter_and_order(self) -> bool:
        return self.index is not None and not self.sorts


@dataclass
class SizeResult:
    size: int
    fill: FillReport
    http_ms: list[float]
    sql_ms: list[float]
    listed: int
    order_problem: str | None  # None when pinned sessions come first, each group newest first


def order_problem(sessions: list[dict]) -> str | None:
    """The listing's order as the contract states it: pinned first, then the most recently updated."""
    keys = [(bool(s["pinned"]), s["updated_at"]) for s in sessions]
    for position, (before, after) in enumerate(zip(keys, keys[1:], strict=False)):
        if before < after:
            return f"session {position + 1} sorts before {position} ({before} < {after})"
    return None


@dataclass
class SessionsResults:
    calls: int
    sizes: list[SizeResult] = field(default_factory=list)
    plan: QueryPlan | None = None
    plan_without_listing_index: QueryPlan | None = None
    sql_ms_without_listing_index: list[float] = field(default_factory=list)


def explain(conn: sqlite3.Connection, params: tuple[str, str]) -> QueryPlan:
    return QueryPlan([row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {LISTING_QUERY}", params)])


def time_query(
    conn: sqlite3.Connection, params: tuple[str, str], calls: int, *, warm_up: int = WARM_UP_CALLS
) -> list[float]:
    """The listing query alone, fetched whole, as the repository runs it (in milliseconds)."""
    timings = []
    for _ in range(warm_up + calls):
        start = time.perf_counter()
        conn.execute(LISTING_QUERY, params).fetchall()
        timings.append((time.perf_counter() - start) * 1000)
    return timings[warm_up:]


def _listing_index_name() -> str:
    return LISTING_INDEX.split(" ON ", 1)[0].split()[-1]


@dataclass
class _Project:
    size: int
    project_id: str
    db: Path
    url: str
    report: FillReport
    http_ms: list[float] = field(default_factory=list)
    sql_ms: list[float] = field(default_factory=list)
    listed: list[dict] = field(default_factory=list)


async def run(workdir: Path, *, sizes: list[int], calls: int, log: Callable[[str], None]) -> SessionsResults:
    """One project per size, all filled first; then the calls go round the sizes, so drift hits every size."""
    settings = Settings(data_dir=workdir / "sessions-data", log_level="warning")
    app = create_app(settings)
    results = SessionsResults(calls)
    projects: list[_Project] = []
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://reference", timeout=120) as client:
            headers = await login(client)
            user_id = await my_user_id(client, headers)
            for size in sizes:
                project_id = await new_project(client, headers, f"bench-sessions-{size}")
                db = database_path(settings.projects_dir / project_id)
                report = fill(db, project_id, user_id, size)
                log(f"filled {report.rows} sessions of {report.users} users in {report.seconds:.2f}s")
                url = spec.default_prefix().format(project_id=project_id) + "/sessions"
                projects.append(_Project(size, project_id, db, url, report))
            connections = [sqlite3.connect(project.db) for project in projects]
            try:
                for call in range(WARM_UP_CALLS + calls):
                    for project, conn in zip(projects, connections, strict=True):
                        start = time.perf_counter()
                        response = await client.get(project.url, headers=headers)
                        elapsed = (time.perf_counter() - start) * 1000
                        response.raise_for_status()
                        project.listed = response.json()
                        sql = time_query(conn, (user_id, project.project_id), 1, warm_up=0)
                        if call >= WARM_UP_CALLS:
                            project.http_ms.append(elapsed)
                            project.sql_ms.extend(sql)
            finally:
                for conn in connections:
                    conn.close()
    for project in projects:
        if len(project.listed) != project.report.caller_rows:
            raise RuntimeError(f"GET /sessions listed {len(project.listed)} sessions, not {project.report.caller_rows}")
        problem = order_problem(project.listed)
        results.sizes.append(
            SizeResult(project.size, project.report, project.http_ms, project.sql_ms, len(project.listed), problem)
        )
    if projects:
        largest = projects[-1]
        params = (user_id, largest.project_id)
        with sqlite3.connect(largest.db) as conn:
            results.plan = explain(conn, params)
        copy = workdir / "without-listing-index.db"  # a copy: the server's database is never changed
        shutil.copyfile(largest.db, copy)
        with sqlite3.connect(copy) as conn:
            conn.execute(f"DROP INDEX IF EXISTS {_listing_index_name()}")
            results.plan_without_listing_index = explain(conn, params)
            results.sql_ms_without_listing_index = time_query(conn, params, calls)
    return results


def medians(result: SizeResult) -> tuple[float, float]:
    return median(result.http_ms), median(result.sql_ms)
