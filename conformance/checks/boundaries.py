"""Input, by construction (inputs.boundaries, a part of the `inputs` area): every bounded value of every request of
the GNS3 chat API, at, just inside and just outside each bound (and zero where zero is legal), as
conformance/rules/boundaries.py derives the cases from openapi.yaml, on every endpoint that takes the value, judged
under the rule that states the bound (INPUT-001, INPUT-003, SESSION-003, SESSION-004, HISTORY-006/007); a value at
its bound is a value (temperature 0 reaches the model as 0, INPUT-005)."""

from __future__ import annotations

import math
from typing import Any

from conformance.channels.gns3_stream import StreamResult
from conformance.checks import check
from conformance.checks.blame import require_served
from conformance.checks.context import CheckContext
from conformance.checks.support import answered, call_operation, setup_turn, valid_body
from conformance.checks.turns import completed_turn, describe, run_tag, served
from conformance.rules import boundaries as bounds_rules
from conformance.rules.operations import Operation, operation, session_endpoints
from conformance.transport.exchanges import Exchange, json_or_none

TAG = "[[fake-llm:"


def _value(ctx: CheckContext, case: bounds_rules.Case, base: Any) -> Any:
    """The case's value: a message keeps its fake-LLM tag at its end when it fits (shorter, it plays the default
    script); any other string ends with the check's run, so that ids of one length differ from run to run."""
    if isinstance(base, str) and TAG in base:
        return bounds_rules.value_of(case, base)
    return bounds_rules.value_of(case, ctx.run, whole=False)


def _base_of(ctx: CheckContext, chosen: Operation, home: str, run: str) -> Any:
    if chosen.id == "streamChat":  # under the case's own run tag: the fake LLM's log tells its generations
        return {"message": ctx.message("cs-plain", run=run), "session_id": home}
    return valid_body(ctx, chosen, home)


async def _send(ctx: CheckContext, case, use, home: str, run: str) -> tuple[Any, Exchange, StreamResult | None, Any]:
    """Send the case's value where `use` takes it: (the value, the answer, the stream's result, the body sent)."""
    chosen = operation(use.operation)
    body = _base_of(ctx, chosen, home, run)
    if use.where == "body":
        base = body
        for part in use.name:
            base = base.get(part) if isinstance(base, dict) else None
        value = _value(ctx, case, base)
        body = bounds_rules.placed(body, use.name, value)
    else:
        value = _value(ctx, case, None)
    if chosen.id == "streamChat":
        result = await ctx.client.stream(body)
        return value, result.exchange, result, body
    session = value if use.where == "path" else home
    params = {use.name[0]: value} if use.where == "query" else None
    return value, await call_operation(ctx, chosen, session, json_body=body, params=params), None, body


async def _judge_case(ctx: CheckContext, case, use, home: str, label: str) -> None:
    run = run_tag(ctx, label)
    value, exchange, result, body = await _send(ctx, case, use, home, run)
    what = f"{use.describe()} of {case.describe()}"
    if not case.accepted:
        # The bound's rule says "answered 422": the status is its own; the refusal's body and code are the error
        # rules' (ERROR-001/002, judged by the errors checks and on every answer), not blamed twice here.
        status, _code = bounds_rules.refusals()[use.operation]
        ok = exchange.status == status
        expected = str(status)
        ctx.findings.expect(case.requirement, ok, f"{what}: {answered(exchange)}; expected {expected}", exchange)
        return
    if result is not None:  # a turn: served, in the session it names
        tagged = TAG in body["message"]
        ok = (served(ctx, result) if tagged else completed_turn(result)) and result.session_id == body["session_id"]
        why = f"{what}: not served as a turn of session {body['session_id'][:40]}: {describe(result)}"
        await require_served(ctx, ok, result, case.requirement, why, stop=False)
        effect = case.bound.effect
        if ok and tagged and effect is not None and effect.capability in ctx.target.capabilities:
            used = [g.get(effect.log_field) for g in await ctx.llm.main_requests(run)]
            reached = bool(used) and all(isinstance(v, int | float) and math.isclose(v, value) for v in used)
            ctx.findings.expect(
                effect.requirement,
                reached,
                f"{what}: the turn's generations reached the model with {effect.log_field} {used}, expected {value!r} "
                "(a value at its bound is a value, not 'unset')",
                exchange,
            )
        return
    successes = bounds_rules.successes(operation(use.operation).statuses)
    answer = json_or_none(exchange.body)
    echoed = use.where != "body" or not isinstance(answer, dict) or answer.get(use.name[-1], value) == value
    ctx.findings.expect(
        case.requirement,
        exchange.status in successes and echoed,
        f"{what}: {answered(exchange)}; expected {' or '.join(map(str, sorted(successes)))}"
        + ("" if use.where != "body" else " with the value as sent"),
        exchange,
    )


@check("inputs.boundaries")
async def boundaries(ctx: CheckContext) -> None:
    """Each bound of the requests of openapi.yaml, at, just inside and just outside it (and zero where legal), on
    every endpoint that takes it: a bound the contract gains is judged here without a new check. Accepted values
    run in sessions the check deletes: its own, and those the ids at their bounds name (their path cases delete
    them last)."""
    home = ctx.session_id("bounds")
    await setup_turn(ctx, home)
    order = [op.id for op in session_endpoints(ctx.target.capabilities)]  # the session's DELETE last
    for n, case in enumerate(bounds_rules.table()):
        uses = [u for u in case.bound.uses if case.applies_to(u) and (u.where != "path" or u.operation in order)]
        uses.sort(key=lambda u: (u.where == "path", order.index(u.operation) if u.where == "path" else 0))
        for m, use in enumerate(uses):
            await _judge_case(ctx, case, use, home, f"b{n}-{m}")
    for bound in {case.bound for case in bounds_rules.table()}:
        effect = bound.effect
        if effect is not None and effect.requirement not in ctx.findings.judged():
            ctx.findings.not_testable(
                effect.requirement, f"the target does not declare the capability {effect.capability}"
            )
    await ctx.client.call("DELETE", f"/sessions/{home}", operation="deleteSession")
