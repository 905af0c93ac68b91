"""Framing (FRAME-*): status and media type, one `data:` frame per event, the end of the stream, its headers."""

from __future__ import annotations

from conformance.checks import check
from conformance.checks.context import CheckContext
from conformance.checks.support import judge_stream_rules, scenario_streams


@check("framing.frames")
async def frames(ctx: CheckContext) -> None:
    results = await scenario_streams(ctx, ["cs-plain", "cs-tool"])
    for result in results:
        ok = result.status == 200 and (result.exchange.content_type or "").startswith("text/event-stream")
        ctx.findings.expect(
            "FRAME-001", ok, f"status {result.status}, content type {result.exchange.content_type!r}", result.exchange
        )
    ctx.findings.require(all(r.completed and r.events for r in results), "FRAME-003", "a stream did not end by itself")
    judge_stream_rules(ctx, results, ["FRAME-002", "FRAME-003"])


@check("framing.headers")
async def headers(ctx: CheckContext) -> None:
    result = await ctx.client.stream({"message": ctx.message("cs-plain")})
    value = result.exchange.headers.get("cache-control", "")
    ctx.findings.expect("FRAME-004", "no-cache" in value.lower(), f"Cache-Control is {value!r}", result.exchange)
