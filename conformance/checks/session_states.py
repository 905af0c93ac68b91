"""Sessions in each state (checks of the `sessions` area, conformance.checks.PARTS): every operation on a session
that is renamed, pinned, or running a turn, played as the table of conformance/rules/session_states.py says, each
cell on a session of its own, and judged on its answer and on its effect. The table's other cells name the checks
that judge them."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from conformance.channels.gns3_stream import StreamResult
from conformance.checks import check
from conformance.checks.blame import require_served, unless_stream_blocked
from conformance.checks.context import CheckContext
from conformance.checks.support import find_session, generation_started, setup_turn, wait_for
from conformance.checks.turns import describe, served
from conformance.harness.machine_load import stretched
from conformance.rules.operations import operation
from conformance.rules.session_states import (
    STATE_WORDS,
    Cell,
    Observed,
    cells,
    judged_requirements,
    problems,
    unplayable,
)
from conformance.transport.exchanges import Exchange, json_or_none

SETTLE = 1.0  # seconds after a running turn's stream ended before its effect is read (the suite's own wait)
SET_UP = {"renamed": ("renameSession", "SESSION-004"), "pinned": ("pinSession", "PIN-001")}


def _cell_requirements(cell: Cell) -> list[str]:
    return list(dict.fromkeys(e.requirement for e in cell.expect))


async def _prepare(ctx: CheckContext, session: str, state: str) -> None:
    """A session with a served turn, then put in `state` (renamed, pinned; `pinned` also for a running turn's
    unpin)."""
    await setup_turn(ctx, session)
    if state in SET_UP:
        operation_id, requirement = SET_UP[state]
        step = operation(operation_id)
        body = {"title": f"Set up as {state}"} if operation_id == "renameSession" else None
        exchange = await ctx.client.call(step.method, step.url(session), operation=step.id, json_body=body)
        ctx.findings.require_status(exchange, 200, requirement)


async def _all(awaitables: list[Any]) -> list[Any]:
    """Every awaitable to its end, concurrently; then the first exception (a set-up that stopped the check)."""
    results = await asyncio.gather(*awaitables, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return results


async def _history_after(ctx: CheckContext, session: str) -> tuple[int | None, int | None]:
    """The history's status and its number of messages (None unless it is a JSON object with a messages list)."""
    exchange = await ctx.client.call("GET", f"/sessions/{session}/history", operation="getSessionHistory")
    data = json_or_none(exchange.body) if exchange.status == 200 else None
    messages = data.get("messages") if isinstance(data, dict) else None
    return exchange.status, len(messages) if isinstance(messages, list) else None


async def _call(ctx: CheckContext, operation_id: str, session: str, title: str | None) -> Exchange:
    step = operation(operation_id)
    body = {"title": title} if operation_id == "renameSession" else None
    return await ctx.client.call(step.method, step.url(session), operation=step.id, json_body=body)


def _judge(ctx: CheckContext, state: str, operation_id: str, cell: Cell, seen: Observed, *shown: Exchange) -> None:
    found = problems(cell, seen)
    where = f"{operation_id} on {STATE_WORDS[state]} ({seen.session_id})"
    for requirement in judged_requirements(cell, seen):
        wrong = [why for rid, why in found if rid == requirement]
        if wrong:
            ctx.findings.expect(requirement, False, f"{where}: {'; '.join(wrong)} (the contract: {cell.says})", *shown)
        else:
            ctx.findings.passed(requirement, *shown, message=f"{where}: as the contract requires ({cell.says})")


async def _observe(
    ctx: CheckContext,
    session: str,
    before: dict[str, Any],
    before_count: int | None,
    title: str | None,
    answer: Exchange | StreamResult,
) -> Observed:
    after = await find_session(ctx, session, "LIST-001")
    history_status, count = await _history_after(ctx, session)
    grown = count is not None and before_count is not None and count > before_count
    exchange = answer.exchange if isinstance(answer, StreamResult) else answer
    body = json_or_none(exchange.body) if not isinstance(answer, StreamResult) else None
    return Observed(session, before, title, exchange.status, body, after, history_status, grown)


# --- idle states: renamed, pinned -------------------------------------------------------------------------------


async def _play_idle(ctx: CheckContext, state: str, operation_id: str, cell: Cell, session: str) -> None:
    before = await find_session(ctx, session, "LIST-001") or {}
    _, before_count = await _history_after(ctx, session)
    title = f"Renamed while {state}" if operation_id == "renameSession" else None
    if operation_id == "streamChat":
        text = f"A turn while {state}"
        answer: Exchange | StreamResult = await ctx.client.stream(
            {"message": ctx.message("cs-plain", text), "session_id": session}
        )
        await require_served(
            ctx,
            served(ctx, answer),
            answer,
            "SESSION-005",
            f"a turn on {STATE_WORDS[state]} was not served: {describe(answer)}",
            stop=False,
        )
        if not served(ctx, answer):
            return
    else:
        answer = await _call(ctx, operation_id, session, title)
    seen = await _observe(ctx, session, before, before_count, title, answer)
    exchange = answer.exchange if isinstance(answer, StreamResult) else answer
    _judge(ctx, state, operation_id, cell, seen, exchange)


