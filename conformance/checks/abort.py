"""Abort (ABORT-*, capability `abort`): a running turn stops soon and ends with `done`, the statistics still
hold and the session goes on, also when the abort comes on a connection of its own (which a server of several
processes may give to another process than the turn's); aborting an idle session changes nothing; the answer says
which it was."""

from __future__ import annotations

import asyncio
import math
import time
from dataclasses import dataclass
from typing import Any

from conformance.channels.gns3_stream import StreamResult
from conformance.checks import check
from conformance.checks.blame import require_served, unless_stream_blocked
from conformance.checks.context import CheckContext
from conformance.checks.support import (
    find_session,
    generation_started,
    history,
    require_capability,
    scenario_or,
    setup_turn,
    wait_for,
    worker,
    worker_name,
)
from conformance.checks.support_stats import settled_stats_problems
from conformance.checks.turns import describe, script_text, served
from conformance.errors import Blocked, NotTestable
from conformance.harness.machine_load import stretched
from conformance.harness.preflight import SLOW_TOOL_AT_LEAST
from conformance.transport.exchanges import Exchange, json_or_none

ABORT_WITHIN = 5.0  # seconds (ABORT-002)


async def _abort(ctx: CheckContext, session_id: str, *, fresh: bool = False) -> Exchange:
    return await ctx.client.call("POST", f"/sessions/{session_id}/abort", operation="abortSessionTurn", fresh=fresh)


def _judge_answer(ctx: CheckContext, exchange: Exchange, requirement: str, aborted: bool, what: str) -> None:
    """`requirement` (ABORT-002 or -003): the abort answers 200; ABORT-005: its body says whether a turn was
    stopped. (The body's shape, `session_id` included, is CONTRACT-001's, judged for every exchange.)"""
    ctx.findings.expect(
        requirement, exchange.status == 200, f"{what}: answered {exchange.excerpt()}, expected 200", exchange
    )
    if exchange.status == 200:
        body = json_or_none(exchange.body)
        value = body.get("aborted", "(absent)") if isinstance(body, dict) else "(no JSON object)"
        ctx.findings.expect(
            "ABORT-005",
            value is aborted,
            f"{what}: the answer {exchange.body[:300]} has `aborted` {value!r}, expected {str(aborted).lower()}",
            exchange,
        )


@dataclass
class _Aborted:
    """An abort that reached a running turn: its answer, the turn's stream read to its end, and what followed."""

    answer: Exchange
    result: StreamResult
    aborted_at: float  # monotonic time the abort was sent
    ended: float  # monotonic time the stream ended (its `done`, else its end)
    later: list[dict[str, Any]]  # the turn's generations after its first (the fake LLM's log)
    answered_clock: float = math.inf  # wall-clock time the abort's answer came back (the fake LLM's clock is one too)

    @property
    def went_on(self) -> list[dict[str, Any]]:
        """The later generations that began once the server had answered the abort: it surely had the abort then.
        One that began between the abort's sending and its answer may have begun before the abort reached the
        server (on a busy machine a request can take seconds to arrive): it shows nothing either way."""
        return [r for r in self.later if r.get("received_at", math.inf) >= self.answered_clock]

    @property
    def undecided(self) -> bool:
        """Whether the turn went on only with generations that may have begun before the abort reached the server."""
        return bool(self.later) and not self.went_on


