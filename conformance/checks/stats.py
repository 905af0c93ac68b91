"""Statistics, exact to the token against the fake LLM's log of the check's own run (STATS-001..005)."""

from __future__ import annotations

from ..context import CheckContext
from . import check


async def _stats_problems(
    ctx: CheckContext, session_id: str, *, what: str, tokens_alternatives: list[tuple[int, int]] | None = None
) -> dict[str, str | None]:
    """STATS-001..004 for one session: the problem found per requirement (None when it holds)."""
    session = await ctx.session(session_id)
    ctx.require(session is not None, "STATS-001", f"session {session_id} is not listed after the turn")
    history = (await ctx.history(session_id, limit=1000))["messages"]
    counted = [m for m in history if m.get("role") in ("user", "assistant", "tool")]
    calls, inputs, outputs = await ctx.expected_usage()
    tokens = (session["input_tokens"], session["output_tokens"])
    allowed = tokens_alternatives or [(inputs, outputs)]
    return {
        "STATS-001": None
        if session["message_count"] == len(counted)
        else f"{what}: message_count {session['message_count']}, the history holds {len(counted)} messages",
        "STATS-002": None
        if session["llm_calls_count"] == calls
        else f"{what}: llm_calls_count {session['llm_calls_count']}, the fake LLM served {calls} counted generation(s) "
        f"(title counted: {ctx.target.title_counts_in_stats})",
        "STATS-003": None
        if tokens in allowed
        else f"{what}: tokens in/out {tokens[0]}/{tokens[1]}, expected {' or '.join(map(str, allowed))} "
        "(the sum of each "
        "counted generation's usage)",
        "STATS-004": None
        if session["total_tokens"] == sum(tokens)
        else f"{what}: total_tokens {session['total_tokens']} != {tokens[0]} + {tokens[1]}",
    }


async def _judge_stats(ctx: CheckContext, session_id: str, requirements: list[str], *, what: str) -> None:
    problems = await _stats_problems(ctx, session_id, what=what)
    for requirement in requirements:
        ctx.expect(requirement, problems[requirement] is None, problems[requirement] or "")


@check("stats.single_turn")
async def single_turn(ctx: CheckContext) -> None:
    session = ctx.session_id()
    ctx.require_stream(await ctx.stream({"message": ctx.message("cs-plain"), "session_id": session}), "STATS-001")
    await _judge_stats(ctx, session, ["STATS-001", "STATS-002", "STATS-003", "STATS-004"], what="one plain turn")


@check("stats.tool_turn")
async def tool_turn(ctx: CheckContext) -> None:
    session = ctx.session_id()
    ctx.require_stream(await ctx.stream({"message": ctx.message("cs-tool"), "session_id": session}), "STATS-001")
    await _judge_stats(ctx, session, ["STATS-001", "STATS-002", "STATS-003"], what="one tool turn")


@check("stats.multi_turn")
async def multi_turn(ctx: CheckContext) -> None:
    session = ctx.session_id()
    lengths = []
    for script in ("cs-tool", "cs-plain", "cs-parallel" if "cs-parallel" in ctx.env.scripts else "cs-tool"):
        ctx.require_stream(await ctx.stream({"message": ctx.message(script), "session_id": session}), "SESSION-005")
        lengths.append(len((await ctx.history(session, limit=1000))["messages"]))
    ctx.expect(
        "SESSION-005",
        lengths == sorted(set(lengths)) and len(set(lengths)) == 3,
        f"the history did not grow with each turn of the session: lengths {lengths}",
    )
    await _judge_stats(ctx, session, ["STATS-001", "STATS-002", "STATS-003", "STATS-004"], what="three turns")


@check("stats.error_turn")
async def error_turn(ctx: CheckContext) -> None:
    session = ctx.session_id()
    ctx.require_stream(await ctx.stream({"message": ctx.message("cs-plain"), "session_id": session}), "STATS-005")
    for script in ("cs-llm-error", "cs-mid-stream-error"):
        result = await ctx.stream({"message": ctx.message(script), "session_id": session})
        ctx.require(result.status == 200, "STATS-005", f"the error turn answered {result.status}", result.exchange)
    await _judge_problems(ctx, session, "after turns ending in errors")


async def _judge_problems(ctx: CheckContext, session_id: str, what: str, alternatives=None) -> None:
    """STATS-005: STATS-001..004 hold once a cut-short turn has ended."""
    problems = [
        p for p in (await _stats_problems(ctx, session_id, what=what, tokens_alternatives=alternatives)).values() if p
    ]
    ctx.expect("STATS-005", not problems, "; ".join(problems))


@check("stats.disconnect", slow=True)
async def disconnect(ctx: CheckContext) -> None:
    session = ctx.session_id()
    ctx.require_stream(await ctx.stream({"message": ctx.message("cs-plain"), "session_id": session}), "STATS-005")
    before = await ctx.session(session)
    cut = await ctx.stream(
        {"message": ctx.message("cs-dribble"), "session_id": session}, stop_when=lambda e: e.get("type") == "content"
    )
    ctx.require(
        cut.status == 200 and "content" in cut.types,
        "STATS-005",
        f"the dribbling turn did not start: {cut.exchange.describe()}",
        cut.exchange,
    )

    async def turn_ended():
        now = await ctx.session(session)
        return now if now and now["updated_at"] != before["updated_at"] else None

    ended = await ctx.wait_for(turn_ended, seconds=15)
    ctx.require(
        ended is not None,
        "STATS-005",
        "15 s after the client disconnected, the session's statistics had not changed (updated_at unchanged)",
    )
    calls, inputs, outputs = await ctx.expected_usage()
    step = ctx.env.scripts["cs-dribble"]["steps"][0]["usage"]
    # The generation cut by the disconnect may or may not have completed on the server's side.
    alternatives = [(inputs, outputs), (inputs - step["input_tokens"], outputs - step["output_tokens"])]
    await _judge_problems(ctx, session, "after a client disconnect", alternatives)
