"""Statistics (STATS-*), exact to the token against the fake LLM's log of the check's own run, after plain, tool
and several turns, for many sessions whose turns run at once, and once a turn cut short by an error or a disconnect
has ended."""

from __future__ import annotations

import asyncio

from conformance.checks import check
from conformance.checks.blame import raise_if_blocked, require_turn
from conformance.checks.context import CheckContext
from conformance.checks.support import history, scenario_or, setup_turn, turn, worker_name
from conformance.checks.support_stats import settled_stats_problems, stats_problems
from conformance.checks.turns import completed_turn
from conformance.errors import NotTestable
from conformance.rules.scenarios import UNKNOWN_TOOL, USAGE_SHAPES


async def _judge_stats(ctx: CheckContext, session_id: str, requirements: list[str], *, what: str) -> None:
    problems = await stats_problems(ctx, session_id, what=what)
    for requirement in requirements:
        ctx.findings.expect(requirement, problems[requirement] is None, problems[requirement] or "")


async def _judge_after_cut(ctx: CheckContext, session_id: str, what: str, allowed_tokens=None) -> None:
    """STATS-005: STATS-001..004 hold once a cut-short turn has ended."""
    found = await stats_problems(ctx, session_id, what=what, allowed_tokens=allowed_tokens)
    problems = [p for p in found.values() if p]
    ctx.findings.expect("STATS-005", not problems, "; ".join(problems))


@check("stats.single_turn")
async def single_turn(ctx: CheckContext) -> None:
    session = ctx.session_id()
    await turn(ctx, "STATS-001", session)
    await _judge_stats(ctx, session, ["STATS-001", "STATS-002", "STATS-003", "STATS-004"], what="one plain turn")


@check("stats.tool_turn")
async def tool_turn(ctx: CheckContext) -> None:
    session = ctx.session_id()
    await turn(ctx, "STATS-001", session, "cs-tool")
    await _judge_stats(ctx, session, ["STATS-001", "STATS-002", "STATS-003"], what="one tool turn")


@check("stats.usage_shapes")
async def usage_shapes(ctx: CheckContext) -> None:
    """A model that reports no usage counts no tokens (nothing is estimated), and usage that comes on the finish
    chunk, not after it, counts as any other."""
    session = ctx.session_id()
    for script in USAGE_SHAPES:
        await turn(ctx, "STATS-001", session, script)
    await _judge_stats(ctx, session, ["STATS-001", "STATS-002", "STATS-003"], what="turns of usage absent, on finish")


@check("stats.multi_turn")
async def multi_turn(ctx: CheckContext) -> None:
    session = ctx.session_id()
    lengths = []
    for script in ("cs-tool", "cs-plain", scenario_or(ctx, "cs-parallel", "cs-tool")):
        await turn(ctx, "SESSION-005", session, script)
        lengths.append(len((await history(ctx, session, "HISTORY-001"))["messages"]))
    ctx.findings.expect(
        "SESSION-005",
        lengths == sorted(set(lengths)) and len(set(lengths)) == 3,
        f"the history did not grow with each turn of the session: lengths {lengths}",
    )
    await _judge_stats(ctx, session, ["STATS-001", "STATS-002", "STATS-003", "STATS-004"], what="three turns")


@check("stats.error_turn")
async def error_turn(ctx: CheckContext) -> None:
    session = ctx.session_id()
    await turn(ctx, "STATS-005", session)
    for script in ("cs-llm-error", "cs-mid-stream-error"):
        result = await ctx.client.stream({"message": ctx.message(script), "session_id": session})
        ctx.findings.require(
            result.status == 200, "STATS-005", f"the error turn answered {result.status}", result.exchange
        )
    await _judge_after_cut(ctx, session, "after turns ending in errors")


@check("stats.disconnect", slow=True)
async def disconnect(ctx: CheckContext) -> None:
    session = ctx.session_id()
    await turn(ctx, "STATS-005", session)
    dribbling = await ctx.client.stream(
        {"message": ctx.message("cs-dribble"), "session_id": session}, stop_when=lambda e: e.get("type") == "content"
    )
    ctx.findings.require(
        dribbling.status == 200 and "content" in dribbling.types,
        "STATS-005",
        f"the dribbling turn did not start: {dribbling.exchange.describe()}",
        dribbling.exchange,
    )
    if "done" in dribbling.types:  # the whole turn arrived in the first read: nothing was left to cut
        raise NotTestable(
            f"the turn was sent whole before the suite could disconnect, so no disconnect cut it: {dribbling.types}"
        )
    step = ctx.env.scripts["cs-dribble"]["steps"][0]["usage"]
    # The generation cut by the disconnect may or may not have completed on the server's side.
    cut = [(0, 0), (step["input_tokens"], step["output_tokens"])]
    problems = await settled_stats_problems(
        ctx, session, what="after a client disconnect", cut=cut, requirement="STATS-005", seconds=15
    )
    ctx.findings.expect("STATS-005", not problems, "15 s after the client disconnected: " + "; ".join(problems))


