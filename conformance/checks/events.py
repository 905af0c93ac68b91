"""Events (EVENT-*): every event validates against its schema, and carries the one session id of its stream.

EVENT-001 is judged by conformance.rules.stream_events on every event of every stream the run reads; this check makes
sure every scenario's stream is among them."""

from __future__ import annotations

from conformance.checks import check
from conformance.checks.blame import require_turn
from conformance.checks.context import CheckContext
from conformance.checks.support import judge_stream_rules, scenario_streams
from conformance.rules.stream_events import event_violations


def _kind(event: object) -> str:
    return str(event.get("type")) if isinstance(event, dict) else type(event).__name__


@check("events.schema")
async def schema(ctx: CheckContext) -> None:
    results = await scenario_streams(ctx)
    for result in results:
        ctx.findings.require(
            bool(result.events), "EVENT-001", f"no events: {result.exchange.describe()}", result.exchange
        )
        errors = [
            f"event {v.index} ({_kind(result.events[v.index])}): {v.message}" for v in event_violations(result.events)
        ]
        ctx.findings.expect("EVENT-001", not errors, "; ".join(errors), result.exchange)


@check("events.session_ids")
async def session_ids(ctx: CheckContext) -> None:
    results = await scenario_streams(ctx, ["cs-plain", "cs-tool"])
    given = ctx.session_id("given")
    results.append(await ctx.client.stream({"message": ctx.message("cs-plain"), "session_id": given}))
    for result in results:
        await require_turn(ctx, result, "EVENT-002")
    judge_stream_rules(ctx, results, ["EVENT-002", "EVENT-003", "EVENT-004"])
    last = results[-1]
    ctx.findings.expect(
        "EVENT-004",
        all(e.get("session_id", given) == given for e in last.events),
        f"events carry another session id than the one requested ({given})",
        last.exchange,
    )
