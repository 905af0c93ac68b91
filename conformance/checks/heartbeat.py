"""Heartbeat (HEARTBEAT-*): a declared interval, and a `heartbeat` event whenever the turn is silent that long."""

from __future__ import annotations

from conformance.checks import check
from conformance.checks.blame import require_turn
from conformance.checks.context import CheckContext
from conformance.errors import NotTestable


@check("heartbeat.sent", slow=True, timed=("HEARTBEAT-001", "HEARTBEAT-003"))
async def sent(ctx: CheckContext) -> None:
    interval = ctx.target.heartbeat_interval
    result = await ctx.client.stream({"message": ctx.message("cs-slow")})
    await require_turn(ctx, result, "HEARTBEAT-001")
    beats = result.types.count("heartbeat")
    ctx.findings.expect(
        "HEARTBEAT-001",
        beats >= 1,
        f"a silence of {ctx.env.scripts['cs-slow']['steps'][0]['delay_before_ms']}"
        f" ms at a declared interval of {interval} s brought no heartbeat",
        result.exchange,
    )
    # From the stream's start (its headers), then between frames: the time before the headers is the server's work
    # on the request, not a silence of the stream.
    marks = [result.opened, *result.arrivals]
    gaps = [b - a for a, b in zip(marks, marks[1:], strict=False)]
    worst = max(gaps) if gaps else 0.0
    ctx.findings.expect(
        "HEARTBEAT-003",
        worst <= interval + 1.0,
        f"a gap of {worst:.2f} s between frames (declared interval {interval} s)",
        result.exchange,
    )


@check("heartbeat.declared_interval")
async def declared_interval(ctx: CheckContext) -> None:
    ctx.findings.expect(
        "HEARTBEAT-002",
        float(ctx.target.declarations.get("heartbeat_interval", 0)) > 0,
        "the target does not declare heartbeat_interval",
    )


@check("heartbeat.during_tool", slow=True, timed=("HEARTBEAT-001",), slow_tool=True)
async def during_tool(ctx: CheckContext) -> None:
    """A silent tool: nothing is sent while the declared slow tool runs, so heartbeats must be, as in a silent
    generation. The silence is the call's run, from its last `tool_call` event to its `tool_end`."""
    interval = ctx.target.heartbeat_interval
    result = await ctx.client.stream({"message": ctx.message("cs-slow-tool")})
    await require_turn(ctx, result, "HEARTBEAT-001")
    calls = [i for i, kind in enumerate(result.types) if kind == "tool_call"]
    ends = [i for i, kind in enumerate(result.types) if kind == "tool_end"]
    if not calls or not ends or ends[0] < calls[-1]:
        raise NotTestable(f"the slow tool's turn has no tool_call then tool_end to time its run: {result.types}")
    ran = result.arrivals[ends[0]] - result.arrivals[calls[-1]]
    if ran < interval + 1.0:  # no heartbeat was due (the rule's tolerance: one second past the interval)
        raise NotTestable(
            f"the slow tool ran {ran:.2f} s, not over the declared heartbeat interval of {interval} s plus 1 s: no "
            "heartbeat was due (declare declarations.tools.slow with arguments that make it wait longer)"
        )
    beats = result.types[calls[-1] : ends[0]].count("heartbeat")
    ctx.findings.expect(
        "HEARTBEAT-001",
        beats >= 1,
        f"the slow tool ran {ran:.2f} s between its tool_call and its tool_end at a declared interval of {interval} s, "
        "and no heartbeat came meanwhile",
        result.exchange,
    )
