"""Abort (capability `abort`): a running turn stops soon and ends with `done`, the statistics still hold and the
session goes on; aborting an idle session changes nothing; the answer says which it was (ABORT-001..005)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from ..context import CheckContext, NotTestable
from ..exchanges import Exchange, json_or_none
from . import check
from .preconditions import describe, served, setup_turn

ABORT_WITHIN = 5.0  # seconds (ABORT-002)


def _require_abort(ctx: CheckContext) -> None:
    if "abort" not in ctx.target.capabilities:
        raise NotTestable("the target does not declare the abort capability")


async def _abort(ctx: CheckContext, session_id: str) -> Exchange:
    return await ctx.call("POST", f"/sessions/{session_id}/abort", operation="abortSessionTurn")


def _judge_answer(ctx: CheckContext, exchange: Exchange, requirement: str, aborted: bool, what: str) -> None:
    """`requirement` (ABORT-002 or -003): the abort answers 200; ABORT-005: its body says whether a turn was
    stopped. (The body's shape, `session_id` included, is CONTRACT-001's, judged for every exchange.)"""
    got = exchange.status if exchange.status is not None else exchange.error
    ctx.expect(
        requirement, exchange.status == 200, f"{what}: answered {got}, expected 200: {exchange.body[:300]}", exchange
    )
    if exchange.status == 200:
        body = json_or_none(exchange.body)
        value = body.get("aborted", "(absent)") if isinstance(body, dict) else "(no JSON object)"
        ctx.expect(
            "ABORT-005",
            value is aborted,
            f"{what}: the answer {exchange.body[:300]} has `aborted` {value!r}, expected {str(aborted).lower()}",
            exchange,
        )


async def _stats_problems(ctx: CheckContext, session_id: str, alternatives: list[tuple[int, int]]) -> list[str]:
    """STATS-001..004 for the session, against the fake LLM's log of the check's run."""
    session = await ctx.session(session_id)
    if session is None:
        return [f"session {session_id} is not listed"]
    history = (await ctx.history(session_id, limit=1000))["messages"]
    counted = [m for m in history if m.get("role") in ("user", "assistant", "tool")]
    calls, inputs, outputs = await ctx.expected_usage()
    tokens = (session["input_tokens"], session["output_tokens"])
    allowed = [(inputs - i, outputs - o) for i, o in alternatives]
    problems = []
    if session["message_count"] != len(counted):
        problems.append(f"message_count {session['message_count']}, the history holds {len(counted)} messages")
    if session["llm_calls_count"] != calls:
        problems.append(
            f"llm_calls_count {session['llm_calls_count']}, the fake LLM served {calls} counted generation(s) "
            f"(title counted: {ctx.target.title_counts_in_stats})"
        )
    if tokens not in allowed:
        problems.append(f"tokens in/out {tokens[0]}/{tokens[1]}, expected {' or '.join(map(str, allowed))}")
    if session["total_tokens"] != sum(tokens):
        problems.append(f"total_tokens {session['total_tokens']} != {tokens[0]} + {tokens[1]}")
    return problems


async def _settled_stats(ctx: CheckContext, session_id: str, alternatives: list[tuple[int, int]]) -> list[str]:
    """The statistics problems once they stop changing (a few seconds at most after the stream ended)."""
    last: list[list[str]] = [[]]

    async def probe() -> bool:
        last[0] = await _stats_problems(ctx, session_id, alternatives)
        return not last[0]

    await ctx.wait_for(probe, seconds=5, interval=0.25)
    return last[0]


@check("abort.running_turn", slow=True)
async def running_turn(ctx: CheckContext) -> None:
    _require_abort(ctx)
    scenario = "cs-slow-tool" if "cs-slow-tool" in ctx.env.scripts else "cs-slow"
    session = ctx.session_id()
    running = asyncio.Event()

    def observe(event: dict[str, Any]) -> bool:
        if scenario == "cs-slow-tool" and event.get("type") == "tool_start":  # the slow tool runs
            running.set()
        return False  # never disconnect

    async def generating() -> None:  # cs-slow: the fake LLM holds the turn's generation in its silence
        while not any(r.get("step") == 0 for r in await ctx.llm_requests()):
            await asyncio.sleep(0.05)
        running.set()

    sent_at = time.monotonic()
    stream = asyncio.create_task(
        ctx.stream(
            {"message": ctx.message(scenario), "session_id": session},
            stop_when=observe,
            deadline=ctx.target.stream_deadline,
        )
    )
    signals = [asyncio.create_task(running.wait())]
    if scenario == "cs-slow":
        signals.append(asyncio.create_task(generating()))
    await asyncio.wait([stream, *signals], timeout=15, return_when=asyncio.FIRST_COMPLETED)
    for signal in signals:
        signal.cancel()
    if not running.is_set():
        result = await stream if stream.done() else None
        stream.cancel()
        sign = "a tool_start event" if scenario == "cs-slow-tool" else "its generation reaching the fake LLM"
        ctx.require(
            False,
            "ABORT-002",
            f"the {scenario} turn never showed it was running ({sign} within 15 s): "
            + (describe(result) if result else "no answer"),
            *((result.exchange,) if result else ()),
        )
    aborted_at = time.monotonic()
    answer = await _abort(ctx, session)
    _judge_answer(ctx, answer, "ABORT-002", True, "aborting a running turn")
    result = await stream
    done_index = result.types.index("done") if "done" in result.types else -1
    ended = sent_at + result.arrivals[done_index] if result.arrivals else time.monotonic()
    ctx.require(
        result.status == 200 and result.completed,
        "ABORT-002",
        f"after the abort the stream did not end: {describe(result)}",
        result.exchange,
    )
    ctx.expect(
        "ABORT-002",
        "done" in result.types,
        f"after the abort the stream ended without a `done` event: {describe(result)}",
        result.exchange,
    )
    ctx.expect(
        "ABORT-002",
        ended - aborted_at <= ABORT_WITHIN,
        f"the stream ended {ended - aborted_at:.2f} s after the abort request; expected `done` within "
        f"{ABORT_WITHIN:.0f} s",
        result.exchange,
    )
    requests = await ctx.llm_requests()
    later = [r for r in requests if r.get("step") not in (None, 0)]
    full = "".join(c for s in ctx.env.scripts[scenario]["steps"] for c in s.get("text_chunks", []))
    if scenario == "cs-slow-tool":
        ok = not later and full not in result.content
        message = (
            f"after an abort during the slow tool, the turn went on: {len(later)} later generation(s) reached the "
            f"fake LLM, streamed content {result.content!r}"
        )
    else:
        ok = not later
        message = f"after an abort the turn went on: {len(later)} later generation(s) reached the fake LLM"
    ctx.expect("ABORT-001", ok, message, result.exchange)

    # ABORT-004: the statistics account for the work done, and the session accepts a new turn.
    first_step = ctx.env.scripts[scenario]["steps"][0]["usage"]
    cut = (first_step["input_tokens"], first_step["output_tokens"])
    # cs-slow is aborted inside its generation, whose usage the target may never have received.
    alternatives = [(0, 0)] if scenario == "cs-slow-tool" else [(0, 0), cut]
    problems = await _settled_stats(ctx, session, alternatives)
    ctx.expect("ABORT-004", not problems, "after an aborted turn: " + "; ".join(problems), result.exchange)

    async def next_turn():
        attempt = await ctx.stream({"message": ctx.message("cs-plain"), "session_id": session})
        return attempt if attempt.status != 409 else None

    after = await ctx.wait_for(next_turn, seconds=5, interval=0.5)
    ctx.require(
        after is not None and served(ctx, after),
        "ABORT-004",
        "the session did not serve a new turn after the abort: " + (describe(after) if after else "409 for 5 s"),
        *((after.exchange,) if after else ()),
    )
    problems = await _settled_stats(ctx, session, alternatives)
    ctx.expect("ABORT-004", not problems, "after an aborted turn and a new one: " + "; ".join(problems))


@check("abort.idle_session")
async def idle_session(ctx: CheckContext) -> None:
    _require_abort(ctx)
    session = ctx.session_id()
    await setup_turn(ctx, "ABORT-003", session)

    async def state() -> tuple[Any, Any]:
        history = await ctx.history(session, limit=1000)
        messages = [{k: v for k, v in m.items() if k != "id"} for m in history["messages"]]  # ids: HISTORY-003's
        return await ctx.session(session), {**history, "messages": messages}

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
    ctx.expect(
        "ABORT-003",
        not changed,
        "aborting the session with no running turn changed it: " + "; ".join(changed)[:1500],
    )
    turn = await ctx.stream({"message": ctx.message("cs-plain"), "session_id": session})
    ctx.expect(
        "ABORT-003",
        served(ctx, turn),
        f"after aborting the idle session, its next turn was not served: {describe(turn)}",
        turn.exchange,
    )
