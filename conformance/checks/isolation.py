"""Isolation between users and projects: another user's session answers 404 on every path endpoint and on a
stream, and is left as it was; listings hold only the caller's sessions of that project (ISOLATION-*,
LIST-001)."""

from __future__ import annotations

import contextlib
import secrets

import httpx

from ..context import CheckContext
from ..processes import HarnessError
from . import check
from .sessions import (
    answered,
    call_endpoint,
    differences,
    history,
    listed,
    listing,
    message_keys,
    path_endpoints,
    turn,
)


@check("isolation.endpoints")
async def endpoints(ctx: CheckContext) -> None:
    ctx.user("other")
    session_id = ctx.session_id()
    await turn(ctx, "ISOLATION-001", session_id)
    # Pinned by its owner, so that another user's unpin would show as well as a pin would.
    pinned = await ctx.call("PUT", f"/sessions/{session_id}/pin", operation="pinSession")
    ctx.require_status(pinned, 200, "ISOLATION-001")
    before = await listed(ctx, session_id, "ISOLATION-001")
    before_history = message_keys((await history(ctx, session_id, "ISOLATION-001", limit=1000))["messages"])
    for endpoint in path_endpoints(ctx, session_id):
        exchange = await call_endpoint(ctx, endpoint, user="other")
        ctx.expect(
            "ISOLATION-001",
            exchange.status == 404,
            f"user other on main's session {session_id}: {answered(exchange)}; expected 404",
            exchange,
        )
    after = [s for s in await listing(ctx, "ISOLATION-001") if s.get("thread_id") == session_id]
    ctx.require(
        len(after) == 1,
        "ISOLATION-001",
        f"after user other's calls, main's session {session_id} is listed {len(after)} time(s) for main, expected once",
    )
    changed = differences(before, after[0])
    ctx.expect("ISOLATION-001", not changed, f"user other's calls changed main's session: {'; '.join(changed)}")
    after_history = message_keys((await history(ctx, session_id, "ISOLATION-001", limit=1000))["messages"])
    ctx.expect(
        "ISOLATION-001",
        after_history == before_history,
        f"user other's calls changed main's history: {len(before_history)} messages before, {len(after_history)} after",
    )


@check("isolation.listing")
async def listings(ctx: CheckContext) -> None:
    ctx.user("other")
    mine, theirs = ctx.session_id("main"), ctx.session_id("other")
    await turn(ctx, "LIST-001", mine, user="main")
    await turn(ctx, "LIST-001", theirs, user="other")
    main_list = await listing(ctx, "LIST-001", user="main")
    other_list = await listing(ctx, "LIST-001", user="other")
    main_ids = {s.get("thread_id") for s in main_list}
    other_ids = {s.get("thread_id") for s in other_list}
    ctx.expect("LIST-001", mine in main_ids, f"main's session {mine} is missing from main's listing")
    ctx.expect("LIST-001", theirs in other_ids, f"other's session {theirs} is missing from other's listing")
    ctx.expect("LIST-001", theirs not in main_ids, f"other's session {theirs} is in main's listing")
    ctx.expect("LIST-001", mine not in other_ids, f"main's session {mine} is in other's listing")
    shared = sorted(str(i) for i in main_ids & other_ids)
    ctx.expect("LIST-001", not shared, f"sessions listed for both main and other: {shared[:5]}")
    for name, sessions in (("main", main_list), ("other", other_list)):
        owners = sorted({str(s.get("user_id")) for s in sessions})
        expected = ctx.user(name).user_id
        ok = len(owners) == 1 and (expected is None or owners == [expected])
        ctx.expect(
            "LIST-001",
            ok,
            f"{name}'s listing holds sessions of the users {owners}, expected only {expected or name}'s",
        )
        projects = sorted({str(s.get("project_id")) for s in sessions})
        ctx.expect(
            "LIST-001",
            projects == [ctx.env.project_id],
            f"{name}'s listing of project {ctx.env.project_id} holds sessions of the projects {projects}",
        )
    controller = ctx.env.controller
    if controller is None:
        return  # no way to make another project: the user part is judged
    project = await controller.create_project(f"conformance-listing-{secrets.token_hex(3)}")
    try:
        elsewhere = ctx.session_id("elsewhere")
        await turn(ctx, "LIST-001", elsewhere, user="main", project_id=project)
        here = {s.get("thread_id") for s in await listing(ctx, "LIST-001", user="main")}
        there = await listing(ctx, "LIST-001", user="main", project_id=project)
        there_ids = {s.get("thread_id") for s in there}
        ctx.expect(
            "LIST-001",
            elsewhere not in here,
            f"main's session {elsewhere} of project {project} is listed in project {ctx.env.project_id}",
        )
        ctx.expect(
            "LIST-001",
            there_ids == {elsewhere},
            f"main's listing of the new project {project} holds {sorted(map(str, there_ids))}, expected only "
            f"{elsewhere}",
        )
    finally:
        with contextlib.suppress(HarnessError, httpx.HTTPError):  # cleanup only: nothing is judged by it
            await controller.delete_project(project)


@check("isolation.stream")
async def stream(ctx: CheckContext) -> None:
    ctx.user("other")
    session_id = ctx.session_id()
    result = await turn(ctx, "ISOLATION-002", session_id)
    before = await listed(ctx, session_id, "ISOLATION-002")
    before_history = message_keys((await history(ctx, session_id, "ISOLATION-002", limit=1000))["messages"])
    intruder_run = f"{ctx.run}-other"
    attempt = await ctx.stream(
        {"message": ctx.message("cs-plain", "Another user's message", run=intruder_run), "session_id": session_id},
        user="other",
    )
    ctx.expect(
        "ISOLATION-002",
        attempt.status == 404 and not attempt.events,
        f"user other streaming into main's session {session_id}: status "
        f"{attempt.status if attempt.status is not None else attempt.exchange.error}, "
        f"{len(attempt.events)} event(s); expected 404 before any stream",
        attempt.exchange,
    )
    revealed = [t for t in (result.content, before.get("title")) if t and t in attempt.exchange.body]
    ctx.expect(
        "ISOLATION-002", not revealed, f"the answer to user other shows main's session: {revealed}", attempt.exchange
    )
    generations = await ctx.llm_requests(intruder_run)
    ctx.expect(
        "ISOLATION-002",
        not generations,
        f"the refused stream still reached the LLM: {len(generations)} generation(s) for user other's message",
    )
    after = await listed(ctx, session_id, "ISOLATION-002")
    changed = differences(before, after)
    ctx.expect("ISOLATION-002", not changed, f"main's session changed: {'; '.join(changed)}")
    after_history = message_keys((await history(ctx, session_id, "ISOLATION-002", limit=1000))["messages"])
    ctx.expect(
        "ISOLATION-002",
        after_history == before_history,
        f"main's history changed: {len(before_history)} messages before user other's stream, {len(after_history)} "
        "after",
    )
    theirs = [s for s in await listing(ctx, "ISOLATION-002", user="other") if s.get("thread_id") == session_id]
    ctx.expect("ISOLATION-002", not theirs, f"session {session_id} is now listed for user other")
