"""Stream grammar (STREAM-ORDER-*): known event types only, nothing but `done` after `error`, `done` last."""

from __future__ import annotations

from conformance.checks import check
from conformance.checks.context import CheckContext
from conformance.checks.support import judge_stream_rules, scenario_streams


@check("grammar.order")
async def order(ctx: CheckContext) -> None:
    requirements = ["STREAM-ORDER-001", "STREAM-ORDER-002", "STREAM-ORDER-003"]
    judge_stream_rules(ctx, await scenario_streams(ctx), requirements)