@check("stats.disconnect_during_tool", slow=True, slow_tool=True)
async def disconnect_during_tool(ctx: CheckContext) -> None:
    """STATS-005 after a client disconnect while a tool runs: the slow tool's tool_start, then the suite goes."""
    session = ctx.session_id()
    await turn(ctx, "STATS-005", session)
    cut = await ctx.client.stream(
        {"message": ctx.message("cs-slow-tool"), "session_id": session},
        stop_when=lambda e: e.get("type") == "tool_start",
    )
    ctx.findings.require(
        cut.status == 200 and "tool_start" in cut.types,
        "STATS-005",
        f"the slow tool's turn did not start its tool: {cut.exchange.describe()}, events {cut.types[-5:]}",
        cut.exchange,
    )
    if "tool_end" in cut.types or "done" in cut.types:  # the tool had ended before the suite could go
        raise NotTestable(f"the tool had ended before the suite disconnected, so no disconnect cut it: {cut.types}")
    after = ctx.env.scripts["cs-slow-tool"]["steps"][1]["usage"]
    # The tool's call was complete; the generation after the tool may have been started, cut, or never made.
    allowed = [(0, 0), (after["input_tokens"], after["output_tokens"])]
    problems = await settled_stats_problems(
        ctx, session, what="after a client disconnect during a tool", cut=allowed, requirement="STATS-005", seconds=15
    )
    ctx.findings.expect("STATS-005", not problems, "15 s after the client disconnected: " + "; ".join(problems))


@check("stats.unknown_tool")
async def unknown_tool(ctx: CheckContext) -> None:
    """STATS-001..004 after a turn whose model names a tool the server does not have, however the server ends it
    (a failed tool result and the next generation, or an `error` event): the statistics count that turn too."""
    session = ctx.session_id()
    result = await ctx.client.stream({"message": ctx.message("cs-unknown-tool"), "session_id": session})
    why = f"the turn did not complete: {result.exchange.describe()}, events {result.types[-5:]}"
    ended = result.status == 200 and result.completed
    if not ended:  # nothing to count: blocked when the server serves no basic turn either, else STATS-001 fails
        await raise_if_blocked(ctx, None, ["cs-unknown-tool"], "STATS-001", why)
        ctx.findings.require(False, "STATS-001", why, result.exchange)
    how = "ended by an `error` event" if "error" in result.types else "ended normally"
    what = f"one turn whose model named the unknown tool {UNKNOWN_TOOL!r} ({how})"
    # Measured before any control turn: those run under the check's run tag, and would count in its generations.
    problems = await stats_problems(ctx, session, what=what)
    if not completed_turn(result):  # judged however it ended, unless the server serves no basic turn either
        await raise_if_blocked(ctx, None, ["cs-unknown-tool"], "STATS-001", why)
    for requirement in ("STATS-001", "STATS-002", "STATS-003", "STATS-004"):
        ctx.findings.expect(requirement, problems[requirement] is None, problems[requirement] or "")


@check("stats.declared_title_counting")
async def declared_title_counting(ctx: CheckContext) -> None:
    ctx.findings.expect(
        "STATS-006",
        isinstance(ctx.target.declarations.get("title_counts_in_stats"), bool),
        "the target does not declare title_counts_in_stats",
    )


CONCURRENT_SESSIONS = 12  # sessions whose turns run at once, each turn on a connection of its own


@check("stats.concurrent_sessions")
async def concurrent_sessions(ctx: CheckContext) -> None:
    """STATS-001..004 of many sessions whose turns run at the same time, each turn on a new connection of its own
    (as a server of several processes behind one port gets them, each turn perhaps in another process): two turns
    per session, the sessions' turns of three kinds (two plain, plain then tool, two tool), so that statistics
    written to the wrong session, or lost between two writes, show; each session is judged against the fake LLM's
    log of its own run tag. One turn first, alone, so that the project is in use before the burst: what is judged
    is the statistics, not a server's setting up of a new project (gns3-server 3.1.0a1 answers some of many first
    turns at once in a new project with `no such table: chat_sessions`)."""
    await setup_turn(ctx, ctx.session_id("first"))
    tool = scenario_or(ctx, "cs-tool", "cs-plain")
    plans = [("cs-plain", "cs-plain"), ("cs-plain", tool), (tool, tool)]

    async def one(index: int) -> tuple[str, str]:
        session, run = ctx.session_id(f"c{index}"), f"{ctx.run}-c{index}"
        for number, script in enumerate(plans[index % len(plans)], start=1):
            text = f"Turn {number} of session {index}"
            body = {"message": ctx.message(script, text, run=run), "session_id": session}
            await require_turn(ctx, await ctx.client.stream(body, fresh=True), "STATS-001")
        return session, run

    outcomes = await asyncio.gather(*(one(index) for index in range(CONCURRENT_SESSIONS)), return_exceptions=True)
    for outcome in outcomes:  # every session's turns have ended: the first that could not be made stops the check
        if isinstance(outcome, BaseException):
            raise outcome
    found: dict[str, list[str]] = {}
    for session, run in outcomes:
        what = f"session {session} (two turns, while {CONCURRENT_SESSIONS - 1} other sessions ran theirs)"
        for requirement, problem in (await stats_problems(ctx, session, what=what, run=run)).items():
            if problem:
                found.setdefault(requirement, []).append(problem)
    named = {worker_name(e) for e in ctx.client.exchanges if e.method == "POST"}
    spread = f"; the turns were served by {len(named)} worker processes (X-Copilot-Worker)" if None not in named else ""
    for requirement in ("STATS-001", "STATS-002", "STATS-003", "STATS-004"):
        problems = found.get(requirement, [])
        if not problems:
            ctx.findings.passed(requirement, message=f"all {CONCURRENT_SESSIONS} sessions exact{spread}")
            continue
        message = f"{len(problems)} of {CONCURRENT_SESSIONS} sessions: " + "; ".join(problems)
        ctx.findings.expect(requirement, False, message)