async def _abort_running_turn(ctx: CheckContext, scenario: str, session: str, run: str, *, fresh: bool) -> _Aborted:
    """Start a turn of `scenario` under `run`, wait until it runs, abort it and read its stream to its end; with
    `fresh`, the stream and the abort each on a new connection of its own. Stops the check where the turn never ran
    (ABORT-002, or blocked) or where the abort did not reach it running (NotTestable)."""
    running = asyncio.Event()

    def observe(event: dict[str, Any]) -> bool:
        if scenario == "cs-slow-tool" and event.get("type") == "tool_start":  # the slow tool runs
            running.set()
        return False  # never disconnect

    async def generating() -> None:  # cs-slow: the fake LLM holds the turn's generation in its silence
        while not await generation_started(ctx, [run]):
            await asyncio.sleep(0.05)
        running.set()

    stream = asyncio.create_task(
        ctx.client.stream(
            {"message": ctx.message(scenario, run=run), "session_id": session}, stop_when=observe, fresh=fresh
        )
    )
    signals = [asyncio.create_task(running.wait())]
    if scenario == "cs-slow":
        signals.append(asyncio.create_task(generating()))
    waited = stretched(15)  # the suite's own wait, longer on a busy machine
    await asyncio.wait([stream, *signals], timeout=waited, return_when=asyncio.FIRST_COMPLETED)
    for signal in signals:
        signal.cancel()
    if not running.is_set():
        result = await stream if stream.done() else None
        stream.cancel()
        sign = "a tool_start event" if scenario == "cs-slow-tool" else "its generation reaching the fake LLM"
        if result is not None:  # the turn ended first: it may be the server's basic turns that fail
            await unless_stream_blocked(ctx, result, scenario)
        ctx.findings.require(
            False,
            "ABORT-002",
            f"the {scenario} turn never showed it was running ({sign} within {waited:.0f} s): "
            + (describe(result) if result else "no answer"),
            *((result.exchange,) if result else ()),
        )
    if scenario == "cs-slow-tool":
        # Well inside the slow tool's run (preflight measured it at SLOW_TOOL_AT_LEAST or more), so that an abort
        # sent now lands in it, and a tool that did not take its time shows as a generation already begun.
        await asyncio.sleep(SLOW_TOOL_AT_LEAST / 4)
    aborted_at, aborted_at_clock = time.monotonic(), time.time()
    answer = await _abort(ctx, session, fresh=fresh)
    answered_clock = time.time()
    result = await stream
    done_index = result.types.index("done") if "done" in result.types else -1
    # From when the stream's request really began: with several turns at once, that may be well after its task was
    # made (a trial taken for one whose turn had ended before the abort, when it had not, is a trial lost).
    ended = result.started + result.arrivals[done_index] if result.arrivals else time.monotonic()
    # The scenario is an abort that reaches a running turn: not one sent after the turn had ended, nor (with the
    # slow tool) one sent after the tool had ended and the next generation had begun (the fake LLM's clock).
    if done_index >= 0 and ended < aborted_at:
        raise NotTestable(
            f"the turn had ended before the abort was sent, so no abort reached a running turn: {describe(result)}"
        )
    later = [r for r in await ctx.llm.main_requests(run) if r.get("step") != 0]
    if scenario == "cs-slow-tool" and any(r.get("received_at", aborted_at_clock) < aborted_at_clock for r in later):
        raise NotTestable(
            "the slow tool had ended and the next generation had begun before the abort was sent, so the abort "
            "did not land while the tool ran (the target's slow tool did not take its time)"
        )
    return _Aborted(answer, result, aborted_at, ended, later, answered_clock)


def _judge_stopped(ctx: CheckContext, scenario: str, aborted: _Aborted, what: str = "") -> str | None:
    """ABORT-002 and ABORT-001 on a turn whose stream ended after an abort that reached it running. Returns why
    ABORT-001 could not be judged on this turn (the caller says NOT TESTABLE when no turn judged it), else None."""
    result = aborted.result
    ctx.findings.expect(
        "ABORT-002",
        "done" in result.types,
        f"after the abort{what} the stream ended without a `done` event: {describe(result)}",
        result.exchange,
    )
    ctx.findings.expect(
        "ABORT-002",
        aborted.ended - aborted.aborted_at <= ABORT_WITHIN,
        f"the stream ended {aborted.ended - aborted.aborted_at:.2f} s after the abort request{what}; expected `done` "
        f"within {ABORT_WITHIN:.0f} s",
        result.exchange,
        aborted.answer,
    )
    full = script_text(ctx, scenario)
    if aborted.undecided:
        first = min(r.get("received_at", math.inf) for r in aborted.later)
        return (
            f"after an abort{what}, the turn's next generation reached the fake LLM before the abort's answer came "
            f"back ({aborted.answered_clock - first:.2f} s before): the abort may have reached the server only after "
            "that generation had begun, so the turn going on shows nothing"
        )
    if scenario == "cs-slow-tool":
        ok = not aborted.went_on and full not in result.content
        message = (
            f"after an abort{what} during the slow tool, the turn went on: {len(aborted.later)} later generation(s) "
            f"reached the fake LLM once the abort had been answered, streamed content {result.content!r}"
        )
        ctx.findings.expect("ABORT-001", ok, message, result.exchange, aborted.answer)
    elif full in result.content:
        # cs-slow has one generation, and the next safe point may be its end: a turn that ran to its end shows
        # nothing the abort changed, so the scenario that could judge ABORT-001 did not happen.
        ctx.findings.not_testable(
            "ABORT-001",
            "the abort landed in the turn's only generation, which ran to its end: nothing shows whether the abort "
            "stopped anything (declare a slow tool, so that the abort lands between two generations)",
        )
    else:
        later = len(aborted.later)
        message = f"after an abort{what} the turn went on: {later} later generation(s) reached the fake LLM"
        ctx.findings.expect("ABORT-001", not aborted.went_on, message, result.exchange, aborted.answer)
    return None


