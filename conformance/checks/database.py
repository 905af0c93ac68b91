"""The project database (DB-*, capability db_access), read from the file: its location, journal mode, schema and
indexes, the checkpointer's tables, and what deleting a session or a project removes."""

from __future__ import annotations

import asyncio

from conformance.checks import check
from conformance.checks.context import CheckContext
from conformance.checks.support import (
    controller_call,
    require_controller,
    require_db_access,
    scenario_or,
    turn,
    wait_for,
)
from conformance.harness import project_db

# --- DB-001..005 ---------------------------------------------------------------------------------------------


@check("database.contract")
async def contract(ctx: CheckContext) -> None:
    require_db_access(ctx)
    session = ctx.session_id()
    await turn(ctx, "DB-001", session, scenario_or(ctx, "cs-tool", "cs-plain"))
    path = ctx.env.database_path()
    exists = await asyncio.to_thread(path.is_file)
    ctx.findings.require(
        exists,
        "DB-001",
        f"after a completed turn in project {ctx.env.project_id}, there is no file at {path} "
        f"(spec/db/contract.yaml: {project_db.contract()['location']})",
    )
    header = await asyncio.to_thread(lambda: path.open("rb").read(len(project_db.SQLITE_HEADER)))
    ctx.findings.require(
        header == project_db.SQLITE_HEADER, "DB-001", f"{path} is not a SQLite database: it starts with {header!r}"
    )
    (mode,) = await project_db.read(path, "PRAGMA journal_mode")
    expected_mode = project_db.contract()["journal_mode"]
    ctx.findings.expect(
        "DB-002",
        str(mode[0][0]).lower() == expected_mode,
        f"PRAGMA journal_mode of {path} is {mode[0][0]!r}, expected {expected_mode!r}",
    )
    columns = await project_db.column_problems(path)
    ctx.findings.expect("DB-003", not columns, f"chat_sessions in {path}: " + "; ".join(columns))
    indexes = (
        await project_db.index_problems(path) if "no table" not in " ".join(columns) else ["no table chat_sessions"]
    )
    ctx.findings.expect("DB-004", not indexes, f"chat_sessions in {path}: " + "; ".join(indexes))

    problems = []
    for table, required in project_db.contract()["checkpointer_tables"].items():
        actual = await project_db.columns(path, table)
        if not actual:
            problems.append(f"there is no table {table}")
            continue
        missing = [c for c in required if c not in actual]
        if missing:
            problems.append(f"table {table} lacks the columns {missing} (it has {list(actual)})")
    if not problems:
        checkpoints = await project_db.count(path, "checkpoints", session)
        if checkpoints == 0:
            problems.append(f"after a completed turn of session {session}, checkpoints has no row for that thread_id")
    ctx.findings.expect("DB-005", not problems, f"{path}: " + "; ".join(problems))
    row = await project_db.rows(path, "chat_sessions", "WHERE thread_id = ?", (session,))
    ctx.findings.expect(
        "DB-001",
        len(row) == 1,
        f"after a completed turn of session {session}, chat_sessions in {path} has {len(row)} rows for it, expected 1",
    )


# --- DB-006, DB-007 -------------------------------------------------------------------------------------------


@check("database.session_delete")
async def session_delete(ctx: CheckContext) -> None:
    require_db_access(ctx)
    session = ctx.session_id()
    await turn(ctx, "DB-006", session, scenario_or(ctx, "cs-tool", "cs-plain"))
    path = ctx.env.database_path()
    tables = ("chat_sessions", "checkpoints", "writes")

    async def counts() -> dict[str, int]:
        return {table: await project_db.count(path, table, session) for table in tables}

    before = await counts()
    ctx.findings.require(
        before["chat_sessions"] == 1 and before["checkpoints"] > 0,
        "DB-006",
        f"before the delete, the rows of session {session} in {path} were {before}: expected one chat_sessions row "
        "and checkpoints, so that their removal can be shown",
    )
    deleted = await ctx.client.call("DELETE", f"/sessions/{session}", operation="deleteSession")
    ctx.findings.require_status(deleted, 204, "DB-006")

    async def gone() -> dict[str, int] | None:
        now = await counts()
        return None if any(now.values()) else now

    after = await wait_for(gone, seconds=2)
    left = await counts()
    ctx.findings.expect(
        "DB-006",
        after is not None,
        f"DELETE of session {session} answered 204, but {path} still holds rows with that thread_id: {left} "
        f"(before: {before})",
        deleted,
    )


@check("database.project_delete")
async def project_delete(ctx: CheckContext) -> None:
    require_db_access(ctx)
    require_controller(ctx)
    project_id = await ctx.env.controller.create_project(f"cs-{ctx.run}")
    await turn(ctx, "DB-007", ctx.session_id(), project_id=project_id)
    path = ctx.env.database_path(project_id)
    ctx.findings.require(
        await asyncio.to_thread(path.is_file),
        "DB-007",
        f"after a completed turn in project {project_id}, there is no database at {path} to see deleted",
    )
    deleted = await controller_call(ctx, "DELETE", f"/v3/projects/{project_id}", (204,), "DB-007")

    def leftovers() -> list[str]:
        return [str(p) for p in (path, project_db.side_file(path, "-wal")) if p.exists()]

    async def gone() -> bool:
        return not await asyncio.to_thread(leftovers)

    await wait_for(gone, seconds=3)
    left = await asyncio.to_thread(leftovers)
    ctx.findings.expect(
        "DB-007",
        not left,
        f"the controller deleted project {project_id} (204), but these files still exist 3 s later: {left}",
        deleted,
    )
