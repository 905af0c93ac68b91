"""Heartbeat (HEARTBEAT-*): a declared interval, and a `heartbeat` event whenever the turn is silent that long."""

from __future__ import annotations

from conformance.checks import check
from conformance.checks.blame import require_turn
from conformance.checks.context import CheckContext


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