@check("abort.running_turn", slow=True, timed=("ABORT-002",), raced=("ABORT-001",), slow_tool=True)
async def running_turn(ctx: CheckContext) -> None:
    require_capability(ctx, "abort")
    scenario = scenario_or(ctx, "cs-slow-tool", "cs-slow")
    session = ctx.session_id()
    aborted = await _abort_running_turn(ctx, scenario, session, ctx.run, fresh=False)
    result = aborted.result
    _judge_answer(ctx, aborted.answer, "ABORT-002", True, "aborting a running turn")
    ctx.findings.require(
        result.status == 200 and result.completed,
        "ABORT-002",
        f"after the abort the stream did not end: {describe(result)}",
        result.exchange,
    )
    if undecided := _judge_stopped(ctx, scenario, aborted):
        ctx.findings.not_testable("ABORT-001", undecided)

    # ABORT-004: the statistics account for the work done, and the session accepts a new turn.
    first_step = ctx.env.scripts[scenario]["steps"][0]["usage"]
    cut = (first_step["input_tokens"], first_step["output_tokens"])
    # cs-slow is aborted inside its generation, whose usage the target may never have received.
    alternatives = [(0, 0)] if scenario == "cs-slow-tool" else [(0, 0), cut]
    problems = await settled_stats_problems(
        ctx, session, what="aborted", cut=alternatives, requirement="ABORT-004", seconds=5
    )
    ctx.findings.expect("ABORT-004", not problems, "after an aborted turn: " + "; ".join(problems), result.exchange)

    async def next_turn():
        attempt = await ctx.client.stream({"message": ctx.message("cs-plain"), "session_id": session})
        return attempt if attempt.status != 409 else None

    after = await wait_for(next_turn, seconds=5, interval=0.5)
    ctx.findings.require(
        after is not None and served(ctx, after),
        "ABORT-004",
        "the session did not serve a new turn after the abort: " + (describe(after) if after else "409 for 5 s"),
        *((after.exchange,) if after else ()),
    )
    problems = await settled_stats_problems(
        ctx, session, what="aborted", cut=alternatives, requirement="ABORT-004", seconds=5
    )
    ctx.findings.expect("ABORT-004", not problems, "after an aborted turn and a new one: " + "; ".join(problems))


@check("abort.idle_session")
async def idle_session(ctx: CheckContext) -> None:
    require_capability(ctx, "abort")
    session = ctx.session_id()
    await setup_turn(ctx, session)

    async def state() -> tuple[Any, Any]:
        data = await history(ctx, session, "HISTORY-001")
        messages = [{k: v for k, v in m.items() if k != "id"} for m in data["messages"]]  # ids: HISTORY-003's
        return await find_session(ctx, session, "LIST-001"), {**data, "messages": messages}

    before = await state()
    for attempt in ("after its turn ended", "a second time"):
        answer = await _abort(ctx, session)
        _judge_answer(ctx, answer, "ABORT-003", False, f"aborting a session with no running turn ({attempt})")
    after = await state()
    changed = [
        f"{where} {key}: {old.get(key)!r} -> {new.get(key)!r}"
        for where, old, new in (("listed", before[0] or {}, after[0] or {}), ("history", before[1], after[1]))
        for key in sorted(set(old) | set(new))
        if old.get(key) != new.get(key)
    ]
    ctx.findings.expect(
        "ABORT-003",
        not changed,
        "aborting the session with no running turn changed it: " + "; ".join(changed)[:1500],
    )
    following = await ctx.client.stream({"message": ctx.message("cs-plain"), "session_id": session})
    await require_served(
        ctx,
        served(ctx, following),
        following,
        "ABORT-003",
        f"after aborting the idle session, its next turn was not served: {describe(following)}",
        stop=False,
    )


