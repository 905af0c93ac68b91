"""Disconnects (CHANNEL-009): a client that goes away before its answer is complete stops the turn, whether it read
a stream (every channel) or waited for one JSON answer (the OpenAI endpoints asked not to stream): the turn makes
no further generation, ends, is kept and counted, and the session takes a new turn. Aborts are channels.py's."""

from __future__ import annotations

import asyncio
import contextlib
import time

from conformance.channels.client import ChannelClient
from conformance.channels.endpoints import Endpoint
from conformance.checks import check
from conformance.checks.blame import require_scripted
from conformance.checks.context import CheckContext
from conformance.checks.support import generation_started, wait_for
from conformance.checks.support_channels import SETTLE_SECONDS, endpoints, first_words, kept_problems, new_session
from conformance.checks.turns import Turn, post_turn, run_tag
from conformance.errors import NotTestable
from conformance.harness.machine_load import stretched
from conformance.rules import aborted as aborted_rules

DRIBBLE = "cs-dribble-tool"  # its first words, then three more and a call, 0.8 s apart: the turn's rest takes 4 s
STOP_MARGIN = 2.0  # seconds: a generation begun this long after the client went away was begun by a turn not stopped


@check("channels.disconnect", slow=True, needs=("channel_gns3",), slow_tool=True)
async def disconnect(ctx: CheckContext) -> None:
    """A client that goes away from a channel's stream at its first words, while the answer dribbles and a tool and
    a generation are still to come: the turn stops (it makes neither), ends, is kept and counted, and the session
    takes a new turn."""

    async def one(chosen: Endpoint) -> tuple[Turn, float]:
        turn = await post_turn(ctx, chosen, DRIBBLE, label=f"d-{chosen.name}", session_id=new_session(chosen),
                               stop_when=first_words)  # fmt: skip
        return turn, time.time()

    cut = []
    for turn, left in await asyncio.gather(*(one(e) for e in endpoints(ctx))):
        name, answer = turn.answer.endpoint.name, turn.answer
        if answer.status == 200 and (answer.completed or answer.endpoint.ended(answer)):
            raise NotTestable(f"{name}: the turn was sent whole before the suite could disconnect: nothing was cut")
        await require_scripted(ctx, turn, "CHANNEL-009", cut=True)
        ctx.findings.require(
            bool(answer.session_id), "CHANNEL-009", f"{name}: the answer names no session", answer.exchange
        )
        cut.append((turn, left))
    await each_endpoint(
        judge_left_turn(
            ctx,
            t.answer.endpoint,
            t.answer.endpoint.name,
            t.answer.session_id,
            t.answer.message,
            t.run,
            left,
            t.answer.exchange,
        )  # fmt: skip
        for t, left in cut
    )


async def judge_left_turn(
    ctx: CheckContext,
    chosen: Endpoint,
    name: str,
    session: str,
    message: str,
    run: str,
    left: float,
    *evidence,
) -> None:
    """CHANNEL-009 once the client of a running turn of `run` left at `left` (time.time()): the turn kept and
    counted, the session's next turn (a stream) served, then no generation of the left turn begun after it was left
    (read once the next turn was taken: the left one had ended; a generation begun within STOP_MARGIN may predate
    the server's notice)."""
    problems = await kept_problems(ctx, session, message)
    ctx.findings.expect(
        "CHANNEL-009",
        not problems,
        f"{name}: after the client went away, session {session}: " + "; ".join(problems),
        *evidence,
    )
    after = await next_turn(ctx, chosen, session, f"after-{chosen.name}")
    ctx.findings.expect(
        "CHANNEL-009",
        after.answer.status == 200 and after.answer.streamed,
        f"{name}: the session took no new turn after the disconnect: {after.answer.describe()}",
        after.answer.exchange,
    )
    went_on = aborted_rules.began_after(await ctx.llm.main_requests(run), left + STOP_MARGIN)
    ctx.findings.expect(
        "CHANNEL-009",
        not went_on,
        f"{name}: the client went away while the turn ran, and the turn went on: a later generation began "
        f"{max(went_on or [0.0]) - left:.1f} s after; a disconnect stops the turn",
        *evidence,
    )


async def each_endpoint(judgments) -> None:
    """The endpoints' judgments side by side (a session still busy is asked again for seconds, on each endpoint),
    each to its end; then the first that stopped the check (NOT TESTABLE, a required finding) stops it."""
    outcomes = await asyncio.gather(*judgments, return_exceptions=True)
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome


@check("channels.disconnect_unstreamed", slow=True, needs=("channel_gns3",), slow_tool=True)
async def disconnect_unstreamed(ctx: CheckContext) -> None:
    """A client of an OpenAI endpoint that asked for one JSON answer and goes away while the answer is still being
    made (its first generation reached the model, a tool and a generation still to come): the turn stops as a
    stream's does, is kept and counted, and the session takes a new turn. A client library that times out and
    retries must not leave whole turns running behind it."""
    chosen_ones = [e for e in endpoints(ctx) if e.channel == "openai"]
    if not chosen_ones:
        raise NotTestable("the target serves no OpenAI endpoint: every other channel streams its answer")
    await each_endpoint(_leave_unstreamed(ctx, chosen) for chosen in chosen_ones)


async def next_turn(ctx: CheckContext, chosen: Endpoint, session: str, label: str) -> Turn:
    """A plain turn in the session once the cut turn has let it go: CHANNEL-009 sets no time for a stopped turn to
    end, so a 409 `session_busy` is asked again for as long as a turn cut short may take to be written."""
    deadline = time.monotonic() + stretched(SETTLE_SECONDS)
    attempt = 0
    while True:
        attempt += 1
        after = await post_turn(ctx, chosen, "cs-plain", label=f"{label}-{attempt}", session_id=session)
        if after.answer.status != 409 or time.monotonic() >= deadline:
            return after
        await asyncio.sleep(0.25)


async def _leave_unstreamed(ctx: CheckContext, chosen: Endpoint) -> None:
    name, run, session = f"{chosen.name} (not streamed)", run_tag(ctx, f"dn-{chosen.name}"), new_session(chosen)
    channel = ChannelClient(ctx)
    body = channel.request(chosen, DRIBBLE, session_id=session, run=run, stream=False)
    posting = asyncio.ensure_future(channel.post(chosen, body, fresh=True))
    message = ctx.message(DRIBBLE, run=run)

    async def running_or_answered() -> bool:
        return posting.done() or await generation_started(ctx, [run])

    await wait_for(running_or_answered, seconds=ctx.env.deadline_for(message), interval=0.05)
    running = await generation_started(ctx, [run])
    if running and not posting.done():
        await asyncio.sleep(0.3)  # the first words are on their way; the rest of the turn takes some 4 s more
    left = time.time()
    if not posting.cancel():  # answered already: the suite never left a running turn
        raise NotTestable(f"{name}: answered before the suite could leave: {posting.result().describe()}")
    with contextlib.suppress(asyncio.CancelledError):
        await posting
    if not running:
        raise NotTestable(f"{name}: the {DRIBBLE} turn's first generation never reached the model: no turn was left")
    await judge_left_turn(ctx, chosen, name, session, message, run, left)
