"""Content (STREAM-CONTENT-*): what a turn streams is what its history then holds, user messages included
(HISTORY-009)."""

from __future__ import annotations

from conformance.checks import check
from conformance.checks.blame import unless_stream_blocked
from conformance.checks.context import CheckContext
from conformance.checks.support import history


@check("content.matches_history")
async def matches_history(ctx: CheckContext) -> None:
    text = 'Conformance: "quotes", ünïcode, tab\tand\nnew line'
    session = ctx.session_id()
    streamed, sent = [], []
    # The text of a generation that calls a tool after it, that streams empty deltas, that its token limit cut.
    scripts = ["cs-tool", "cs-plain", "cs-mid-stream-error", "cs-text-then-tool", "cs-empty-deltas", "cs-finish-length"]
    for script in scripts:
        sent.append(ctx.message(script, text))
        result = await ctx.client.stream({"message": sent[-1], "session_id": session})
        ctx.findings.require(
            result.status == 200 and bool(result.events),
            "STREAM-CONTENT-001",
            f"the turn failed: {result.exchange.describe()}",
            result.exchange,
        )
        await unless_stream_blocked(
            ctx, result, script
        )  # what streamed is judged, but a turn that is no scenario is not
        streamed.append(result)
    messages = (await history(ctx, session, "HISTORY-001"))["messages"]
    users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    ctx.findings.require(
        len(users) == len(scripts),
        "HISTORY-009",
        f"expected {len(scripts)} user messages in the history, found {len(users)}",
    )
    ctx.findings.expect(
        "HISTORY-009",
        [messages[i].get("content") for i in users] == sent,
        f"the user messages differ from what was sent: {[messages[i].get('content') for i in users]!r}",
    )
    for n, result in enumerate(streamed):
        end = users[n + 1] if n + 1 < len(users) else len(messages)
        stored = "".join(m.get("content") or "" for m in messages[users[n] + 1 : end] if m.get("role") == "assistant")
        ctx.findings.expect(
            "STREAM-CONTENT-001",
            stored == result.content,
            f"turn {n + 1}: streamed {result.content!r}, the history holds {stored!r}",
            result.exchange,
        )
