"""The chat path prefix (PREFIX-*): the declared prefix serves the chat API."""

from __future__ import annotations

from conformance.checks import check
from conformance.checks.context import CheckContext


@check("prefix.served")
async def served(ctx: CheckContext) -> None:
    exchange = await ctx.client.call("GET", "/sessions", operation="listSessions")
    ctx.findings.expect(
        "PREFIX-001", exchange.status == 200, f"GET under the declared prefix answered {exchange.status}", exchange
    )
