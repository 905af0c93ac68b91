"""GET {prefix}/sessions on PostgreSQL when `chat_sessions` holds 1 000 to 1 000 000 sessions of every project.

One database and one reference server (`--database-url`, 1 process) per size, all running at once; each table is
filled with one INSERT ... SELECT FROM generate_series (bench rows spread over many users and projects), the
listed user (the server's admin) owning a fixed LISTED sessions in the listed project (and as many in another
project, so that the filter on the project matters), then VACUUM ANALYZE (hint bits, visibility map and
statistics, as autovacuum leaves a table at rest). The timed requests go round the sizes, so drift hits each.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx
import psycopg
from psycopg import sql

import gns3_copilot_spec as spec
from reference_server.agent.stores.postgres_sessions import LISTING_QUERY

from .http_client import login, my_user_id, new_project
from .samples import median
from .sessions import order_problem

LISTED = 20  # sessions of the listed user in the listed project, whatever the size
LISTED_PINNED = 3
SESSIONS_PER_USER = 20  # every other user
PROJECTS = 100  # the other users' projects (the listed project is one of them)
LISTING_INDEX = "idx_sessions_listing"
WARM_UP_CALLS = 3

_COLUMNS = (
    "thread_id, user_id, project_id, title, message_count, llm_calls_count, input_tokens, output_tokens, "
    "total_tokens, last_message_at, created_at, updated_at, metadata, stats, pinned"
)
# One row per g; r1 and r2 are computed once per row (a volatile subquery is not flattened): created_at within
# 300 days, updated_at up to 30 days later. random() is seeded per fill, so a size's rows are the same every run.
_INSERT = (
    f"INSERT INTO chat_sessions ({_COLUMNS}) SELECT"
    " md5('thread-' || g)::uuid::text, {user}, {project}, 'Session ' || g,"
    " 2 + g %% 37, 1 + g %% 19, 120 * (2 + g %% 37), 40 * (2 + g %% 37), 160 * (2 + g %% 37),"
    ' {updated}, {created}, {updated}, \'{{"source": "bench"}}\'::jsonb, NULL, {pinned}'
    " FROM (SELECT g, random() AS r1, random() AS r2 FROM generate_series({first}::int, {last}::int) AS g) AS rows"
)
_CREATED = "timestamptz '2025-01-01 00:00:00+00' + r1 * interval '300 days'"
_UPDATED = f"{_CREATED} + r2 * interval '30 days'"
FILL_OTHERS = _INSERT.format(
    user="md5('user-' || g / 20)::uuid::text",  # SESSIONS_PER_USER
    project="CASE WHEN g / 20 %% 100 = 0 THEN %(project)s ELSE md5('project-' || g / 20 %% 100)::uuid::text END",
    pinned="g %% 20 < 2",
    created=_CREATED,
    updated=_UPDATED,
    first="1",
    last="%(count)s",
)
FILL_LISTED = _INSERT.format(
    user="%(user)s",
    project="%(project)s",
    pinned="g %% 20 < %(pinned)s",
    created=_CREATED,
    updated=_UPDATED,
    first="%(first)s",
    last="%(last)s",
)


@dataclass(frozen=True)
class Fill:
    rows: int
    seconds: float  # the INSERTs
    vacuum_seconds: float  # VACUUM ANALYZE
    table_mb: float  # the table and its indexes, on disk


def fill(url: str, size: int, user_id: str, project_id: str, *, seed: float = 0.25) -> Fill:
    """`size` sessions in all: LISTED of `user_id` in `project_id`, LISTED of it in another project, the rest
    SESSIONS_PER_USER per other user over PROJECTS projects."""
    others = max(0, size - 2 * LISTED)
    start = time.perf_counter()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET synchronous_commit = off")  # this session only; the server's keep theirs
        conn.execute("SET maintenance_work_mem = '256MB'")
        with conn.transaction():
            conn.execute("SELECT setseed(%s)", (seed,))
            conn.execute(FILL_OTHERS, {"count": others, "project": project_id})
            listed = {"user": user_id, "pinned": LISTED_PINNED % 20}
            first = others + 1
            conn.execute(FILL_LISTED, {**listed, "project": project_id, "first": first, "last": first + LISTED - 1})
            first += LISTED
            elsewhere = {**listed, "project": f"{project_id}-elsewhere", "first": first, "last": first + LISTED - 1}
            conn.execute(FILL_LISTED, elsewhere)
        inserted = time.perf_counter()
        conn.execute("VACUUM (ANALYZE) chat_sessions")
        vacuumed = time.perf_counter()
        (rows,) = conn.execute("SELECT count(*) FROM chat_sessions").fetchone()
        (size_bytes,) = conn.execute("SELECT pg_total_relation_size('chat_sessions')").fetchone()
    return Fill(rows, inserted - start, vacuumed - inserted, size_bytes / 1e6)


@dataclass(frozen=True)
class Plan:
    text: list[str]
    node_types: list[str]
    index_names: list[str]

    @property
    def uses_listing_index(self) -> bool:
        return LISTING_INDEX in self.index_names

    @property
    def sorts(self) -> bool:
        return any("Sort" in node for node in self.node_types)  # Sort, Incremental Sort

    @property
    def verdict(self) -> str:
        if self.uses_listing_index and not self.sorts:
            return f"YES: an index scan of {LISTING_INDEX}, no Sort node"
        used = ", ".join(sorted(set(self.index_names))) or "no index"
        return f"NO: {used}; {'a Sort node' if self.sorts else 'no Sort node'} ({', '.join(self.node_types)})"


def _nodes(plan: dict) -> list[dict]:
    return [plan, *(node for child in plan.get("Plans", []) for node in _nodes(child))]


def explain(url: str, user_id: str, project_id: str, *, generic: bool = False) -> Plan:
    """EXPLAIN (ANALYZE, BUFFERS) of LISTING_QUERY with the listed user's values: as a custom plan (the values
    inlined) or, with `generic`, as the prepared statement's generic plan (the server's connections prepare every
    statement, and PostgreSQL may switch to the generic plan after five executions)."""
    with psycopg.connect(url, autocommit=True) as conn:
        if generic:
            conn.execute("SET plan_cache_mode = force_generic_plan")
            numbered = LISTING_QUERY.replace("%s", "$1", 1).replace("%s", "$2", 1)
            conn.execute(f"PREPARE listing(text, text) AS {numbered}")
            run = "EXECUTE listing({user}, {project})"
        else:
            run = LISTING_QUERY.replace("%s", "{user}", 1).replace("%s", "{project}", 1)
        query = sql.SQL(run).format(user=sql.Literal(user_id), project=sql.Literal(project_id))
        prefix = sql.SQL("EXPLAIN (ANALYZE, BUFFERS{}) ")
        text = [row[0] for row in conn.execute(prefix.format(sql.SQL("")) + query).fetchall()]
        (document,) = conn.execute(prefix.format(sql.SQL(", FORMAT JSON")) + query).fetchone()
    document = json.loads(document) if isinstance(document, str) else document
    nodes = _nodes(document[0]["Plan"])
    indexes = [node["Index Name"] for node in nodes if "Index Name" in node]
    return Plan(text, [node["Node Type"] for node in nodes], indexes)


@dataclass
class ListingSize:
    size: int
    url: str  # the database
    base_url: str  # its server
    user_id: str = ""
    project_id: str = ""
    fill: Fill | None = None
    http_ms: list[float] = field(default_factory=list)
    listed: list[dict] = field(default_factory=list)

    @property
    def median_ms(self) -> float:
        return median(self.http_ms)


@dataclass
class ListingResults:
    calls: int
    sizes: list[ListingSize]
    plan: Plan | None = None
    generic_plan: Plan | None = None

    def problems(self) -> list[str]:
        """A size whose listing was not the listed user's LISTED sessions of the project in the contract's order."""
        found = []
        for size in self.sizes:
            if len(size.listed) != LISTED:
                found.append(f"{size.size}: listed {len(size.listed)} sessions, not {LISTED}")
            elif problem := order_problem(size.listed):
                found.append(f"{size.size}: {problem}")
        return found


async def measure(sizes: list[ListingSize], *, calls: int, log: Callable[[str], None]) -> ListingResults:
    """Fill every size's database through its running server's admin and project, then time the listing."""
    clients = [httpx.AsyncClient(base_url=size.base_url, timeout=120) for size in sizes]
    try:
        headers = []
        for size, client in zip(sizes, clients, strict=True):
            headers.append(await login(client))
            size.user_id = await my_user_id(client, headers[-1])
            size.project_id = await new_project(client, headers[-1], f"bench-listing-{size.size}")
            size.fill = fill(size.url, size.size, size.user_id, size.project_id)
            log(
                f"filled {size.fill.rows} sessions in {size.fill.seconds:.1f}s (VACUUM ANALYZE "
                f"{size.fill.vacuum_seconds:.1f}s, {size.fill.table_mb:.0f} MB with its indexes)"
            )
        paths = [spec.default_prefix().format(project_id=size.project_id) + "/sessions" for size in sizes]
        for call in range(WARM_UP_CALLS + calls):
            for size, client, header, path in zip(sizes, clients, headers, paths, strict=True):
                start = time.perf_counter()
                response = await client.get(path, headers=header)
                elapsed = (time.perf_counter() - start) * 1000
                response.raise_for_status()
                size.listed = response.json()
                if call >= WARM_UP_CALLS:
                    size.http_ms.append(elapsed)
    finally:
        for client in clients:
            await client.aclose()
    results = ListingResults(calls, sizes)
    largest = sizes[-1]
    results.plan = explain(largest.url, largest.user_id, largest.project_id)
    results.generic_plan = explain(largest.url, largest.user_id, largest.project_id, generic=True)
    return results
