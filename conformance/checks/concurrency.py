"""Concurrency (CONCURRENCY-*): one turn at a time per session (409 session_busy while one runs, whether two
requests race or one arrives late, and for requests that each come on a connection of their own, as a server of
several processes gets them), every served turn whole in the history, and sessions that run in parallel."""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass
from typing import Any

from conformance.channels.gns3_stream import StreamResult
from conformance.checks import check
from conformance.checks.blame import require_served, unless_stream_blocked
from conformance.checks.context import CheckContext
from conformance.checks.support import (
    error_code,
    generation_started,
    history,
    refused_in_stream,
    timed,
    wait_for,
    worker,
    worker_name,
)
from conformance.checks.turns import completed_turn, describe, script_text, served
from conformance.errors import NotTestable


def _turn_texts(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(user text, concatenated assistant text) per turn, in history order."""
    turns: list[tuple[str, str]] = []
    for message in messages:
        if message.get("role") == "user":
            turns.append((message.get("content"), ""))
        elif message.get("role") == "assistant" and turns:
            turns[-1] = (turns[-1][0], turns[-1][1] + (message.get("content") or ""))
    return turns


@dataclass
class _Request:
    label: str
    script: str
    message: str
    run: str
    result: StreamResult | None = None
    answered_at: float = 0.0  # monotonic time the answer (or the stream) ended


async def _judge_history_turns(ctx: CheckContext, session: str, served_turns: list[_Request]) -> None:
    """CONCURRENCY-002: the session's history is the served turns, each one's messages together, and nothing of
    a refused request."""
    expected = sorted((item.message, script_text(ctx, item.script)) for item in served_turns)
    turns = _turn_texts((await history(ctx, session, "HISTORY-001"))["messages"])
    ctx.findings.expect(
        "CONCURRENCY-002",
        sorted(turns) == expected,
        f"the history's turns (user text, assistant text) are {turns!r}; expected each served turn's messages "
        f"together and nothing of the refused requests: {expected!r}",
    )


@check("concurrency.busy", slow=True, timed=("CONCURRENCY-001",))  # a 409 while the turn runs
async def busy(ctx: CheckContext) -> None:
    session = ctx.session_id()

    def request(label: str, script: str, text: str) -> _Request:
        run = f"{ctx.run}-{label}"
        return _Request(label, script, ctx.message(script, text, run=run), run)

    async def send(item: _Request) -> None:
        item.result, item.answered_at = await timed(ctx.client.stream({"message": item.message, "session_id": session}))

    first = request("setup", "cs-plain", "Before the slow turns")
    await send(first)
    await require_served(
        ctx,
        served(ctx, first.result),
        first.result,
        "CONCURRENCY-002",
        f"the first turn was not served: {describe(first.result)}",
    )
    # Two slow turns for the idle session at the same moment: one runs, the other is busy.
    racing = [
        request("race-1", "cs-slow", "First of two at once"),
        request("race-2", "cs-slow", "Second of two at once"),
    ]
    tasks = [asyncio.create_task(send(item)) for item in racing]
    # And one more once a slow turn is surely inside its silent generation.
    late = request("late", "cs-plain", "While a slow turn runs")
    running = bool(
        await wait_for(lambda: generation_started(ctx, [item.run for item in racing]), seconds=10, interval=0.05)
    )
    if running:
        await send(late)
    await asyncio.gather(*tasks)
    last = request("after", "cs-plain", "After the slow turn")
    await send(last)

    accepted = [item for item in racing if item.result.status == 200]
    ctx.findings.expect(
        "CONCURRENCY-001",
        len(accepted) == 1,
        f"two stream requests for one idle session sent at the same moment answered {racing[0].result.status} and "
        f"{racing[1].result.status}; expected one stream and one 409 session_busy",
        *(item.result.exchange for item in racing),
    )
    if accepted:
        ends = max(item.answered_at for item in accepted)
        refused = [item for item in racing if item not in accepted]
        checked = [(item, "the second of two stream requests sent at the same moment") for item in refused]
        if running:
            checked.append((late, "a stream request while the session's turn was running"))
        else:
            ctx.findings.expect(
                "CONCURRENCY-001", False, "the slow turn's generation never reached the fake LLM within 10 s"
            )
        for item, what in checked:
            exchange = item.result.exchange
            ok = exchange.status == 409 and error_code(exchange) == "session_busy"
            ctx.findings.expect(
                "CONCURRENCY-001",
                ok,
                f"{what}: answered {exchange.excerpt()}; expected 409 with code session_busy",
                exchange,
            )
            if ok:
                ctx.findings.expect(
                    "CONCURRENCY-001",
                    item.answered_at < ends,
                    f"{what}: the 409 came {item.answered_at - ends:.2f} s after the running turn ended (it took "
                    f"{exchange.elapsed:.2f} s); it must be answered while the turn runs",
                    exchange,
                )
    refused_inside = set()
    for item in [*racing, late]:
        if item.result is None:
            continue
        # A refusal inside the stream makes no LLM request for its run (a served turn does).
        if refused_in_stream(item.result.events) and not await ctx.llm.requests(item.run):
            refused_inside.add(item.label)
        ctx.findings.expect(
            "PRECHECK-001",
            item.label not in refused_inside,
            f"a stream request for a busy session was refused inside a 200 stream: {item.result.types}",
            item.result.exchange,
        )

    # CONCURRENCY-002: every served turn's messages together in the history, in one piece each.
    sent = [first, *racing, late, last]
    served_turns = [
        item
        for item in sent
        if item.result is not None and item.result.status == 200 and item.label not in refused_inside
    ]
    await _judge_history_turns(ctx, session, served_turns)


@check("concurrency.parallel_sessions", slow=True, timed=("CONCURRENCY-003",))
async def parallel_sessions(ctx: CheckContext) -> None:
    """Two sessions' slow turns, started together, run concurrently when their generations are silent at the same
    time: the second generation reaches the fake LLM while the first is still in its scripted silence (the fake
    LLM's own clock for both). A server that runs one turn at a time starts the second generation only once the
    first turn has ended, a whole silence later. Judged on the order of events, not on a duration, so that a busy
    machine, which stretches both turns alike, does not change the verdict.

    One plain turn is served in the project first: the race judged is two sessions' turns, not a project's first
    use (gns3-server 3.1.0a1 fails one of two simultaneous first turns of a new project with "no such table:
    chat_sessions", a race of its database's creation that CONCURRENCY-003's text does not cover)."""
    silence = ctx.env.scripts["cs-slow"]["steps"][0]["delay_before_ms"] / 1000
    opened = await ctx.client.stream({"message": ctx.message("cs-plain"), "session_id": ctx.session_id("opening")})
    await require_served(
        ctx,
        served(ctx, opened, "cs-plain"),
        opened,
        "CONCURRENCY-003",
        f"a plain turn was not served: {describe(opened)}",
    )

    async def one(label: str) -> tuple[StreamResult, float]:
        run = f"{ctx.run}-{label}"
        result = await ctx.client.stream(
            {"message": ctx.message("cs-slow", run=run), "session_id": ctx.session_id(label)}
        )
        await require_served(
            ctx,
            served(ctx, result, "cs-slow"),
            result,
            "CONCURRENCY-003",
            f"a slow turn was not served: {describe(result)}",
        )
        generations = await ctx.llm.main_requests(run)
        if not generations or "received_at" not in generations[0]:
            raise NotTestable(f"the fake LLM's log has no generation of the {label} turn")
        return result, generations[0]["received_at"]

    (first, first_at), (second, second_at) = sorted(await asyncio.gather(one("a"), one("b")), key=lambda turn: turn[1])
    apart = second_at - first_at
    ctx.findings.expect(
        "CONCURRENCY-003",
        apart < silence,
        f"two slow turns of two sessions, started together: the second one's generation reached the fake LLM "
        f"{apart:.2f} s after the first one's, whose scripted silence lasts {silence:.2f} s; the second turn waited "
        "for the first instead of running beside it",
        first.exchange,
        second.exchange,
    )


NEW_SESSION_RACES = 3  # a race goes one way or another: a server may lose it only now and then


@check("concurrency.busy_new_session", slow=True, raced=("PRECHECK-001",))
async def busy_new_session(ctx: CheckContext) -> None:
    """The race on a session that does not exist yet: two first turns under one new client id, sent at the same
    moment. The busy check must cover the session's creation too: one request makes the session and runs, the
    other is answered 409 session_busy, and the history holds the one turn. Run up to NEW_SESSION_RACES times,
    each on a new session, until a race refuses a request inside its stream (PRECHECK-001's failure)."""
    refused_any = False
    for attempt in range(1, NEW_SESSION_RACES + 1):
        refused, in_stream = await _race_on_a_new_session(ctx, attempt)
        refused_any = refused_any or refused
        if in_stream:
            break
    if not refused_any:
        ctx.findings.not_testable(
            "PRECHECK-001", f"no request of {NEW_SESSION_RACES} races on a new session was refused: both turns ran"
        )


async def _race_on_a_new_session(ctx: CheckContext, attempt: int) -> tuple[bool, bool]:
    """One race; whether a request of it was refused, and whether that refusal came inside a 200 stream."""
    session = ctx.session_id(f"new{attempt}")
    racing = [
        _Request(label, "cs-slow", ctx.message("cs-slow", text, run=f"{ctx.run}-{label}"), f"{ctx.run}-{label}")
        for label, text in (
            (f"new{attempt}-1", "First of two on a new session"),
            (f"new{attempt}-2", "Second of two on a new session"),
        )
    ]

    async def send(item: _Request) -> None:
        item.result, item.answered_at = await timed(ctx.client.stream({"message": item.message, "session_id": session}))

    await asyncio.gather(*(send(item) for item in racing))
    results = [item.result for item in racing]
    accepted = [item for item in racing if item.result.status == 200]
    refused = [item for item in racing if item.result.status != 200]
    if not accepted:
        ctx.findings.expect(
            "CONCURRENCY-001",
            False,
            f"two first turns of one new session sent at the same moment were both refused: answered "
            f"{results[0].exchange.excerpt()} and {results[1].exchange.excerpt()}; expected one stream and one 409",
            *(result.exchange for result in results),
        )
        ctx.findings.passed("PRECHECK-001", message="both racing requests were refused by their HTTP status")
        ctx.findings.not_testable("CONCURRENCY-002", "no turn of the race was served")
        return True, False
    if len(accepted) == 1:
        # One stream: the race happened only if that turn really ran (else the refusal proves nothing).
        await require_served(
            ctx,
            served(ctx, accepted[0].result, "cs-slow"),
            accepted[0].result,
            "CONCURRENCY-001",
            f"the first turn of a new session was not served: {describe(accepted[0].result)}",
        )
        exchange = refused[0].result.exchange
        outcome = (True, False)
        ctx.findings.passed("PRECHECK-001", exchange, message="the racing request was refused by its HTTP status")
        ok = exchange.status == 409 and error_code(exchange) == "session_busy"
        ctx.findings.expect(
            "CONCURRENCY-001",
            ok,
            f"the second of two first turns of one new session, sent at the same moment: answered "
            f"{exchange.excerpt()}; "
            "expected 409 with code session_busy",
            exchange,
        )
        if ok:
            ctx.findings.expect(
                "CONCURRENCY-001",
                refused[0].answered_at < accepted[0].answered_at,
                "the 409 came after the running turn ended; it must be answered while the turn runs",
                exchange,
            )
    else:
        # Both streamed: refused inside the stream (PRECHECK-001's business), or two turns of one session ran
        # together, which is the rule's failure only where both really made an LLM request.
        for item in accepted:  # a turn the server cannot serve at all is no race
            await unless_stream_blocked(ctx, item.result, item.script)
        generated = [item for item in accepted if await ctx.llm.requests(item.run)]
        if len(generated) < 2:
            in_stream = any(refused_in_stream(item.result.events) for item in accepted)
            ctx.findings.expect(
                "PRECHECK-001",
                not in_stream,
                "one of two first turns of one new session was refused inside a 200 stream: "
                f"{[item.result.types for item in accepted]}",
                *(item.result.exchange for item in accepted),
            )
            outcome = (True, in_stream)
        else:
            outcome = (False, False)
            ctx.findings.expect(
                "CONCURRENCY-001",
                False,
                "two first turns of one new session, sent at the same moment, both ran (each made an LLM request); "
                "expected one stream and one 409 session_busy",
                *(item.result.exchange for item in accepted),
            )
    # CONCURRENCY-002: the history is the served turns, whole, and nothing of a refused one.
    ran = [item for item in accepted if completed_turn(item.result) and await ctx.llm.requests(item.run)]
    await _judge_history_turns(ctx, session, ran)
    return outcome


ACROSS_CONNECTIONS = 8  # requests sent at once, each on a connection of its own


@check("concurrency.busy_across_connections", slow=True, timed=("CONCURRENCY-001",))
async def busy_across_connections(ctx: CheckContext) -> None:
    """The busy rule for requests that each come on a new connection of their own, as a server of several processes
    behind one port gets them: each may reach a process other than the one running the session's turn, and with
    ACROSS_CONNECTIONS of them at once a lock kept in one process's memory has next to no chance to pass by luck.
    While a slow turn of an existing session runs, ACROSS_CONNECTIONS stream requests at once must each be 409
    session_busy; then, the session idle, ACROSS_CONNECTIONS slow turns at once: exactly one runs, every other is 409.
    The history holds every served turn whole. A request the suite sent only after the turn had ended judges
    nothing (the suite's delay, not the server's)."""
    session = ctx.session_id()

    def request(label: str, script: str, text: str) -> _Request:
        run = f"{ctx.run}-{label}"
        return _Request(label, script, ctx.message(script, text, run=run), run)

    async def send(item: _Request) -> None:
        body = {"message": item.message, "session_id": session}
        item.result, item.answered_at = await timed(ctx.client.stream(body, fresh=True))

    setup = request("setup", "cs-plain", "Before the slow turn")
    await send(setup)
    why = f"the first turn was not served: {describe(setup.result)}"
    await require_served(ctx, served(ctx, setup.result), setup.result, "CONCURRENCY-002", why)
    running = request("running", "cs-slow", "The slow turn the others find busy")
    task = asyncio.create_task(send(running))
    started = await wait_for(lambda: generation_started(ctx, [running.run]), seconds=10, interval=0.05)
    busy = [request(f"busy-{n}", "cs-plain", f"Busy request {n}") for n in range(ACROSS_CONNECTIONS)]
    if started:
        await asyncio.gather(*(send(item) for item in busy))
    await task
    why = f"the slow turn was not served: {describe(running.result)}"
    await require_served(ctx, served(ctx, running.result, "cs-slow"), running.result, "CONCURRENCY-001", why)
    if not started:
        raise NotTestable("the slow turn's generation never reached the fake LLM within 10 s: no request was sent")
    ends = _ended(running)
    during = [item for item in busy if item.result.started < ends]
    if not during:
        raise NotTestable("the slow turn had ended before the suite sent the requests that should have found it busy")
    wrong = [item for item in during if not _refused_busy(item, ends)]
    ctx.findings.expect(
        "CONCURRENCY-001",
        not wrong,
        f"{len(wrong)} of {len(during)} stream requests sent at once, each on a connection of its own, while the "
        f"session's turn ran{worker(running.result.exchange)} were not answered 409 session_busy while it ran: "
        + "; ".join(_answer(item, ends) for item in wrong),
        *(item.result.exchange for item in wrong),
    )
    if not wrong and (spread := _elsewhere(running, during)):
        ctx.findings.passed("CONCURRENCY-001", message=f"all {len(during)} were 409 session_busy; {spread}")

    sent = [request(f"race-{n}", "cs-slow", f"Racing turn {n}") for n in range(ACROSS_CONNECTIONS)]
    await asyncio.gather(*(send(item) for item in sent))
    ran = sorted(
        [item for item in sent if item.result.status == 200 and await ctx.llm.requests(item.run)],
        key=lambda item: item.result.started,
    )
    if not ran:  # a race is judged only where the server serves turns at all
        for item in sent:
            if item.result.status == 200:
                await unless_stream_blocked(ctx, item.result, item.script)
    # A request the suite began only once the first turn had ended was no part of the race (the suite's delay).
    racing = [item for item in sent if not ran or item.result.started < _ended(ran[0])]
    ran = [item for item in ran if item in racing]
    ends = max((_ended(item) for item in ran), default=math.inf)
    wrong = [item for item in racing if item not in ran and not _refused_busy(item, ends)]
    ctx.findings.expect(
        "CONCURRENCY-001",
        len(ran) == 1 and not wrong,
        f"{ACROSS_CONNECTIONS} slow turns sent at once for the idle session, each on a connection of its own: "
        f"{len(ran)} ran ({', '.join(item.label + worker(item.result.exchange) for item in ran) or 'none'}), "
        "expected exactly one and a 409 session_busy, while it ran, for every other"
        + "".join(f"; {_answer(item, ends)}" for item in wrong[:4]),
        *(item.result.exchange for item in [*ran, *wrong][:4]),
    )
    if len(ran) == 1 and not wrong and (spread := _elsewhere(ran[0], racing)):
        ctx.findings.passed("CONCURRENCY-001", message=f"one of {len(racing)} racing turns ran; {spread}")
    # CONCURRENCY-002: every turn that ran, whole in the history, and nothing of a refused request.
    others = [*busy, *sent]
    whole = [item for item in others if completed_turn(item.result) and await ctx.llm.requests(item.run)]
    await _judge_history_turns(ctx, session, [setup, running, *whole])


def _ended(item: _Request) -> float:
    """When the turn's stream ended: its `done` event's arrival, else the end of its answer."""
    result = item.result
    if "done" in result.types and len(result.arrivals) == len(result.events):
        return result.started + result.arrivals[result.types.index("done")]
    return item.answered_at


def _refused_busy(item: _Request, ends: float) -> bool:
    exchange = item.result.exchange
    return exchange.status == 409 and error_code(exchange) == "session_busy" and item.answered_at < ends


def _elsewhere(running: _Request, others: list[_Request]) -> str:
    """How many of `others` another process than the running turn's answered, where the answers name theirs."""
    turn = worker_name(running.result.exchange)
    named = [worker_name(item.result.exchange) for item in others if item is not running]
    if turn is None or None in named:
        return ""
    return (
        f"{sum(name != turn for name in named)} of {len(named)} were answered by another worker process than the "
        f"one running the turn ({turn}; X-Copilot-Worker)"
    )


def _answer(item: _Request, ends: float) -> str:
    exchange = item.result.exchange
    late = f", {item.answered_at - ends:.2f} s after the turn had ended" if item.answered_at >= ends else ""
    events = f" events {item.result.types[-4:]}" if item.result.events else ""
    return f"{item.label} answered {exchange.excerpt()}{events}{worker(exchange)}{late}"