@check("sessions.states")
async def states(ctx: CheckContext) -> None:
    """The cells of a renamed and of a pinned session: each operation on a session of its own, prepared first."""
    plays = [(state, op, cell) for state in ("renamed", "pinned") for op, cell in cells(state, ctx.target.capabilities)]
    sessions = [ctx.session_id(f"{state}-{op}") for state, op, _ in plays]
    # One at a time: sessions' first turns at once are CONCURRENCY-003's scenario, not this one (gns3-server's
    # first turns at once end in `error` events, which would leave these cells NOT TESTABLE).
    for session, (state, _, _) in zip(sessions, plays, strict=True):
        await _prepare(ctx, session, state)
    for session, (state, op, cell) in zip(sessions, plays, strict=True):
        await _play_idle(ctx, state, op, cell, session)
    for requirement, capability in unplayable(("renamed", "pinned"), ctx.target.capabilities).items():
        if requirement not in ctx.findings.judged():
            ctx.findings.not_testable(requirement, f"the target does not declare the capability {capability}")


# --- a session running a turn ----------------------------------------------------------------------------------


def _ended_at(result: StreamResult) -> float:
    """The monotonic time the stream ended: its `done`, else its last event, else its start."""
    if not result.arrivals:
        return result.started + result.opened
    index = result.types.index("done") if "done" in result.types else len(result.arrivals) - 1
    return result.started + result.arrivals[index]


async def _play_running(ctx: CheckContext, operation_id: str, cell: Cell, session: str) -> None:
    """A slow turn (cs-slow: a silent generation) on `session`; once its generation has begun, the operation; the
    effect once the turn's stream has ended. NOT TESTABLE for the cell when the turn had ended before the operation
    was sent, or never showed it was running."""
    before = await find_session(ctx, session, "LIST-001") or {}
    run = f"{ctx.run}-{operation_id}"
    stream = asyncio.create_task(
        ctx.client.stream({"message": ctx.message("cs-slow", "A slow turn", run=run), "session_id": session})
    )

    async def running() -> bool:
        return stream.done() or await generation_started(ctx, [run])

    await wait_for(running, seconds=15, interval=0.05)
    requirements = _cell_requirements(cell)
    if stream.done() or not await generation_started(ctx, [run]):
        result = await stream if stream.done() else None
        stream.cancel()
        if result is not None and not served(ctx, result, "cs-slow"):
            await unless_stream_blocked(ctx, result, "cs-slow")  # a slow turn is not served, nor a plain one
        why = describe(result) if result is not None else "no generation reached the fake LLM within 15 s"
        for requirement in requirements:
            ctx.findings.not_testable(
                requirement, f"{operation_id} on a running turn: the slow turn never showed it was running ({why})"
            )
        return
    title = "Renamed while a turn runs" if operation_id == "renameSession" else None
    sent_at = time.monotonic()
    answer = await _call(ctx, operation_id, session, title)
    result = await stream
    if _ended_at(result) < sent_at:
        for requirement in requirements:
            ctx.findings.not_testable(
                requirement,
                f"{operation_id} on a running turn: the turn had ended before the {operation_id} was sent, so it "
                f"did not land on a running turn: {describe(result)}",
            )
        return
    # What the turn's end writes may come a moment after its `done`: the effect is read once that has settled.
    await asyncio.sleep(stretched(SETTLE))
    seen = await _observe(ctx, session, before, None, title, answer)
    _judge(ctx, "running", operation_id, cell, seen, answer, result.exchange)


# Each cell needs its operation to land while the turn runs: one that did not is NOT TESTABLE, perhaps the run's load's
# doing, so the check is then judged again with the server to itself.
RACED = ("PIN-001", "HISTORY-001", "SESSION-004", "SESSION-006", "SESSION-007")


@check("sessions.states_running", slow=True, raced=RACED)
async def states_running(ctx: CheckContext) -> None:
    """The cells of a session running its second turn (the first one titled it, so that no automatic title comes
    at its end): each operation during a turn of its own; unpin on a session pinned first."""
    plays = cells("running", ctx.target.capabilities)
    sessions = [ctx.session_id(f"running-{op}") for op, _ in plays]
    prepared = ["pinned" if op == "unpinSession" else "with_history" for op, _ in plays]
    for session, state in zip(sessions, prepared, strict=True):  # one at a time, as in sessions.states
        await _prepare(ctx, session, state)
    # The slow turns run at once (second turns of their sessions), so that the check waits their silence once.
    await _all([_play_running(ctx, op, cell, s) for s, (op, cell) in zip(sessions, plays, strict=True)])
