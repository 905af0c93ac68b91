"""In-stream errors (ERRSTREAM-*): a turn that fails after the stream began ends with one `error` then `done`,
and the session serves its next turn."""

from __future__ import annotations

from conformance.checks import check
from conformance.checks.blame import require_served
from conformance.checks.context import CheckContext


@check("stream_errors.error_then_done")
async def error_then_done(ctx: CheckContext) -> None:
    session = ctx.session_id()
    for script in ("cs-llm-error", "cs-mid-stream-error"):
        result = await ctx.client.stream({"message": ctx.message(script), "session_id": session})
        ok = result.status == 200 and result.types[-2:] == ["error", "done"] and result.types.count("error") == 1
        ctx.findings.expect(
            "ERRSTREAM-001",
            ok,
            f"expected 200 and one `error` then `done`; got {result.status} {result.types[-4:]}",
            result.exchange,
        )
    after = await ctx.client.stream({"message": ctx.message("cs-plain"), "session_id": session})
    ok = after.status == 200 and after.completed and bool(after.events) and "error" not in after.types
    await require_served(
        ctx,
        ok,
        after,
        "ERRSTREAM-002",
        f"the next turn after an error did not complete: {after.status} {after.types[-4:]}",
        stop=False,
    )
