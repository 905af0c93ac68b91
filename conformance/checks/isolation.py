"""Isolation (ISOLATION-*): another user's session answers 404 on every endpoint that names it and on a stream,
and is left exactly as it was."""

from __future__ import annotations

from conformance.checks import check
from conformance.checks.context import CheckContext
from conformance.checks.support import (
    answered,
    call_operation,
    differences,
    history,
    listed,
    listing,
    message_keys,
    turn,
)
from conformance.rules.operations import session_endpoints


@check("isolation.endpoints")
async def endpoints(ctx: CheckContext) -> None:
    ctx.user("other")
    session_id = ctx.session_id()
    await turn(ctx, "ISOLATION-001", session_id)
    # Pinned by its owner, so that another user's unpin would show as well as a pin would.
    pinned = await ctx.client.call("PUT", f"/sessions/{session_id}/pin", operation="pinSession")
    ctx.findings.require_status(pinned, 200, "ISOLATION-001")
    before = await listed(ctx, session_id, "ISOLATION-001")
    before_history = message_keys((await history(ctx, session_id, "ISOLATION-001"))["messages"])
    for endpoint in session_endpoints(ctx.target.capabilities):
        exchange = await call_operation(ctx, endpoint, session_id, user="other")
        ctx.findings.expect(
            "ISOLATION-001",
            exchange.status == 404,
            f"user other on main's session {session_id}: {answered(exchange)}; expected 404",
            exchange,
        )
    after = [s for s in await listing(ctx, "ISOLATION-001") if s.get("thread_id") == session_id]
    ctx.findings.require(
        len(after) == 1,
        "ISOLATION-001",
        f"after user other's calls, main's session {session_id} is listed {len(after)} time(s) for main, expected once",
    )
    changed = differences(before, after[0])
    ctx.findings.expect(
        "ISOLATION-001", not changed, f"user other's calls changed main's session: {'; '.join(changed)}"
    )
    after_history = message_keys((await history(ctx, session_id, "ISOLATION-001"))["messages"])
    ctx.findings.expect(
        "ISOLATION-001",
        after_history == before_history,
        f"user other's calls changed main's history: {len(before_history)} messages before, {len(after_history)} after",
    )


@check("isolation.stream")
async def stream(ctx: CheckContext) -> None:
    ctx.user("other")
    session_id = ctx.session_id()
    result = await turn(ctx, "ISOLATION-002", session_id)
    before = await listed(ctx, session_id, "ISOLATION-002")
    before_history = message_keys((await history(ctx, session_id, "ISOLATION-002"))["messages"])
    intruder_run = f"{ctx.run}-other"
    attempt = await ctx.client.stream(
        {"message": ctx.message("cs-plain", "Another user's message", run=intruder_run), "session_id": session_id},
        user="other",
    )
    ctx.findings.expect(
        "ISOLATION-002",
        attempt.status == 404 and not attempt.events,
        f"user other streaming into main's session {session_id}: status "
        f"{attempt.exchange.outcome}, "
        f"{len(attempt.events)} event(s); expected 404 before any stream",
        attempt.exchange,
    )
    revealed = [t for t in (result.content, before.get("title")) if t and t in attempt.exchange.body]
    ctx.findings.expect(
        "ISOLATION-002", not revealed, f"the answer to user other shows main's session: {revealed}", attempt.exchange
    )
    generations = await ctx.llm.requests(intruder_run)
    ctx.findings.expect(
        "ISOLATION-002",
        not generations,
        f"the refused stream still reached the LLM: {len(generations)} generation(s) for user other's message",
    )
    after = await listed(ctx, session_id, "ISOLATION-002")
    changed = differences(before, after)
    ctx.findings.expect("ISOLATION-002", not changed, f"main's session changed: {'; '.join(changed)}")
    after_history = message_keys((await history(ctx, session_id, "ISOLATION-002"))["messages"])
    ctx.findings.expect(
        "ISOLATION-002",
        after_history == before_history,
        f"main's history changed: {len(before_history)} messages before user other's stream, {len(after_history)} "
        "after",
    )
    theirs = [s for s in await listing(ctx, "ISOLATION-002", user="other") if s.get("thread_id") == session_id]
    ctx.findings.expect("ISOLATION-002", not theirs, f"session {session_id} is now listed for user other")
