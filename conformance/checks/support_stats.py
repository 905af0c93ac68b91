"""Statistics helpers shared by the check areas that judge them (stats, abort): STATS-001..004 of one session
against the fake LLM's log, at once or once a turn cut short has settled."""

from __future__ import annotations

from typing import Any

from conformance.checks.context import CheckContext
from conformance.checks.support import STATS_FIELDS, find_session, history, wait_for


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


async def stats_problems(
    ctx: CheckContext,
    session_id: str,
    *,
    what: str,
    allowed_tokens: list[tuple[int, int]] | None = None,
    requirement: str = "STATS-001",
    run: str | None = None,
) -> dict[str, str | None]:
    """STATS-001..004 for one session against the fake LLM's log of the check's run (or of `run`, the session's own
    when a check runs several sessions): the problem found per requirement (None when it holds). `allowed_tokens`:
    the (input, output) totals accepted (default: the sum of every counted generation's usage). A session that is
    not listed stops the check, failing `requirement`."""
    session = await find_session(ctx, session_id, "LIST-001")
    ctx.findings.require(session is not None, requirement, f"session {session_id} is not listed after the turn")
    messages = (await history(ctx, session_id, "HISTORY-001"))["messages"]
    counted = [m for m in messages if m.get("role") in ("user", "assistant", "tool")]
    calls, inputs, outputs = await ctx.llm.expected_usage(run)
    stats = {name: session.get(name) for name in STATS_FIELDS}
    tokens = (stats["input_tokens"], stats["output_tokens"])
    allowed = allowed_tokens or [(inputs, outputs)]
    summed = sum(tokens) if all(_integer(t) for t in tokens) else None
    return {
        "STATS-001": None
        if stats["message_count"] == len(counted)
        else f"{what}: message_count {stats['message_count']!r}, the history holds {len(counted)} messages",
        "STATS-002": None
        if stats["llm_calls_count"] == calls
        else f"{what}: llm_calls_count {stats['llm_calls_count']!r}, the fake LLM served {calls} counted "
        f"generation(s) (title counted: {ctx.target.title_counts_in_stats})",
        "STATS-003": None
        if tokens in allowed
        else f"{what}: tokens in/out {tokens[0]!r}/{tokens[1]!r}, expected {' or '.join(map(str, allowed))} (the "
        "sum of each counted generation's usage)",
        "STATS-004": None
        if summed is not None and stats["total_tokens"] == summed
        else f"{what}: total_tokens {stats['total_tokens']!r} != {tokens[0]!r} + {tokens[1]!r}",
    }


async def settled_stats_problems(
    ctx: CheckContext,
    session_id: str,
    *,
    what: str,
    cut: list[tuple[int, int]],
    requirement: str,
    seconds: float,
) -> list[str]:
    """STATS-001..004 once they hold, or what is still wrong after `seconds`: a turn cut short (a disconnect, an
    abort) is written when the server notices, which no field of the contract dates precisely. The tokens may lack
    the usage of a generation in `cut` (one stopped before its usage reached the server)."""
    last: list[str] = []

    async def probe() -> bool:
        calls, inputs, outputs = await ctx.llm.expected_usage()
        allowed = [(inputs - i, outputs - o) for i, o in cut]
        found = await stats_problems(ctx, session_id, what=what, allowed_tokens=allowed, requirement=requirement)
        last[:] = [p for p in found.values() if p]
        return not last

    await wait_for(probe, seconds=seconds, interval=0.25)
    return last