TRIALS = 8  # running turns, each aborted once by a request on a connection of its own
AGAIN = 3  # aborts of each session once its turn's stream has ended, each on a connection of its own


@check("abort.other_connection", slow=True, timed=("ABORT-002",), raced=("ABORT-001",), slow_tool=True)
async def other_connection(ctx: CheckContext) -> None:
    """Aborts that come on a new connection of their own, as a server of several processes behind one port gets
    them: the abort may reach a process other than the one running the turn. TRIALS turns of as many sessions run at
    once, each on a connection of its own, and each is aborted once, while it runs, by a request on a connection of
    its own: a server whose abort reaches only its own process's turns has next to no chance to pass by luck. One
    abort per turn while it runs, since a second could stop a turn the first missed and hide it; once each stream
    has ended, AGAIN aborts of its session, each on a connection of its own, must say `aborted: false`."""
    require_capability(ctx, "abort")
    scenario = scenario_or(ctx, "cs-slow-tool", "cs-slow")
    await setup_turn(ctx, ctx.session_id("first"))  # the project in use before the turns start at once
    sessions = [ctx.session_id(f"t{n}") for n in range(TRIALS)]
    outcomes = await asyncio.gather(
        *(_abort_running_turn(ctx, scenario, s, f"{ctx.run}-t{n}", fresh=True) for n, s in enumerate(sessions)),
        return_exceptions=True,
    )
    for outcome in outcomes:  # blocked by a more basic rule, or the suite's own error
        if isinstance(outcome, BaseException) and not isinstance(outcome, Blocked | NotTestable):
            raise outcome
    failed = [outcome for outcome in outcomes if isinstance(outcome, Blocked)]  # turns that never showed they ran
    reached = [(s, o) for s, o in zip(sessions, outcomes, strict=True) if isinstance(o, _Aborted)]
    if not reached:
        if failed:
            raise failed[0]
        missed = dict.fromkeys(str(outcome) for outcome in outcomes if isinstance(outcome, NotTestable))
        raise NotTestable(f"no abort of {TRIALS} reached a running turn: " + "; ".join(missed))
    for blocked in failed:  # their failures, and the trials that happened still count
        ctx.findings.expect(blocked.requirement, False, blocked.message, *blocked.exchanges)
    undecided: list[str] = []
    for session, aborted in reached:
        turn_worker = worker(aborted.result.exchange)
        what = f" (session {session}, the abort on a connection of its own{worker(aborted.answer)}" + (
            f", the turn{turn_worker})" if turn_worker else ")"
        )
        _judge_answer(ctx, aborted.answer, "ABORT-002", True, f"aborting a running turn{what}")
        result = aborted.result
        ended = result.status == 200 and result.completed
        ctx.findings.expect(
            "ABORT-002", ended, f"after the abort{what} the stream did not end: {describe(result)}", result.exchange
        )
        if ended and (why := _judge_stopped(ctx, scenario, aborted, what)):
            undecided.append(why)
    if undecided and len(undecided) == len(reached):
        ctx.findings.not_testable("ABORT-001", f"on each of {len(reached)} aborted turns: {undecided[0]}")

    missed = [str(outcome) for outcome in outcomes if isinstance(outcome, NotTestable)]
    pairs = [(worker_name(a.result.exchange), worker_name(a.answer)) for _, a in reached]
    notes = [f"{len(reached)} of {TRIALS} aborts reached a running turn"]
    if missed:
        notes.append(f"the others did not ({missed[0]})")
    if all(turn and abort for turn, abort in pairs):
        elsewhere = sum(turn != abort for turn, abort in pairs)
        notes.append(f"{elsewhere} of them answered by another worker than their turn's (X-Copilot-Worker)")
    ctx.findings.passed("ABORT-002", message="; ".join(notes))

    async def again(session: str) -> None:
        for n in range(1, AGAIN + 1):
            answer = await _abort(ctx, session, fresh=True)
            what = (
                f"aborting session {session} after its aborted turn's stream had ended (abort {n} of {AGAIN}, on a "
                f"connection of its own{worker(answer)})"
            )
            _judge_answer(ctx, answer, "ABORT-005", False, what)

    await asyncio.gather(*(again(session) for session, aborted in reached if aborted.result.completed))
